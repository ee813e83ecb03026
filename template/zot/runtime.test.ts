// The runtime's own tests (npm test runs them after yours): each frame zot
// may send goes through handle() as run() would pass it, and what the
// extension would write is collected instead of written.
import assert from "node:assert/strict";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import {
  errorResult,
  Extension,
  type ExtensionFrame,
  imageBlock,
  InvalidArguments,
  markdownBlock,
  spawnForCall,
  structuredResult,
  textBlock,
} from "./runtime.js";
import { problems } from "./schema.js";

/** A fresh extension, with what it sends and logs. */
function fresh() {
  const ext = new Extension("t", "1.0");
  const sent: ExtensionFrame[] = [];
  const logged: string[] = [];
  ext.send = (frame) => void sent.push(frame);
  ext.log = (line) => void logged.push(line);
  /** Pass one frame (or raw line) from zot. */
  const receive = (frame: object | string) =>
    ext.handle(typeof frame === "string" ? frame : JSON.stringify(frame));
  return { ext, sent, logged, receive };
}

/** Frames sorted by id: handlers may answer in any order. */
function sortedById(frames: ExtensionFrame[]): ExtensionFrame[] {
  const id = (frame: ExtensionFrame) => ("id" in frame ? frame.id : "");
  return frames.sort((a, b) => id(a).localeCompare(id(b)));
}

/** Let started handlers run as far as they can. */
const settle = () => new Promise((done) => setImmediate(done));

test("hello lists the capabilities of what is registered, in order", () => {
  const { ext } = fresh();
  assert.deepEqual(ext.capabilities(), []);
  ext.interceptBeforeAgentStart(() => null);
  assert.deepEqual(ext.capabilities(), ["events"]);
  ext.tool("t", "T", { type: "object" }, () => "");
  assert.deepEqual(ext.capabilities(), ["tools", "events", "tool_cancel"]);
  ext.command("c", "C", () => ({ action: "noop" }), { panels: true });
  assert.deepEqual(ext.capabilities(), [
    "commands",
    "tools",
    "events",
    "panels",
    "tool_cancel",
  ]);
  const ask = fresh().ext;
  ask.tool("a", "A", { type: "object" }, () => "", { interactive: true });
  assert.deepEqual(ask.capabilities(), ["tools", "panels", "tool_cancel"]);
});

test("register_tool has interactive and output_schema only when used", () => {
  const { ext, sent, receive } = fresh();
  const schema = { type: "object" };
  const outputSchema = { type: "object", properties: {} };
  ext.tool("plain", "P", schema, () => "");
  ext.tool("asks", "A", schema, () => "", { interactive: true, outputSchema });
  ext.interceptToolCall(() => null);
  ext.interceptBeforeAgentStart(() => null);
  receive({ type: "hello_ack", protocol_version: 1 });
  assert.deepEqual(sent, [
    { type: "register_tool", name: "plain", description: "P", schema },
    {
      type: "register_tool",
      name: "asks",
      description: "A",
      schema,
      interactive: true,
      output_schema: outputSchema,
    },
    {
      type: "subscribe",
      events: [],
      intercept: ["tool_call", "before_agent_start"],
    },
    { type: "ready" },
  ]);
});

test("a newer host is one whose hello_ack lists capabilities", () => {
  for (const [capabilities, newer] of [
    [undefined, false],
    ["call_tool", false],
    [{}, false],
    [[], true],
    [["call_tool"], true],
  ]) {
    const { ext, receive } = fresh();
    receive({ type: "hello_ack", protocol_version: 1, capabilities });
    assert.equal(ext.newerHost, newer, JSON.stringify(capabilities));
  }
});

test("notify and clear_notes are one frame each", () => {
  const { ext, sent, receive } = fresh();
  receive({ type: "hello_ack", capabilities: [] }); // a newer zot: submit
  sent.length = 0;
  for (const level of ["info", "success", "warn", "error"] as const) {
    ext.notify(level, `a ${level} note`);
  }
  ext.clearNotes();
  ext.submit("next prompt");
  assert.deepEqual(sent, [
    { type: "notify", level: "info", message: "a info note" },
    { type: "notify", level: "success", message: "a success note" },
    { type: "notify", level: "warn", message: "a warn note" },
    { type: "notify", level: "error", message: "a error note" },
    { type: "clear_notes" },
    { type: "submit", text: "next prompt" },
  ]);
});

