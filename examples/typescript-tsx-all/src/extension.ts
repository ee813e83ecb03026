// demo-ext: A zot extension
//
// A zot extension: zot starts it and talks to it in JSON lines over
// stdin/stdout. This file is yours: each handler below is registered on
// `ext`. The code in zot/ speaks the protocol and holds the guard (your rules
// go in guard-policy.json); copier update brings its fixes. See README.md for
// how to test a change.
import {
  appendFileSync,
  closeSync,
  openSync,
  readSync,
  statSync,
} from "node:fs";
import { join } from "node:path";
import {
  checkToolCall,
  refusalMessage,
  warnIfRulesUnusable,
} from "../zot/guard/guard.js";
import {
  type CommandReply,
  errorResult,
  type EventFrame,
  type EventIntercept,
  Extension,
  InvalidArguments,
  markdownBlock,
  structuredResult,
  type ToolResult,
} from "../zot/runtime.js";

export const NAME = "demo-ext";
export const VERSION = "0.1.0";
export const ext = new Extension(NAME, VERSION);

/** pick-1, ask-2, ...: one count for every panel this process opens. */
let panelsOpened = 0;
const newPanelId = (kind: string) => `${kind}-${++panelsOpened}`;

// --- The slash command ------------------------------------------------------

export const COMMAND = "demo-ext";
export const COMMAND_HELP = "A zot extension";

/** Answer `/COMMAND ARGS` with a prompt, insert, display or noop action. */
export function runCommand(args: string): CommandReply {
  const text = args.trim();
  if (!text) {
    // "display" shows a note in the chat without calling the model.
    const usage = `Usage: /${COMMAND} TEXT\n\nSends TEXT to the model.`;
    return { action: "display", display: usage };
  }
  // "prompt" submits the text as a new user message.
  const prompt = `Answer briefly and concretely:\n\n${text}`;
  return { action: "prompt", prompt };
}

ext.command(COMMAND, COMMAND_HELP, runCommand);

// --- The tool the model calls -----------------------------------------------

export const TOOL = "demo_ext";
export const TOOL_DESCRIPTION =
  "Echo the given text back, optionally in upper case.";
export const TOOL_SCHEMA = {
  type: "object",
  properties: {
    text: { type: "string", description: "The text to echo back." },
    uppercase: { type: "boolean", description: "Return it in upper case." },
  },
  required: ["text"],
};

/** What TOOL_SCHEMA describes: the runtime answers a call whose arguments
 * do not fit it with an error for the model, and never calls runTool. */
export interface ToolArgs {
  text: string;
  uppercase?: boolean;
}

/** Run the tool and return its text result; async, so it may take its time. */
export async function runTool({ text, uppercase }: ToolArgs): Promise<string> {
  if (!text.trim()) throw new InvalidArguments('"text" must not be blank');
  // A long-running tool takes a second parameter, signal: AbortSignal, and
  // stops early once signal.aborted (zot has given up on the call; the ask
  // tool below does), or passes signal on to fetch().
  return uppercase ? text.toUpperCase() : text;
}

ext.tool(TOOL, TOOL_DESCRIPTION, TOOL_SCHEMA, runTool);

// --- Lifecycle events -------------------------------------------------------

export const EVENTS = [
  "session_start",
  "turn_start",
  "tool_call",
  "turn_end",
  "assistant_message",
];

/** Append one JSON line per event to the audit log in zot's data_dir. */
export function recordEvent(frame: EventFrame): void {
  const entry = { ...frame, received_at: new Date().toISOString() };
  const path = join(ext.dataDir(), `${NAME}-events.jsonl`);
  appendFileSync(path, JSON.stringify(entry) + "\n", "utf8");
  ext.log(`event ${frame.event}`);
}

ext.on(EVENTS, recordEvent);

// --- The guard: tool calls refused before they run --------------------------

/** Why a tool call must be refused, or null to let it run. */
export function guard(toolName: unknown, toolArgs: unknown): string | null {
  // zot/guard/ asks the rules of guard-rules.json and guard-policy.json;
  // hello_ack's cwd is the user's project, where deletes are allowed.
  const refusal = checkToolCall(toolName, toolArgs, ext.host.cwd);
  if (!refusal) return null;
  const message = refusalMessage(NAME, refusal);
  // Tell the user too, once zot has the refusal (setImmediate: after it).
  setImmediate(() => ext.notify("warn", message));
  return message;
}

ext.interceptToolCall(guard);

// Read the rules before zot asks; if they cannot be used, say so at once.
ext.onHello(() => warnIfRulesUnusable(NAME, ext));

// --- The picker: a panel to pick a prompt from ------------------------------

export const PANEL_COMMAND = "demo-ext-pick";
export const PANEL_HELP = "Pick a prompt from a list and send it to the model";
export const PROMPTS = [
  "Explain how this project is organised.",
  "Review the uncommitted changes for bugs.",
  "Write tests for the code I changed last.",
  "List the TODO comments and suggest which to do first.",
];
const PICK_TITLE = "Pick a prompt";
const PICK_FOOTER = "↑/↓ move · enter send · esc close";

/** The picker's lines, the selected prompt marked. */
export function pickerLines(selected: number): string[] {
  return PROMPTS.map((prompt, i) => (i === selected ? "› " : "  ") + prompt);
}

