// Unit tests of src/conventions.ts: CONVENTIONS.md in the system prompt,
// through a fake zot (npm test).
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { Zot } from "../zot/testing.js";
import { ext } from "./extension.js";

const zot = Zot.start(ext); // runs the extension as zot does
after(() => zot.stop());

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
