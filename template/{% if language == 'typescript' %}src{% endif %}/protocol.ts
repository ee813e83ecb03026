// The zot extension protocol, in one place: the frames as types, the one
// writer, and the read loop that hands each request to src/extension.ts.
// You rarely need to edit this file; src/extension.ts is the one to change.
//
// Wire format: one JSON object per line. zot writes to stdin, we answer on
// stdout (nothing else may go there) and log to stderr (zot keeps it in
// ext-NAME.log).
import { stderr, stdin, stdout } from "node:process";

// --- Frames zot sends -------------------------------------------------------

export interface HelloAck {
  type: "hello_ack";
  protocol_version?: number;
  capabilities?: string[];
  zot_version?: string;
  provider?: string;
  model?: string;
  /** The user's project folder (this process runs in the extension's). */
  cwd?: string;
  extension_dir?: string;
  data_dir?: string;
}

export interface CommandInvoked {
  type: "command_invoked";
  id: string;
  name: string;
  args: string;
}

export interface ToolCall {
  type: "tool_call";
  id: string;
  name: string;
  /** Whatever the model sent: check it before use. */
  args: unknown;
}

export interface EventFrame {
  type: "event";
  event: string;
  /** Event fields such as step, tool_name, tool_args, text. */
  [field: string]: unknown;
}

export interface EventIntercept {
  type: "event_intercept";
  id: string;
  event: string;
  tool_id?: string;
  tool_name?: unknown;
  tool_args?: unknown;
  step?: number;
  text?: string;
}

export interface ToolCancel {
  type: "tool_cancel";
  id: string;
}

export interface Shutdown {
  type: "shutdown";
}

export type HostFrame =
  | HelloAck
  | CommandInvoked
  | ToolCall
  | EventFrame
  | EventIntercept
  | ToolCancel
  | Shutdown;

// --- Frames we send ---------------------------------------------------------

export type ContentBlock =
  | { type: "text"; text: string; format?: "markdown" }
  | { type: "image"; mime_type: string; data: string };

/** A tool's result: a string is sent as one text block. */
export type ToolOutput = string | ContentBlock[];

/** What a slash command answers; `error` is shown in red instead. */
export type CommandReply =
  | { action: "prompt"; prompt: string }
  | { action: "insert"; insert: string }
  | { action: "display"; display: string }
  | { action: "noop" }
  | { error: string };

export type ExtensionFrame =
  | { type: "hello"; name: string; version: string; capabilities: string[] }
  | { type: "register_command"; name: string; description: string }
  | { type: "register_tool"; name: string; description: string; schema: object }
  | { type: "subscribe"; events: string[]; intercept: string[] }
  | { type: "ready" }
  | ({ type: "command_response"; id: string } & CommandReply)
  | {
      type: "tool_result";
      id: string;
      content: ContentBlock[];
      is_error: boolean;
    }
  | {
      type: "event_intercept_response";
      id: string;
      block: boolean;
      reason?: string;
      modified_args?: Record<string, unknown>;
      replace_text?: string;
    }
  | {
      type: "notify";
      level: "info" | "success" | "warn" | "error";
      message: string;
    }
  | { type: "clear_notes" }
  | { type: "shutdown_ack" };

// --- What an extension is made of -------------------------------------------

export interface Command {
  name: string;
  description: string;
  run(args: string): CommandReply | Promise<CommandReply>;
}

export interface Tool {
  name: string;
  description: string;
  /** A JSON Schema object; zot passes it to the model. */
  schema: object;
  /** A string becomes one text block. Throw InvalidArguments to refuse. */
  run(args: unknown): ToolOutput | Promise<ToolOutput>;
}

export interface Extension {
  name: string;
  version: string;
  commands?: Command[];
  tools?: Tool[];
  /** Lifecycle events to subscribe to, and what to do with each. */
  events?: { names: string[]; record(frame: EventFrame): void };
  /** Judges each tool call before it runs: a reason refuses it, null allows. */
  guard?(toolName: unknown, toolArgs: unknown): string | null;
}

/** Bad arguments from the model; the message tells it what to send instead. */
export class InvalidArguments extends Error {}

// --- Writing ----------------------------------------------------------------

/** hello_ack as received: cwd (the user's project), data_dir, model, ... */
export const host: Partial<HelloAck> = {};

/** Where to keep files: zot's data_dir, else the extension's own folder. */
export function dataDir(): string {
  return host.data_dir || host.extension_dir || ".";
}

let label = "extension";
let flushed: Promise<void> = Promise.resolve();

/** Write one frame. Writes keep their order; nothing else goes to stdout. */
export function send(frame: ExtensionFrame): void {
  const line = JSON.stringify(frame) + "\n";
  flushed = new Promise((resolve) => stdout.write(line, () => resolve()));
}

/** Log to stderr, which zot writes to ext-NAME.log. */
export function log(message: string): void {
  stderr.write(`[${label}] ${message}\n`);
}

function exit(): void {
  // Exit once every frame is out, even with requests still running:
  // zot has stopped listening.
  void flushed.then(() => process.exit(0));
}

// --- Answering --------------------------------------------------------------

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function onCommand(ext: Extension, frame: CommandInvoked) {
  const command = ext.commands?.find((c) => c.name === frame.name);
  if (!command) return { error: `unknown command: /${frame.name}` };
  return await command.run(frame.args);
}

async function onToolCall(ext: Extension, frame: ToolCall) {
  const tool = ext.tools?.find((t) => t.name === frame.name);
  let output: ToolOutput;
  let isError = true;
  if (!tool) {
    output = `unknown tool: ${frame.name}`;
  } else {
    try {
      output = await tool.run(frame.args);
      isError = false;
    } catch (err) {
      if (!(err instanceof InvalidArguments)) throw err;
      output = `invalid arguments: ${err.message}`;
    }
  }
  const content: ContentBlock[] =
    typeof output === "string" ? [{ type: "text", text: output }] : output;
  return { content, is_error: isError };
}

