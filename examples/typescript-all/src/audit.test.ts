// Unit tests of src/audit.ts: zot's events in the audit log, through a fake
// zot (npm test).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { Zot } from "../zot/testing.js";
import { ext } from "./extension.js";

const zot = Zot.start(ext); // runs the extension as zot does
after(() => zot.stop());

const EVENT = "session_start";

test("events are appended to the audit log in data_dir", () => {
  zot.event(EVENT, { step: 1 });
  const log = join(zot.dataDir, `${ext.name}-events.jsonl`);
  const lines = readFileSync(log, "utf8").trimEnd().split("\n");
  const event = JSON.parse(lines[lines.length - 1]);
  assert.deepEqual([event.event, event.step], [EVENT, 1]);
  assert.match(event.received_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
});
