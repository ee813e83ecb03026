// The project's conventions in the system prompt: before each agent run,
// CONVENTIONS.md of the project zot works in is added to it. src/extension.ts
// adds it to the extension (register).
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import type { EventIntercept, Extension } from "../zot/runtime.js";

export const CONVENTIONS_FILE = "CONVENTIONS.md";
/** The longest system prompt zot takes, in UTF-8 bytes (1 MiB). */
export const MAX_PROMPT = 1048576;

/** Add the project's CONVENTIONS_FILE to `ext`'s system prompts. */
export function register(ext: Extension): void {
  ext.interceptBeforeAgentStart((frame) => addConventions(ext, frame));
}

/** The system prompt with the project's CONVENTIONS.md added, or null to
 * keep it as it is. */
export function addConventions(
  ext: Extension,
  frame: EventIntercept,
): string | null {
  const { cwd, system_prompt } = frame;
  const folder = typeof cwd === "string" && cwd ? cwd : ext.host.cwd;
  if (!folder) return null;
  const text = readStart(ext, join(folder, CONVENTIONS_FILE), MAX_PROMPT);
  if (!text?.trim()) return null;
  const base = typeof system_prompt === "string" ? system_prompt : "";
  const head = `${base}\n\n## Project conventions (${CONVENTIONS_FILE})\n\n`;
  const room = MAX_PROMPT - Buffer.byteLength(head);
  if (room < 0) {
    ext.log("kept the system prompt: too long to add the conventions");
    return null;
  }
  return head + cut(text, room);
}

/** The first `size` bytes of a regular file as text, or null. */
function readStart(ext: Extension, path: string, size: number): string | null {
  try {
    if (!statSync(path).isFile()) return null; // a FIFO would block
    const fd = openSync(path, "r");
    try {
      const buffer = Buffer.alloc(size);
      let length = 0;
      while (length < size) {
        const read = readSync(fd, buffer, length, size - length, null);
        if (!read) break;
        length += read;
      }
      return buffer.toString("utf8", 0, length); // bad bytes become U+FFFD
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === "ENOENT";
    if (!missing) ext.log(`could not read ${path}: ${err}`);
    return null;
  }
}

/** `text` cut to at most `bytes` UTF-8 bytes, between two characters. */
export function cut(text: string, bytes: number): string {
  const encoded = Buffer.from(text);
  if (encoded.length <= bytes) return text;
  let end = bytes;
  while (end > 0 && (encoded[end] & 0xc0) === 0x80) end--; // inside one
  return encoded.toString("utf8", 0, end);
}
