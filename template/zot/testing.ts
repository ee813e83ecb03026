// A fake zot for unit tests: it runs an extension in the test's process and
// talks to it in JSON lines, as zot does, so a test calls a command or a tool
// by the name zot knows it by, whatever the function behind it is called.
//
//   const zot = Zot.start(ext);            // hello, hello_ack, registrations
//   const reply = await zot.command("hi", "there"); // reply.action, ...
//   const result = await zot.tool("echo", { text: "x" }); // result.text, ...
//   zot.stop();
//
// What zot's own tools answer the extension's callTool is up to the test:
// Zot.start(ext, { tools: { read: "the file" } }), and zot.called lists the
// calls.
//
// It belongs to the template: `copier update` brings its fixes.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ContentBlock, Extension, Panel, ToolResult } from "./runtime.js";

/** How long a test waits for the extension: far longer than it should take. */
const WAIT = 5000;

/** One frame the extension sent. */
export type Frame = { type: string; [field: string]: unknown };

/** A command's answer: action is prompt, insert, display, open_panel or noop. */
export interface Reply {
  action: string;
  prompt?: string;
  insert?: string;
  display?: string;
  error?: string;
  panel?: Panel; // the panel it opens, if any
  toolName?: string; // tool_prompt: the tool zot runs first, and its args
  toolArgs?: Record<string, unknown>;
}

/** A tool's answer to the model. */
export interface Result {
  text: string; // the text of its blocks, one after the other
  isError: boolean;
  content: ContentBlock[];
  structuredContent?: unknown;
  activateTools?: string[];
}

/** What one of zot's tools answers the extension's callTool: a text, or a
 * result (errorResult(...), { text, is_error, truncated }, ...). */
export type ToolAnswer = string | ({ text?: string } & Partial<ToolResult>);

/** A tool's answer, or a function of the args the extension sent. */
export type ZotTool =
  | ToolAnswer
  | ((args: Record<string, unknown>) => ToolAnswer | Promise<ToolAnswer>);

/** A call of one of zot's tools the extension made (callTool). */
export interface ToolUse {
  id: string;
  name: string;
  args: Record<string, unknown>;
  parentId?: string; // the tool call it was made in
  cancelled: boolean; // the extension sent call_tool_cancel
}

/** A tool call under way (Zot.startTool). */
export class Call {
  constructor(
    private readonly zot: Zot,
    readonly id: string,
    private readonly reply: Promise<Frame>,
  ) {}

  /** Waits for the call's result. */
  async result(): Promise<Result> {
    const frame = await this.zot.within(this.reply, `the result of ${this.id}`);
    const content = (frame.content ?? []) as ContentBlock[];
    const text = content.map((b) => ("text" in b ? b.text : "")).join("");
    const isError = frame.is_error === true;
    return {
      text,
      isError,
      content,
      structuredContent: frame.structured_content,
      activateTools: frame.activate_tools as string[] | undefined,
    };
  }

  /** Tells the extension zot has given up on the call (tool_cancel). */
  cancel(): void {
    this.zot.send({ type: "tool_cancel", id: this.id });
  }

  /** Whether the call sends no result for `ms`: zot drops the result of a
   * call it has cancelled. */
  async noResult(ms = 500): Promise<boolean> {
    const late = new Promise<"none">((done) => setTimeout(done, ms, "none"));
    return (await Promise.race([this.reply, late])) === "none";
  }
}

/** zot as the extension sees it, after the handshake. `newer: false` plays
 * zot 0.1.62, whose hello_ack lists no capabilities (and which cannot read
 * call_tool); `tools` says what zot's tools answer callTool. */
export class Zot {
  readonly project = mkdtempSync(join(tmpdir(), "zot-test-project-"));
  readonly dataDir = mkdtempSync(join(tmpdir(), "zot-test-data-"));
  readonly hello: Frame;
  readonly registrations: Frame[];
  readonly commands: string[] = [];
  readonly tools: string[] = [];
  /** The calls of zot's tools the extension made, in order. */
  readonly called: ToolUse[] = [];
  private readonly replies = new Map<string, (frame: Frame) => void>();
  private frames: Frame[] = []; // sent on their own, not taken yet
  private waiting?: () => void;
  private logged = "";
  private ids = 0;

