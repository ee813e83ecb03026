// The zot extension protocol, in one place: the frames as types, the one
// writer, and the read loop that hands each request to a handler registered
// in src/extension.ts. You rarely need to edit this file.
//
//   const ext = new Extension("my-ext", "0.1.0");
//   ext.command("hi", "Say hi", () => ({ action: "display", display: "hi" }));
//   ext.run();
//
// Wire format: one JSON object per line. zot writes to stdin, we answer on
// stdout (nothing else may go there) and log to stderr (zot keeps it in
// ext-NAME.log).
import { readdirSync, readFileSync } from "node:fs";
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
    }
  | {
      type: "notify";
      level: "info" | "success" | "warn" | "error";
      message: string;
    }
  | { type: "clear_notes" }
  | { type: "shutdown_ack" };

// --- Handlers ---------------------------------------------------------------

/** Answers `/NAME ARGS`; may be async. */
export type CommandHandler = (
  args: string,
) => CommandReply | Promise<CommandReply>;

/** Runs a tool; a string becomes one text block. Throw InvalidArguments to
 * tell the model what to send instead. */
export type ToolHandler = (args: unknown) => ToolOutput | Promise<ToolOutput>;

export type EventHandler = (frame: EventFrame) => void;

/** Judges a tool call before it runs: a reason refuses it, null allows it.
 * zot waits 5 s at most (then allows the call), so keep it fast. */
export type ToolCallGuard = (tool: unknown, args: unknown) => string | null;

/** Bad arguments from the model; the message tells it what to send instead. */
export class InvalidArguments extends Error {}

type Request = CommandInvoked | ToolCall | EventIntercept;

// --- The extension ----------------------------------------------------------

/** One zot extension: register its handlers, then call run(). */
export class Extension {
  /** hello_ack as received: cwd (the user's project), data_dir, model, ... */
  readonly host: Partial<HelloAck> = {};
  private readonly commands = new Map<string, [string, CommandHandler]>();
  private readonly tools = new Map<string, [string, object, ToolHandler]>();
  private readonly events = new Map<string, EventHandler>();
  private guard?: ToolCallGuard;
  private flushed: Promise<void> = Promise.resolve();

  constructor(
    readonly name: string,
    readonly version: string,
  ) {}

  /** `/NAME` in zot's input runs handler(args). */
  command(name: string, description: string, handler: CommandHandler): void {
    this.commands.set(name, [description, handler]);
  }

  /** A tool the model calls; schema is the JSON Schema of its arguments. */
  tool(
    name: string,
    description: string,
    schema: object,
    handler: ToolHandler,
  ): void {
    this.tools.set(name, [description, schema, handler]);
  }

  /** handler(frame) runs for each of these lifecycle events, in order. */
  on(events: string | string[], handler: EventHandler): void {
    for (const event of [events].flat()) this.events.set(event, handler);
  }

  /** guard(tool, args) judges every tool call, by the tool's name and
   * arguments, before it runs. */
  interceptToolCall(guard: ToolCallGuard): void {
    this.guard = guard;
  }

  /** Log to stderr, which zot writes to ext-NAME.log. */
  log(message: string): void {
    stderr.write(`[${this.name}] ${message}\n`);
  }

  /** A note in zot's chat, cleared at the user's next prompt. */
  notify(level: "info" | "success" | "warn" | "error", message: string): void {
    this.send({ type: "notify", level, message });
  }

  /** Where to keep files: zot's data_dir, else the extension's own folder. */
  dataDir(): string {
    return this.host.data_dir || this.host.extension_dir || ".";
  }

  /** Write one frame. Writes keep their order; nothing else goes to stdout. */
  send(frame: ExtensionFrame): void {
    const line = JSON.stringify(frame) + "\n";
    this.flushed = new Promise((done) => stdout.write(line, () => done()));
  }

