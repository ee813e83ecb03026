// The zot extension protocol, in one place: the frames as types, the one
// writer, and the read loop that hands each request to a handler registered
// in src/extension.ts. It belongs to the template: `copier update` replaces
// it with the newest version, so keep your changes in src/.
//
//   const ext = new Extension("my-ext", "0.1.0");
//   ext.command("hi", "Say hi", () => ({ action: "display", display: "hi" }));
//   ext.run();
//
// Wire format: one JSON object per line. zot writes to stdin, we answer on
// stdout (nothing else may go there) and log to stderr (zot keeps it in
// ext-NAME.log).
//
// Nothing a handler starts outlives the extension: every process started from
// here carries ZOT_EXT_RUN in its environment (its children and the ones it
// leaves running in the background inherit it), and on shutdown or the end
// of input each process that carries this run's value is stopped. On
// Windows: what spawnForCall started and still runs, by its process tree;
// node's other children end with node (libuv's job object), not what they
// start.
//
// A program a tool call starts with spawnForCall ends when the call ends:
// its handler returned or threw (stopped before the result goes out), zot
// cancelled it, the signal given aborted, or its `timeout` (ms) passed; with
// it, every process it started, setsid'd or in the background, found by its
// mark in /proc. On Windows, its process tree, with taskkill.
// Meant to outlive the call: node's spawn, detached: true and unref() (it
// ends with the extension). Meant to outlive the extension: env -u
// ZOT_EXT_RUN setsid PROGRAM. (Linux and macOS; on Windows a detached
// program outlives the extension, and one spawned without detached, then
// unref()'d, ends with it.)
import { AsyncLocalStorage } from "node:async_hooks";
import {
  type ChildProcess,
  spawn,
  type SpawnOptions,
  spawnSync,
} from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { stderr, stdin, stdout } from "node:process";
import { problems } from "./schema.js";

// --- Frames zot sends -------------------------------------------------------

export interface HelloAck {
  type: "hello_ack";
  protocol_version?: number;
  /** Newer hosts only (even empty): see Extension.newerHost. */
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
  /** before_agent_start: the system prompt so far, and the user's project. */
  system_prompt?: unknown;
  cwd?: unknown;
  /** Other fields: session_id, agent_run_id, provider, model, ... */
  [field: string]: unknown;
}

// --- Frames we send ---------------------------------------------------------

export type ContentBlock =
  | { type: "text"; text: string; format?: "markdown" }
  | { type: "image"; mime_type: string; data: string };

/** A whole tool result: content, and JSON for a tool with an output_schema. */
export interface ToolResult {
  content: ContentBlock[];
  structured_content?: unknown;
  is_error?: boolean;
  /** Deferred tools zot shows the model from now on (newer hosts). */
  activate_tools?: string[];
  /** From callTool: zot cut the result (over 256 KiB); never sent. */
  truncated?: boolean;
}

/** What a tool returns: a string is sent as one text block. */
export type ToolOutput = string | ContentBlock[] | ToolResult;

/** A panel: lines of text zot shows, with a title and a footer. */
export interface Panel {
  id: string;
  title: string;
  lines: string[];
  footer: string;
}

/** What a slash command answers; `error` is shown in red instead. */
export type CommandReply =
  | { action: "prompt"; prompt: string }
  | { action: "insert"; insert: string }
  | { action: "display"; display: string }
  | { action: "open_panel"; open_panel: Panel }
  | {
      action: "tool_prompt";
      tool_name: string;
      tool_args: Record<string, unknown>;
      prompt: string;
    }
  | { action: "noop" }
  | { error: string };

export type NoteLevel = "info" | "success" | "warn" | "error";

export type ExtensionFrame =
  | { type: "hello"; name: string; version: string; capabilities: string[] }
  | { type: "register_command"; name: string; description: string }
  | {
      type: "register_tool";
      name: string;
      description: string;
      schema: object;
      interactive?: true;
      output_schema?: object;
      namespace?: string;
      namespace_description?: string;
      namespace_instructions?: string;
      exposure?: string;
      deferred?: true;
      replay?: string;
    }
  | { type: "subscribe"; events: string[]; intercept: string[] }
  | { type: "ready" }
  | ({ type: "command_response"; id: string } & CommandReply)
  | ({ type: "tool_result"; id: string } & ToolResult)
  | {
      type: "event_intercept_response";
      id: string;
      block?: boolean;
      reason?: string;
      modified_args?: Record<string, unknown>;
      replace_text?: string;
      system_prompt?: string;
    }
  | {
      type: "call_tool";
      id: string;
      name: string;
      args: Record<string, unknown>;
      parent_id?: string;
    }
  | { type: "call_tool_cancel"; id: string }
  | { type: "notify"; level: NoteLevel; message: string }
  | { type: "clear_notes" }
  | { type: "open_panel"; panel: Panel }
  | {
      type: "panel_render";
      panel_id: string;
      title: string;
      lines: string[];
      footer: string;
    }
  | { type: "panel_close"; panel_id: string }
  | { type: "submit"; text: string }
  | { type: "shutdown_ack" };

// --- Handlers ---------------------------------------------------------------

/** Answers `/NAME ARGS`; may be async. */
export type CommandHandler = (
  args: string,
) => CommandReply | Promise<CommandReply>;

export interface CommandOptions {
  /** The command opens panels (hello then lists "panels"). */
  panels?: boolean;
}

/** A tool call in flight: cancelled by zot, its signal if it has one (or
 * if a callTool made while it runs needs one), and how to stop each program
 * spawnForCall started for it (ended: stopped already). */