test("panel keys and closes reach the handlers of that panel only", () => {
  const { ext, sent, logged, receive } = fresh();
  const heard: string[] = [];
  const panel = { id: "p1", title: "T", lines: ["a", "b"], footer: "F" };
  const reply = ext.panelReply(panel, {
    onKey: (key, text) => heard.push(`${key}:${text}`),
    onClose: () => heard.push("closed"),
  });
  assert.deepEqual(reply, { action: "open_panel", open_panel: panel });
  receive({ type: "panel_key", panel_id: "p1", key: "down" });
  receive({ type: "panel_key", panel_id: "p1", key: "rune", text: "j" });
  receive({ type: "panel_resize", panel_id: "p1", width: 80, height: 24 });
  receive({ type: "panel_key", panel_id: "p2", key: "enter" });
  receive({ type: "panel_close", panel_id: "p2" });
  receive({ type: "panel_key", key: "enter" });
  receive({ type: "panel_close", panel_id: "p1" });
  receive({ type: "panel_key", panel_id: "p1", key: "up" }); // closed
  assert.deepEqual(heard, ["down:", "rune:j", "closed"]);
  assert.deepEqual(sent, []);
  assert.equal(logged.length, 4, logged.join("\n"));
  assert.ok(
    logged.every((line) => line.includes("unknown panel")),
    logged[0],
  );
});

test("a panel the extension opens, renders and closes", () => {
  const { ext, sent, logged, receive } = fresh();
  ext.host.capabilities = []; // a newer zot: it takes open_panel
  const heard: string[] = [];
  const panel = { id: "p", title: "T", lines: ["a"], footer: "F" };
  ext.openPanel(panel, {
    onKey: (key) => {
      if (key === "tab") throw new Error("bad key");
      heard.push(key);
    },
    onClose: () => heard.push("closed"),
  });
  receive({ type: "panel_key", panel_id: "p", key: "tab" }); // logged
  ext.renderPanel("p", "T2", ["b", "c"], "F2");
  ext.closePanel("p"); // no onClose: the extension knows
  ext.closePanel("p"); // closed already: nothing more is sent
  receive({ type: "panel_key", panel_id: "p", key: "enter" });
  assert.deepEqual(heard, []);
  assert.deepEqual(sent, [
    { type: "open_panel", panel },
    {
      type: "panel_render",
      panel_id: "p",
      title: "T2",
      lines: ["b", "c"],
      footer: "F2",
    },
    { type: "panel_close", panel_id: "p" },
  ]);
  assert.match(logged[0], /panel_key handler failed: bad key/);
  assert.match(logged[1], /unknown panel "p"/);
});

test("an older zot gets no submit and no open_panel, only a log line", () => {
  const { ext, sent, logged, receive } = fresh();
  receive({ type: "hello_ack", protocol_version: 1 }); // zot 0.1.62
  sent.length = 0;
  const heard: string[] = [];
  const panel = { id: "p", title: "T", lines: [], footer: "" };
  ext.openPanel(panel, { onKey: (key) => heard.push(key) });
  ext.submit("a prompt");
  receive({ type: "panel_key", panel_id: "p", key: "enter" }); // not open
  assert.deepEqual(sent, []);
  assert.deepEqual(heard, []);
  assert.match(logged[0], /sent no open_panel frame: zot 0.1.62/);
  assert.match(logged[1], /sent no submit frame/);
});

test("result helpers make text, markdown, image and structured results", () => {
  assert.deepEqual(textBlock("hi"), { type: "text", text: "hi" });
  assert.deepEqual(markdownBlock("**hi**"), {
    type: "text",
    text: "**hi**",
    format: "markdown",
  });
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0xff]);
  assert.deepEqual(imageBlock(png, "image/png"), {
    type: "image",
    mime_type: "image/png",
    data: "iVBOR/8=",
  });
  assert.deepEqual(structuredResult("ok", { n: 1 }), {
    content: [{ type: "text", text: "ok" }],
    structured_content: { n: 1 },
  });
  assert.deepEqual(errorResult("no"), {
    content: [{ type: "text", text: "no" }],
    is_error: true,
  });
});