  /** Say hello, then answer zot line by line until shutdown or end of input. */
  run(): void {
    const listens = this.events.size > 0 || this.guard !== undefined;
    const capabilities = [
      ...(this.commands.size ? ["commands"] : []),
      ...(this.tools.size ? ["tools"] : []),
      ...(listens ? ["events"] : []),
    ];
    // The first line on stdout must be hello.
    const { name, version } = this;
    this.send({ type: "hello", name, version, capabilities });
    stdout.on("error", () => this.exit()); // zot closed our stdout
    // A promise a handler forgot to await must not end the extension.
    const unhandled = (err: unknown) => this.log(`unhandled: ${message(err)}`);
    process.on("unhandledRejection", unhandled);

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
        if (!this.handle(line)) {
          stdin.off("data", onData);
          stdin.pause();
          this.exit();
          return;
        }
      }
      if (start < chunk.length) pending.push(chunk.subarray(start));
    };
    stdin.on("data", onData);
    stdin.on("end", () => this.exit());
    stdin.on("error", () => this.exit());
  }

  /** One line from zot; returns false once the extension should stop. */
  private handle(line: string): boolean {
    line = line.trim();
    if (!line) return true;
    const excerpt = JSON.stringify(line.slice(0, 80));
    let frame: unknown;
    try {
      frame = JSON.parse(line);
    } catch {
      this.log(`skipped a malformed line: ${excerpt}`);
      return true;
    }
    if (!isObject(frame)) {
      this.log(`skipped a line that is not a JSON object: ${excerpt}`);
      return true;
    }
    const { type } = frame;
    switch (type) {
      case "hello_ack":
        this.register(frame as unknown as HelloAck);
        return true;
      case "command_invoked":
      case "tool_call":
      case "event_intercept": {
        const request = toRequest(frame);
        if (!request) {
          this.log(`skipped a ${type} frame without an id`);
          return true;
        }
        // Not awaited: a slow tool never holds up the next frame.
        void this.answer(request);
        return true;
      }
      case "event": {
        const handler = this.events.get(text(frame.event));
        if (!handler) break;
        try {
          handler(frame as EventFrame);
        } catch (err) {
          this.log(`event handler failed: ${message(err)}`);
        }
        return true;
      }
      case "shutdown":
        this.send({ type: "shutdown_ack" });
        return false;
    }
    this.log(`ignored a frame of type ${JSON.stringify(type)}`);
    return true;
  }

  /** After hello_ack: every registration, then ready, at once (zot marks a
   * silent extension ready by itself after 250 ms, without what came late). */
  private register(ack: HelloAck): void {
    Object.assign(this.host, ack);
    for (const [name, [description]] of this.commands) {
      this.send({ type: "register_command", name, description });
    }
    for (const [name, [description, schema]] of this.tools) {
      this.send({ type: "register_tool", name, description, schema });
    }
    if (this.events.size || this.guard) {
      const events = [...this.events.keys()];
      const intercept = this.guard ? ["tool_call"] : [];
      this.send({ type: "subscribe", events, intercept });
    }
    this.send({ type: "ready" });
  }

  /** Run one request's handler and send its reply with the request's id. */
  private async answer(req: Request): Promise<void> {
    const { id } = req;
    try {
      if (req.type === "command_invoked") {
        const reply = await this.onCommand(req);
        this.send({ type: "command_response", id, ...reply });
      } else if (req.type === "tool_call") {
        this.send({ type: "tool_result", id, ...(await this.onToolCall(req)) });
      } else {
        const verdict = this.onIntercept(req);
        this.send({ type: "event_intercept_response", id, ...verdict });
      }
    } catch (err) {
      const detail = err instanceof Error ? err.stack : String(err);
      this.log(`${req.type} handler failed: ${detail}`);
      this.send(this.failure(req, err));
    }
  }

  private async onCommand(frame: CommandInvoked): Promise<CommandReply> {
    const command = this.commands.get(frame.name);
    if (!command) return { error: `unknown command: /${frame.name}` };
    return await command[1](frame.args);
  }

  private async onToolCall(frame: ToolCall) {
    const tool = this.tools.get(frame.name);
    let output: ToolOutput;
    let isError = true;
    if (!tool) {
      output = `unknown tool: ${frame.name}`;
    } else {
      try {
        output = await tool[2](frame.args);
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

  private onIntercept(frame: EventIntercept) {
    if (frame.event !== "tool_call" || !this.guard) return { block: false };
    const reason = this.guard(frame.tool_name, frame.tool_args);
    if (!reason) return { block: false };
    this.log(`blocked: ${reason}`);
    return { block: true, reason };
  }

  /** The answer when a handler fails, so zot is never left waiting. */
  private failure(req: Request, err: unknown): ExtensionFrame {
    const { id } = req;
    const text = `${this.name} failed: ${message(err)}`;
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

  /** Exit once every frame is out, even with requests still running: zot
   * has stopped listening. */
  private exit(): void {
    const stopped = Promise.all([this.flushed, stopChildren()]);
    void stopped.then(([, left]) => {
      if (left.length) this.log(`child processes left behind: ${left}`);
      process.exit(0);
    });
  }
}

// --- Helpers ----------------------------------------------------------------

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const text = (value: unknown) => (typeof value === "string" ? value : "");

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

/** The ids of this process's children, from /proc (Linux); none elsewhere. */
function children(): number[] {
  const found: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      // pid (command) state ppid ...: the command may hold spaces and ")".
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === process.pid) found.push(Number(entry));
    } catch {
      // the process is gone already
    }
  }
  return found;
}

/** Stop the processes this one started (tsx's esbuild service, a program a
 * tool ran), and wait until node has reaped them: a child left behind would
 * outlive the extension, or stay a zombie where nothing reaps orphans.
 * Returns the ids of those still there after 80 ms. */
async function stopChildren(): Promise<number[]> {
  let pids = children();
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // it exited by itself
    }
  }
  const deadline = Date.now() + 80;
  while (pids.length && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    pids = pids.filter((pid) => {
      try {
        readFileSync(`/proc/${pid}/stat`);
        return true;
      } catch {
        return false;
      }
    });
  }
  return pids;
}