interface Call {
  id: string;
  cancelled: boolean;
  controller?: AbortController;
  programs?: (() => Promise<void>)[];
  ended?: boolean;
}

/** The signal of a handler that takes none: it never aborts. */
const NEVER = new AbortController().signal;

/** Answers a tool call; a string becomes one text block. Args is what the
 * tool's schema describes: the runtime checks the arguments against it
 * before the handler runs. Throw InvalidArguments to tell the model what to
 * send instead. `signal` aborts when zot gives up on the call (its result is
 * dropped then). */
export type ToolHandler<Args = unknown> = (
  args: Args,
  signal: AbortSignal,
) => ToolOutput | Promise<ToolOutput>;

/** How a tool is offered; each is sent only when set, and older hosts
 * ignore what they do not know. */
export interface ToolOptions {
  /** The tool may open panels and wait for the user (no 60 s limit). */
  interactive?: boolean;
  /** The JSON Schema of the result's structured_content. */
  outputSchema?: object;
  /** A group of tools, with what the model reads about the group. */
  namespace?: string;
  namespaceDescription?: string;
  namespaceInstructions?: string;
  /** Where the model sees the tool (zot's default: direct). */
  exposure?: (typeof EXPOSURES)[number];
  /** Hidden from the model until a result's activate_tools names it. */
  deferred?: boolean;
  /** Whether `zot continuous` may run the call again. */
  replay?: (typeof REPLAYS)[number];
}

const EXPOSURES = ["direct", "codemode", "deferred", "model-only"] as const;
const REPLAYS = ["never", "safe", "idempotent", "reconcile"] as const;

export type EventHandler = (frame: EventFrame) => void;

/** A guard's whole verdict: refuse (block, with the reason the model
 * reads), or let the call run with modifiedArgs instead of its arguments. */
export interface ToolCallDecision {
  block?: boolean;
  reason?: string;
  modifiedArgs?: Record<string, unknown>;
}

/** Judges a tool call before it runs: a reason refuses it, null allows it,
 * a ToolCallDecision may rewrite it. zot waits 5 s at most (then allows the
 * call), so keep it fast. */
export type ToolCallGuard = (
  tool: unknown,
  args: unknown,
) => Verdict<ToolCallDecision>;

/** A handler's answer to an intercept: a reason (or text), nothing, or a
 * whole decision; may be async. */
type Verdict<Decision> =
  | string
  | null
  | undefined
  | Decision
  | Promise<string | null | undefined | Decision>;

/** Before each turn: a reason aborts it, null lets it run. */
export type TurnStartHandler = (step: number) => Verdict<never>;

/** What the user sees of an assistant message: hidden (block, with a
 * reason for the log), or replaceText instead. */
export interface AssistantMessageDecision {
  block?: boolean;
  reason?: string;
  replaceText?: string;
}

/** Before the user sees an assistant message: a string shows that text
 * instead, null shows it as it is. */
export type AssistantMessageHandler = (
  text: string,
) => Verdict<AssistantMessageDecision>;

/** Returns the new system prompt ("" removes it), or null to keep it. zot
 * waits 5 s at most (then keeps it). */
export type SystemPromptHandler = (
  frame: EventIntercept,
) => string | null | undefined | Promise<string | null | undefined>;

/** What a panel does with the user's keys. `key` is one of up down left
 * right enter esc tab pageup pagedown home end backspace delete rune, `text`
 * the character of a rune. Return at once: keys arrive on the read loop. */
export interface PanelHandlers {
  onKey?: (key: string, text: string) => void;
  /** The user (or zot) closed the panel. */
  onClose?: () => void;
}

/** Bad arguments from the model; the message tells it what to send instead. */
export class InvalidArguments extends Error {}

type Request = CommandInvoked | ToolCall | EventIntercept;

/** A frame from zot, not checked yet. */
type Frame = Record<string, unknown>;

// --- Tool results -----------------------------------------------------------

export function textBlock(text: string): ContentBlock {
  return { type: "text", text };
}

/** Text zot renders as markdown (older zot shows it as it is). */
export function markdownBlock(text: string): ContentBlock {
  return { type: "text", text, format: "markdown" };
}

/** An image from its bytes; mimeType such as "image/png". */
export function imageBlock(data: Uint8Array, mimeType: string): ContentBlock {
  const base64 = Buffer.from(data).toString("base64");
  return { type: "image", mime_type: mimeType, data: base64 };
}

/** A result with structured_content: JSON for a tool's output_schema. */
export function structuredResult(
  content: string | ContentBlock[],
  structured: unknown,
): ToolResult {
  const blocks = typeof content === "string" ? [textBlock(content)] : content;
  return { content: blocks, structured_content: structured };
}

/** A failed call: `text` tells the model what went wrong. */
export function errorResult(text: string): ToolResult {
  return { content: [textBlock(text)], is_error: true };
}

/** A result that shows the deferred tools `toolNames` to the model from now
 * on (newer hosts). */
export function activatingResult(
  content: string | ContentBlock[],
  toolNames: string[],
): ToolResult {
  const blocks = typeof content === "string" ? [textBlock(content)] : content;
  return { content: blocks, activate_tools: toolNames };
}

/** A command's reply that has zot run its tool `toolName` with `toolArgs`,
 * then sends `text` as the prompt (newer hosts; zot 0.1.62 gets the prompt
 * alone). */