  private constructor(
    private readonly ext: Extension,
    private readonly newer: boolean,
    private readonly answers: Record<string, ZotTool>,
  ) {
    ext.serve(
      (line, written) => {
        this.take(JSON.parse(line) as Frame);
        written();
      },
      (text) => void (this.logged += text),
    );
    this.hello = this.frames.shift() as Frame;
    const capabilities = newer ? { capabilities: ["call_tool"] } : {};
    const { project: cwd, dataDir: data_dir } = this;
    this.send({
      type: "hello_ack",
      protocol_version: 1,
      cwd,
      data_dir,
      ...capabilities,
    });
    this.registrations = this.frames.splice(0); // up to ready, at once
    for (const frame of this.registrations) {
      if (frame.type === "register_command")
        this.commands.push(String(frame.name));
      if (frame.type === "register_tool") this.tools.push(String(frame.name));
    }
  }

  /** Runs `ext` as zot does, answering its hello as a newer zot would (or
   * as zot 0.1.62, with `newer: false`), in folders of its own. `tools`
   * answers the extension's calls of zot's tools by their name; a tool not
   * there answers an error. */
  static start(
    ext: Extension,
    {
      newer = true,
      tools = {},
    }: { newer?: boolean; tools?: Record<string, ZotTool> } = {},
  ): Zot {
    return new Zot(ext, newer, tools);
  }

  /** A line from the extension: a reply goes to its request. */
  private take(frame: Frame): void {
    if (frame.type === "call_tool" || frame.type === "call_tool_cancel") {
      this.onCallTool(frame);
      return;
    }
    const reply = typeof frame.id === "string" && this.replies.get(frame.id);
    if (reply) {
      this.replies.delete(frame.id as string);
      reply(frame);
      return;
    }
    this.frames.push(frame);
    this.waiting?.();
  }

  /** call_tool: recorded, and answered soon after, as zot does (even once
   * cancelled: the extension drops that answer). */
  private onCallTool(frame: Frame): void {
    const id = String(frame.id);
    if (frame.type === "call_tool_cancel") {
      const use = this.called.find((call) => call.id === id);
      if (use) use.cancelled = true;
      return;
    }
    if (!this.newer) {
      throw new Error(
        "the extension sent call_tool to zot 0.1.62: it cannot read it",
      );
    }
    const name = String(frame.name);
    const args = frame.args as Record<string, unknown>;
    const parentId = frame.parent_id as string | undefined;
    this.called.push({ id, name, args, parentId, cancelled: false });
    const tool = this.answers[name];
    const answer = async (): Promise<ToolAnswer> => {
      if (tool === undefined) {
        const text = `this test's zot has no answer for its tool ${name}`;
        return { text, is_error: true };
      }
      return typeof tool === "function" ? await tool(args) : tool;
    };
    void answer()
      .catch((err: unknown): ToolAnswer => {
        const text = err instanceof Error ? err.message : String(err);
        return { text, is_error: true }; // a function that throws
      })
      .then((got) => {
        const given = typeof got === "string" ? { text: got } : got;
        const { text, content, is_error, truncated } = given;
        const blocks =
          content ?? (text === undefined ? [] : [{ type: "text", text }]);
        this.send({
          type: "tool_result",
          id,
          name,
          content: blocks,
          is_error: is_error === true,
          ...(truncated ? { truncated: true } : {}),
        });
      });
  }

  /** Sends one frame to the extension, which handles it at once (a request
   * is answered later). */
  send(frame: object): void {
    this.ext.handle(JSON.stringify(frame));
  }

  /** Sends a request with a new id: the id, and its reply to come. The
   * frames sent on their own before it are forgotten. */
  private request(frame: object): [string, Promise<Frame>] {
    this.frames = [];
    const id = `test-${++this.ids}`;
    const reply = new Promise<Frame>((done) => this.replies.set(id, done));
    this.send({ ...frame, id });
    return [id, reply];
  }

