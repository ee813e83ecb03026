// Unit tests of the handlers in src/extension.ts: npm test (which then runs
// the tests of the template's code in zot/). ./smoke-test checks the whole
// extension the way zot runs it.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { Zot } from "../zot/testing.js";
import { ext } from "./extension.js";

// zot plays zot for the tests: it runs the extension as zot does, and the
// tests call its commands and tools by the names zot knows them by.
const zot = Zot.start(ext);
after(() => zot.stop());

const COMMAND = "demo-ext";

test("the command prompts with its text", async () => {
  const reply = await zot.command(COMMAND, "  why is the sky blue?  ");
  assert.equal(reply.action, "prompt");
  assert.ok(reply.prompt?.includes("why is the sky blue?"), reply.prompt);
});

test("the command shows its usage without text", async () => {
  for (const args of ["", "   ", "\t\n"]) {
    const reply = await zot.command(COMMAND, args);
    assert.equal(reply.action, "display");
    assert.ok(reply.display?.startsWith(`Usage: /${COMMAND}`), reply.display);
  }
});

const TOOL = "demo_ext";

test("the tool echoes its text, upper-cased on request", async () => {
  const text = 'héllo 😀 "q" \\ $(x)';
  assert.equal((await zot.tool(TOOL, { text })).text, text);
  const upper = await zot.tool(TOOL, { text: "abc", uppercase: true });
  assert.deepEqual([upper.text, upper.isError], ["ABC", false]);
});

test("the tool refuses bad arguments with a helpful error", async () => {
  // [arguments the model sent, what the error must tell it]
  const cases: [unknown, string][] = [
    [{}, '"text" is required'],
    [{ text: " " }, '"text" must not be blank'],
    [{ text: 42 }, '"text" must be a string'],
    [{ text: "x", uppercase: "yes" }, '"uppercase" must be true or false'],
    [[1, 2], "the arguments must be an object"],
  ];
  for (const [args, hint] of cases) {
    const result = await zot.tool(TOOL, args);
    assert.ok(result.isError, JSON.stringify(args));
    assert.ok(result.text.startsWith("invalid arguments: "), result.text);
    assert.ok(result.text.includes(hint), result.text);
  }
});

const EVENT = "session_start";