/** `/PANEL_COMMAND`: open the picker; its keys move, send or close. */
export function openPicker(): CommandReply {
  const id = newPanelId("pick");
  const last = PROMPTS.length - 1;
  let selected = 0;
  const onKey = (key: string, text: string) => {
    switch (key === "rune" ? text : key) {
      case "up":
      case "k":
        selected = Math.max(selected - 1, 0);
        break;
      case "down":
      case "j":
        selected = Math.min(selected + 1, last);
        break;
      case "home":
      case "pageup":
        selected = 0;
        break;
      case "end":
      case "pagedown":
        selected = last;
        break;
      case "enter":
        ext.closePanel(id);
        sendPrompt(PROMPTS[selected]);
        return;
      case "esc":
      case "q":
        ext.closePanel(id);
        return;
      default:
        return;
    }
    ext.renderPanel(id, PICK_TITLE, pickerLines(selected), PICK_FOOTER);
  };
  const lines = pickerLines(selected);
  const panel = { id, title: PICK_TITLE, lines, footer: PICK_FOOTER };
  return ext.panelReply(panel, { onKey });
}

/** Send the chosen prompt to the model; an older zot cannot, the user can. */
function sendPrompt(prompt: string): void {
  if (ext.newerHost) {
    ext.submit(prompt);
  } else {
    const note = `Chosen: ${prompt} (this zot cannot submit it: paste it yourself)`;
    ext.notify("info", note);
  }
}

ext.command(PANEL_COMMAND, PANEL_HELP, openPicker, { panels: true });

// --- The ask tool: the model asks the user to approve an action -------------

export const ASK_TOOL = "demo_ext_confirm";
export const ASK_DESCRIPTION =
  "Ask the user to approve an action before you take it. Returns whether they approved.";
export const ASK_SCHEMA = {
  type: "object",
  properties: {
    action: {
      type: "string",
      description: "What you want to do, in one sentence.",
    },
  },
  required: ["action"],
};
export const ASK_OUTPUT_SCHEMA = {
  type: "object",
  properties: { approved: { type: "boolean" }, action: { type: "string" } },
  required: ["approved", "action"],
};
export const OLD_ZOT =
  "this zot cannot ask the user from a tool (it needs a newer zot): ask in the chat instead";
const ASK_TITLE = "Approve?";
const ASK_FOOTER = "↑/↓ move · enter choose · y/n · esc decline";

/** The approval panel's lines, the selected choice marked. */
export function askLines(action: string, approve: boolean): string[] {
  const mark = (selected: boolean) => (selected ? "› " : "  ");
  return [action, "", mark(approve) + "Approve", mark(!approve) + "Decline"];
}

/** Ask the user to approve `action` in a panel, and answer with their choice. */
export async function askUser(
  { action }: { action: string },
  signal: AbortSignal,
): Promise<ToolResult> {
  if (!action.trim()) throw new InvalidArguments('"action" must not be blank');
  if (!ext.newerHost) return errorResult(OLD_ZOT); // it opens no panel
  ext.notify("info", `${NAME} is waiting for your answer`);
  const approved = await approval(action, signal);
  ext.clearNotes();
  const answer = approved
    ? `**Approved** by the user: ${action}`
    : `**Declined** by the user: ${action}. Do not do it; ask the user what to do instead.`;
  return structuredResult([markdownBlock(answer)], { approved, action });
}

/** Open the approval panel; resolves with the user's choice (false when
 * zot cancels the call: it takes no result then). */
function approval(action: string, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const id = newPanelId("ask");
    let approve = true;
    const decide = (approved: boolean) => {
      signal.removeEventListener("abort", cancel);
      ext.closePanel(id); // unless zot closed it
      resolve(approved);
    };
    const cancel = () => decide(false);
    signal.addEventListener("abort", cancel);
    const choose = (approved: boolean) => {
      approve = approved;
      ext.renderPanel(id, ASK_TITLE, askLines(action, approve), ASK_FOOTER);
    };
    const onKey = (key: string, text: string) => {
      switch (key === "rune" ? text : key) {
        case "up":
        case "k":
          return choose(true);
        case "down":
        case "j":
          return choose(false);
        case "enter":
          return decide(approve);
        case "y":
          return decide(true);
        case "n":
        case "esc":
        case "q":
          return decide(false);
      }
    };
    const lines = askLines(action, approve);
    const panel = { id, title: ASK_TITLE, lines, footer: ASK_FOOTER };
    ext.openPanel(panel, { onKey, onClose: () => decide(false) });
  });
}

ext.tool(ASK_TOOL, ASK_DESCRIPTION, ASK_SCHEMA, askUser, {
  interactive: true, // it waits for the user: no time limit
  outputSchema: ASK_OUTPUT_SCHEMA,
});

// --- The system prompt: the project's conventions, in every run -------------

export const CONVENTIONS_FILE = "CONVENTIONS.md";
/** The longest system prompt zot takes, in UTF-8 bytes (1 MiB). */
export const MAX_PROMPT = 1048576;

/** The system prompt with the project's CONVENTIONS.md added, or null to
 * keep it as it is. */
export function addConventions(frame: EventIntercept): string | null {
  const { cwd, system_prompt } = frame;
  const folder = typeof cwd === "string" && cwd ? cwd : ext.host.cwd;
  if (!folder) return null;
  const text = readStart(join(folder, CONVENTIONS_FILE), MAX_PROMPT);
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
function readStart(path: string, size: number): string | null {
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

ext.interceptBeforeAgentStart(addConventions);
