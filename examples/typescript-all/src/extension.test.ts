// Unit tests of the handlers in src/extension.ts: npm test (which then runs
// the tests of the template's code in zot/). ./smoke-test checks the whole
// extension the way zot runs it.
import assert from "node:assert/strict";
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
