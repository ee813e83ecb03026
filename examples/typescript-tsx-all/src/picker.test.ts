// Unit tests of src/picker.ts: /demo-ext-pick and its panel, through a
// fake zot (npm test).
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { Zot } from "../zot/testing.js";
import { ext } from "./extension.js";

const zot = Zot.start(ext); // runs the extension as zot does
after(() => zot.stop());

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

test("an older zot (0.1.62) takes no submit: the choice is shown", async () => {
  zot.stop(); // this test is the last: it plays the older zot from here
  const old = Zot.start(ext, { newer: false });
  after(() => old.stop());
  const reply = await old.command(PICKER);
  old.key(reply.panel?.id ?? "", "enter");
  await old.next("panel_close");
  assert.match(String((await old.next("notify")).message), /^Chosen: /);
});
