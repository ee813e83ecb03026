// demo-ext: A zot extension
//
// A zot extension: zot starts it and talks to it in JSON lines over
// stdin/stdout. The files in src/ are yours: each handler is registered on
// `ext`. The code in zot/ speaks the protocol; copier update brings its
// fixes. See README.md for how to test a change.
import {
  type CommandReply,
  Extension,
  InvalidArguments,
} from "../zot/runtime.js";

export const NAME = "demo-ext";
export const VERSION = "0.1.0";
export const ext = new Extension(NAME, VERSION);

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
  // stops early once signal.aborted (zot has given up on the call), or
  // passes signal on to fetch().
  return uppercase ? text.toUpperCase() : text;
}

ext.tool(TOOL, TOOL_DESCRIPTION, TOOL_SCHEMA, runTool);