export function toolPrompt(
  toolName: string,
  toolArgs: Record<string, unknown>,
  text: string,
): CommandReply {
  if (!toolName || !text) {
    return { error: "tool_prompt requires a name and prompt" };
  }
  if (!isObject(toolArgs)) {
    return { error: "tool_prompt args must be a JSON object" };
  }
  return {
    action: "tool_prompt",
    tool_name: toolName,
    tool_args: toolArgs,
    prompt: text,
  };
}

/** The text added to a callTool result zot cut. */
const CUT = "[zot cut this result: over 256 KiB]";

/** callTool's result from zot's tool_result frame, whatever its fields. */
function fromZot(frame: Frame): ToolResult {
  const { content, is_error } = frame;
  const blocks = Array.isArray(content) ? content.filter(isObject) : [];
  const result: ToolResult = {
    content: blocks as ContentBlock[],
    is_error: is_error === true,
  };
  if (frame.truncated !== true) return result;
  return {
    ...result,
    content: [...result.content, textBlock(CUT)],
    truncated: true,
  };
}

/** The tool call whose handler runs (its async context): callTool's parent,
 * and the call a program spawnForCall starts belongs to. */
const running = new AsyncLocalStorage<Call>();

/** zot disconnects an extension that writes a line of this many bytes or more. */
const MAX_LINE = 4 * 1024 * 1024;

/** What zot gets instead of a frame too long for it: the request's error. */
function overTheLimit(frame: ExtensionFrame, size: number): ExtensionFrame {
  const why = `the answer is ${size} bytes, over zot's limit of 4 MiB for one line: send less`;
  const id = "id" in frame ? frame.id : "";
  switch (frame.type) {
    case "tool_result":
      return {
        type: "tool_result",
        id,
        content: [textBlock(why)],
        is_error: true,
      };
    case "command_response":
      return { type: "command_response", id, action: "noop", error: why };
    case "event_intercept_response":
      return { type: "event_intercept_response", id, block: true, reason: why };
    default:
      return { type: "notify", level: "error", message: why };
  }
}

// --- The extension ----------------------------------------------------------

interface Tool {
  description: string;
  schema: object;
  handler: ToolHandler;
  options: ToolOptions;
}

/** One zot extension: register its handlers, then call run(). */
export class Extension {
  /** hello_ack as received: cwd (the user's project), data_dir, model, ... */
  readonly host: Partial<HelloAck> = {};
  private readonly commands = new Map<string, [string, CommandHandler]>();
  private readonly tools = new Map<string, Tool>();
  private readonly events = new Map<string, EventHandler>();
  private guard?: ToolCallGuard;
  private systemPrompt?: SystemPromptHandler;
  private turnStart?: TurnStartHandler;
  private assistantMessage?: AssistantMessageHandler;
  private helloHandler?: (host: Partial<HelloAck>) => void;
  private usesPanels = false;
  /** Open panels by id, and tool calls running by id. */
  private readonly panels = new Map<string, PanelHandlers>();
  private readonly calls = new Map<string, Call>();
  /** Each tool call's signal, for a callTool given it. */
  private readonly signals = new WeakMap<AbortSignal, Call>();
  /** callTool's calls of zot's tools waiting for their answer, and those
   * cancelled whose answer zot still sends. */
  private readonly waiting = new Map<string, (answer?: Frame) => void>();
  private readonly dropped = new Set<string>();
  private callIds = 0;
  /** How long callTool waits for zot (tests shorten it). */
  private callLimit = 60_000;
  private flushed: Promise<void> = Promise.resolve();
  /** Where frames go: zot's stdin once run() (or zot/testing.ts) serves it;
   * until then nowhere, not onto stdout before hello (or into the output of
   * a unit test that calls a handler itself). */
  private output: (line: string, written: () => void) => void = (_, done) =>
    done();
  private logTo: (text: string) => void = (text) => void stderr.write(text);

  constructor(
    readonly name: string,
    readonly version: string,
  ) {}

  /** `/NAME` in zot's input runs handler(args). */
  command(
    name: string,
    description: string,
    handler: CommandHandler,
    options: CommandOptions = {},
  ): void {
    this.commands.set(name, [description, handler]);
    this.usesPanels ||= options.panels === true;
  }