  /** `promise`, or an error that names `what` after a while. */
  async within<T>(promise: Promise<T>, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, fail) => {
      timer = setTimeout(
        () => fail(new Error(`no ${what} within ${WAIT} ms`)),
        WAIT,
      );
    });
    try {
      return await Promise.race([promise, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Runs the slash command /name with args, as the user types it. */
  async command(name: string, args = ""): Promise<Reply> {
    this.registered("command", name, this.commands);
    const [, reply] = this.request({ type: "command_invoked", name, args });
    const answer = await this.within(reply, `answer to /${name}`);
    const { action = "noop", prompt, insert, display, error } = answer;
    const panel = answer.open_panel;
    const [toolName, toolArgs] = [answer.tool_name, answer.tool_args];
    const fields = { action, prompt, insert, display, error, panel };
    return { ...fields, toolName, toolArgs } as Reply;
  }

  /** Calls the tool `name` with `args` (the model's JSON) and returns at once. */
  startTool(name: string, args: unknown): Call {
    this.registered("tool", name, this.tools);
    const [id, reply] = this.request({ type: "tool_call", name, args });
    return new Call(this, id, reply);
  }

  /** Calls the tool `name` with `args` and returns its result. */
  tool(name: string, args: unknown): Promise<Result> {
    return this.startTool(name, args).result();
  }

  /** Asks about a call of `tool` with `args` before it runs: why the
   * extension refuses it, or undefined when it lets it run. */
  async intercept(tool: string, args: unknown): Promise<string | undefined> {
    const fields = { tool_name: tool, tool_args: args };
    return refusal(await this.interceptAnswer("tool_call", fields));
  }

  /** Asks before turn `step`: why the extension aborts it, or undefined. */
  async turnStart(step: number): Promise<string | undefined> {
    return refusal(await this.interceptAnswer("turn_start", { step }));
  }

  /** Asks before showing an assistant message: the whole answer (block and
   * reason, or replace_text). */
  assistantMessage(text: string): Promise<Frame> {
    return this.interceptAnswer("assistant_message", { text });
  }

  /** The whole answer to an intercept of `event` (tool_call, turn_start,
   * assistant_message, before_agent_start) with `fields` (tool_name and
   * tool_args, step, text, ...): block, reason, modified_args, ... */
  async interceptAnswer(event: string, fields: object = {}): Promise<Frame> {
    const frame = { type: "event_intercept", event, ...fields };
    const [, reply] = this.request(frame);
    return await this.within(reply, `answer to the ${event} intercept`);
  }

  /** The system prompt the extension gives for the next turn, or undefined
   * when it keeps `systemPrompt`; `fields` go in the frame too (cwd, ...). */
  async beforeAgentStart(
    systemPrompt: string,
    fields: object = {},
  ): Promise<string | undefined> {
    const answer = await this.interceptAnswer("before_agent_start", {
      system_prompt: systemPrompt,
      ...fields,
    });
    return answer.system_prompt as string | undefined;
  }

  /** Sends the event `name` with `fields` (session_start, turn_end, ...);
   * the extension has handled it when this returns. */
  event(name: string, fields: object = {}): void {
    this.send({ type: "event", event: name, ...fields });
  }

  /** Presses `key` (up, down, enter, esc, rune with `text`, ...) in a panel. */
  key(panelId: string, key: string, text = ""): void {
    this.send({ type: "panel_key", panel_id: panelId, key, text });
  }

  /** Closes a panel, as the user does with ctrl-c. */
  closePanel(panelId: string): void {
    this.send({ type: "panel_close", panel_id: panelId });
  }

  /** The next frame the extension sent on its own (notify, panel_render,
   * submit, ...), which must be of type `type` ("": any). */
  async next(type: string): Promise<Frame> {
    const arrived = new Promise<void>((done) => {
      if (this.frames.length) done();
      else this.waiting = done;
    });
    await this.within(arrived, `${type || "frame"} from the extension`);
    const frame = this.frames.shift() as Frame;
    if (type && frame.type !== type) {
      throw new Error(
        `the extension sent ${JSON.stringify(frame)}, not a ${type}`,
      );
    }
    return frame;
  }

  /** Whether the extension sends nothing on its own for `ms`. */
  async quiet(ms = 300): Promise<boolean> {
    await new Promise((done) => setTimeout(done, ms));
    return this.frames.length === 0;
  }

  /** What the extension logged so far. */
  log(): string {
    return this.logged;
  }

  /** Sends shutdown and removes the folders. */
  stop(): void {
    this.send({ type: "shutdown" });
    for (const folder of [this.project, this.dataDir]) {
      rmSync(folder, { recursive: true, force: true });
    }
  }

  private registered(kind: string, name: string, names: string[]): void {
    if (!names.includes(name)) {
      throw new Error(
        `no ${kind} ${name} is registered (registered: ${JSON.stringify(names)}): ` +
          `register it in src/extension.ts, or test the ${kind} you have`,
      );
    }
  }
}

/** An intercept's reason to block, or undefined when it lets things be. */
function refusal(answer: Frame): string | undefined {
  return answer.block === true ? String(answer.reason ?? "") : undefined;
}