function onIntercept(ext: Extension, frame: EventIntercept) {
  if (frame.event !== "tool_call" || !ext.guard) return { block: false };
  const reason = ext.guard(frame.tool_name, frame.tool_args);
  if (!reason) return { block: false };
  log(`blocked: ${reason}`);
  return { block: true, reason };
}

/** The answer when a handler fails, so zot is never left waiting. */
function failure(ext: Extension, req: Request, err: unknown): ExtensionFrame {
  const { id } = req;
  const text = `${ext.name} failed: ${message(err)}`;
  switch (req.type) {
    case "command_invoked":
      return { type: "command_response", id, error: text };
    case "tool_call":
      return {
        type: "tool_result",
        id,
        content: [{ type: "text", text }],
        is_error: true,
      };
    case "event_intercept":
      // A guard that fails refuses rather than letting the call through.
      return {
        type: "event_intercept_response",
        id,
        block: true,
        reason: text,
      };
  }
}

function register(ext: Extension, ack: HelloAck): void {
  Object.assign(host, ack);
  for (const { name, description } of ext.commands ?? []) {
    send({ type: "register_command", name, description });
  }
  for (const { name, description, schema } of ext.tools ?? []) {
    send({ type: "register_tool", name, description, schema });
  }
  if (ext.events || ext.guard) {
    const events = ext.events?.names ?? [];
    const intercept = ext.guard ? ["tool_call"] : [];
    send({ type: "subscribe", events, intercept });
  }
  send({ type: "ready" });
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const text = (value: unknown) => (typeof value === "string" ? value : "");

/** One line from zot; returns false once the extension should stop. */
function handle(ext: Extension, line: string): boolean {
  line = line.trim();
  if (!line) return true;
  const excerpt = JSON.stringify(line.slice(0, 80));
  let frame: unknown;
  try {
    frame = JSON.parse(line);
  } catch {
    log(`skipped a malformed line: ${excerpt}`);
    return true;
  }
  if (!isObject(frame)) {
    log(`skipped a line that is not a JSON object: ${excerpt}`);
    return true;
  }
  const { type } = frame;
  switch (type) {
    case "hello_ack":
      register(ext, frame as unknown as HelloAck);
      return true;
    case "command_invoked":
    case "tool_call":
    case "event_intercept": {
      const request = toRequest(frame);
      if (!request) {
        log(`skipped a ${type} frame without an id`);
        return true;
      }
      // Not awaited: a slow tool never holds up the next frame.
      void answer(ext, request);
      return true;
    }
    case "event":
      if (!ext.events) break;
      try {
        ext.events.record(frame as EventFrame);
      } catch (err) {
        log(`could not record the event: ${message(err)}`);
      }
      return true;
    case "shutdown":
      send({ type: "shutdown_ack" });
      return false;
  }
  log(`ignored a frame of type ${JSON.stringify(type)}`);
  return true;
}

type Request = CommandInvoked | ToolCall | EventIntercept;

/** A request frame with the fields its handler relies on, or null. */
function toRequest(frame: Record<string, unknown>): Request | null {
  const { type, id, name, args, event } = frame;
  if (typeof id !== "string") return null;
  if (type === "command_invoked") {
    return { type, id, name: text(name), args: text(args) };
  }
  if (type === "tool_call") return { type, id, name: text(name), args };
  return { ...frame, type: "event_intercept", id, event: text(event) };
}

/** Run one request's handler and send its reply with the request's id. */
async function answer(ext: Extension, req: Request): Promise<void> {
  const { id } = req;
  try {
    if (req.type === "command_invoked") {
      send({ type: "command_response", id, ...(await onCommand(ext, req)) });
    } else if (req.type === "tool_call") {
      send({ type: "tool_result", id, ...(await onToolCall(ext, req)) });
    } else {
      send({ type: "event_intercept_response", id, ...onIntercept(ext, req) });
    }
  } catch (err) {
    const detail = err instanceof Error ? err.stack : String(err);
    log(`${req.type} handler failed: ${detail}`);
    send(failure(ext, req, err));
  }
}

/** Say hello, then answer zot line by line until shutdown or end of input. */
export function run(ext: Extension): void {
  label = ext.name;
  const capabilities = [
    ...(ext.commands?.length ? ["commands"] : []),
    ...(ext.tools?.length ? ["tools"] : []),
    ...(ext.events || ext.guard ? ["events"] : []),
  ];
  // The first line on stdout must be hello.
  send({ type: "hello", name: ext.name, version: ext.version, capabilities });
  stdout.on("error", () => process.exit(0)); // zot closed our stdout
  // A promise a handler forgot to await must not end the extension.
  process.on("unhandledRejection", (err) => log(`unhandled: ${message(err)}`));

  // Split stdin into lines ourselves: bytes up to each "\n", any length.
  let pending: Buffer[] = [];
  const onData = (chunk: Buffer) => {
    let start = 0;
    let end: number;
    while ((end = chunk.indexOf(10, start)) !== -1) {
      pending.push(chunk.subarray(start, end));
      const line = Buffer.concat(pending).toString("utf8");
      pending = [];
      start = end + 1;
      if (!handle(ext, line)) {
        stdin.off("data", onData);
        stdin.pause();
        exit();
        return;
      }
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  };
  stdin.on("data", onData);
  stdin.on("end", exit);
  stdin.on("error", exit);
}
