// A fake zot for unit tests: it runs an extension in the test's process and
// talks to it in JSON lines, as zot does, so a test calls a command or a tool
// by the name zot knows it by, whatever the function behind it is called.
//
//   const zot = Zot.start(ext);            // hello, hello_ack, registrations
//   const reply = await zot.command("hi", "there"); // reply.action, ...
//   const result = await zot.tool("echo", { text: "x" }); // result.text, ...
//   zot.stop();
//
// It belongs to the template: `copier update` brings its fixes.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ContentBlock, Extension, Panel } from "./runtime.js";

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
}

/** A tool's answer to the model. */
export interface Result {
  text: string; // the text of its blocks, one after the other
  isError: boolean;
  content: ContentBlock[];
  structuredContent?: unknown;
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
 * zot 0.1.62, whose hello_ack lists no capabilities. */
export class Zot {
  readonly project = mkdtempSync(join(tmpdir(), "zot-test-project-"));
  readonly dataDir = mkdtempSync(join(tmpdir(), "zot-test-data-"));
  readonly hello: Frame;
  readonly registrations: Frame[];
  readonly commands: string[] = [];
  readonly tools: string[] = [];
  private readonly replies = new Map<string, (frame: Frame) => void>();
  private frames: Frame[] = []; // sent on their own, not taken yet
  private waiting?: () => void;
  private logged = "";
  private ids = 0;

  private constructor(
    private readonly ext: Extension,
    newer: boolean,
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
   * as zot 0.1.62, with `newer: false`), in folders of its own. */
  static start(ext: Extension, { newer = true } = {}): Zot {
    return new Zot(ext, newer);
  }

  /** A line from the extension: a reply goes to its request. */
  private take(frame: Frame): void {
    const reply = typeof frame.id === "string" && this.replies.get(frame.id);
    if (reply) {
      this.replies.delete(frame.id as string);
      reply(frame);
      return;
    }
    this.frames.push(frame);
    this.waiting?.();
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
    return { action, prompt, insert, display, error, panel } as Reply;
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
    const frame = { type: "event_intercept", event: "tool_call" };
    const [, reply] = this.request({
      ...frame,
      tool_name: tool,
      tool_args: args,
    });
    const answer = await this.within(reply, `verdict on ${tool}`);
    return answer.block === true ? String(answer.reason ?? "") : undefined;
  }

  /** The system prompt the extension gives for the next turn, or undefined
   * when it keeps `systemPrompt`; `fields` go in the frame too (cwd, ...). */
  async beforeAgentStart(
    systemPrompt: string,
    fields: object = {},
  ): Promise<string | undefined> {
    const frame = { type: "event_intercept", event: "before_agent_start" };
    const [, reply] = this.request({
      ...frame,
      system_prompt: systemPrompt,
      ...fields,
    });
    const answer = await this.within(reply, "system prompt");
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
