// Unit tests of src/picker.ts: /demo-ext-pick and its panel, through a
// fake zot (npm test).
import assert from "node:assert/strict";
import { after, type TestContext, test } from "node:test";
import { type Reply, Zot } from "../zot/testing.js";
import { ext } from "./extension.js";
import { items, PICK_EMPTY, pickerLines, source } from "./picker.js";

const zot = Zot.start(ext); // runs the extension as zot does
after(() => zot.stop());

const PICKER = "demo-ext-pick";
const ITEMS = ["one", "two", "three", "four"]; // what items() gives in most tests

/** Runs the picker's command on `zot` with items() giving `found` (throwing
 * it, if an Error): the answer. items() gets zot's project folder. */
async function pickFrom(
  t: TestContext,
  found: string[] | Error,
  on = zot,
): Promise<Reply> {
  const listed = t.mock.method(source, "items", () => {
    if (found instanceof Error) throw found;
    return found;
  });
  const reply = await on.command(PICKER);
  const given = listed.mock.calls.map((call) => call.arguments);
  listed.mock.restore();
  assert.deepEqual(given, [[on.project]]);
  return reply;
}

/** Opens the picker on ITEMS: the id of its panel. */
async function openPicker(t: TestContext): Promise<string> {
  const reply = await pickFrom(t, ITEMS);
  assert.equal(reply.action, "open_panel");
  assert.deepEqual(reply.panel?.lines, pickerLines(ITEMS, 0));
  return reply.panel?.id ?? "";
}

test("the picker lists the items of zot's project folder", async (t) => {
  const reply = await pickFrom(t, ["main.ts", "README.md"]);
  assert.deepEqual(reply.panel?.lines, ["› main.ts", "  README.md"]);
});

test("the picker's keys move the selection and enter sends it", async (t) => {
  const id = await openPicker(t);
  // [a key, its text, the selection after it]
  const moves: [string, string, number][] = [
    ["down", "", 1], ["rune", "j", 2], ["end", "", 3], ["down", "", 3],
    ["up", "", 2], ["rune", "k", 1], ["home", "", 0], ["pagedown", "", 3],
    ["pageup", "", 0], ["down", "", 1],
  ]; // prettier-ignore
  for (const [key, text, selected] of moves) {
    zot.key(id, key, text);
    const render = await zot.next("panel_render");
    assert.deepEqual(render.lines, pickerLines(ITEMS, selected));
  }
  zot.key(id, "tab");
  assert.ok(await zot.quiet());
  zot.key(id, "enter");
  assert.equal((await zot.next("panel_close")).panel_id, id);
  assert.equal((await zot.next("submit")).text, ITEMS[1]);
});

test("esc and q close the picker", async (t) => {
  for (const key of ["esc", "rune:q"]) {
    const [name, text = ""] = key.split(":");
    const id = await openPicker(t);
    zot.key(id, name, text);
    assert.equal((await zot.next("panel_close")).panel_id, id);
  }
});

test("with nothing to pick, a note and no panel", async (t) => {
  const reply = await pickFrom(t, []);
  assert.equal(reply.action, "noop");
  assert.equal(reply.panel, undefined);
  const note = await zot.next("notify");
  assert.deepEqual([note.level, note.message], ["info", PICK_EMPTY]);
});

test("a failure of items() is the error zot shows", async (t) => {
  const reply = await pickFrom(t, new Error("not a git repository"));
  assert.match(reply.error ?? "", /not a git repository/);
  assert.equal(reply.panel, undefined);
});

test("items() gives texts", () => {
  // in the fake zot's project folder, empty: put there what yours reads
  const found = items(zot.project);
  assert.ok(found.every((item) => typeof item === "string"));
});

test("an older zot (0.1.62) takes no submit: the choice is shown", async (t) => {
  zot.stop(); // this test is the last: it plays the older zot from here
  const old = Zot.start(ext, { newer: false });
  after(() => old.stop());
  const reply = await pickFrom(t, ITEMS, old);
  old.key(reply.panel?.id ?? "", "enter");
  await old.next("panel_close");
  const note = await old.next("notify");
  assert.match(String(note.message), /^Chosen: one /);
});