test("tool results: a string, blocks, a whole result, an error", async () => {
  const { ext, sent, receive } = fresh();
  const schema = { type: "object" };
  const outputs: Record<string, unknown> = {
    "1-text": "plain",
    "2-blocks": [markdownBlock("*md*")],
    "3-structured": structuredResult([textBlock("s")], { ok: true }),
    "4-failed": errorResult("it failed"),
  };
  for (const [name, output] of Object.entries(outputs)) {
    ext.tool(name, name, schema, () => output as string);
  }
  ext.tool("5-bad", "bad", schema, () => {
    throw new InvalidArguments("send x");
  });
  for (const name of [...Object.keys(outputs), "5-bad", "6-missing"]) {
    receive({ type: "tool_call", id: name, name, args: {} });
  }
  await settle();
  const text = (text: string) => [{ type: "text", text }];
  assert.deepEqual(sortedById(sent), [
    {
      type: "tool_result",
      id: "1-text",
      content: text("plain"),
      is_error: false,
    },
    {
      type: "tool_result",
      id: "2-blocks",
      content: [{ type: "text", text: "*md*", format: "markdown" }],
      is_error: false,
    },
    {
      type: "tool_result",
      id: "3-structured",
      content: text("s"),
      structured_content: { ok: true },
      is_error: false,
    },
    {
      type: "tool_result",
      id: "4-failed",
      content: text("it failed"),
      is_error: true,
    },
    {
      type: "tool_result",
      id: "5-bad",
      content: text("invalid arguments: send x"),
      is_error: true,
    },
    {
      type: "tool_result",
      id: "6-missing",
      content: text("unknown tool: 6-missing"),
      is_error: true,
    },
  ]);
});

test("a cancelled tool call gets its signal and never a result", async () => {
  const { ext, sent, logged, receive } = fresh();
  const finish: Record<string, (text: string) => void> = {};
  const signals: Record<string, AbortSignal> = {};
  ext.tool("slow", "S", { type: "object" }, (args, signal) => {
    const { id } = args as { id: string };
    signals[id] = signal;
    return new Promise((resolve, reject) => {
      finish[id] = (text) =>
        text === "throw" ? reject(new Error()) : resolve(text);
    });
  });
  for (const id of ["a", "b", "c"]) {
    receive({ type: "tool_call", id, name: "slow", args: { id } });
  }
  let aborted = 0;
  signals.a.addEventListener("abort", () => aborted++);
  receive({ type: "tool_cancel", id: "a" });
  receive({ type: "tool_cancel", id: "b" });
  receive({ type: "tool_cancel", id: "a" }); // no longer running
  receive({ type: "tool_cancel", id: "zzz" });
  receive({ type: "tool_cancel" });
  assert.equal(aborted, 1);
  assert.ok(signals.a.aborted && signals.b.aborted && !signals.c.aborted);
  finish.a("late"); // the handler ignored its signal
  finish.b("throw");
  finish.c("done");
  await settle();
  assert.deepEqual(sent, [
    {
      type: "tool_result",
      id: "c",
      content: [{ type: "text", text: "done" }],
      is_error: false,
    },
  ]);
  receive({ type: "tool_cancel", id: "c" }); // finished: ignored
  assert.equal(sent.length, 1);
  assert.equal(logged.filter((line) => line.includes("tool_cancel")).length, 4);
});

