// The runtime's own tests (npm test runs them after yours): each frame zot
// may send goes through handle() as run() would pass it, and what the
// extension would write is collected instead of written.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { stdout } from "node:process";
import { test } from "node:test";
import {
  activatingResult,
  errorResult,
  Extension,
  type ExtensionFrame,
  imageBlock,
  InvalidArguments,
  markdownBlock,
  programsForTests,
  spawnForCall,
  structuredResult,
  textBlock,
  toolPrompt,
} from "./runtime.js";
import { problems } from "./schema.js";
import { Zot } from "./testing.js";

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
  assert.deepEqual(ext.capabilities(), ["call_tool"]);
  ext.interceptBeforeAgentStart(() => null);
  assert.deepEqual(ext.capabilities(), ["events", "call_tool"]);
  ext.tool("t", "T", { type: "object" }, () => "");
  assert.deepEqual(ext.capabilities(), [
    "tools",
    "events",
    "tool_cancel",
    "call_tool",
  ]);
  ext.command("c", "C", () => ({ action: "noop" }), { panels: true });
  assert.deepEqual(ext.capabilities(), [
    "commands",
    "tools",
    "events",
    "panels",
    "tool_cancel",
    "call_tool",
  ]);
  const ask = fresh().ext;
  ask.tool("a", "A", { type: "object" }, () => "", { interactive: true });
  assert.deepEqual(ask.capabilities(), [
    "tools",
    "panels",
    "tool_cancel",
    "call_tool",
  ]);
  const turns = fresh().ext;
  turns.interceptTurnStart(() => null);
  assert.deepEqual(turns.capabilities(), ["events", "call_tool"]);
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