  /** A tool the model calls; schema is the JSON Schema of its arguments: a
   * call whose arguments do not fit it gets an error before the handler runs
   * (see schema.ts), so the handler may declare their type. */
  tool<Args = unknown>(
    name: string,
    description: string,
    schema: object,
    handler: ToolHandler<Args>,
    options: ToolOptions = {},
  ): void {
    for (const [option, allowed] of [
      ["exposure", EXPOSURES],
      ["replay", REPLAYS],
    ] as const) {
      const value: unknown = options[option];
      if (value && !(allowed as readonly unknown[]).includes(value)) {
        const must = `must be one of ${allowed.join(", ")}`;
        throw new Error(`tool ${name}: ${option} "${String(value)}" ${must}`);
      }
    }
    const checked = handler as ToolHandler; // by problems(), before each call
    this.tools.set(name, { description, schema, handler: checked, options });
    this.usesPanels ||= options.interactive === true;
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

  /** handler(step) runs before each turn of the agent: a reason it returns
   * aborts the turn. */
  interceptTurnStart(handler: TurnStartHandler): void {
    this.turnStart = handler;
  }

  /** handler(text) runs before the user sees each assistant message: it
   * may hide it or show other text. */
  interceptAssistantMessage(handler: AssistantMessageHandler): void {
    this.assistantMessage = handler;
  }

  /** handler(host) runs once, when zot's hello_ack has arrived (host is
   * ext.host) and the registrations and ready have gone out: a place to warm
   * up, or to tell the user something. */
  onHello(handler: (host: Partial<HelloAck>) => void): void {
    this.helloHandler = handler;
  }

  /** handler(frame) may rewrite the system prompt before each agent run
   * (newer hosts; older ones never ask). */
  interceptBeforeAgentStart(handler: SystemPromptHandler): void {
    this.systemPrompt = handler;
  }

  /** Whether zot is newer than 0.1.62: its hello_ack lists capabilities. It
   * can then open panels from tools, submit prompts and cancel tool calls. */
  get newerHost(): boolean {
    return Array.isArray(this.host.capabilities);
  }

  /** Log to stderr, which zot writes to ext-NAME.log. */
  log(message: string): void {
    this.logTo(`[${this.name}] ${message}\n`);
  }

  /** A note in zot's chat, cleared at the user's next prompt. */
  notify(level: NoteLevel, message: string): void {
    this.send({ type: "notify", level, message });
  }

  /** Remove this extension's notes from zot's chat. */
  clearNotes(): void {
    this.send({ type: "clear_notes" });
  }

  /** Send `text` as the user's next prompt (newer hosts only). */
  submit(text: string): void {
    if (!this.tooOld("submit")) this.send({ type: "submit", text });
  }

  /** A command's reply that opens `panel`; its keys go to `handlers`. */
  panelReply(panel: Panel, handlers: PanelHandlers): CommandReply {
    this.panels.set(panel.id, handlers);
    return { action: "open_panel", open_panel: panel };
  }

  /** Open `panel` now, from a tool say (newer hosts only). */
  openPanel(panel: Panel, handlers: PanelHandlers): void {
    if (this.tooOld("open_panel")) return;
    this.panels.set(panel.id, handlers);
    this.send({ type: "open_panel", panel });
  }

  /** Show new lines in an open panel. */
  renderPanel(
    id: string,
    title: string,
    lines: string[],
    footer: string,
  ): void {
    this.send({ type: "panel_render", panel_id: id, title, lines, footer });
  }

  /** Close a panel; its handlers hear no more keys (nor onClose). Nothing
   * is sent for a panel that is not open (zot closed it, say). */
  closePanel(id: string): void {
    if (!this.panels.delete(id)) return;
    this.send({ type: "panel_close", panel_id: id });
  }

  /** Run zot's tool `name` (read, bash, ...) with `args` and return its
   * result; zot's refusals and failures are error results. Inside a tool
   * call it runs as part of that call (zot's parent_id): cancelled with it,
   * or when `signal` aborts. zot answers within 60 s (else the call is
   * cancelled); zot 0.1.62 cannot: its result is an error, at once. */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<ToolResult> {
    if (!this.host.capabilities?.includes("call_tool")) {
      return errorResult(
        `cannot call ${name}: this zot is too old to run its tools for extensions (update zot)`,
      );
    }
    if (typeof name !== "string" || !name || !isObject(args)) {
      return errorResult("call_tool requires a name and JSON object args");
    }
    const parent = (signal && this.signals.get(signal)) || running.getStore();
    const cancelled = errorResult(`the call of ${name} was cancelled`);
    if (signal?.aborted || parent?.cancelled) return cancelled;
    // The parent's signal, made for this if its handler takes none.
    const inner = parent && (parent.controller ??= new AbortController());
    const signals = [signal, inner?.signal];
    const id = `call-${++this.callIds}`;
    return await new Promise<ToolResult>((resolve) => {
      const finish = (result: ToolResult, cancel = false) => {
        clearTimeout(timer);
        for (const s of signals) s?.removeEventListener("abort", onAbort);
        this.waiting.delete(id);
        if (cancel) {
          this.dropped.add(id); // zot still answers: dropped then
          this.send({ type: "call_tool_cancel", id });
        }
        resolve(result);
      };
      const onAbort = () => finish(cancelled, true);
      const late = `zot did not answer the call of ${name} within 60 s`;
      const timer = setTimeout(
        () => finish(errorResult(late), true),
        this.callLimit,
      );
      for (const s of signals) s?.addEventListener("abort", onAbort);
      const stopped = `zot stopped before answering the call of ${name}`;
      this.waiting.set(id, (answer) =>
        finish(answer ? fromZot(answer) : errorResult(stopped)),
      );
      const parent_id = parent ? { parent_id: parent.id } : {};
      this.send({ type: "call_tool", id, name, args, ...parent_id });
    });
  }

  /** zot's answer to a callTool, to the call that waits for it. */
  private onCallAnswer(frame: Frame): void {
    const id = str(frame.id);
    const answered = this.waiting.get(id);
    if (answered) answered(frame);
    else if (!this.dropped.delete(id)) {
      const which = JSON.stringify(frame.id);
      this.log(`ignored a tool_result for ${which}: no call_tool waits for it`);
    }
  }

  /** zot has stopped: the callTool calls still waiting get no answer. */
  private stopCalls(): void {
    for (const stopped of this.waiting.values()) stopped();
  }

  /** Whether zot is too old for frames of this type (then the log says so). */
  private tooOld(type: string): boolean {
    if (this.newerHost) return false;
    this.log(`sent no ${type} frame: zot 0.1.62 and older do not take it`);
    return true;
  }

  /** Where to keep files: zot's data_dir, else the extension's own folder. */
  dataDir(): string {
    return this.host.data_dir || this.host.extension_dir || ".";
  }

  /** Write one frame. Writes keep their order; nothing else goes to stdout. */
  send(frame: ExtensionFrame): void {
    let line = JSON.stringify(frame) + "\n";
    const size = Buffer.byteLength(line);
    if (size >= MAX_LINE) {
      this.log(`a ${frame.type} of ${size} bytes is over zot's limit`);
      if (frame.type === "call_tool") {
        // Sent, zot would disconnect us: the call fails here instead.
        const why = `the call of ${frame.name} is ${size} bytes, over zot's limit of 4 MiB for one line: send less`;
        const failed = { content: [textBlock(why)], is_error: true };
        return this.waiting.get(frame.id)?.(failed);
      }
      line = JSON.stringify(overTheLimit(frame, size)) + "\n";
    }
    this.flushed = new Promise((done) => this.output(line, done));
  }

  /** hello's capabilities, from what is registered. */
  capabilities(): string[] {
    const hasTools = this.tools.size > 0;
    const listens = this.events.size > 0 || this.intercepts().length > 0;
    return [
      ...(this.commands.size ? ["commands"] : []),
      ...(hasTools ? ["tools"] : []),
      ...(listens ? ["events"] : []),
      ...(this.usesPanels ? ["panels"] : []),
      ...(hasTools ? ["tool_cancel"] : []), // zot says when it gives up on one
      "call_tool", // callTool: newer hosts run their tools for us
    ];
  }

  /** Say hello, then answer zot line by line until shutdown or end of input. */
  run(): void {
    process.env[RUN_VARIABLE] = RUN; // what handlers start carries it
    this.serve((line, written) => stdout.write(line, () => written()));
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

  /** Say hello through `output`, which takes each line the extension
   * writes; zot's lines then go to handle(). run() serves stdout, the fake
   * zot of zot/testing.ts its own output (and `log`, the log). */
  serve(
    output: (line: string, written: () => void) => void,
    log = (text: string) => void stderr.write(text),
  ): void {
    this.output = output;
    this.logTo = log;
    const host = this.host as Record<string, unknown>; // a new session's
    for (const key of Object.keys(host)) delete host[key];
    // The first line on stdout must be hello.
    const { name, version } = this;
    const capabilities = this.capabilities();
    this.send({ type: "hello", name, version, capabilities });
  }

  /** One line from zot (run() reads them; tests may call it too). Returns
   * false once the extension should stop. */
  handle(line: string): boolean {
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
        const handler = this.events.get(str(frame.event));
        if (!handler) break;
        try {
          handler(frame as EventFrame);
        } catch (err) {
          this.log(`event handler failed: ${message(err)}`);
        }
        return true;
      }
      case "tool_cancel":
        this.cancel(frame.id);
        return true;
      case "tool_result": // zot's answer to callTool
        this.onCallAnswer(frame);
        return true;
      case "panel_key":
      case "panel_close":
        this.onPanel(type, frame);
        return true;
      case "panel_resize": // the host draws the panel at any size
        return true;
      case "shutdown":
        this.send({ type: "shutdown_ack" });
        this.stopCalls();
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
    for (const [name, { description, schema, options }] of this.tools) {
      const o = options; // each sent only when set
      this.send({
        type: "register_tool",
        name,
        description,
        schema,
        ...(o.interactive ? { interactive: true } : {}),
        ...(o.outputSchema ? { output_schema: o.outputSchema } : {}),
        ...(o.namespace ? { namespace: o.namespace } : {}),
        ...(o.namespaceDescription
          ? { namespace_description: o.namespaceDescription }
          : {}),
        ...(o.namespaceInstructions
          ? { namespace_instructions: o.namespaceInstructions }
          : {}),
        ...(o.exposure ? { exposure: o.exposure } : {}),
        ...(o.deferred ? { deferred: true } : {}),
        ...(o.replay ? { replay: o.replay } : {}),
      });
    }
    const intercept = this.intercepts();
    if (this.events.size || intercept.length) {
      const events = [...this.events.keys()];
      this.send({ type: "subscribe", events, intercept });
    }
    this.send({ type: "ready" });
    const hello = this.helloHandler;
    if (hello) {
      setImmediate(() => {
        try {
          hello(this.host);
        } catch (err) {
          this.log(`the hello handler failed: ${message(err)}`);
        }
      });
    }
  }

  /** The intercepts asked for, in subscribe's order. */
  private intercepts(): string[] {
    const handlers = {
      tool_call: this.guard,
      before_agent_start: this.systemPrompt,
      turn_start: this.turnStart,
      assistant_message: this.assistantMessage,
    };
    return Object.keys(handlers).filter(
      (event) => handlers[event as keyof typeof handlers],
    );
  }

  /** Run one request's handler and send its reply with the request's id. */
  private async answer(req: Request): Promise<void> {
    const { id } = req;
    let call: Call | undefined;
    if (req.type === "tool_call") {
      // Only a handler that takes the signal gets one: under a burst of
      // calls, an AbortController each costs memory and time.
      const takesSignal = (this.tools.get(req.name)?.handler.length ?? 0) > 1;
      call = { id, cancelled: false };
      if (takesSignal) {
        call.controller = new AbortController();
        this.signals.set(call.controller.signal, call);
      }
      this.calls.set(id, call);
    }
    let reply: ExtensionFrame;
    try {
      const signal = call?.controller?.signal ?? NEVER;
      // callTool and spawnForCall find the call here.
      reply = await (call
        ? running.run(call, () => this.reply(req, signal))
        : this.reply(req, signal));
    } catch (err) {
      const detail = err instanceof Error ? err.stack : String(err);
      this.log(`${req.type} handler failed: ${detail}`);
      reply = this.failure(req, err);
    }
    if (call) {
      // The call is over: what it started goes before zot has the result.
      await endCall(call);
      if (call.cancelled) return; // zot has dropped the call
      if (this.calls.get(id) === call) this.calls.delete(id);
    }
    this.send(reply);
  }

  private async reply(
    req: Request,
    signal: AbortSignal,
  ): Promise<ExtensionFrame> {
    const { id } = req;
    if (req.type === "command_invoked") {
      let reply = await this.onCommand(req);
      const action = "action" in reply ? reply.action : "";
      if (action === "tool_prompt" && !this.newerHost) {
        const alone = "sent the prompt alone";
        this.log(`zot 0.1.62 cannot run a tool from a command: ${alone}`);
        reply = {
          action: "prompt",
          prompt: (reply as { prompt: string }).prompt,
        };
      }
      return { type: "command_response", id, ...reply };
    }
    if (req.type === "tool_call") {
      const result = await this.onToolCall(req, signal);
      return { type: "tool_result", id, ...result };
    }
    const type = "event_intercept_response" as const;
    if (req.event === "before_agent_start" && this.systemPrompt) {
      const prompt = await this.systemPrompt(req);
      // Without system_prompt zot keeps the prompt; block is not honoured.
      return typeof prompt === "string"
        ? { type, id, system_prompt: prompt }
        : { type, id };
    }
    return { type, id, ...(await this.onIntercept(req)) };
  }

  private async onCommand(frame: CommandInvoked): Promise<CommandReply> {
    const command = this.commands.get(frame.name);
    if (!command) return { error: `unknown command: /${frame.name}` };
    return await command[1](frame.args);
  }

  private async onToolCall(
    frame: ToolCall,
    signal: AbortSignal,
  ): Promise<ToolResult> {
    const tool = this.tools.get(frame.name);
    if (!tool) return errorResult(`unknown tool: ${frame.name}`);
    // The handler runs only with arguments that fit its schema.
    const found = problems(tool.schema, frame.args);
    if (found.length)
      return errorResult(`invalid arguments: ${found.join("; ")}`);
    let output: ToolOutput;
    try {
      output = await tool.handler(frame.args, signal);
    } catch (err) {
      if (!(err instanceof InvalidArguments)) throw err;
      return errorResult(`invalid arguments: ${err.message}`);
    }
    if (typeof output === "string") output = [textBlock(output)];
    if (Array.isArray(output)) output = { content: output };
    // truncated (from a callTool result passed on) is not for zot.
    const { truncated, activate_tools, ...result } = output;
    const activate = activate_tools?.length ? { activate_tools } : {};
    return { ...result, ...activate, is_error: output.is_error ?? false };
  }

  /** The verdict of the tool_call, turn_start or assistant_message handler:
   * block with a reason, or rewrite the arguments or the text. */
  private async onIntercept(frame: EventIntercept) {
    const { event } = frame;
    const text = str(frame.text);
    let answer: Awaited<Verdict<ToolCallDecision | AssistantMessageDecision>>;
    if (event === "tool_call" && this.guard) {
      answer = await this.guard(frame.tool_name, frame.tool_args);
    } else if (event === "turn_start" && this.turnStart) {
      answer = await this.turnStart(Number(frame.step) || 0);
    } else if (event === "assistant_message" && this.assistantMessage) {
      answer = await this.assistantMessage(text);
      if (typeof answer === "string") answer = { replaceText: answer };
    }
    if (answer === "") answer = null; // allows, as null does
    if (typeof answer === "string") answer = { block: true, reason: answer };
    const decision: ToolCallDecision & AssistantMessageDecision = answer ?? {};
    const { block, reason, modifiedArgs, replaceText } = decision;
    if (block) {
      this.log(`blocked ${event}: ${reason ?? ""}`);
      return { block: true, reason: reason ?? "" };
    }
    const allow = { block: false };
    if (event === "assistant_message" && replaceText && replaceText !== text) {
      return { ...allow, replace_text: replaceText };
    }
    if (event !== "tool_call" || modifiedArgs === undefined) return allow;
    if (isObject(modifiedArgs)) {
      return { ...allow, modified_args: modifiedArgs };
    }
    this.log("the guard's modifiedArgs is not a JSON object: sent none");
    return allow;
  }

  /** tool_cancel: the call's signal aborts, its programs stop, and its
   * result will not be sent. */
  private cancel(id: unknown): void {
    const call = typeof id === "string" ? this.calls.get(id) : undefined;
    if (!call) {
      this.log(`ignored tool_cancel for ${JSON.stringify(id)}: not running`);
      return;
    }
    this.calls.delete(id as string);
    call.cancelled = true;
    call.controller?.abort();
    void endCall(call);
  }

  /** panel_key and panel_close from zot, to the handlers of that panel. */
  private onPanel(type: string, frame: Record<string, unknown>): void {
    const id = str(frame.panel_id);
    const handlers = this.panels.get(id);
    if (!handlers) {
      this.log(`ignored ${type} for an unknown panel ${JSON.stringify(id)}`);
      return;
    }
    try {
      if (type === "panel_key") {
        handlers.onKey?.(str(frame.key), str(frame.text));
      } else {
        this.panels.delete(id);
        handlers.onClose?.();
      }
    } catch (err) {
      this.log(`${type} handler failed: ${message(err)}`);
    }
  }

  /** The answer when a handler fails, so zot is never left waiting. */
  private failure(req: Request, err: unknown): ExtensionFrame {
    const { id } = req;
    const text = `${this.name} failed: ${message(err)}`;
    switch (req.type) {
      case "command_invoked":
        return { type: "command_response", id, error: text };
      case "tool_call":
        return { type: "tool_result", id, ...errorResult(text) };
      case "event_intercept":
        if (req.event === "before_agent_start") {
          return { type: "event_intercept_response", id }; // keep the prompt
        }
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
   * has stopped listening. What they started goes too. */
  private exit(): void {
    this.stopCalls();
    const stopped = Promise.all([this.flushed, programs.stopAll()]);
    void stopped.then(([, left]) => {
      if (left.length) {
        this.log(`killed the processes still running after 0.5 s: ${left}`);
      }
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

const str = (value: unknown) => (typeof value === "string" ? value : "");

/** A request frame with the fields its handler relies on, or null. */
function toRequest(frame: Record<string, unknown>): Request | null {
  const { type, id, name, args, event } = frame;
  if (typeof id !== "string") return null;
  if (type === "command_invoked") {
    return { type, id, name: str(name), args: str(args) };
  }
  if (type === "tool_call") return { type, id, name: str(name), args };
  return { ...frame, type: "event_intercept", id, event: str(event) };
}

// --- Processes --------------------------------------------------------------

/** This run's mark, the value of ZOT_EXT_RUN: the pid and a random number. */
const RUN_VARIABLE = "ZOT_EXT_RUN";
const RUN = `${process.pid}.${Math.floor(Math.random() * 2 ** 48).toString(16)}`;
let spawned = 0;

/** Start a program for a tool call, as node's spawn does (read its output, or
 * pass stdio: "ignore"), in a process group of its own. It ends when the call
 * ends, with every process it started, even one still running after it
 * exited: before the call's result goes out, on tool_cancel, once `signal`
 * aborts, or `options.timeout` ms after it started (node's spawn stops only
 * the program then; this, all it started; the program then exits by a
 * signal, child.signalCode). Node 20 drops an AbortSignal.timeout combined
 * with AbortSignal.any once it is garbage-collected: use `timeout` for the
 * handler's own time limit. Started outside a tool
 * call (a command, an event), it ends when `signal` aborts, or with the
 * extension. Which processes: those that carry its mark in ZOT_EXT_RUN (in
 * /proc, so on Linux; elsewhere its process group only; on Windows its
 * process tree, which taskkill stops: the program exits with a code, not a
 * signal).
 *
 * A program meant to outlive the call: node's spawn with `detached: true`,
 * then unref() (it ends with the extension). One meant to outlive the
 * extension: spawn("env", ["-u", "ZOT_EXT_RUN", "setsid", PROGRAM, ...]).
 * Both on Linux and macOS: see the top of this file for Windows. */
export function spawnForCall(
  command: string,
  args: readonly string[],
  signal: AbortSignal,
  options: SpawnOptions = {},
): ChildProcess {
  const mark = `${RUN}/${++spawned}`;
  const env = { ...(options.env ?? process.env), [RUN_VARIABLE]: mark };
  const { timeout, ...rest } = options;
  const child = spawn(command, args, { ...rest, env, ...programs.spawning });
  programs.started(child);
  let stopping: Promise<void> | undefined;
  const stop = () => {
    signal.removeEventListener("abort", stop);
    clearTimeout(timer);
    return (stopping ??= programs.stop(mark, child));
  };
  const timer = timeout ? setTimeout(stop, timeout) : undefined;
  const call = running.getStore();
  if (call) (call.programs ??= []).push(stop);
  if (signal.aborted || call?.ended) void stop();
  else signal.addEventListener("abort", stop, { once: true });
  return child;
}

/** The end of a tool call (its handler settled, or zot cancelled it): stop
 * the programs spawnForCall started for it, and from now on any it starts. */
async function endCall(call: Call): Promise<void> {
  call.ended = true;
  if (call.programs) await Promise.all(call.programs.map((stop) => stop()));
}

/** Whether node has not reaped `child` yet: while it has not, the process
 * group spawnForCall made for it is still that group (on Windows, its pid is
 * still its own: node holds a handle to it). */
const unreaped = (child: ChildProcess) =>
  child.pid !== undefined &&
  child.exitCode === null &&
  child.signalCode === null;

/** How this platform stops the programs spawnForCall starts. */
interface Programs {
  /** What spawnForCall's spawn options get, over the caller's. */
  readonly spawning: SpawnOptions;
  /** spawnForCall has started `child`. */
  started(child: ChildProcess): void;
  /** Stop `child`, started with `mark`, and what it started; resolves once
   * they are gone. */
  stop(mark: string, child: ChildProcess): Promise<void>;
  /** Stop what is left of the run, at exit: the pids that took a SIGKILL. */
  stopAll(): Promise<number[]>;
}

/** Runs a program to its end, its output and exit status ignored. */
type Runner = (command: string, args: readonly string[]) => Promise<void>;

/** Unix: a process group for each program, SIGTERM, then SIGKILL to marks. */
const unixPrograms: Programs = {
  spawning: { detached: true },
  started: () => {},
  stop: (mark, child) => stopProcesses(mark, child).then(() => {}),
  stopAll: () => stopProcesses(RUN),
};

/** Windows' taskkill, by its full path: node looks in the current folder
 * (the extension's) before PATH. */
const TASKKILL = `${process.env.SystemRoot ?? "C:\\Windows"}\\System32\\taskkill.exe`;

/** Windows has no process groups, no /proc, no ps, and no signal but a kill:
 * `taskkill /T /F` ends a program and its descendants at once, found by
 * their parent ids (a process whose parent has exited is not among them).
 * The program starts without `detached` (there, a console of its own) and
 * without a window. `run` runs taskkill (tests pass a fake). */
function windowsPrograms(run: Runner): Programs {
  const live = new Set<ChildProcess>();
  const kill = async (child: ChildProcess) => {
    // Once node has reaped it, its pid may be another process's.
    if (!unreaped(child)) return;
    await run(TASKKILL, ["/pid", String(child.pid), "/T", "/F"]);
  };
  return {
    spawning: { detached: false, windowsHide: true },
    started(child) {
      if (child.pid === undefined) return; // it did not start
      live.add(child);
      child.once("exit", () => live.delete(child));
    },
    stop: (_, child) => kill(child),
    async stopAll() {
      await Promise.all([...live].map(kill));
      return [];
    },
  };
}

/** Run `command` to its end without a window; a failure (the process to
 * kill is gone, taskkill is missing) is no error. */
const runQuietly: Runner = (command, args) =>
  new Promise((done) => {
    const options = { stdio: "ignore", windowsHide: true } as const;
    const child = spawn(command, args, options);
    child.once("error", () => done());
    child.once("close", () => done());
  });

/** How programs are stopped on `platform`. */
function programsFor(platform: NodeJS.Platform, run = runQuietly): Programs {
  return platform === "win32" ? windowsPrograms(run) : unixPrograms;
}

/** This platform's, chosen once. */
let programs = programsFor(process.platform);

/** For the runtime's own tests, not for extensions: the platforms' ways of
 * stopping programs, and `use`, which makes spawnForCall and the exit use
 * one (and returns the one it replaces). */
export const programsForTests = {
  programsFor,
  runQuietly,
  TASKKILL,
  use(replacement: Programs): Programs {
    const replaced = programs;
    programs = replacement;
    return replaced;
  },
};

/** Stop the processes that carry `mark` (see marked), with the process group
 * of `leader` (spawnForCall's) or, for the whole run, those of node's
 * children that share its process group (tsx's esbuild service, started
 * before the mark was set): SIGTERM, then SIGKILL to those still there after
 * 0.5 s, which it returns. It returns once they are gone, node's children
 * reaped (one left behind would stay a zombie where nothing reaps orphans),
 * or 0.5 s after the SIGKILL. */
async function stopProcesses(
  mark: string,
  leader?: ChildProcess,
): Promise<number[]> {
  const signalled = new Set<number>();
  const killed = new Set<number>();
  const deadline = Date.now() + 500;
  for (;;) {
    const pids = marked(mark);
    if (mark === RUN) pids.push(...children().filter((p) => !pids.includes(p)));
    const group = leader && unreaped(leader) ? leader.pid : undefined;
    const now = Date.now();
    // SIGKILL'd processes take a moment to go: wait for them a while.
    if ((!pids.length && !group) || now > deadline + 500) return [...killed];
    const late = now > deadline;
    if (group) pids.push(-group);
    for (const pid of pids) {
      if (!late && signalled.has(pid)) continue;
      signalled.add(pid);
      if (late && pid > 0) killed.add(pid);
      try {
        process.kill(pid, late ? "SIGKILL" : "SIGTERM");
      } catch {
        // gone already
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The processes whose environment holds ZOT_EXT_RUN=mark or mark/..., this
 * one aside. One that has exited reads as empty. */
function marked(mark: string): number[] {
  const entry = `${RUN_VARIABLE}=${mark}`;
  const found: number[] = [];
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return mark === RUN ? below(process.pid) : []; // no /proc (macOS)
  }
  for (const name of names) {
    if (!/^[0-9]+$/.test(name) || Number(name) === process.pid) continue;
    let environ: string;
    try {
      environ = readFileSync(`/proc/${name}/environ`, "latin1");
    } catch {
      continue; // gone, or another user's
    }
    if (!environ.includes(entry)) continue;
    const values = environ.split("\0");
    if (values.some((v) => v === entry || v.startsWith(`${entry}/`))) {
      found.push(Number(name));
    }
  }
  return found;
}

/** node's children in its own process group, from /proc (Linux); exited
 * ones too, until node has reaped them. */
function children(): number[] {
  const found: number[] = [];
  let ownGroup: string;
  let names: string[];
  try {
    ownGroup = fields(readFileSync("/proc/self/stat", "utf8"))[2];
    names = readdirSync("/proc");
  } catch {
    return found;
  }
  for (const name of names) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const [, ppid, group] = fields(stat);
      if (Number(ppid) === process.pid && group === ownGroup) {
        found.push(Number(name));
      }
    } catch {
      // the process is gone already
    }
  }
  return found;
}

/** The fields of /proc/PID/stat after the command: state, ppid, pgrp, ...
 * (the command may hold spaces and ")"). */
function fields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** The live processes under `root`, from ps (where there is no /proc). */
function below(root: number): number[] {
  const columns = ["-A", "-o", "pid=", "-o", "ppid=", "-o", "stat="];
  const ps = spawnSync("ps", columns, { encoding: "utf8" });
  const under = new Map<number, number[]>();
  for (const line of (ps.stdout ?? "").split("\n")) {
    const [pid, ppid, stat = ""] = line.trim().split(/\s+/);
    const zombie = stat.startsWith("Z");
    if (!pid || !ppid || zombie || pid === String(ps.pid)) continue;
    const siblings = under.get(Number(ppid)) ?? [];
    under.set(Number(ppid), [...siblings, Number(pid)]);
  }
  const found: number[] = [];
  const todo = [root];
  while (todo.length) {
    const next = under.get(todo.pop()!) ?? [];
    todo.push(...next);
    found.push(...next);
  }
  return found;
}
