// The audit log: zot's lifecycle events, one JSON line each, appended to
// NAME-events.jsonl in zot's data folder. src/extension.ts adds it to the
// extension (register).
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import type { EventFrame, Extension } from "../zot/runtime.js";

export const EVENTS = [
  "session_start",
  "turn_start",
  "tool_call",
  "turn_end",
  "assistant_message",
];

/** Record EVENTS in `ext`'s audit log. */
export function register(ext: Extension): void {
  ext.on(EVENTS, (frame) => recordEvent(ext, frame));
}

/** Append one JSON line per event to the audit log in zot's data_dir. */
export function recordEvent(ext: Extension, frame: EventFrame): void {
  const entry = { ...frame, received_at: new Date().toISOString() };
  const path = join(ext.dataDir(), `${ext.name}-events.jsonl`);
  appendFileSync(path, JSON.stringify(entry) + "\n", "utf8");
  ext.log(`event ${frame.event}`);
}