test("frames go nowhere until zot is served", async (t) => {
  const ext = new Extension("t", "1.0");
  const write = t.mock.method(stdout, "write", () => true);
  ext.notify("info", "not served"); // written at once, if at all
  write.mock.restore();
  assert.equal(write.mock.callCount(), 0);
  const zot = Zot.start(ext);
  ext.notify("info", "served");
  assert.equal((await zot.next("notify")).message, "served");
  zot.stop();
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

/** What the tests of processes need: /proc, where they look. */
const PROC = { skip: !existsSync("/proc/self/stat") && "it reads /proc" };

/** A signal that never aborts: the call's end stops the program anyway. */
const UNTIL_THE_CALL_ENDS = new AbortController().signal;

/** The pids `script` echoes, as sh runs it through spawnForCall: all of
 * them once every process that holds its stdout has closed it. */
async function echoed(script: string, signal: AbortSignal): Promise<number[]> {
  const sh = spawnForCall("sh", ["-c", script], signal);
  let output = "";
  sh.stdout?.on("data", (chunk) => (output += chunk));
  await once(sh.stdout!, "end");
  return output.trim().split(/\s+/).map(Number);
}

/** sh's words for a sleep in a session of its own, which says its pid once
 * it is there (setsid runs sh, which becomes the sleep). */
const SETSID_SLEEP =
  "setsid sh -c 'echo $$; exec sleep 300 >/dev/null 2>&1' 2>/dev/null &";

/** The session of process `pid`, from /proc. */
function session(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[3]);
}

/** Wait up to 2 s for `pids` to stop running: those still running. */
async function gone(pids: number[]): Promise<number[]> {
  const deadline = Date.now() + 2000;
  while (pids.some(running) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return pids.filter(running);
}

/** Stop what a failed test left running. */
const cleanUp = (pids: number[]) => {
  for (const pid of pids.filter(running)) process.kill(pid, "SIGKILL");
};

test(
  "what spawnForCall started stops when the call's signal aborts",
  PROC,
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

test(
  "what a call started with spawnForCall is gone when its result arrives",
  PROC,
  async () => {
    const started: number[] = [];
    const ext = new Extension("t", "1.0");
    ext.tool("bg", "B", { type: "object" }, async (args) => {
      // A signal of its own, not the call's: the call's end is what counts.
      const signal = UNTIL_THE_CALL_ENDS;
      const child = spawnForCall("sleep", ["300"], signal, { stdio: "ignore" });
      // One in the background, one in a session of its own (setsid).
      const script = `sleep 300 >/dev/null 2>&1 & echo $!; ${SETSID_SLEEP}`;
      const [background, setsid] = await echoed(script, signal);
      started.push(child.pid ?? 0, background, setsid);
      assert.deepEqual(started.filter(running), started);
      assert.equal(session(setsid), setsid, "setsid did not make a session");
      if ((args as { fail?: boolean }).fail) throw new Error("it failed");
      return "started";
    });
    try {
      // zot 0.1.62 too, whose calls cannot call zot's tools.
      for (const newer of [true, false]) {
        const zot = Zot.start(ext, { newer });
        for (const fail of [false, true]) {
          started.length = 0;
          const result = await zot.tool("bg", { fail });
          const left = started.filter(running); // right away, no waiting
          assert.equal(result.isError, fail, result.text);
          assert.equal(started.length, 3);
          assert.deepEqual(left, [], `running once ${newer}/${fail} answered`);
        }
        zot.stop();
      }
    } finally {
      cleanUp(started);
    }
  },
);

test(
  "the handler's own time limit stops a program with all it started",
  PROC,
  async () => {
    let pids: number[] = [];
    let left: number[] = [];
    const ext = new Extension("t", "1.0");
    ext.tool("slow", "S", { type: "object" }, async (_, signal) => {
      // sh says both pids, then becomes a sleep, which the time limit stops.
      const script = `${SETSID_SLEEP} echo $$; exec sleep 300 >/dev/null`;
      const sh = spawnForCall("sh", ["-c", script], signal, { timeout: 1000 });
      let output = "";
      sh.stdout?.on("data", (chunk) => (output += chunk));
      const [, exitSignal] = await once(sh, "close");
      pids = output.trim().split(/\s+/).map(Number);
      left = await gone(pids); // the time limit stopped them, not the end
      return exitSignal ? "timed out" : "done";
    });
    const zot = Zot.start(ext);
    try {
      const result = await zot.tool("slow", {});
      assert.equal(result.text, "timed out");
      assert.equal(pids.length, 2);
      assert.deepEqual(left, [], "still running 2 s after the time limit");
    } finally {
      zot.stop();
      cleanUp(pids);
    }
  },
);

test(
  "a program node's spawn starts outlives the call that started it",
  PROC,
  async () => {
    let pid = 0;
    const ext = new Extension("t", "1.0");
    ext.tool("keep", "K", { type: "object" }, () => {
      const options = { detached: true, stdio: "ignore" } as const;
      const child = spawn("sleep", ["300"], options);
      child.unref(); // the call does not wait for it
      pid = child.pid ?? 0;
      return "kept";
    });
    const zot = Zot.start(ext);
    try {
      assert.equal((await zot.tool("keep", {})).text, "kept");
      assert.ok(running(pid), "the call stopped it");
    } finally {
      zot.stop();
      cleanUp([pid]);
    }
  },
);

test(
  "tool_cancel stops what spawnForCall started, and no result is sent",
  PROC,
  async () => {
    let pid = 0;
    const ext = new Extension("t", "1.0");
    ext.tool("wait", "W", { type: "object" }, async (_, signal) => {
      const child = spawnForCall("sleep", ["300"], UNTIL_THE_CALL_ENDS, {
        stdio: "ignore",
      });
      pid = child.pid ?? 0;
      await once(signal, "abort");
      return "too late";
    });
    const zot = Zot.start(ext);
    try {
      const call = zot.startTool("wait", {});
      assert.ok(running(pid), "sleep did not start");
      call.cancel();
      assert.deepEqual(await gone([pid]), [], "running 2 s after tool_cancel");
      assert.ok(await call.noResult(), "the cancelled call was answered");
    } finally {
      zot.stop();
      cleanUp([pid]);
    }
  },
);

test("programs stop by platform: taskkill on Windows, groups elsewhere", () => {
  const { programsFor } = programsForTests;
  for (const platform of ["linux", "darwin", "freebsd"] as const) {
    assert.deepEqual(programsFor(platform).spawning, { detached: true });
  }
  // On Windows detached would give the program a console of its own.
  const windows = programsFor("win32", async () => {});
  assert.deepEqual(windows.spawning, { detached: false, windowsHide: true });
});

/** The process group of process `pid`, from /proc. */
function group(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
}

/** Windows' way of stopping programs, run here: a fake taskkill records its
 * command line, takes `ms` and then kills the program (SIGKILL, and waits
 * for node to reap it) as the real one ends the program's tree. */
function windowsHere(ms = 0) {
  const commands: [string, string[]][] = [];
  const children = new Map<number, ChildProcess>();
  const finished: number[] = [];
  const taskkill = async (command: string, args: readonly string[]) => {
    commands.push([command, [...args]]);
    await new Promise((resolve) => setTimeout(resolve, ms));
    const pid = Number(args[1]);
    const child = children.get(pid);
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await once(child, "exit");
    }
    finished.push(pid);
  };
  const windows = programsForTests.programsFor("win32", taskkill);
  const replaced = programsForTests.use(windows);
  /** spawnForCall with Windows' way, the child known to the fake. */
  const start = (args: string[], signal = UNTIL_THE_CALL_ENDS) => {
    const child = spawnForCall("sleep", args, signal, { stdio: "ignore" });
    children.set(child.pid ?? 0, child);
    return child;
  };
  const restore = () => void programsForTests.use(replaced);
  return { windows, commands, finished, start, restore };
}

test(
  "on Windows a call's program stops with taskkill on its tree before the result",
  PROC,
  async () => {
    const here = windowsHere(200);
    let pid = 0;
    const ext = new Extension("t", "1.0");
    ext.tool("bg", "B", { type: "object" }, () => {
      pid = here.start(["300"]).pid ?? 0;
      // In node's process group: Windows has none to give it.
      assert.equal(group(pid), group(process.pid));
      return "started";
    });
    const zot = Zot.start(ext);
    try {
      assert.equal((await zot.tool("bg", {})).text, "started");
      const taskkill = ["/pid", String(pid), "/T", "/F"];
      assert.deepEqual(here.commands, [[programsForTests.TASKKILL, taskkill]]);
      assert.deepEqual(here.finished, [pid], "the result did not wait for it");
      assert.ok(!running(pid));
    } finally {
      zot.stop();
      here.restore();
      cleanUp([pid]);
    }
  },
);

test(
  "on Windows the exit stops with taskkill each program still running",
  PROC,
  async () => {
    const here = windowsHere();
    const controller = new AbortController();
    const kept = here.start(["300"]);
    const aborted = here.start(["300"], controller.signal);
    const ended = here.start(["0"]);
    const pids = [kept, aborted, ended].map((child) => child.pid ?? 0);
    try {
      await once(ended, "exit");
      controller.abort(); // taskkill for it alone, at once
      await once(aborted, "exit");
      await settle(); // the fake taskkill returns
      assert.deepEqual(here.finished, [aborted.pid]);
      assert.deepEqual(await here.windows.stopAll(), []);
      // Not for the program that ended, nor again for the one stopped.
      const taskkill = (pid?: number) => ["/pid", String(pid), "/T", "/F"];
      assert.deepEqual(here.commands, [
        [programsForTests.TASKKILL, taskkill(aborted.pid)],
        [programsForTests.TASKKILL, taskkill(kept.pid)],
      ]);
      assert.deepEqual(await gone(pids), []);
    } finally {
      here.restore();
      cleanUp(pids);
    }
  },
);

test("taskkill's failures are not errors: the process is gone", async () => {
  const { runQuietly } = programsForTests;
  await runQuietly("sh", ["-c", "echo not found >&2; exit 128"]);
  await runQuietly("no-such-program-for-this-test", ["/pid", "1"]);
});

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

test("tool options are sent when set; a wrong exposure or replay throws", () => {
  const { ext, sent, receive } = fresh();
  const schema = { type: "object" };
  ext.tool("grouped", "G", schema, () => "", {
    namespace: "git",
    namespaceDescription: "Git tools",
    namespaceInstructions: "Read before you write.",
    exposure: "codemode",
    deferred: true,
    replay: "idempotent",
  });
  ext.tool("unset", "U", schema, () => "", {
    namespace: "",
    deferred: false,
  });
  const wrong = { exposure: "everywhere", replay: "always" } as const;
  for (const [option, value] of Object.entries(wrong)) {
    const options = { [option]: value } as object;
    assert.throws(() => ext.tool("bad", "B", schema, () => "", options), {
      message:
        option === "exposure"
          ? 'tool bad: exposure "everywhere" must be one of direct, codemode, deferred, model-only'
          : 'tool bad: replay "always" must be one of never, safe, idempotent, reconcile',
    });
  }
  receive({ type: "hello_ack", capabilities: ["call_tool"] });
  assert.deepEqual(sent, [
    {
      type: "register_tool",
      name: "grouped",
      description: "G",
      schema,
      namespace: "git",
      namespace_description: "Git tools",
      namespace_instructions: "Read before you write.",
      exposure: "codemode",
      deferred: true,
      replay: "idempotent",
    },
    { type: "register_tool", name: "unset", description: "U", schema },
    { type: "ready" },
  ]);
});

test("activate_tools goes out; truncated from callTool does not", async () => {
  const { ext, sent, receive } = fresh();
  const schema = { type: "object" };
  ext.tool("load", "L", schema, () => activatingResult("loaded", ["git_log"]));
  ext.tool("none", "N", schema, () => activatingResult([], []));
  ext.tool("passed", "P", schema, () => ({
    content: [textBlock("cut")],
    is_error: false,
    truncated: true,
  }));
  for (const name of ["load", "none", "passed"]) {
    receive({ type: "tool_call", id: name, name, args: {} });
  }
  await settle();
  assert.deepEqual(sortedById(sent), [
    {
      type: "tool_result",
      id: "load",
      content: [{ type: "text", text: "loaded" }],
      activate_tools: ["git_log"],
      is_error: false,
    },
    { type: "tool_result", id: "none", content: [], is_error: false },
    {
      type: "tool_result",
      id: "passed",
      content: [{ type: "text", text: "cut" }],
      is_error: false,
    },
  ]);
});

/** An extension on a zot that runs its tools, and a tool whose handler
 * calls zot's `read` with its own arguments. */
function caller(ack: object = { capabilities: ["call_tool"] }) {
  const made = fresh();
  const { ext, sent, receive } = made;
  ext.tool("outer", "O", { type: "object" }, (args) =>
    ext.callTool("read", args as Record<string, unknown>),
  );
  receive({ type: "hello_ack", protocol_version: 1, ...ack });
  sent.length = 0;
  /** The call_tool frames sent so far. */
  const calls = () =>
    sent.filter((frame) => frame.type === "call_tool") as {
      id: string;
      parent_id?: string;
    }[];
  return { ...made, calls };
}

test("callTool sends call_tool and returns zot's answer", async () => {
  const { ext, sent, logged, receive, calls } = caller();
  receive({ type: "tool_call", id: "t1", name: "outer", args: { path: "a" } });
  const outside = ext.callTool("bash", { command: "ls" });
  await settle();
  assert.deepEqual(sent, [
    {
      type: "call_tool",
      id: "call-1",
      name: "read",
      args: { path: "a" },
      parent_id: "t1",
    },
    { type: "call_tool", id: "call-2", name: "bash", args: { command: "ls" } },
  ]);
  receive({
    type: "tool_result",
    id: "call-2",
    name: "bash",
    content: { not: "a list" },
    is_error: "yes",
  });
  assert.deepEqual(await outside, { content: [], is_error: false });
  const text = "x".repeat(10);
  receive({
    type: "tool_result",
    id: "call-1",
    name: "read",
    content: [{ type: "text", text }],
    is_error: true,
    truncated: true,
  });
  await settle();
  assert.deepEqual(sent.at(-1), {
    type: "tool_result",
    id: "t1",
    content: [
      { type: "text", text },
      { type: "text", text: "[zot cut this result: over 256 KiB]" },
    ],
    is_error: true,
  });
  const third = ext.callTool("read", {});
  assert.deepEqual(calls()[2], {
    type: "call_tool",
    id: "call-3",
    name: "read",
    args: {},
  });
  receive({ type: "tool_result", id: "call-3", truncated: true });
  assert.deepEqual(await third, {
    content: [{ type: "text", text: "[zot cut this result: over 256 KiB]" }],
    is_error: false,
    truncated: true,
  });
  receive({ type: "tool_result", id: "call-3", content: [] }); // answered
  receive({ type: "tool_result", id: 7 });
  assert.equal(logged.length, 2, logged.join("\n"));
  assert.match(logged[0], /ignored a tool_result for "call-3"/);
});

test("callTool on zot 0.1.62, or with bad arguments, sends nothing", async () => {
  for (const ack of [{}, { capabilities: [] }]) {
    const { sent, receive } = caller(ack); // zot 0.1.62, one without call_tool
    receive({ type: "tool_call", id: "t1", name: "outer", args: {} });
    await settle();
    const old =
      "cannot call read: this zot is too old to run its tools for extensions (update zot)";
    assert.deepEqual(sent, [
      { type: "tool_result", id: "t1", ...errorResult(old) },
    ]);
  }
  const { ext, sent } = caller();
  const bad = errorResult("call_tool requires a name and JSON object args");
  for (const [name, args] of [
    ["", {}],
    ["read", []],
    ["read", null],
    ["read", "{}"],
  ]) {
    const result = await ext.callTool(name as string, args as {});
    assert.deepEqual(result, bad, JSON.stringify([name, args]));
  }
  assert.deepEqual(sent, []);
});

test("a cancelled call cancels the calls of zot's tools it made", async () => {
  const { ext, sent, logged, receive, calls } = caller();
  const mine = new AbortController();
  ext.tool("mine", "M", { type: "object" }, () =>
    ext.callTool("read", {}, mine.signal),
  );
  let later: AbortSignal = mine.signal;
  ext.tool("later", "L", { type: "object" }, (_, signal) => {
    later = signal;
    return new Promise(() => {}); // runs until zot cancels it
  });
  receive({ type: "tool_call", id: "t1", name: "outer", args: {} });
  receive({ type: "tool_call", id: "t2", name: "mine", args: {} });
  receive({ type: "tool_call", id: "t3", name: "later", args: {} });
  await settle();
  // A handler's signal, given from outside the handler, names its call.
  const fromOutside = ext.callTool("read", { x: 1 }, later);
  assert.deepEqual(
    calls().map((frame) => [frame.id, frame.parent_id]),
    [
      ["call-1", "t1"],
      ["call-2", "t2"],
      ["call-3", "t3"],
    ],
  );
  receive({ type: "tool_cancel", id: "t1" }); // zot gave up on t1
  mine.abort(); // the handler's own signal
  receive({ type: "tool_cancel", id: "t3" });
  assert.deepEqual(sent.slice(-3), [
    { type: "call_tool_cancel", id: "call-1" },
    { type: "call_tool_cancel", id: "call-2" },
    { type: "call_tool_cancel", id: "call-3" },
  ]);
  const cancelled = errorResult("the call of read was cancelled");
  assert.deepEqual(await fromOutside, cancelled);
  await settle();
  assert.deepEqual(sent.at(-1), {
    type: "tool_result",
    id: "t2",
    ...cancelled,
  });
  // zot answers the cancelled calls anyway: dropped without a word.
  for (const id of ["call-1", "call-2", "call-3"]) {
    receive({ type: "tool_result", id, content: [] });
  }
  assert.deepEqual(logged, []);
  // Cancelled before it starts: nothing is sent at all.
  const before = sent.length;
  assert.deepEqual(await ext.callTool("read", {}, mine.signal), cancelled);
  assert.equal(sent.length, before);
});

test("callTool gives up after its time, or when zot stops", async () => {
  const { ext, sent, receive } = caller();
  Object.assign(ext, { callLimit: 20 }); // 60 s in earnest
  const late = await ext.callTool("bash", { command: "sleep 99" });
  const text = "zot did not answer the call of bash within 60 s";
  assert.deepEqual(late, errorResult(text));
  assert.deepEqual(sent.at(-1), { type: "call_tool_cancel", id: "call-1" });
  const waiting = ext.callTool("read", {});
  assert.equal(receive({ type: "shutdown" }), false);
  const stopped = "zot stopped before answering the call of read";
  assert.deepEqual(await waiting, errorResult(stopped));
  assert.deepEqual(sent.slice(-2), [
    { type: "call_tool", id: "call-2", name: "read", args: {} },
    { type: "shutdown_ack" },
  ]);
  // Too long for one line: zot would disconnect us, so it fails here.
  const lines: string[] = [];
  const big = new Extension("big", "1.0");
  big.serve(
    (line, written) => {
      lines.push(line);
      written();
    },
    () => {},
  );
  big.handle(
    JSON.stringify({ type: "hello_ack", capabilities: ["call_tool"] }),
  );
  const huge = await big.callTool("write", { text: "x".repeat(4 << 20) });
  assert.equal(huge.is_error, true);
  assert.match(
    (huge.content[0] as { text: string }).text,
    /^the call of write is 4194[0-9]+ bytes, over zot's limit of 4 MiB/,
  );
  const types = lines.map((line) => JSON.parse(line).type);
  assert.deepEqual(types, ["hello", "ready"]); // no call_tool
});

test("toolPrompt runs one of zot's tools, or prompts alone on 0.1.62", async () => {
  assert.deepEqual(toolPrompt("read", { path: "a" }, "Sum it up"), {
    action: "tool_prompt",
    tool_name: "read",
    tool_args: { path: "a" },
    prompt: "Sum it up",
  });
  const needs = { error: "tool_prompt requires a name and prompt" };
  assert.deepEqual(toolPrompt("", {}, "p"), needs);
  assert.deepEqual(toolPrompt("read", {}, ""), needs);
  const object = { error: "tool_prompt args must be a JSON object" };
  assert.deepEqual(toolPrompt("read", [] as never, "p"), object);
  for (const capabilities of [["call_tool"], undefined]) {
    const { ext, sent, logged, receive } = fresh();
    ext.command("c", "C", () => toolPrompt("read", { path: "a" }, "Sum"));
    receive({ type: "hello_ack", capabilities });
    sent.length = 0;
    receive({ type: "command_invoked", id: "1", name: "c", args: "" });
    await settle();
    const type = "command_response";
    if (capabilities) {
      assert.deepEqual(sent, [
        { type, id: "1", ...toolPrompt("read", { path: "a" }, "Sum") },
      ]);
      assert.deepEqual(logged, []);
    } else {
      assert.deepEqual(sent, [
        { type, id: "1", action: "prompt", prompt: "Sum" },
      ]);
      const said =
        /zot 0.1.62 cannot run a tool from a command: sent the prompt alone/;
      assert.match(logged[0], said);
    }
  }
});

test("intercepts refuse, rewrite a call, abort a turn, change a message", async () => {
  const { ext, sent, logged, receive } = fresh();
  ext.interceptToolCall((tool, args) => {
    const { command } = args as { command: string };
    if (command === "rm") return "no rm";
    if (command === "crash") throw new Error("guard broke");
    if (command === "ls") return { modifiedArgs: { command: "ls -a" } };
    if (command === "odd") return { modifiedArgs: ["x"] as never };
    if (command === "both") return { block: true, modifiedArgs: {} };
    return tool === "bash" ? null : "";
  });
  ext.interceptTurnStart(async (step) => (step > 2 ? `step ${step}` : null));
  ext.interceptAssistantMessage((text) => {
    if (text === "secret") return { block: true, reason: "hidden" };
    if (text === "same") return "same";
    if (text === "empty") return "";
    if (text === "decide") return { replaceText: "decided" };
    if (text === "crash") throw new Error("no words");
    return text === "keep" ? null : text.toUpperCase();
  });
  receive({ type: "hello_ack", capabilities: ["call_tool"] });
  assert.deepEqual(sent.slice(0, 1), [
    {
      type: "subscribe",
      events: [],
      intercept: ["tool_call", "turn_start", "assistant_message"],
    },
  ]);
  sent.length = 0;
  const asks: [string, object][] = [
    ["tool_call", { tool_name: "bash", tool_args: { command: "rm" } }],
    ["tool_call", { tool_name: "bash", tool_args: { command: "crash" } }],
    ["tool_call", { tool_name: "bash", tool_args: { command: "ls" } }],
    ["tool_call", { tool_name: "bash", tool_args: { command: "odd" } }],
    ["tool_call", { tool_name: "bash", tool_args: { command: "both" } }],
    ["tool_call", { tool_name: "read", tool_args: { command: "x" } }],
    ["turn_start", { step: 1 }],
    ["turn_start", { step: 3 }],
    ["assistant_message", { text: "secret" }],
    ["assistant_message", { text: "same" }],
    ["assistant_message", { text: "empty" }],
    ["assistant_message", { text: "decide" }],
    ["assistant_message", { text: "crash" }],
    ["assistant_message", { text: "keep" }],
    ["assistant_message", { text: "hi" }],
  ];
  asks.forEach(([event, fields], n) => {
    const id = String(n + 10);
    receive({ type: "event_intercept", id, event, ...fields });
  });
  await settle();
  const type = "event_intercept_response";
  const allow = { type, block: false };
  assert.deepEqual(sortedById(sent), [
    { type, id: "10", block: true, reason: "no rm" },
    { type, id: "11", block: true, reason: "t failed: guard broke" },
    { ...allow, id: "12", modified_args: { command: "ls -a" } },
    { ...allow, id: "13" },
    { type, id: "14", block: true, reason: "" },
    { ...allow, id: "15" },
    { ...allow, id: "16" },
    { type, id: "17", block: true, reason: "step 3" },
    { type, id: "18", block: true, reason: "hidden" },
    { ...allow, id: "19" },
    { ...allow, id: "20" },
    { ...allow, id: "21", replace_text: "decided" },
    { type, id: "22", block: true, reason: "t failed: no words" },
    { ...allow, id: "23" },
    { ...allow, id: "24", replace_text: "HI" },
  ]);
  assert.match(logged.join("\n"), /modifiedArgs is not a JSON object/);
});

test("the fake zot answers callTool as the test says, and sends intercepts", async () => {
  const make = () => {
    const ext = new Extension("t", "1.0");
    ext.tool("outer", "O", { type: "object" }, (args) => {
      const { tool } = args as { tool: string };
      return ext.callTool(tool, { path: "a" });
    });
    ext.interceptTurnStart((step) => (step > 1 ? "one turn only" : null));
    ext.interceptAssistantMessage((text) => text.replace("secret", "***"));
    return ext;
  };
  const zot = Zot.start(make(), {
    tools: {
      read: "text of a",
      bash: errorResult("denied"),
      glob: async (args) => ({ text: JSON.stringify(args), truncated: true }),
    },
  });
  const texts: string[] = [];
  for (const tool of ["read", "bash", "glob", "write"]) {
    const { text, isError } = await zot.tool("outer", { tool });
    texts.push(`${isError ? "error" : "ok"}: ${text}`);
  }
  assert.deepEqual(texts, [
    "ok: text of a",
    "error: denied",
    'ok: {"path":"a"}[zot cut this result: over 256 KiB]',
    "error: this test's zot has no answer for its tool write",
  ]);
  assert.deepEqual(
    zot.called.map(({ name, args, parentId }) => [name, args, parentId]),
    ["read", "bash", "glob", "write"].map((name, n) => [
      name,
      { path: "a" },
      `test-${n + 1}`,
    ]),
  );
  assert.equal(await zot.turnStart(1), undefined);
  assert.equal(await zot.turnStart(2), "one turn only");
  const { replace_text } = await zot.assistantMessage("a secret");
  assert.equal(replace_text, "a ***");
  zot.stop();
  const old = Zot.start(make(), { newer: false, tools: { read: "x" } });
  const result = await old.tool("outer", { tool: "read" });
  assert.match(result.text, /^cannot call read: this zot is too old/);
  assert.deepEqual(old.called, []);
  old.stop();
});
