// Unit tests of src/ask.ts: the tool demo_ext_confirm and its panel, through a
// fake zot (npm test).
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { Zot } from "../zot/testing.js";
import { ext } from "./extension.js";

const zot = Zot.start(ext); // runs the extension as zot does
after(() => zot.stop());

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

test("an older zot (0.1.62) takes no panel a tool opens", async () => {
  zot.stop(); // this test is the last: it plays the older zot from here
  const old = Zot.start(ext, { newer: false });
  after(() => old.stop());
  const result = await old.tool(ASK_TOOL, { action: "Deploy." });
  assert.ok(result.isError && result.text.includes("ask in the chat instead"));
});