test("events are appended to the audit log in data_dir", () => {
  zot.event(EVENT, { step: 1 });
  const log = join(zot.dataDir, `${ext.name}-events.jsonl`);
  const lines = readFileSync(log, "utf8").trimEnd().split("\n");
  const event = JSON.parse(lines[lines.length - 1]);
  assert.deepEqual([event.event, event.step], [EVENT, 1]);
  assert.match(event.received_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
});

test("the guard refuses dangerous commands and tells the user", async () => {
  const reason = await zot.intercept("bash", { command: "rm -rf /" });
  assert.ok(reason?.startsWith(`refused by ${ext.name} (`), reason);
  const note = await zot.next("notify");
  assert.deepEqual([note.level, note.message], ["warn", reason]);
});

test("the guard allows everyday commands", async () => {
  assert.equal(await zot.intercept("bash", { command: "ls -la" }), undefined);
  const cleanup = { command: "rm -rf node_modules" };
  assert.equal(await zot.intercept("bash", cleanup), undefined);
  assert.equal(await zot.intercept("read", { path: "/etc/hosts" }), undefined);
});

const PICKER = "demo-ext-pick";
const PICKS = [
  "Explain how this project is organised.",
  "Review the uncommitted changes for bugs.",
  "Write tests for the code I changed last.",
  "List the TODO comments and suggest which to do first.",
];
const pickerLines = (selected: number) =>
  PICKS.map((pick, i) => (i === selected ? "› " : "  ") + pick);

/** Runs the picker's command: the id of the panel it opens. */
async function openPicker(): Promise<string> {
  const reply = await zot.command(PICKER);
  assert.equal(reply.action, "open_panel");
  assert.deepEqual(reply.panel?.lines, pickerLines(0));
  return reply.panel?.id ?? "";
}

test("the picker's keys move the selection and enter sends it", async () => {
  const id = await openPicker();
  // [a key, its text, the selection after it]
  const moves: [string, string, number][] = [
    ["down", "", 1], ["rune", "j", 2], ["end", "", 3], ["down", "", 3],
    ["up", "", 2], ["rune", "k", 1], ["home", "", 0], ["pagedown", "", 3],
    ["pageup", "", 0], ["down", "", 1],
  ]; // prettier-ignore
  for (const [key, text, selected] of moves) {
    zot.key(id, key, text);
    const render = await zot.next("panel_render");
    assert.deepEqual(render.lines, pickerLines(selected));
  }
  zot.key(id, "tab");
  assert.ok(await zot.quiet());
  zot.key(id, "enter");
  assert.equal((await zot.next("panel_close")).panel_id, id);
  assert.equal((await zot.next("submit")).text, PICKS[1]);
});

test("esc and q close the picker", async () => {
  for (const key of ["esc", "rune:q"]) {
    const [name, text = ""] = key.split(":");
    const id = await openPicker();
    zot.key(id, name, text);
    assert.equal((await zot.next("panel_close")).panel_id, id);
  }
});

const ASK_TOOL = "demo_ext_confirm";

/** Calls the ask tool for `action`: the call, and the id of its panel. */
async function ask(action: string) {
  const call = zot.startTool(ASK_TOOL, { action });
  assert.equal((await zot.next("notify")).level, "info");
  const { panel } = await zot.next("open_panel");
  const { id, lines } = panel as { id: string; lines: string[] };
  assert.deepEqual(lines, [action, "", "› Approve", "  Decline"]);
  return { call, id };
}

test("the ask tool answers with the user's choice", async () => {
  // [keys (a letter as "rune:y"), approved]
  const answers: [string[], boolean][] = [
    [["enter"], true],
    [["down", "enter"], false],
    [["rune:y"], true],
    [["rune:n"], false],
    [["esc"], false],
  ];
  for (const [keys, approved] of answers) {
    const { call, id } = await ask("Delete the build folder.");
    for (const key of keys) {
      const [name, text = ""] = key.split(":");
      zot.key(id, name, text);
    }
    const { structuredContent } = await call.result();
    const action = "Delete the build folder.";
    assert.deepEqual(structuredContent, { approved, action }, keys.join(" "));
  }
});

test("a call zot cancels closes its panel and sends no result", async () => {
  const { call, id } = await ask("Deploy.");
  call.cancel();
  assert.equal((await zot.next("panel_close")).panel_id, id);
  assert.ok(await call.noResult());
});

test("the ask tool refuses bad arguments", async () => {
  const cases: [unknown, string][] = [
    [{}, '"action" is required'],
    [{ action: 1 }, '"action" must be a string'],
    [{ action: " " }, '"action" must not be blank'],
  ];
  for (const [args, hint] of cases) {
    const result = await zot.tool(ASK_TOOL, args);
    assert.equal(result.text, `invalid arguments: ${hint}`);
  }
});

const HEADING = "\n\n## Project conventions (CONVENTIONS.md)\n\n";

test("CONVENTIONS.md of the project is added to the system prompt", async () => {
  assert.equal(await zot.beforeAgentStart("Base."), undefined); // no file
  const file = join(zot.project, "CONVENTIONS.md");
  writeFileSync(file, " \n\t\n");
  assert.equal(await zot.beforeAgentStart("Base."), undefined); // blank
  writeFileSync(file, "Use tabs.\n");
  const prompt = await zot.beforeAgentStart("Base.");
  assert.equal(prompt, `Base.${HEADING}Use tabs.\n`);
});

test("the system prompt stays within 1 MiB", async () => {
  writeFileSync(join(zot.project, "CONVENTIONS.md"), "é".repeat(600000));
  const prompt = (await zot.beforeAgentStart("b".repeat(1000))) ?? "";
  const size = Buffer.byteLength(prompt);
  assert.ok(size <= 1048576 && size >= 1048575, String(size));
  assert.ok(prompt.endsWith("é")); // cut between two characters
});

test("an older zot (0.1.62) takes no panel a tool opens and no submit", async () => {
  zot.stop(); // this test is the last: it plays the older zot from here
  const old = Zot.start(ext, { newer: false });
  after(() => old.stop());
  const reply = await old.command(PICKER);
  old.key(reply.panel?.id ?? "", "enter");
  await old.next("panel_close");
  assert.match(String((await old.next("notify")).message), /^Chosen: /);
  const result = await old.tool(ASK_TOOL, { action: "Deploy." });
  assert.ok(result.isError && result.text.includes("ask in the chat instead"));
});