/** Whether process `pid` runs (is there and not a zombie), from /proc. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat[stat.lastIndexOf(")") + 2] !== "Z";
  } catch {
    return false;
  }
}

test(
  "what spawnForCall started stops when the call's signal aborts",
  { skip: !existsSync("/proc/self/stat") && "it reads /proc" },
  async () => {
    const controller = new AbortController();
    const { signal } = controller;
    // sh leaves a sleep running in the background, says its pid and exits.
    const background = "sleep 30 >/dev/null 2>&1 & echo $!";
    const sh = spawnForCall("sh", ["-c", background], signal);
    let output = "";
    sh.stdout?.on("data", (chunk) => (output += chunk));
    await once(sh, "close");
    const child = spawnForCall("sleep", ["30"], signal, { stdio: "ignore" });
    const pids = [Number(output), child.pid ?? 0];
    try {
      assert.ok(pids.every(running), `not running: ${pids}`);
      controller.abort();
      await once(child, "close");
      const deadline = Date.now() + 2000;
      while (pids.some(running)) {
        assert.ok(Date.now() < deadline, `running 2 s later: ${pids}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      for (const pid of pids.filter(running)) process.kill(pid, "SIGKILL");
    }
  },
);

test("before_agent_start replaces the prompt, or keeps it", async () => {
  const { ext, sent, logged, receive } = fresh();
  ext.interceptBeforeAgentStart(async (frame) => {
    const prompt = String(frame.system_prompt);
    if (prompt === "crash") throw new Error("no prompt today");
    if (prompt === "keep") return null;
    if (prompt === "none") return undefined;
    return prompt === "remove" ? "" : `${prompt} + more`;
  });
  const intercept = (id: string, system_prompt: string) =>
    receive({
      type: "event_intercept",
      id,
      event: "before_agent_start",
      system_prompt,
    });
  intercept("1", "base");
  intercept("2", "remove");
  intercept("3", "keep");
  intercept("4", "none");
  intercept("5", "crash");
  receive({ type: "event_intercept", id: "6", event: "turn_start", step: 1 });
  receive({ type: "event_intercept", id: "7", event: "tool_call" });
  await settle();
  const type = "event_intercept_response";
  assert.deepEqual(sortedById(sent), [
    { type, id: "1", system_prompt: "base + more" },
    { type, id: "2", system_prompt: "" },
    { type, id: "3" },
    { type, id: "4" },
    { type, id: "5" },
    { type, id: "6", block: false },
    { type, id: "7", block: false },
  ]);
  assert.match(logged.join("\n"), /no prompt today/);
});

test("without a handler before_agent_start is allowed as before", async () => {
  const { sent, receive } = fresh();
  receive({ type: "event_intercept", id: "1", event: "before_agent_start" });
  await settle();
  assert.deepEqual(sent, [
    { type: "event_intercept_response", id: "1", block: false },
  ]);
});

test("malformed and unknown frames are logged, never answered", () => {
  const { sent, logged, receive } = fresh();
  for (const line of ["{", "[1]", '"x"', "null", "", "  "]) {
    assert.equal(receive(line), true);
  }
  for (const frame of [
    { type: "mystery" },
    { type: "tool_call", name: "x" },
    { type: "panel_key", panel_id: 3 },
    { type: "tool_cancel", id: ["a"] },
    { type: "event", event: "unheard" },
  ]) {
    assert.equal(receive(frame), true);
  }
  assert.deepEqual(sent, []);
  assert.equal(logged.length, 9, logged.join("\n"));
  assert.equal(receive({ type: "shutdown" }), false);
  assert.deepEqual(sent, [{ type: "shutdown_ack" }]);
});

test("the schema checks of schema-cases.json", () => {
  const file = new URL("schema-cases.json", import.meta.url);
  const { cases } = JSON.parse(readFileSync(file, "utf8")) as {
    cases: { schema: object; args: unknown; problems: string[] }[];
  };
  for (const { schema, args, problems: expected } of cases) {
    const where = JSON.stringify({ schema, args });
    assert.deepEqual(problems(schema, args), expected, where);
  }
});

test("arguments that do not fit the schema never reach the handler", async () => {
  const { ext, sent, receive } = fresh();
  const schema = { type: "object", required: ["n"] };
  ext.tool("count", "Count to N", schema, ({ n }: { n: number }) => String(n));
  receive({ type: "tool_call", id: "1", name: "count", args: { n: 3 } });
  receive({ type: "tool_call", id: "2", name: "count", args: [] });
  await new Promise((done) => setImmediate(done));
  const texts = new Map(
    sent.map((frame) => [
      "id" in frame && frame.id,
      "content" in frame && frame.content[0],
    ]),
  );
  assert.deepEqual(texts.get("1"), { type: "text", text: "3" });
  const refused = "invalid arguments: the arguments must be an object";
  assert.deepEqual(texts.get("2"), { type: "text", text: refused });
});
