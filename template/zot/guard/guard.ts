// The guard: bash commands refused before they run.
//
// The rules are data, in guard-rules.json (the template's, replaced on
// `copier update`), the team's files guard-policy.json includes, and
// guard-policy.json (yours: rules you add, rules you switch off). This file
// reads a command the way bash splits it, finds each simple command behind
// its wrappers (sudo, env, xargs, bash -c '...', $(...)), and asks the rules
// about it. It belongs to the template: `copier update` replaces it.
import { readFileSync, statSync } from "node:fs";

/** A longer command is refused unread: checking it could take too long. */
export const MAX_COMMAND = 65536;
/** A rules file larger than this is refused unread: every decision would be slow. */
export const MAX_RULES_BYTES = 1024 * 1024;
/** Code inside code (bash -c '...', eval ...) deeper than this is refused. */
export const MAX_DEPTH = 8;
/** So are $(...), `...` and ( ... ) nested deeper than this. */
export const MAX_NESTING = 32;
/** Where cd leads stops being followed past a path this long. */
export const MAX_PATH = 4096;

// Runs of ordinary characters, runs of blanks, or one character of syntax
// (the u flag keeps a character beyond U+FFFF whole, as bash does).
const TOKEN = /[^ \t\n'"\\$`()|&;<>]+|[ \t]+|[\s\S]/gu;
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/;
const KEYWORDS = new Set(
  "if then elif else fi do done while until ! { } esac coproc".split(" "),
);
const ENDS_WORD = new Set(["\n", ";", "&", "|", "(", ")", "<", ">"]); // and blanks
// The first characters of tokens that are not text.
const SYNTAX = new Set(" \t\n'\"\\$`()|&;<>#");
const SUBSTITUTION = "$()"; // what a $(...), `...` or <(...) leaves in a word
// What xargs or parallel puts in a word from their input: unknown text.
const INPUT = "${:input}";
// The escapes of $'...', as bash reads them.
const ANSI_C =
  /\\([abeEfnrtv\\'"?]|[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|c[\s\S])/gu;
const ANSI_C_LETTERS: Record<string, number> = {
  a: 7,
  b: 8,
  e: 27,
  E: 27,
  f: 12,
  n: 10,
  r: 13,
  t: 9,
  v: 11,
};
// parallel's replacement strings: {}, {.}, {/}, {//}, {/.}, {#}, {%}, {1}, ...
const PARALLEL_REPLACE = /\{([0-9]*)(\.|\/|\/\/|\/\.|#|%)?\}/gu;
// What a shell reads in a word other than its text: parallel's command words
// with one of these are judged as words too (as -q keeps them).
const QUOTED = new Set(" \t\n'\"\\$`|&;<>()");
// parallel runs at most this many values one by one; more count as unknown.
const MAX_VALUES = 64;

/** Why the guard refuses a command: the rule, its reason, what to do instead. */
export interface Refusal {
  rule: string;
  reason: string;
  instead: string;
}

/** The refusal as zot shows it, from the extension called `name`. */
export function refusalMessage(name: string, refusal: Refusal): string {
  const { rule, reason, instead } = refusal;
  return `refused by ${name} (${rule}): ${reason}. Instead, ${instead}.`;
}

const TOO_LONG: Refusal = {
  rule: "too-long",
  reason: `a command of over ${MAX_COMMAND} characters, too long to check`,
  instead: "split it up, or write long text to a file with the write tool",
};
const TOO_DEEP: Refusal = {
  rule: "too-deep",
  reason: `code nested more than ${MAX_DEPTH} levels deep, too deep to check`,
  instead: "write the script to a file and run that",
};
// At most this many words of commands are judged again in one decision,
// with a variable's value or a call's arguments in place ($cmd, f() { "$@"; }).
const MAX_AGAIN = 4096;
const TOO_MANY_AGAIN: Refusal = {
  rule: "too-many-calls",
  reason:
    `more than ${MAX_AGAIN} words of commands run through variables or function` +
    " arguments, too many to check",
  instead: "write the script to a file and run that",
};

// --- Reading a command the way bash splits it --------------------------------

/** One simple command: its words, redirections and where it stands. */
interface Simple {
  words: string[];
  // [operator, target]: "<", ">" (any output) or "<<" (text)
  redirects: [string, string][];
  pipeline: number;
  subs: Simple[]; // the simple commands of its $(...), `...` and <(...)
  nested: boolean; // inside ( ), $( ), `` or <( ): a cd there does not last
  stdin?: string; // a here-document's text
  scope: number; // the subshell it stands in
  body?: Body; // the function whose body it is in
  keywords: number; // how many of its first words are keywords ({, if, ...)
}

/** A function's body: its commands run where the function is called. */
interface Body {
  name: string;
  scope: number; // where it is defined: it is seen there and in its subshells
  depth: number; // the braces open around it; -1 until its { or ( is read
  closed: boolean; // its } or ) was read: until then its commands run
  runs?: Invocation[];
  line?: Line;
  defs?: Defs; // the functions of the code it is defined in
}

/** The bodies of one name defined in one subshell, judged in turn. */
interface Group {
  bodies: Body[];
  checked: number; // how many are judged (once a decision, at a call)
  moves: boolean; // a cd in one moved where relative paths point
  busy: boolean; // being judged: a call in them does not judge them again
}

/** A shell's split of a command line into simple commands, quotes read.
 *
 * Words keep $NAME and ${...} as written; a command substitution leaves
 * SUBSTITUTION in its word, and its commands go into the `subs` of the
 * simple command the word belongs to. `commands` holds every simple command
 * in the order they end (a substitution's before its command's). */
class Parser {
  readonly tokens: string[];
  i = 0;
  readonly commands: Simple[] = [];
  readonly functions = new Set<string>();
  pipelines = 0;
  depth = 0;
  tooDeep = false;
  // (simple command, delimiter, strip tabs)
  heredocs: [Simple, string, boolean][] = [];
  scope = -1;
  readonly parents: number[] = []; // each subshell's parent
  readonly bodies: Body[] = []; // the functions defined, in order
  readonly open: Body[] = []; // the bodies being read, innermost last
  braces = 0; // the { read and not yet closed by a }

  constructor(text: string) {
    this.tokens = text.match(TOKEN) ?? [];
  }

  peek(ahead = 0): string {
    const at = this.i + ahead;
    return at < this.tokens.length ? this.tokens[at] : "";
  }

  newPipeline(): number {
    return ++this.pipelines;
  }

  /** The simple commands up to `end` (")" or "`"), or to the text's end. */
  parse(end = ""): Simple[] {
    if (this.depth >= MAX_NESTING) {
      this.tooDeep = true;
      this.i = this.tokens.length;
      return [];
    }
    this.depth++;
    const parent = this.scope; // ( ), $( ), `` and <( ) start a subshell
    this.scope = this.parents.length;
    this.parents.push(parent);
    const found: Simple[] = [];
    let pipeline = this.newPipeline();
    while (this.i < this.tokens.length) {
      const token = this.tokens[this.i];
      if (token === end) {
        this.i++;
        break;
      }
      if (token === "|") {
        // | and |& go on with the pipeline, || ends it
        this.i++;
        if (this.peek() === "|") {
          this.i++;
          pipeline = this.newPipeline();
        } else if (this.peek() === "&") {
          this.i++;
        }
      } else if ([";", "&", "\n", ")"].includes(token)) {
        this.i++;
        pipeline = this.newPipeline();
        if (token === "\n") this.readHeredocs();
      } else if (isBlank(token)) {
        this.i++;
      } else {
        this.simpleCommand(found, end, pipeline);
      }
    }
    this.depth--;
    this.scope = parent;
    return found;
  }

  simpleCommand(found: Simple[], end: string, pipeline: number): void {
    const command: Simple = {
      words: [],
      redirects: [],
      pipeline,
      subs: [],
      nested: this.depth > 1,
      scope: this.scope,
      body: this.open[this.open.length - 1],
      keywords: 0,
    };
    const words = command.words;
    while (this.i < this.tokens.length) {
      const token = this.tokens[this.i];
      if (token === end || [";", "\n", "|", ")"].includes(token)) break;
      if (token === "&") {
        if (this.tokens[this.i + 1] === ">") {
          this.i += 2; // &> and &>>: both outputs into a file
          if (this.peek() === ">") this.i++;
          command.redirects.push([">", this.target(command, end)]);
          continue;
        }
        break;
      }
      if (isBlank(token)) {
        this.i++;
      } else if (token === "<" || token === ">") {
        this.redirect(command, end);
      } else if (token === "(") {
        this.i++;
        this.skipBlanks();
        const body = this.open[this.open.length - 1];
        if (words.length === command.keywords + 1 && this.peek() === ")") {
          this.i++;
          this.define(command, words.pop()!); // name() { ...; }
        } else if (words.length === command.keywords && body?.depth === -1) {
          if (this.peek() === ")") {
            this.i++; // function name() { ...; }
          } else {
            // name() ( ... ): the body is a subshell
            body.depth = this.braces;
            found.push(...this.parse(")"));
            if (!body.closed) {
              // with the bodies left open in it
              body.closed = true;
              this.open.splice(this.open.indexOf(body));
            }
          }
        } else {
          found.push(...this.parse(")")); // a subshell: its commands run
        }
      } else if (token[0] === "#" && this.startsWord()) {
        while (this.i < this.tokens.length && this.tokens[this.i] !== "\n") {
          this.i++; // a comment
        }
      } else if (!SYNTAX.has(token[0]) && this.endsAfter(token, end)) {
        this.i++; // a plain word: the usual case, taken whole
        this.addWord(command, token, end);
      } else {
        this.addWord(command, this.word(command, end), end);
      }
    }
    if (words.length || command.redirects.length) {
      found.push(command);
      this.commands.push(command);
    }
  }

  /** A word of the command; { and } in front open and close bodies. */
  addWord(command: Simple, word: string, end: string): void {
    const words = command.words;
    if (words.length === command.keywords) {
      if (word === "function") {
        this.skipBlanks();
        if (this.peek() && !ENDS_WORD.has(this.peek())) {
          this.define(command, this.word(command, end));
        }
        return;
      }
      if (KEYWORDS.has(word)) {
        command.keywords++;
        const body = this.open[this.open.length - 1];
        if (word === "{") {
          if (body?.depth === -1) body.depth = this.braces; // the body starts
          this.braces++;
        } else if (word === "}") {
          this.braces = Math.max(0, this.braces - 1);
          if (body && body.depth >= 0 && this.braces <= body.depth) {
            body.closed = true;
            this.open.pop();
          }
        }
      }
    }
    words.push(word);
  }

  /** name() or function name: what follows is the function's body. */
  define(command: Simple, name: string): void {
    const body: Body = {
      name,
      scope: this.scope,
      depth: -1,
      closed: false,
    };
    this.functions.add(name);
    this.bodies.push(body);
    this.open.push(body);
    command.body = body;
  }

  /** Whether the word ends with this token (no quote or $ joined to it). */
  endsAfter(token: string, end: string): boolean {
    const following = this.tokens[this.i + 1] ?? " ";
    if (following === "(" && token.endsWith("=")) return false; // a=(x y): an array
    return isBlank(following) || ENDS_WORD.has(following) || following === end;
  }

  /** Whether the token stands at a word's start (where # starts a comment). */
  startsWord(): boolean {
    if (this.i === 0) return true;
    const previous = this.tokens[this.i - 1];
    return ENDS_WORD.has(previous) || isBlank(previous);
  }

  skipBlanks(): void {
    while (this.i < this.tokens.length && isBlank(this.tokens[this.i])) {
      this.i++;
    }
  }

  redirect(command: Simple, end: string): void {
    let first = this.tokens[this.i];
    const words = command.words;
    const last = words[words.length - 1];
    if (
      last !== undefined &&
      isNumber(last) &&
      this.tokens[this.i - 1] === last
    ) {
      words.pop(); // 2> file: the 2 belongs to the redirection
    }
    this.i++;
    const second = this.peek();
    if (second === "(") {
      // <(...) or >(...): a process substitution, a word
      this.i++;
      command.subs.push(...this.parse(")"));
      words.push(SUBSTITUTION);
    } else if (first === "<" && second === "<") {
      this.i++;
      if (this.peek() === "<") {
        // <<< word: a here-string
        this.i++;
        const text = this.target(command, end);
        command.redirects.push(["<<", text]);
        command.stdin ??= text;
        return;
      }
      const strip = this.peek().startsWith("-"); // <<-: leading tabs stripped
      if (this.peek() === "-") {
        this.i++; // <<- EOF
      } else if (strip) {
        this.tokens[this.i] = this.tokens[this.i].slice(1); // <<-EOF
      }
      this.heredocs.push([command, this.target(command, end), strip]);
    } else if (second === "&") {
      // >&2 and <&0 copy a descriptor; >& FILE writes it
      this.i++;
      const target = this.target(command, end);
      if (first === ">" && !(isNumber(target) || target === "-")) {
        command.redirects.push([">", target]);
      }
    } else {
      if (
        ((second === ">" || second === "|") && first === ">") ||
        (second === ">" && first === "<")
      ) {
        this.i++; // >> and >| append or overwrite; <> reads and writes
        first = ">";
      }
      command.redirects.push([first, this.target(command, end)]);
    }
  }

  /** The word after a redirection operator ("" if there is none). */
  target(command: Simple, end: string): string {
    this.skipBlanks();
    const token = this.peek();
    if (!token || ENDS_WORD.has(token) || token === end) return "";
    return this.word(command, end);
  }

  /** The text of the here-documents started on the line just ended. */
  readHeredocs(): void {
    for (const [command, delimiter, strip] of this.heredocs) {
      const lines: string[] = [];
      let line: string[] = [];
      while (this.i < this.tokens.length) {
        const token = this.tokens[this.i++];
        if (token !== "\n") {
          line.push(token);
          continue;
        }
        const text = line.join("");
        line = [];
        if ((strip ? text.replace(/^\t+/, "") : text) === delimiter) break;
        lines.push(text);
      }
      if (line.length) lines.push(line.join(""));
      command.stdin = lines.join("\n");
    }
    this.heredocs = [];
  }

  /** One word, quotes taken off; its substitutions go to command.subs. */
  word(command: Simple, end: string): string {
    const parts: string[] = [];
    while (this.i < this.tokens.length) {
      const token = this.tokens[this.i];
      if (token === end || ENDS_WORD.has(token) || isBlank(token)) {
        if (
          token === "(" &&
          parts.length &&
          parts[parts.length - 1].endsWith("=")
        ) {
          this.i++; // a=(x y): an array's words are data
          parts.push("(" + this.rawUntil(")") + ")");
          continue;
        }
        break;
      }
      this.i++;
      if (token === "'") {
        parts.push(this.rawUntil("'"));
      } else if (token === '"') {
        this.doubleQuoted(parts, command);
      } else if (token === "\\") {
        if (this.peek()) parts.push(this.tokens[this.i++]);
      } else if (token === "$") {
        // $"...": a double-quoted string
        if (this.peek() !== '"') this.dollar(parts, command);
      } else if (token === "`") {
        command.subs.push(...this.parse("`"));
        parts.push(SUBSTITUTION);
      } else {
        parts.push(token);
      }
    }
    return parts.join("");
  }

  /** The text of ${...} (close "}") or $((...)) (close ")", after its
   * "(("), up to its end; the $(...) and `...` in it run: their commands
   * go to command.subs. */
  expansion(command: Simple, close: string): string {
    const start = this.i;
    let depth = 0;
    while (this.i < this.tokens.length) {
      const token = this.tokens[this.i++];
      if (token === "$" && this.peek() === "(" && this.peek(1) !== "(") {
        this.i++;
        command.subs.push(...this.parse(")"));
      } else if (token === "`") {
        command.subs.push(...this.parse("`"));
      } else if (token === "\\") {
        this.i++;
      } else if (close === "}" && token.includes("}")) {
        break;
      } else if (close === ")" && token === "(") {
        depth++;
      } else if (close === ")" && token === ")") {
        if (depth === 0) {
          if (this.peek() === ")") this.i++;
          break;
        }
        depth--;
      }
    }
    return this.tokens.slice(start, this.i).join("");
  }

  /** The text up to the token `close` (taken too), as it stands. */
  rawUntil(close: string): string {
    const start = this.i;
    while (this.i < this.tokens.length && this.tokens[this.i] !== close) {
      this.i++;
    }
    return this.tokens.slice(start, this.i++).join("");
  }

  doubleQuoted(parts: string[], command: Simple): void {
    while (this.i < this.tokens.length) {
      const token = this.tokens[this.i++];
      if (token === '"') return;
      if (token === "\\") {
        const following = this.peek();
        if (["$", "`", '"', "\\"].includes(following)) {
          this.i++;
          parts.push(following);
        } else {
          parts.push("\\");
        }
      } else if (token === "$") {
        // "$'": no escapes inside double quotes
        if (this.peek() === "'") parts.push("$");
        else this.dollar(parts, command);
      } else if (token === "`") {
        command.subs.push(...this.parse("`"));
        parts.push(SUBSTITUTION);
      } else {
        parts.push(token);
      }
    }
  }

  /** What follows a $: $(...), $((...)), ${...}, $'...' or a name. */
  dollar(parts: string[], command: Simple): void {
    const following = this.peek();
    if (following === "(") {
      this.i++;
      if (this.peek() === "(") {
        // $(( arithmetic )): a number
        this.i++;
        this.expansion(command, ")");
        parts.push("$((0))");
      } else {
        const inner = this.parse(")");
        command.subs.push(...inner);
        parts.push(heredocText(inner));
      }
    } else if (following.startsWith("{")) {
      // ${...} as written, up to its }
      parts.push("$" + this.expansion(command, "}"));
    } else if (following === "'") {
      // $'...': escapes decoded as bash does
      const start = ++this.i;
      while (this.i < this.tokens.length && this.tokens[this.i] !== "'") {
        this.i += this.tokens[this.i] === "\\" ? 2 : 1;
      }
      parts.push(ansiC(this.tokens.slice(start, this.i).join("")));
      this.i++;
    } else {
      parts.push("$");
    }
  }
}

/** What a $(...) leaves in its word: the text of a here-document when its
 * only command is cat of one ($(cat <<EOF ... EOF)), or SUBSTITUTION. */
function heredocText(inner: Simple[]): string {
  if (inner.length !== 1) return SUBSTITUTION;
  const cat = inner[0];
  if (cat.words.length !== 1 || cat.words[0] !== "cat") return SUBSTITUTION;
  if (cat.stdin === undefined) return SUBSTITUTION;
  if (cat.redirects.some(([op]) => op !== "<<")) return SUBSTITUTION;
  return cat.stdin;
}

/** The text of $'...' with its escapes decoded; a NUL ends it, and a byte
 * that is not ASCII, or no character, stands as U+FFFD. */
function ansiC(text: string): string {
  let out = "";
  let at = 0;
  for (const match of text.matchAll(ANSI_C)) {
    out += text.slice(at, match.index);
    at = match.index + match[0].length;
    const escape = match[1];
    const kind = escape[0];
    let code: number;
    if (kind in ANSI_C_LETTERS) {
      code = ANSI_C_LETTERS[kind];
    } else if ("\\'\"?".includes(kind)) {
      code = kind.charCodeAt(0);
    } else if (kind === "x") {
      code = parseInt(escape.slice(1), 16);
    } else if (kind === "u" || kind === "U") {
      code = parseInt(escape.slice(1), 16);
      if (code > 0x10ffff || (0xd800 <= code && code <= 0xdfff)) code = 0xfffd;
    } else if (kind === "c") {
      const letter = escape.codePointAt(1) ?? 0;
      if (letter >= 0x80) code = 0xfffd;
      else if (letter === 0x3f) code = 0x7f;
      else
        code = (0x61 <= letter && letter <= 0x7a ? letter - 32 : letter) & 0x1f;
    } else {
      code = parseInt(escape, 8) & 0xff;
    }
    if (kind !== "u" && kind !== "U" && 0x80 <= code && code <= 0xff) {
      code = 0xfffd; // a byte, not a character
    }
    if (code === 0) return out;
    out += String.fromCodePoint(code);
  }
  return out + text.slice(at);
}

function isBlank(token: string): boolean {
  return token[0] === " " || token[0] === "\t";
}

function isNumber(word: string): boolean {
  return /^[0-9]+$/.test(word);
}

// --- The rules -----------------------------------------------------------------

/** One rule: every field given must hold for it to refuse a command. */
interface Rule {
  id: string;
  reason?: string;
  instead?: string;
  command?: string[];
  subcommand?: string[];
  skip?: number;
  option?: string[];
  "not option"?: string[];
  arg?: string[];
  target?: string[];
  targets?: string;
  "default target"?: string;
  redirect?: string[];
  exec?: string[];
  "runs output of"?: string[];
  "piped to"?: string[];
  input?: string[];
  "fork bomb"?: boolean;
  "min args"?: number;
  "code from input"?: boolean;
}

/** A command that runs another: sudo, env, xargs, ... */
interface Wrapper {
  "options with value"?: string[];
  assignments?: boolean;
  args?: number;
  "adds args"?: boolean;
  "bare options"?: string[]; // words taken as options: env's -
  values?: WrapperValues; // options read, not only skipped
  "value lists"?: Record<string, string>; // parallel's ::: and ::::
}

/** The options of a wrapper whose values the guard reads. */
interface WrapperValues {
  chdir?: string[]; // env -C DIR
  "split string"?: string[]; // env -S STRING
  replace?: Record<string, string>; // xargs -I R, -i: {}
  "input file"?: string[]; // xargs -a FILE: what it reads is not its input
}

/** What a wrapper's options say about the command it runs. */
interface WrapperState {
  chdir?: string; // env -C DIR
  replace?: string; // xargs -I R
  inputFile?: string; // parallel -a FILE
  splits: number; // how many env -S strings were split
}

/** guard-rules.json with guard-policy.json's changes, ready to use. */
export interface Policy {
  rules: Rule[];
  temp: string[][];
  devices: string[];
  secrets: string[];
  notSecrets: string[];
  wrappers: Map<string, Wrapper | null>;
  code: Map<string, string[]>;
  shells: string[];
  optionValues: Map<string, string[]>;
  oneDashOrTwo: string[]; // programs whose -name is --name
  byCommand: Map<string, Rule[]>; // rulesFor's answers
  find: FindTests;
  programs: Programs; // code run by python -c, node -e, ...
  programNames: string[];
}

/** find's tests that narrow what it finds to FOLDER/NAME, and those that undo it. */
interface FindTests {
  "narrowed by"?: string[];
  "widened by"?: string[];
}

/** What guard-rules.json and guard-policy.json hold. */
interface RulesFile {
  rules?: Rule[];
  off?: string[]; // the ids of rules switched off
  include?: string[]; // the team's policy files (guard-policy.json only)
  lists?: Record<string, string[]>;
  classes?: Record<string, string[]>;
  wrappers?: Record<string, Wrapper | null>;
  code?: Record<string, string[]>;
  shells?: string[];
  "option values"?: Record<string, string[]>;
  "one dash or two"?: string[];
  find?: FindTests;
  programs?: Programs;
}

// The extension's folder, which holds guard-policy.json (yours): this file
// is zot/guard/guard.ts in it, or part of dist/index.js (the bundle).
const FOLDER = new URL(
  import.meta.url.endsWith("/zot/guard/guard.ts") ? "../.." : "..",
  import.meta.url,
);
// The template's rules, beside this file and its guard-cases.json.
export const RULES_FILE = "zot/guard/guard-rules.json";

/** A rules file the guard cannot use: it refuses every command until fixed. */
class RulesError extends Error {
  readonly refusal: Refusal;
  constructor(name: string, problem: string, instead: string) {
    super(`${name} ${problem}`);
    const reason = `${name} ${problem}, so the guard refuses every command`;
    this.refusal = { rule: "unreadable-rules", reason, instead };
  }
}

/** A rules file as a JSON object; a RulesError naming it when it cannot be. */
function loadJson(name: string): RulesFile {
  const file = new URL(name, FOLDER);
  let text: string;
  try {
    const { size } = statSync(file);
    if (size > MAX_RULES_BYTES) {
      const problem = `is ${size} bytes, over the guard's limit of 1 MiB`;
      const fix = `keep ${name} under 1 MiB (fewer rules, or broader patterns)`;
      throw new RulesError(name, problem, fix);
    }
    text = readFileSync(file, "utf8");
  } catch (err) {
    if (err instanceof RulesError) throw err;
    const { code, message } = err as NodeJS.ErrnoException;
    if (code === "ENOENT") {
      const ours = name === RULES_FILE || name === "guard-policy.json";
      const fix = ours
        ? `restore ${name} (git checkout ${name}, or copier update)`
        : `restore ${name} (from a submodule: git submodule update --init), or take it out of "include" in guard-policy.json`;
      throw new RulesError(name, "is missing", fix);
    }
    throw new RulesError(name, `cannot be read (${message})`, `fix ${name}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    const problem = `is not valid JSON (${(err as Error).message})`;
    const fix = `fix ${name} (./smoke-test points at the problem)`;
    throw new RulesError(name, problem, fix);
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw new RulesError(name, "does not hold a JSON object", `fix ${name}`);
  }
  return data;
}

let loaded: Policy | undefined;

/** A RulesError when a rule or a list of rules file `name` has an empty
 * pattern, which no two engines would read alike. */
function noEmptyPattern(name: string, data: RulesFile): void {
  const rules: unknown[] = Array.isArray(data.rules) ? data.rules : [];
  const groups: [string, unknown[]][] = rules
    .filter(isObject)
    .map((rule) => [`rule ${JSON.stringify(rule.id)}`, Object.values(rule)]);
  const lists: unknown = data.lists;
  for (const [key, value] of Object.entries(isObject(lists) ? lists : {})) {
    groups.push([`list ${JSON.stringify(key)}`, [value]]);
  }
  for (const [where, values] of groups) {
    if (values.some((value) => Array.isArray(value) && value.includes(""))) {
      const fix = `fix ${name} (./smoke-test points at the problem)`;
      throw new RulesError(name, `has an empty pattern in ${where}`, fix);
    }
  }
}

/** The team's policy files guard-policy.json names in "include", in order. */
function included(own: RulesFile, template: RulesFile): RulesFile[] {
  const paths: unknown = own.include ?? [];
  if (
    !Array.isArray(paths) ||
    !paths.every((path) => typeof path === "string" && path !== "")
  ) {
    const fix = `fix guard-policy.json ("include": ["team-policy/guard-policy.json"])`;
    const problem = `has an "include" that is not a list of file paths`;
    throw new RulesError("guard-policy.json", problem, fix);
  }
  for (const path of paths as string[]) {
    if (path.startsWith("/") || path.split("/").includes("..")) {
      const problem = `includes ${JSON.stringify(path)}, outside the extension's folder`;
      const fix = "name a file inside the extension's folder, relative to it";
      throw new RulesError("guard-policy.json", problem, fix);
    }
  }
  return (paths as string[]).map((path) => {
    const data = loadJson(path);
    if ("include" in data) {
      const problem = `has an "include" of its own (an included file cannot include)`;
      const fix = `move the files ${path} includes into guard-policy.json's "include"`;
      throw new RulesError(path, problem, fix);
    }
    noEmptyPattern(path, data);
    policyKeys(path, data, INCLUDED_KEYS, template);
    return data;
  });
}

// The keys of guard-rules.json a policy adds to: objects merged name by name,
// lists extended ("lists" and "option values" are read on their own).
const ADDS_TO = [
  "classes",
  "code",
  "find",
  "one dash or two",
  "programs",
  "shells",
  "wrappers",
];
// The keys the guard reads in an included file, and in guard-policy.json.
const INCLUDED_KEYS = [
  "about",
  "lists",
  "off",
  "option values",
  "rules",
  ...ADDS_TO,
];
const POLICY_KEYS = ["include", ...INCLUDED_KEYS];
// What a policy's new entry of "code" or "wrappers" may hold (a wrapper of
// the template's may hold these too).
const NEW_ENTRY: Record<string, unknown> = {
  code: [],
  wrappers: {
    "options with value": [],
    "bare options": [],
    args: 0,
    assignments: false,
    "adds args": false,
  },
};

/** A RulesError when policy file `name` has a key not in `keys`, or a key
 * whose value is not what the guard reads there (for what it adds to
 * guard-rules.json, `template`: the kind there). */
function policyKeys(
  name: string,
  data: RulesFile,
  keys: string[],
  template: RulesFile,
): void {
  const fix = `fix ${name} (./smoke-test points at the problem)`;
  const unknown = Object.keys(data).filter((key) => !keys.includes(key));
  if (unknown.length) {
    const key = unknown.sort(byCodePoint)[0];
    const problem = `has a key the guard does not read: "${key}"`;
    throw new RulesError(name, problem, fix);
  }
  const isLists = (value: unknown) =>
    isObject(value) && Object.values(value).every(isNames);
  const checks: [string, (value: unknown) => boolean, string][] = [
    ["off", isNames, `has an "off" that is not a list of rule ids`],
    [
      "rules",
      (value) => Array.isArray(value) && value.every(isObject),
      `has "rules" that is not a list of rules`,
    ],
    ["lists", isLists, `has "lists" that is not an object of lists of names`],
    [
      "option values",
      isLists,
      `has "option values" that is not an object of lists of options`,
    ],
  ];
  const values = data as Record<string, unknown>;
  for (const [key, holds, problem] of checks) {
    if (Object.hasOwn(values, key) && !holds(values[key])) {
      throw new RulesError(name, problem, fix);
    }
  }
  const forms = template as Record<string, unknown>;
  for (const key of ADDS_TO) {
    if (!Object.hasOwn(values, key)) continue;
    let form = Object.hasOwn(forms, key)
      ? forms[key]
      : key === "one dash or two"
        ? []
        : {};
    if (key === "programs") {
      // only its languages' lists: "runs", ...
      const languages = isObject(form) ? form.languages : undefined;
      form = { languages: languages ?? {} };
    }
    const problem = formProblem(form, values[key], key, NEW_ENTRY[key]);
    if (problem) throw new RulesError(name, problem, fix);
  }
}

function isNames(value: unknown): boolean {
  return (
    Array.isArray(value) && value.every((item) => typeof item === "string")
  );
}

/** What is wrong with a policy's `value` at `where` (keys joined by /),
 * where guard-rules.json has `form`; a new name may be given when `entry`
 * (the form of one) is: "" if nothing is. */
function formProblem(
  form: unknown,
  value: unknown,
  where: string,
  entry?: unknown,
): string {
  if (Array.isArray(form)) {
    return isNames(value) ? "" : `has "${where}" that is not a list of names`;
  }
  if (typeof form === "boolean") {
    if (typeof value === "boolean") return "";
    return `has "${where}" that is not true or false`;
  }
  if (typeof form === "number") {
    if (isCount(value)) return "";
    return `has "${where}" that is not a whole number from 0 to 100`;
  }
  if (typeof form === "string") {
    return typeof value === "string" ? "" : `has "${where}" that is not a text`;
  }
  if (!isObject(value)) return `has "${where}" that is not an object`;
  for (const key of Object.keys(value).sort(byCodePoint)) {
    let known =
      isObject(form) && Object.hasOwn(form, key) ? form[key] : undefined;
    if (isObject(entry) && isObject(known)) {
      known = { ...entry, ...known };
    } else if (known === undefined || known === null) {
      known = entry;
    }
    if (known === undefined) {
      return `has a key the guard does not read: "${where}/${key}"`;
    }
    const problem = formProblem(known, value[key], `${where}/${key}`);
    if (problem) return problem;
  }
  return "";
}

/** A whole number from 0 to 100 (1.0 is one): how many words to pass. */
function isCount(value: unknown): boolean {
  return (
    typeof value === "number" &&
    0 <= value &&
    value <= 100 &&
    Number.isInteger(value)
  );
}

/** A policy's value added to the one before: objects merged name by name,
 * lists extended; anything else replaces. */
function added(base: unknown, more: unknown): unknown {
  if (isObject(base) && isObject(more)) {
    const out = new Map(Object.entries(base));
    for (const [key, value] of Object.entries(more)) {
      out.set(key, added(out.get(key), value));
    }
    return Object.fromEntries(out);
  }
  if (Array.isArray(base) && Array.isArray(more)) return [...base, ...more];
  return more;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The order of code points (that of UTF-8 bytes), not of UTF-16 units. */
function byCodePoint(a: string, b: string): number {
  const [x, y] = [[...a], [...b]];
  for (let i = 0; i < x.length && i < y.length; i++) {
    const difference = x[i].codePointAt(0)! - y[i].codePointAt(0)!;
    if (difference) return difference;
  }
  return x.length - y.length;
}

/** guard-rules.json, then each file guard-policy.json includes, then
 * guard-policy.json: read on first use. Rules are asked in that order, a list
 * replaces the one of its name from the files before, "off" switches rules
 * of its file and the files before off, and "option values" add to those of
 * the files before. */
function policy(): Policy {
  if (loaded) return loaded;
  const data = loadJson(RULES_FILE);
  const own = loadJson("guard-policy.json");
  noEmptyPattern(RULES_FILE, data);
  noEmptyPattern("guard-policy.json", own);
  policyKeys("guard-policy.json", own, POLICY_KEYS, data);
  loaded = combined([data, ...included(own, data), own]);
  return loaded;
}

/** guard-rules.json alone: what guard-cases.json is judged with. */
export function templatePolicy(): Policy {
  const data = loadJson(RULES_FILE);
  noEmptyPattern(RULES_FILE, data);
  return combined([data]);
}

/** The rules files `layers`, the template's first, as one policy. */
function combined(layers: RulesFile[]): Policy {
  const merged: Record<string, unknown> = { ...layers[0] };
  for (const layer of layers.slice(1) as Record<string, unknown>[]) {
    for (const key of ADDS_TO) {
      if (Object.hasOwn(layer, key)) {
        merged[key] = added(merged[key], layer[key]);
      }
    }
  }
  const data = merged as RulesFile;
  const lists = new Map(
    layers.flatMap((layer) => Object.entries(layer.lists ?? {})),
  );
  const off = new Set<string>();
  const kept = [...layers].reverse().map((layer) => {
    for (const id of layer.off ?? []) off.add(id); // for it and the files before
    return (layer.rules ?? []).filter((rule) => !off.has(rule.id));
  });
  const expand = (names: string[]): string[] =>
    names.flatMap((name) =>
      name.startsWith("@") ? expand(lists.get(name.slice(1)) ?? []) : [name],
    );
  // Names starting with @ stand for a list: each rule with its lists expanded.
  const rules = kept
    .reverse()
    .flat()
    .map((rule) => {
      const fields = Object.entries(rule).map(
        ([key, value]: [string, unknown]) => [
          key,
          Array.isArray(value) ? expand(value) : value,
        ],
      );
      return Object.fromEntries(fields) as Rule;
    });
  // A command's options that take a value: those of every file, in order.
  const optionValues = new Map<string, string[]>();
  for (const layer of layers) {
    const values = layer["option values"] ?? {};
    for (const [name, options] of Object.entries(values)) {
      optionValues.set(name, [...(optionValues.get(name) ?? []), ...options]);
    }
  }
  const classes = data.classes ?? {};
  return {
    rules,
    temp: (classes.temp ?? []).map(normal),
    devices: classes.device ?? [],
    secrets: classes.secret ?? [],
    notSecrets: classes["not secret"] ?? [],
    wrappers: new Map(Object.entries(data.wrappers ?? {})),
    code: new Map(Object.entries(data.code ?? {})),
    shells: data.shells ?? [],
    optionValues,
    oneDashOrTwo: data["one dash or two"] ?? [],
    byCommand: new Map(),
    find: data.find ?? {},
    programs: data.programs ?? {},
    programNames: programNames(data.programs ?? {}),
  };
}

// Each list of patterns, made ready for matches(): its plain names, and the
// parts of those with a * (split at each *).
const PATTERNS = new WeakMap<string[], [Set<string>, string[][]]>();

/** Whether `word` fits one of `patterns`, where * stands for any text. */
function matches(word: string, patterns: string[]): boolean {
  let entry = PATTERNS.get(patterns);
  if (!entry) {
    const plain = patterns.filter((p) => !p.includes("*"));
    const globs = patterns.filter((p) => p.includes("*"));
    entry = [new Set(plain), globs.map((p) => p.split("*"))];
    PATTERNS.set(patterns, entry);
  }
  return entry[0].has(word) || entry[1].some((parts) => fits(word, parts));
}

/** Whether `word` is the parts of a pattern split at its *s, with any text
 * between them: the first part starts it, the last ends it, and each other
 * part comes at its first place after the one before (which is always a
 * good place), so a long word takes no longer than a scan per part. */
function fits(word: string, parts: string[]): boolean {
  const first = parts[0];
  const last = parts[parts.length - 1];
  const stop = word.length - last.length;
  if (stop < first.length || !word.startsWith(first) || !word.endsWith(last)) {
    return false;
  }
  let at = first.length;
  for (const part of parts.slice(1, -1)) {
    const found = word.indexOf(part, at);
    if (found < 0 || found + part.length > stop) return false;
    at = found + part.length;
  }
  return true;
}

function basename(word: string): string {
  return word.slice(word.lastIndexOf("/") + 1);
}

/** -x, -xyz, --long (not -, --, or -1, which is a number). */
function isOption(word: string): boolean {
  return (
    word.length > 1 &&
    word[0] === "-" &&
    !(word[1] >= "0" && word[1] <= "9") &&
    word !== "--"
  );
}

function isShort(word: string): boolean {
  return word.length > 1 && word[0] === "-" && word[1] !== "-";
}

/** Where the first letter of a cluster that takes a value stands (0: none):
 * in git checkout -qbNAME, b; the rest of the word is its value. */
function valueAt(word: string, withValue: string[]): number {
  for (let i = 1; i < word.length; i++) {
    if (withValue.includes("-" + word[i])) return i;
  }
  return 0;
}

/** Whether the next word is the option's value: -C DIR, or -qb NAME. */
function takesValue(word: string, withValue: string[]): boolean {
  if (withValue.includes(word)) return true;
  return (
    withValue.length > 0 &&
    isShort(word) &&
    valueAt(word, withValue) === word.length - 1
  );
}

/** -f matches any cluster with an f (-rf) before a letter that takes a
 * value (not -bfix); longer names match whole (=value aside). */
function optionMatches(
  word: string,
  wanted: string,
  withValue: string[] = [],
): boolean {
  // Two characters, as bash counts them (U+10000 and above are two UTF-16 units).
  const letters = wanted.length <= 4 ? [...wanted] : [];
  if (letters.length === 2 && wanted !== "--") {
    if (!isShort(word)) return false;
    const at = withValue.length ? valueAt(word, withValue) : 0;
    return word.slice(1, at ? at + 1 : undefined).includes(letters[1]);
  }
  const name = word.split("=", 1)[0];
  return (
    word === wanted ||
    name === wanted ||
    (wanted.includes("*") && fits(name, wanted.split("*")))
  );
}

// --- Where a path points ----------------------------------------------------------

/** The parts of an absolute path, with . and .. worked out. */
function normal(path: string): string[] {
  const parts: string[] = [];
  for (const part of path.split("/")) {
    if (part === "..") {
      parts.pop();
    } else if (part !== "" && part !== ".") {
      parts.push(part);
    }
  }
  return parts;
}

function climbsOut(path: string): boolean {
  let depth = 0;
  for (const part of path.split("/")) {
    if (part === "..") {
      if (--depth < 0) return true;
    } else if (part !== "" && part !== ".") {
      depth++;
    }
  }
  return false;
}

function isWildcard(part: string): boolean {
  return /^\.*[*?]*$/.test(part) && part.includes("*");
}

function startsWith(parts: string[], prefix: string[]): boolean {
  return (
    prefix.length <= parts.length &&
    prefix.every((part, i) => parts[i] === part)
  );
}

/** A path with $HOME or ${HOME} at its start written as ~. */
function tilde(word: string): string {
  for (const home of ["$HOME", "${HOME}"]) {
    if (word === home || word.startsWith(home + "/")) {
      word = "~" + word.slice(home.length);
    }
  }
  return word;
}

/** The class of a path: inside, temp, remote, or one of the unsafe ones.
 *
 * `here` is the folder relative paths start from (null: not known),
 * `project` the project folder's parts, `temp` the temp folders' parts. */
function where(
  word: string,
  here: string | null,
  project: string[],
  temp: string[][],
): string {
  if (word === "" || word === "{}") return "inside";
  word = tilde(word);
  // $NAME, a SUBSTITUTION, or {a,b}: bash makes it other words
  if (word.includes("$") || (word.includes("{") && word.includes(","))) {
    return "unknown";
  }
  if (word.startsWith("~")) {
    if (word !== "~" && !word.startsWith("~/")) return "home"; // ~user
    const deep = normal(word.slice(1)).length > 1 && !climbsOut(word.slice(2));
    return deep ? "outside" : "home";
  }
  if (!word.startsWith("/") && word.split("/", 1)[0].includes(":")) {
    return "remote"; // host:path
  }
  const relative = !word.startsWith("/");
  if (relative && here === null) return "unknown";
  const parts = normal(relative && here ? here + "/" + word : word);
  if (!parts.length || (parts.length === 1 && isWildcard(parts[0]))) {
    return "root";
  }
  if (startsWith(parts, project)) {
    const rest = parts.slice(project.length);
    const whole = !rest.length || (rest.length === 1 && isWildcard(rest[0]));
    return whole ? "project" : "inside";
  }
  if (relative && here === "/" + project.join("/")) {
    return "parent"; // climbed out of the project
  }
  if (parts.length === 1) return "system";
  if (temp.some((top) => startsWith(parts, top) && parts.length > top.length)) {
    return "temp";
  }
  return "outside";
}

/** A word, and the file it names in @file, name=@file and --opt=file. */
function secretForms(word: string): string[] {
  const forms = [word];
  if (word.startsWith("@")) forms.push(word.slice(1));
  if (word.includes("=@")) {
    forms.push(word.slice(word.indexOf("=@") + 2));
  } else if (word.startsWith("--") && word.includes("=")) {
    forms.push(word.slice(word.indexOf("=") + 1));
  }
  return forms.map((form) => {
    for (const home of ["$HOME", "${HOME}"]) {
      if (form.startsWith(home + "/")) form = "~" + form.slice(home.length);
    }
    return form;
  });
}

// --- Code run by an interpreter -----------------------------------------------
//
// python -c CODE, node -e CODE, perl -e CODE, ruby -e CODE, or a program read
// from a here-document: the guard reads the program's tokens (names, string
// literals, punctuation), not its meaning. A call of guard-rules.json's
// "programs" that runs a command is judged as that command (one string as
// bash -c STRING), and one that deletes files as rm with the call's paths.

/** "programs" of guard-rules.json. */
interface Programs {
  "delete as"?: Record<string, string[]>;
  languages?: Record<string, Language>;
}

/** One language of "programs": its interpreters, the options that take its
 * code, and the calls it knows. */
interface Language {
  names?: string[];
  code?: string[];
  "options with value"?: string[];
  "last option"?: string[];
  "code attached"?: boolean; // -cCODE: the code may follow its option in the word
  "path objects"?: string[]; // Path("x") is "x"
  runs?: string[];
  deletes?: string[];
  "deletes files"?: string[];
}

// Names (os.system, .execSync, File::Path::rmtree), escapes, blanks, or one
// character.
const PIECE =
  /(?:\.|::)?[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*|=>|==|\\[\s\S]|[ \t]+|[\s\S]/gu;
const UNKNOWN = "$_"; // what a value the code computes leaves in a string
// A program with more calls that run commands or delete files is refused:
// checking it could take too long. A call's arguments are read up to
// MAX_CALL_TOKENS tokens.
const MAX_CALLS = 64;
const MAX_CALL_TOKENS = 128;
const TOO_MANY_CALLS: Refusal = {
  rule: "too-many-calls",
  reason: `a program with more than ${MAX_CALLS} calls that run commands or delete files, too many to check`,
  instead: "write the script to a file and run that",
};
const GRAMMARS = ["python", "node", "perl", "ruby"];
const PY_PREFIXES = new Set(["r", "u", "b", "f", "br", "rb", "fr", "rf"]);
const CLOSING = new Map(Object.entries({ "(": ")", "[": "]", "{": "}" }));
for (const c of "</|!") CLOSING.set(c, c === "<" ? ">" : c);
// Words that end a perl or ruby call written without ( ): system "ls" if $x
const CALL_ENDS = new Set([
  "if",
  "unless",
  "or",
  "and",
  "do",
  "while",
  "until",
]);
const CALL_KINDS = ["runs", "deletes", "deletes files"] as const;

/** A program's token: [kind, text]; "n" a name, "s" a string literal's
 * value, "x" a command literal's (`...`, qx(...), %x(...)), "p" punctuation. */
type ProgramToken = [string, string];

function isWordStart(c: string): boolean {
  return c === "_" || (c >= "a" && c <= "z") || (c >= "A" && c <= "Z");
}

/** The names of the interpreters whose programs are read. */
function programNames(programs: Programs): string[] {
  return GRAMMARS.flatMap((g) => programs.languages?.[g]?.names ?? []);
}

/** A program's tokens, as far as finding its calls needs. */
function programTokens(code: string, grammar: string): ProgramToken[] {
  const pieces = code.match(PIECE) ?? [];
  const out: ProgramToken[] = [];
  const n = pieces.length;
  const node = grammar === "node";
  let i = 0;
  while (i < n) {
    const piece = pieces[i];
    const following = pieces[i + 1] ?? "";
    i++;
    if (" \t\r".includes(piece[0])) continue;
    if (piece === "\n") {
      // a line ends a statement
      if (grammar === "perl" || grammar === "ruby") out.push(["p", ";"]);
    } else if (
      (piece === "#" && !node) ||
      (node && piece + following === "//")
    ) {
      while (i < n && pieces[i] !== "\n") i++; // a comment
    } else if (node && piece + following === "/*") {
      i++;
      while (i < n && !(pieces[i - 1] === "*" && pieces[i] === "/")) i++;
      i++;
    } else if (piece === "'" || piece === '"' || piece === "`") {
      if (grammar === "python" && piece === "`") out.push(["p", piece]);
      else i = quoted(pieces, i, piece, grammar, "", out);
    } else if (
      grammar === "python" &&
      PY_PREFIXES.has(piece.toLowerCase()) &&
      (following === "'" || following === '"')
    ) {
      i = quoted(pieces, i + 1, following, grammar, piece.toLowerCase(), out);
    } else if (
      grammar === "perl" &&
      ["q", "qq", "qx"].includes(piece) &&
      CLOSING.has(following)
    ) {
      i = quoted(pieces, i + 1, following, grammar, piece, out);
    } else if (
      grammar === "ruby" &&
      piece === "%" &&
      ["x", "q", "Q"].includes(following) &&
      CLOSING.has(pieces[i + 1] ?? "")
    ) {
      i = quoted(pieces, i + 2, pieces[i + 1], grammar, "%" + following, out);
    } else if (
      isWordStart(piece[0]) ||
      ((piece[0] === "." || piece[0] === ":") && piece.length > 1)
    ) {
      out.push(["n", piece]);
    } else {
      out.push(["p", piece]);
    }
  }
  return out;
}

/** A string or command literal from pieces[i] (after its opening `quote`):
 * its value goes to `out`, and where it ends is returned. `prefix` is how it
 * was started: r, f, ... (python), q, qq, qx (perl), %q, %Q, %x (ruby). */
function quoted(
  pieces: string[],
  i: number,
  quote: string,
  grammar: string,
  prefix: string,
  out: ProgramToken[],
): number {
  const n = pieces.length;
  const close = ["q", "Q", "x"].includes(prefix.slice(-1))
    ? (CLOSING.get(quote) ?? quote)
    : quote;
  const triple =
    grammar === "python" && pieces[i] === quote && pieces[i + 1] === quote;
  if (triple) i += 2;
  const perlish = grammar === "perl" || grammar === "ruby";
  const single =
    (quote === "'" && perlish) || prefix === "q" || prefix === "%q";
  const raw = grammar === "python" && prefix.includes("r");
  const command =
    (quote === "`" && perlish) || prefix === "qx" || prefix === "%x";
  const interpolates =
    !single &&
    (perlish ||
      (grammar === "node" && quote === "`") ||
      (grammar === "python" && prefix.includes("f")));
  const kind = command ? "x" : "s";
  const value: string[] = [];
  while (i < n) {
    const piece = pieces[i];
    const following = pieces[i + 1] ?? "";
    i++;
    if (
      piece === close &&
      (!triple || (pieces[i] === close && pieces[i + 1] === close))
    ) {
      out.push([kind, value.join("")]);
      return triple ? i + 2 : i;
    }
    if (piece[0] === "\\" && piece.length > 1) {
      const escaped = piece.slice(1);
      if (raw || (single && escaped !== "\\" && escaped !== close)) {
        value.push(piece);
      } else {
        value.push(escaped === "n" ? "\n" : escaped === "t" ? "\t" : escaped);
      }
    } else if (!interpolates) {
      value.push(piece);
    } else if (
      grammar === "python" &&
      (piece === "{" || piece === "}") &&
      following === piece
    ) {
      value.push(piece); // {{ and }} in an f-string
      i++;
    } else if (
      (piece === "{" && grammar === "python") ||
      (following === "{" &&
        ((piece === "$" && (grammar === "node" || grammar === "perl")) ||
          (piece === "#" && grammar === "ruby") ||
          (piece === "@" && grammar === "perl")))
    ) {
      while (i < n && pieces[i] !== "}") i++; // {...}, ${...}, #{...}
      i++;
      value.push(UNKNOWN); // a value the code computes
    } else if (
      grammar === "perl" &&
      (piece === "$" || piece === "@") &&
      following !== "" &&
      isWordStart(following[0])
    ) {
      value.push(UNKNOWN); // "$dir/x": a variable's value
      i++;
    } else {
      value.push(piece);
    }
  }
  out.push([kind, value.join("")]);
  return n;
}

/** The program an interpreter runs: the values of its code options (python
 * -c CODE), or `stdin`, the text it reads, when it reads its program there
 * (python3 <<EOF, perl <<< CODE, echo CODE | ruby). */
function programCode(
  run: Invocation,
  spec: Language,
  stdin: string | undefined,
): string | undefined {
  const options = spec.code ?? [];
  const withValue = spec["options with value"] ?? [];
  const codes: string[] = [];
  const args = run.args;
  let script: string | undefined;
  let i = 0;
  while (i < args.length) {
    const arg = args[i];
    i++;
    if (arg === "--") {
      script = args[i];
      break;
    }
    if (!isOption(arg)) {
      script = arg;
      break;
    }
    const [found, attached] = codeOptionValue(arg, options, withValue);
    // node -pe CODE
    const inWord =
      spec["code attached"] === false && !arg.startsWith("--")
        ? undefined
        : attached;
    if (found) {
      if (inWord !== undefined) codes.push(inWord);
      else if (i < args.length) codes.push(args[i++]);
    } else if (codeOptionValue(arg, spec["last option"] ?? [], withValue)[0]) {
      return codes.length ? codes.join("\n") : undefined; // python -m MODULE
    } else if (takesValue(arg, withValue)) {
      i++;
    }
  }
  if (codes.length) return codes.join("\n");
  if (
    stdin !== undefined &&
    (script === undefined || script === "-" || script === "/dev/stdin")
  ) {
    return stdin;
  }
  return undefined;
}

/** Whether `arg` is one of the options `wanted`, and its value when it is
 * in the word (-cCODE, --eval=CODE). */
function codeOptionValue(
  arg: string,
  wanted: string[],
  withValue: string[],
): [boolean, string | undefined] {
  if (arg.startsWith("--")) {
    for (const option of wanted) {
      if (arg === option) return [true, undefined];
      if (option.startsWith("--") && arg.startsWith(option + "=")) {
        return [true, arg.slice(option.length + 1)];
      }
    }
    return [false, undefined];
  }
  for (let k = 1; k < arg.length; k++) {
    const letter = "-" + arg[k];
    if (wanted.includes(letter)) {
      return [true, k + 1 < arg.length ? arg.slice(k + 1) : undefined];
    }
    if (withValue.includes(letter)) break; // the rest is that option's value
  }
  return [false, undefined];
}

/** The shell code of the calls in a program that run a command or delete
 * files; undefined when there are too many to check. */
function programCommands(
  tokens: ProgramToken[],
  spec: Language,
  grammar: string,
  deleteAs: Record<string, string[]>,
): string[] | undefined {
  const found: string[] = [];
  let calls = 0;
  for (const [i, [kind, text]] of tokens.entries()) {
    if (kind === "x") {
      if (++calls > MAX_CALLS) return undefined;
      found.push(text); // `...`: run by a shell
    }
    if (kind !== "n") continue;
    const what = CALL_KINDS.find((k) => matches(text, spec[k] ?? []));
    if (what === undefined) continue;
    const args = callArgs(tokens, i + 1, grammar);
    if (args === undefined) continue;
    if (++calls > MAX_CALLS) return undefined;
    const receiver = tokens[i - 1];
    const values: [boolean, string[]][] =
      text[0] === "." && what !== "runs" && receiver?.[0] === "s"
        ? [[false, [receiver[1]]]] // Path("x").unlink()
        : args.filter(isValue).map(argValues);
    const words = values.flatMap(([, each]) => each);
    if (what === "runs" && values.length === 1 && !values[0][0]) {
      found.push(words[0]); // one string: a shell runs it
    } else if (words.length) {
      const prefix = what === "runs" ? [] : (deleteAs[what] ?? []);
      found.push([...prefix, ...words].map(shellQuoted).join(" "));
    }
  }
  return found;
}

function isPunct(token: ProgramToken, ...texts: string[]): boolean {
  return token[0] === "p" && texts.includes(token[1]);
}

/** The tokens with each path object made of a string (Path("x")) as that
 * string. */
function withPaths(tokens: ProgramToken[], spec: Language): ProgramToken[] {
  const makers = spec["path objects"] ?? [];
  const out: ProgramToken[] = [];
  for (let i = 0; i < tokens.length; i++) {
    if (
      tokens[i][0] === "n" &&
      matches(tokens[i][1], makers) &&
      i + 3 < tokens.length &&
      isPunct(tokens[i + 1], "(") &&
      tokens[i + 2][0] === "s" &&
      isPunct(tokens[i + 3], ")")
    ) {
      out.push(tokens[i + 2]);
      i += 3;
    } else {
      out.push(tokens[i]);
    }
  }
  return out;
}

/** The arguments of a call whose name ends before tokens[i], each a list of
 * tokens; undefined when the name is not called there. */
function callArgs(
  tokens: ProgramToken[],
  i: number,
  grammar: string,
): ProgramToken[][] | undefined {
  const parens = i < tokens.length && isPunct(tokens[i], "(");
  if (parens) i++;
  else if (grammar !== "perl" && grammar !== "ruby") return undefined;
  const args: ProgramToken[][] = [[]];
  let depth = 0;
  for (const start = i; i < tokens.length; i++) {
    if (i - start === MAX_CALL_TOKENS) {
      args[args.length - 1].push(["p", "..."]); // the rest: taken as computed
      break;
    }
    const token = tokens[i];
    if (isPunct(token, "(", "[", "{")) {
      depth++;
    } else if (isPunct(token, ")", "]", "}")) {
      if (depth === 0) break;
      depth--;
    } else if (isPunct(token, ";")) {
      if (depth === 0 && !parens) break;
      continue; // a line break inside ( ) or [ ]
    } else if (depth === 0 && isPunct(token, ",")) {
      args.push([]);
      continue;
    } else if (
      depth === 0 &&
      !parens &&
      token[0] === "n" &&
      CALL_ENDS.has(token[1])
    ) {
      break;
    }
    args[args.length - 1].push(token);
  }
  return args;
}

/** Whether an argument can be a command's word or a path: not an object or
 * hash ({...}), a function (=>, function, lambda), or a keyword argument
 * (shell=True, exception: true). */
function isValue(arg: ProgramToken[]): boolean {
  if (arg.length === 0 || isPunct(arg[0], "{")) return false;
  const fn = (t: ProgramToken) =>
    isPunct(t, "=>") ||
    (t[0] === "n" && (t[1] === "function" || t[1] === "lambda"));
  if (arg.some(fn)) return false;
  return !(arg.length > 1 && arg[0][0] === "n" && isPunct(arg[1], "=", ":"));
}

/** Whether an argument is a list ([...]), and its values. */
function argValues(arg: ProgramToken[]): [boolean, string[]] {
  if (!(isPunct(arg[0], "[") && isPunct(arg[arg.length - 1], "]"))) {
    return [false, [valueOf(arg)]];
  }
  const items: ProgramToken[][] = [[]];
  let depth = 0;
  for (const token of arg.slice(1, -1)) {
    if (isPunct(token, "(", "[", "{")) depth++;
    else if (isPunct(token, ")", "]", "}")) depth--;
    else if (depth === 0 && isPunct(token, ",")) {
      items.push([]);
      continue;
    }
    items[items.length - 1].push(token);
  }
  return [true, items.filter((item) => item.length).map(valueOf)];
}

/** The text of string literals, with UNKNOWN for what the code computes. */
function valueOf(tokens: ProgramToken[]): string {
  let out = "";
  let computed = false;
  for (const [kind, text] of tokens) {
    if (kind === "s") {
      out += text;
      computed = false;
    } else if (!computed) {
      out += UNKNOWN;
      computed = true;
    }
  }
  return out;
}

// --- Checking ---------------------------------------------------------------------

/** A simple command behind its wrappers: what runs, with which words. */
interface Invocation {
  name: string; // "" for a line of redirections only
  args: string[];
  command: Simple;
  code: string[]; // shell code it runs: sh -c CODE, eval ..., a here-document
  execs: string[][]; // the commands of find's -exec ... ;
  position: number; // where it stands in its pipeline
  chdir?: string; // the folder a wrapper runs it in: env -C DIR
  fromInput?: boolean; // runs code it reads: xargs sh -c, parallel
  refusal?: Refusal; // a program too large to check
  codeOnStdin?: boolean; // runs the lines it reads: parallel alone
}

/** The functions a piece of code may call: its own, and those of the code
 * that runs it (outer: its Defs, the scope it runs from, and whether all are
 * passed on, as eval does, or only those exported, as bash -c does). */
class Defs {
  readonly functions: Set<string>; // every name defined
  readonly parents: number[];
  readonly own = new Map<string, Map<number, Group>>(); // by name, by scope
  readonly exported = new Set<string>();
  readonly values: Map<string, string[]>; // the variables set in it

  constructor(
    parser: Parser,
    readonly outer?: [Defs, number, boolean],
  ) {
    this.functions = parser.functions;
    this.parents = parser.parents;
    this.values = assigned(parser.commands);
    // eval's functions last after it: their bodies are judged as they stand
    const deferred = !outer?.[2];
    for (const body of parser.bodies) {
      if (!body.closed || !deferred) continue;
      let groups = this.own.get(body.name);
      if (!groups) this.own.set(body.name, (groups = new Map()));
      const group = groups.get(body.scope);
      if (group) group.bodies.push(body);
      else {
        groups.set(body.scope, {
          bodies: [body],
          checked: 0,
          moves: false,
          busy: false,
        });
      }
      body.defs = this;
      body.runs = [];
    }
  }

  /** Whether a function of this name may be defined (a quick test). */
  knows(name: string): boolean {
    return this.functions.has(name) || !!this.outer?.[0].knows(name);
  }

  /** export -f NAME (declare -fx NAME): bash -c sees the function too. */
  export(run: Invocation): void {
    if (!["export", "declare", "typeset"].includes(run.name)) return;
    if (!run.args.some((arg) => isShort(arg) && arg.includes("f"))) return;
    for (const arg of run.args) if (!isOption(arg)) this.exported.add(arg);
  }

  /** The bodies a command `name` in `scope` may run, by where they are
   * defined: its subshell, those around it, then the code that runs it
   * (every false: those exported only). */
  groups(name: string, scope: number, every = true): Group[] {
    const found: Group[] = [];
    const own = every || this.exported.has(name) ? this.own.get(name) : null;
    for (let at = own ? scope : -1; at >= 0; at = this.parents[at]) {
      const group = own!.get(at);
      if (group) found.push(group);
    }
    if (this.outer) {
      const [defs, at, passesAll] = this.outer;
      found.push(...defs.groups(name, at, every && passesAll));
    }
    return found;
  }
}

/** The simple commands of one piece of code, grouped by pipeline. */
class Line {
  readonly pipelines = new Map<number, Invocation[]>();
  // What the rules found out about a pipeline, by what they asked:
  // a list of the rule (or a function's name) -> pipeline -> a position.
  readonly memo = new Map<object | string, Map<number, number>>();

  readonly functions: Set<string>;

  constructor(
    runs: Invocation[],
    readonly defs: Defs,
  ) {
    this.functions = defs.functions;
    for (const run of runs) {
      let members = this.pipelines.get(run.command.pipeline);
      if (!members) {
        members = [];
        this.pipelines.set(run.command.pipeline, members);
      }
      run.position = members.length;
      members.push(run);
    }
  }

  members(run: Invocation): Invocation[] {
    return this.pipelines.get(run.command.pipeline)!;
  }

  /** The memo of `what` for run's pipeline, worked out by `find` once. */
  remember(what: object | string, run: Invocation, find: () => number): number {
    let known = this.memo.get(what);
    if (!known) {
      known = new Map();
      this.memo.set(what, known);
    }
    let position = known.get(run.command.pipeline);
    if (position === undefined) {
      position = find();
      known.set(run.command.pipeline, position);
    }
    return position;
  }
}

/** One decision: the rules asked about each simple command in turn. */
class Checker {
  readonly projectParts: string[];
  here: string | null;
  again = 0; // words of commands judged again (MAX_AGAIN)
  readonly long = new Map<string, boolean>(); // oneDashOrTwo, by name

  constructor(
    readonly data: Policy,
    cwd: string,
  ) {
    // "/" or none is no project: no path is inside it
    const parts = normal(cwd);
    this.projectParts =
      cwd.startsWith("/") && parts.length ? parts : normal("/.project");
    this.here = "/" + this.projectParts.join("/");
  }

  check(
    text: string,
    depth: number,
    outer?: [Defs, number, boolean],
  ): Refusal | undefined {
    if (depth > MAX_DEPTH) return TOO_DEEP;
    const parser = new Parser(text);
    parser.parse();
    if (parser.tooDeep) return TOO_DEEP;
    const defs = new Defs(parser, outer);
    const runs: Invocation[] = [];
    for (const command of parser.commands) {
      let run = this.unwrap(command.words, command);
      const values = defs.values.get(run.name);
      if (values) run = this.runVariable(run, values);
      // a function's commands run where it is called
      (command.body?.runs ?? runs).push(run);
      defs.export(run);
    }
    const line = new Line(runs, defs);
    for (const run of runs) {
      const refusal = this.checkRun(run, line, depth);
      if (refusal) return refusal;
    }
    return undefined;
  }

  checkRun(run: Invocation, line: Line, depth: number): Refusal | undefined {
    if (run.chdir !== undefined) return this.inFolder(run, line, depth);
    this.followCd(run, line);
    if (run.codeOnStdin) {
      const text = knownInput(run, line);
      if (text !== undefined) {
        // echo 'make a' | parallel: that is its code
        run.fromInput = false;
        run.codeOnStdin = false;
        run.code.push(text);
      }
    }
    if (run.refusal) return run.refusal;
    for (const rule of rulesFor(this.data, run.name)) {
      if (this.holds(rule, run, line)) {
        return {
          rule: rule.id,
          reason: rule.reason ?? "",
          instead: rule.instead ?? "",
        };
      }
    }
    const text = fedText(run);
    if (text !== undefined) {
      this.feed(run, line, text);
      if (run.refusal) return run.refusal;
    }
    const here = this.here; // a cd in code run by another shell does not last
    // eval runs code in this shell, with its functions; bash -c sees only
    // those exported
    const outer: [Defs, number, boolean] = [
      line.defs,
      run.command.scope,
      run.name === "eval",
    ];
    for (const code of run.code) {
      const refusal = this.check(code, depth + 1, outer);
      this.here = here;
      if (refusal) return refusal;
    }
    for (const words of run.execs) {
      const inner = this.unwrap(words, run.command);
      const refusal = this.checkRun(
        inner,
        new Line([inner], line.defs),
        depth + 1,
      );
      this.here = here;
      if (refusal) return refusal;
    }
    if (line.defs.knows(run.name)) return this.call(run, line, depth);
    return undefined;
  }

  /** A command named by a variable set in the code ($cmd after
   * cmd="rm -rf x"): the command of its first value, the others to be
   * judged beside it. */
  runVariable(run: Invocation, values: string[]): Invocation {
    const found: string[][] = [];
    for (const value of values) {
      found.push([...splitString(value), ...run.args]);
      this.again += found[found.length - 1].length;
      if (this.again > MAX_AGAIN) {
        run.refusal = TOO_MANY_AGAIN;
        return run;
      }
    }
    const [first, ...others] = found;
    const inner = this.unwrap(first, run.command);
    inner.chdir ??= run.chdir;
    inner.execs.push(...others);
    return inner;
  }

  /** A function called: each body judged where it is first called. */
  call(run: Invocation, line: Line, depth: number): Refusal | undefined {
    for (const group of line.defs.groups(run.name, run.command.scope)) {
      if (group.busy) continue;
      if (group.checked === group.bodies.length && group.moves) {
        this.here = null; // where a cd leads this time is not followed
      }
      group.busy = true;
      while (group.checked < group.bodies.length) {
        if (depth >= MAX_DEPTH) return TOO_DEEP;
        const body = group.bodies[group.checked++];
        const here = this.here;
        body.line ??= new Line(body.runs!, body.defs!);
        for (const inner of body.runs!) {
          const refusal = this.checkRun(inner, body.line, depth + 1);
          if (refusal) return refusal;
        }
        group.moves ||= this.here !== here;
      }
      const refusal = this.forwarded(run, group, depth);
      if (refusal) return refusal;
      group.busy = false;
    }
    return undefined;
  }

  /** The commands of the bodies that run their arguments ("$@", $1, ...),
   * judged again with the arguments of this call in their place. */
  forwarded(run: Invocation, group: Group, depth: number): Refusal | undefined {
    for (const body of group.bodies) {
      for (const inner of body.runs ?? []) {
        const words = withArguments(inner.command.words, run.args);
        if (words === undefined) continue;
        if (depth >= MAX_DEPTH) return TOO_DEEP;
        this.again += words.length;
        if (this.again > MAX_AGAIN) return TOO_MANY_AGAIN;
        const here = this.here;
        let again = this.unwrap(words, inner.command);
        const values = body.defs!.values.get(again.name);
        if (values) again = this.runVariable(again, values);
        const line = new Line([again], body.defs!);
        const refusal = this.checkRun(again, line, depth + 1);
        this.here = here;
        if (refusal) return refusal;
      }
    }
    return undefined;
  }

  /** cd DIR moves where later relative paths point (null: not known). */
  /** A command a wrapper runs in another folder (env -C DIR): its relative
   * paths start there. */
  inFolder(run: Invocation, line: Line, depth: number): Refusal | undefined {
    const here = this.here;
    const folder = run.chdir ?? "";
    run.chdir = undefined;
    if (folder.includes("$") || folder.startsWith("~")) {
      this.here = null;
    } else if (folder.startsWith("/")) {
      this.here = "/" + normal(folder).join("/");
    } else if (this.here !== null) {
      this.here = "/" + normal(this.here + "/" + folder).join("/");
    }
    const refusal = this.checkRun(run, line, depth);
    this.here = here;
    return refusal;
  }

  followCd(run: Invocation, line: Line): void {
    if (!["cd", "pushd", "popd"].includes(run.name)) return;
    if (run.command.nested || line.members(run).length > 1) {
      this.here = null; // (cd x); ... or cd x | ...: where it ends is not followed
      return;
    }
    const paths = run.args.filter((arg) => !isOption(arg));
    const path = paths.length && run.name !== "popd" ? paths[0] : "~";
    if (path === "-" || path.includes("$") || path.startsWith("~")) {
      this.here = null;
    } else if (path.startsWith("/")) {
      this.here = "/" + normal(path).join("/");
    } else if (this.here !== null) {
      this.here = "/" + normal(this.here + "/" + path).join("/");
    }
    if (this.here !== null && length(this.here) > MAX_PATH) {
      this.here = null; // cd a; cd a; ... : too deep to follow
    }
  }

  /** The command that runs, behind keywords, assignments and wrappers. */
  unwrap(words: string[], command: Simple): Invocation {
    let i = 0;
    let addsArgs = false;
    const state: WrapperState = { splits: 0 };
    while (i < words.length) {
      const word = words[i];
      if (KEYWORDS.has(word) || ASSIGNMENT.test(word)) {
        i++;
        continue;
      }
      const wrapper = this.data.wrappers.get(basename(word));
      if (wrapper === undefined || wrapper === null) break;
      i++;
      const withValue = wrapper["options with value"] ?? [];
      const bare = wrapper["bare options"] ?? [];
      while (
        i < words.length &&
        ((words[i].length > 1 && words[i][0] === "-") ||
          bare.includes(words[i]))
      ) {
        i++;
        if (words[i - 1] === "--") break;
        if (wrapper.values) {
          [words, i] = wrapperOption(wrapper, words, i, state);
        } else if (withValue.includes(words[i - 1])) {
          i++;
        }
      }
      if (wrapper["value lists"]) {
        return this.parallel(wrapper, words, i, command, state);
      }
      while (
        wrapper.assignments &&
        i < words.length &&
        ASSIGNMENT.test(words[i])
      ) {
        i++;
      }
      i += wrapper.args ?? 0;
      addsArgs ||= wrapper["adds args"] ?? false;
    }
    const name = i < words.length ? basename(words[i]) : "";
    let args = words.slice(i + 1);
    const replace = state.replace;
    if (replace) {
      // xargs -I R: R stands for what xargs reads
      args = args.map((arg) => arg.replaceAll(replace, INPUT));
    } else if (addsArgs) {
      args.push(INPUT);
    }
    const chdir = state.chdir;
    const run = {
      name,
      args,
      command,
      code: [],
      execs: [],
      position: 0,
      chdir,
    };
    this.findCode(run);
    this.codeFromInput(run);
    return run;
  }

  /** Whether a shell or interpreter runs what xargs reads: xargs sh -c. */
  codeFromInput(run: Invocation): void {
    const args = run.args;
    if (!args.includes(INPUT)) return;
    const options = this.codeOptions(run.name);
    for (let i = 0; i + 1 < args.length; i++) {
      if (options.some((option) => optionMatches(args[i], option))) {
        const at = args[i + 1] === "--" && i + 2 < args.length ? i + 2 : i + 1;
        run.fromInput = args[at] === INPUT; // bash -c [--] CODE
        return;
      }
    }
  }

  /** parallel CMD ::: VALUES: a shell runs CMD once for each value, in place
   * of its {} (or after it); values from its input, or from the files of
   * ::::, are unknown. With no CMD, each value is a command line. */
  parallel(
    wrapper: Wrapper,
    words: string[],
    i: number,
    command: Simple,
    state: WrapperState,
  ): Invocation {
    const lists = wrapper["value lists"] ?? {};
    const isList = (word: string) => Object.hasOwn(lists, word);
    let at = Math.min(i, words.length); // parallel -d: past the end
    while (at < words.length && !isList(words[at])) at++;
    let values = new Set<string>();
    let unknown = at === words.length; // no ::: : the values come from its input
    let kind = "";
    for (const word of words.slice(at)) {
      if (isList(word)) kind = lists[word];
      else if (kind === "words") values.add(word);
      else unknown = true;
    }
    const cmd = words.slice(i, at);
    const size = values.size * length(cmd.join(" "));
    // too many to judge one by one: as unknown as values read from input
    if (values.size > MAX_VALUES || size > MAX_COMMAND) {
      values = new Set();
      unknown = true;
    }
    if (unknown) values.add(INPUT);
    const run: Invocation = {
      name: "parallel",
      args: [],
      command,
      code: [],
      execs: [],
      position: 0,
      chdir: state.chdir,
    };
    // GNU parallel joins the command's words into one line; with -q, and
    // moreutils' parallel, they stay words (bash -c 'CODE'): both judged
    const readings = [cmd];
    if (cmd.some((word) => [...word].some((c) => QUOTED.has(c)))) {
      readings.push(cmd.map(shellQuoted));
    }
    for (const value of values) {
      for (const reading of readings) {
        const code = cmd.length ? fill(reading, value, state.replace) : value;
        if (code === INPUT) {
          run.fromInput = true;
          // no values and no command: it runs the lines it reads
          run.codeOnStdin = at === words.length && !state.inputFile;
        } else {
          run.code.push(code);
        }
      }
    }
    return run;
  }

  /** The shell code a command runs: sh -c CODE, eval ..., find -exec ... ; */
  findCode(run: Invocation): void {
    const args = run.args;
    if (run.name === "eval") run.code.push(args.join(" "));
    if (matches(run.name, this.data.shells)) {
      const options = this.codeOptions(run.name);
      const at = args
        .slice(0, -1)
        .findIndex((arg) =>
          options.some((option) => optionMatches(arg, option)),
        );
      if (at >= 0) {
        const code = args[at + 1];
        // bash -c -- CODE
        run.code.push(
          code === "--" && at + 2 < args.length ? args[at + 2] : code,
        );
      } else if (run.command.stdin !== undefined && args.every(isOption)) {
        run.code.push(run.command.stdin); // bash <<EOF, bash <<< CODE
      }
    }
    if (run.name === "find") this.findPaths(run);
    if (matches(run.name, this.data.programNames)) this.findProgram(run);
  }

  /** The commands a program run by python -c, node -e, ... hands to a shell
   * or runs, and the files it deletes, as shell code. */
  findProgram(run: Invocation): void {
    const [grammar, spec] = this.language(run.name);
    const code = programCode(run, spec, run.command.stdin);
    if (code !== undefined) this.readProgram(run, code, grammar, spec);
  }

  /** The grammar and the "programs" entry of interpreter `name`. */
  language(name: string): [string, Language] {
    for (const grammar of GRAMMARS) {
      const spec = this.data.programs.languages?.[grammar] ?? {};
      if (matches(name, spec.names ?? [])) return [grammar, spec];
    }
    return ["", {}];
  }

  /** Adds to run's code what program `code` hands to a shell or runs, and
   * the files it deletes, as shell code (too many calls: a refusal). */
  readProgram(
    run: Invocation,
    code: string,
    grammar: string,
    spec: Language,
  ): void {
    const tokens = withPaths(programTokens(code, grammar), spec);
    const deleteAs = this.data.programs["delete as"] ?? {};
    const found = programCommands(tokens, spec, grammar, deleteAs);
    if (found) run.code.push(...found);
    else run.refusal ??= TOO_MANY_CALLS;
  }

  /** Text printed into a later command of the pipeline that runs what it
   * reads: shell code (echo 'CODE' | sh, cat <<EOF | bash), or the program
   * of an interpreter (echo 'CODE' | python3). */
  feed(run: Invocation, line: Line, text: string): void {
    if (this.pipedTo(run, line, this.data.shells)) run.code.push(text);
    for (const other of line.members(run)) {
      if (
        other.position > run.position &&
        other.command.stdin === undefined &&
        matches(other.name, this.data.programNames)
      ) {
        const [grammar, spec] = this.language(other.name);
        if (
          programCode(other, spec, undefined) === undefined &&
          programCode(other, spec, text)
        ) {
          this.readProgram(run, text, grammar, spec);
        }
      }
    }
  }

  /** find's folders first in its words (narrowed to NAME by -name NAME), its
   * tests after them, and the commands of its -exec ... ; apart. */
  findPaths(run: Invocation): void {
    const args = run.args;
    const find = this.data.find;
    let i = 0; // -H, -L, -P, -D opts, -O3: options before the folders
    while (
      i < args.length &&
      ["-H", "-L", "-P", "-D", "-O"].includes(args[i].slice(0, 2))
    ) {
      i += args[i] === "-D" ? 2 : 1;
    }
    const start = i;
    const folder = (arg: string) =>
      !isOption(arg) && arg !== "(" && arg !== "!";
    while (i < args.length && folder(args[i])) i++;
    let folders = args.slice(start, i);
    const tests = args.slice(0, start);
    const execs: string[][] = [];
    let name: string | undefined;
    let widened = false;
    while (i < args.length) {
      if (["-exec", "-execdir", "-ok", "-okdir"].includes(args[i])) {
        let end = i + 1;
        while (end < args.length && args[end] !== ";" && args[end] !== "+") {
          end++;
        }
        execs.push(args.slice(i + 1, end));
        i = end + 1;
        continue;
      }
      if (find["widened by"]?.includes(args[i])) {
        widened = true; // -o, !: what the name does not match may be found too
      } else if (find["narrowed by"]?.includes(args[i]) && name === undefined) {
        name = args[i + 1];
      }
      tests.push(args[i]);
      i++;
    }
    if (name !== undefined && !widened && !/[*?[\\]/.test(name)) {
      const narrowed = name;
      folders = (folders.length ? folders : ["."]).map(
        (folder) => folder + "/" + narrowed,
      );
    }
    run.args = [...folders, ...tests];
    const paths = folders.length ? folders : ["."];
    for (const words of execs) {
      // the folders take the place of the first {}
      const at = words.indexOf("{}");
      const after = words.slice(at + 1);
      run.execs.push(
        at < 0 ? words : [...words.slice(0, at), ...paths, ...after],
      );
    }
  }

  /** The options after which a shell or interpreter takes its code (-c). */
  codeOptions(name: string): string[] {
    const options = this.data.code.get(name);
    if (options) return options;
    for (const [pattern, options] of this.data.code) {
      if (pattern.includes("*") && fits(name, pattern.split("*"))) {
        return options;
      }
    }
    return [];
  }

  /** Whether every field of `rule` holds for `run` (the command, if any, does). */
  holds(rule: Rule, run: Invocation, line: Line): boolean {
    if (rule["code from input"] && !run.fromInput) return false;
    if (rule["fork bomb"] && !forkBomb(run, line)) return false;
    if (rule.redirect) {
      const classes = rule.redirect;
      const outputs = run.command.redirects.filter(([op]) => op === ">");
      if (!outputs.some(([, target]) => this.hasClass(target, classes))) {
        return false;
      }
    }
    if (rule.exec) {
      const names = rule.exec;
      const runs = run.execs.some(
        (words) => words.length && names.includes(basename(words[0])),
      );
      if (!runs) return false;
    }
    if (rule["runs output of"]) {
      const names = rule["runs output of"];
      const inner = run.command.subs.map(
        (sub) => this.unwrap(sub.words, sub).name,
      );
      if (!inner.some((name) => matches(name, names))) return false;
    }
    if (rule["piped to"] && !this.pipedTo(run, line, rule["piped to"])) {
      return false;
    }
    if (rule.input && !this.inputHas(run, line, rule.input)) return false;
    return this.wordsHold(rule, run);
  }

  /** Whether the rule's subcommand, option, arg and target fields hold. */
  /** Whether the options of command `name` take one dash or two alike. */
  oneDashOrTwo(name: string): boolean {
    let long = this.long.get(name);
    if (long === undefined) {
      long = matches(name, this.data.oneDashOrTwo);
      this.long.set(name, long);
    }
    return long;
  }

  wordsHold(rule: Rule, run: Invocation, given?: string[]): boolean {
    let args = run.args;
    const withValue = given ?? this.data.optionValues.get(run.name) ?? [];
    if (given === undefined && this.oneDashOrTwo(run.name)) {
      return this.wordsHold(...twoDashes(rule, run, withValue));
    }
    if (rule.subcommand) {
      const sub = subcommand(args, withValue);
      if (sub === undefined || !rule.subcommand.includes(args[sub]))
        return false;
      args = args.slice(sub + 1);
    }
    args = args.slice(rule.skip ?? 0);
    const fields = [rule.option, rule["not option"], rule.arg, rule.target];
    if (!fields.some(Boolean) && !rule["min args"]) return true;
    const [options, positionals, values] = split(args, withValue);
    const has = (wanted: string[]) =>
      options.some((option) =>
        wanted.some((w) => optionMatches(option, w, withValue)),
      );
    if (rule.option && !has(rule.option)) return false;
    if (rule["not option"] && has(rule["not option"])) return false;
    if (positionals.length < (rule["min args"] ?? 0)) return false;
    const allowed = rule.arg;
    if (allowed && !positionals.some((arg) => matches(arg, allowed))) {
      return false;
    }
    if (rule.target) {
      const classes = rule.target;
      const targets = pickTargets(rule, args, positionals, values);
      return targets.some((target) => this.hasClass(target, classes));
    }
    return true;
  }

  hasClass(word: string, classes: string[]): boolean {
    if (classes.includes("secret")) {
      const forms = secretForms(word);
      if (
        forms.some((form) => matches(form, this.data.secrets)) &&
        !forms.some((form) => matches(form, this.data.notSecrets))
      ) {
        return true;
      }
    }
    if (classes.includes("device") && matches(word, this.data.devices)) {
      return true;
    }
    return classes.includes(
      where(word, this.here, this.projectParts, this.data.temp),
    );
  }

  /** Whether what the command reads (< FILE, or earlier in its pipeline) has a class. */
  inputHas(run: Invocation, line: Line, classes: string[]): boolean {
    const reads = (other: Invocation) =>
      other.command.redirects.some(
        ([op, t]) => op === "<" && this.hasClass(t, classes),
      );
    if (reads(run)) return true;
    // the first member that reads or names such a file
    const first = line.remember(classes, run, () => {
      const members = line.members(run);
      const found = members.findIndex(
        (other) =>
          other.args.some((a) => !isOption(a) && this.hasClass(a, classes)) ||
          reads(other),
      );
      return found < 0 ? members.length : found;
    });
    return first < run.position;
  }

  /** Whether a later command of the pipeline runs the program it reads. */
  pipedTo(run: Invocation, line: Line, names: string[]): boolean {
    // the last member that runs what it reads
    const last = line.remember(names, run, () => {
      const members = line.members(run);
      for (let i = members.length - 1; i >= 0; i--) {
        const other = members[i];
        if (matches(other.name, names) && this.readsProgram(other)) return i;
      }
      return -1;
    });
    return last > run.position;
  }

  /** Whether an interpreter takes its program from its standard input. */
  readsProgram(run: Invocation): boolean {
    const options = this.codeOptions(run.name);
    const given = run.args.some(
      (arg) =>
        isOption(arg) && options.some((option) => optionMatches(arg, option)),
    );
    if (given) return false;
    const first = run.args.find((arg) => !isOption(arg)) ?? "-";
    return first === "-" || first === "/dev/stdin" || run.args.includes("-s");
  }
}

/** The words echo or printf prints: not echo's options, not printf's format. */
/** The value of an option named in `names` (-C DIR, -CDIR, --chdir=DIR),
 * and whether it is the next word; undefined for another option. */
function optionValue(
  option: string,
  names: string[],
  following: string,
): [string, boolean] | undefined {
  if (names.includes(option)) return [following, true];
  const equals = option.indexOf("=");
  if (equals >= 0) {
    const name = option.slice(0, equals);
    if (name.startsWith("--") && names.includes(name)) {
      return [option.slice(equals + 1), false];
    }
  }
  if (
    isShort(option) &&
    option.length > 2 &&
    names.includes(option.slice(0, 2))
  ) {
    return [option.slice(2), false];
  }
  return undefined;
}

/** A wrapper's option words[i - 1], read: a folder to run in (env -C), a
 * string split into words (env -S), a replacement string (xargs -I); the
 * words, and where the next option stands. */
function wrapperOption(
  wrapper: Wrapper,
  words: string[],
  i: number,
  state: WrapperState,
): [string[], number] {
  const option = words[i - 1];
  const following = i < words.length ? words[i] : "";
  const values = wrapper.values ?? {};
  const replace = values.replace ?? {};
  const kinds = [values.chdir ?? [], values["split string"] ?? []];
  kinds.push(Object.keys(replace), values["input file"] ?? []);
  for (const [what, names] of kinds.entries()) {
    const found = optionValue(option, names, following);
    if (!found) continue;
    let [value, next] = found;
    if (what === 2 && Object.hasOwn(replace, option) && replace[option]) {
      [value, next] = [replace[option], false]; // xargs -i: {}, no value
    }
    const end = next ? i + 1 : i;
    if (what === 1 && state.splits < MAX_DEPTH) {
      state.splits++; // the string's words come in its place
      const split = splitString(value);
      return [[...words.slice(0, i - 1), ...split, ...words.slice(end)], i - 1];
    }
    if (what === 0) state.chdir = value;
    if (what === 2) state.replace = value;
    if (what === 3) state.inputFile = value;
    return [words, end];
  }
  if ((wrapper["options with value"] ?? []).includes(option)) i++;
  return [words, i];
}

/** The words of env -S's string: split at blanks, quotes and backslashes
 * taken off. */
function splitString(text: string): string[] {
  const words: string[] = [];
  let word = "";
  let started = false; // a word has begun ('' is one)
  let mode = ""; // the quote, or backslash, that the characters before opened
  for (const c of text) {
    if ((mode === "'" || mode === '"') && c === mode) {
      mode = "";
    } else if (mode === '"' && c === "\\") {
      mode = '"\\';
    } else if (mode) {
      word += c;
      if (mode === '"\\') mode = '"';
      else if (mode === "\\") mode = "";
    } else if (" \t\n\v\f\r".includes(c)) {
      if (started) words.push(word);
      word = "";
      started = false;
    } else {
      started = true;
      if ("'\"\\".includes(c)) mode = c;
      else word += c;
    }
  }
  if (started) words.push(word);
  return words;
}

/** parallel's command line for one value: in place of each {} (or of
 * parallel -I's string), or after the command; the value quoted. */
function fill(cmd: string[], value: string, replace?: string): string {
  let found = false;
  const out = cmd.map((word) => {
    if (replace) {
      found ||= word.includes(replace);
      return word.replaceAll(replace, shellQuoted(value));
    }
    const filled = word.replace(PARALLEL_REPLACE, (_, _n, how?: string) =>
      shellQuoted(transformed(value, how ?? "")),
    );
    found ||= filled !== word;
    return filled;
  });
  if (!found) out.push(shellQuoted(value));
  return out.join(" ");
}

/** A value as {.}, {/}, {//}, {/.}, {#} or {%} give it. */
function transformed(value: string, how: string): string {
  if (value === INPUT) return value;
  if (how === "#" || how === "%") return "1"; // the job's or the slot's number
  if (how === "//") {
    // the folder
    const path = value.replace(/\/+$/u, "");
    if (!path) return value ? "/" : ".";
    if (!path.includes("/")) return ".";
    return path.slice(0, path.lastIndexOf("/")).replace(/\/+$/u, "") || "/";
  }
  if (how.startsWith("/")) value = basename(value);
  if (how.endsWith(".")) {
    // without its extension
    const dot = value.lastIndexOf(".");
    if (dot >= 0 && !value.slice(dot).includes("/"))
      value = value.slice(0, dot);
  }
  return value;
}

/** A value as one word in shell code (what xargs or parallel read stays
 * unknown). */
function shellQuoted(value: string): string {
  if (value === INPUT) return value;
  return "'" + value.replaceAll("'", "'\\''") + "'";
}

// Where a function's arguments stand in its body: "$@", $*, $1, ${2}, ...
const POSITIONAL = /^\$([@*1-9]|\{([@*]|[1-9])\})$/u;
// The commands that set the variables they are given (export X=1).
const SETTERS = ["export", "declare", "typeset", "local", "readonly"];

/** The values each variable is set to in the code (cmd="rm -rf x", also by
 * export, declare, ...), by the name a command uses for it ("$cmd",
 * "${cmd}"); an array's words as written (cmd=(rm -rf x)). */
function assigned(commands: Simple[]): Map<string, string[]> {
  const values = new Map<string, Set<string>>(); // each name's, once each
  for (const command of commands) {
    const first = command.words[command.keywords];
    if (
      first === undefined ||
      (!first.includes("=") && !SETTERS.includes(first))
    ) {
      continue; // the usual case: a command, not an assignment
    }
    let words = command.words.slice(command.keywords);
    if (SETTERS.includes(words[0])) {
      words = words.slice(1).filter((word) => !isOption(word));
    }
    if (!words.length || !words.every((word) => ASSIGNMENT.test(word))) {
      continue;
    }
    for (const word of words) {
      const equals = word.indexOf("=");
      const name = word.slice(0, equals);
      let value = word.slice(equals + 1);
      if (name.includes("[") || name.endsWith("+")) {
        continue; // a[1]=x, a+=x: a part of a value
      }
      if (value.startsWith("(") && value.endsWith(")")) {
        value = value.slice(1, -1);
      }
      let set = values.get(name);
      if (!set) values.set(name, (set = new Set()));
      set.add(value);
    }
  }
  const forms = new Map<string, string[]>();
  for (const [name, set] of values) {
    const all = [...set];
    forms.set("$" + name, all);
    forms.set("${" + name + "}", all);
    forms.set("${" + name + "[@]}", all);
    forms.set("${" + name + "[*]}", all);
  }
  return forms;
}

/** The words of a function's command with a call's arguments in place of
 * "$@", $1, ...; undefined when it has none of them. */
function withArguments(words: string[], args: string[]): string[] | undefined {
  const out: string[] = [];
  let found = false;
  for (const word of words) {
    const match = POSITIONAL.exec(word);
    if (!match) {
      out.push(word);
      continue;
    }
    found = true;
    const which = match[2] ?? match[1];
    if (which === "@" || which === "*") {
      out.push(...args);
    } else if (Number(which) <= args.length) {
      out.push(...splitString(args[Number(which) - 1]));
    }
  }
  return found ? out : undefined;
}

/** What echo or printf prints, or cat of its here-document (cat <<EOF). */
function fedText(run: Invocation): string | undefined {
  if (run.name === "printf") return printfText(run.args);
  if (run.name === "echo") {
    let words = run.args;
    let escapes = false;
    while (
      words.length &&
      ["-e", "-n", "-E", "-ne", "-en"].includes(words[0])
    ) {
      escapes = words[0].includes("e"); // echo -e: \n is a new line
      words = words.slice(1);
    }
    return escapes ? ansiC(words.join(" ")) : words.join(" ");
  }
  if (run.name === "cat" && !run.args.length) return run.command.stdin;
  return undefined;
}

// A directive of printf's format: %s, %-10s, %d, %%, ...
const DIRECTIVE = /%(%|[-+ #0]*[0-9]*(\.[0-9]*)?[a-zA-Z])/gu;

/** What printf prints: its format, escapes read, with an argument in place
 * of each directive, again while arguments are left. */
function printfText(args: string[]): string {
  if (!args.length) return "";
  const form = ansiC(args[0]);
  const rest = args.slice(1);
  let at = 0; // the next argument
  const out: string[] = [];
  let size = 0;
  for (;;) {
    const used = at;
    // %% prints a %, another directive the next argument (none left: nothing)
    out.push(
      form.replace(DIRECTIVE, (directive) =>
        directive === "%%" ? "%" : at < rest.length ? rest[at++] : "",
      ),
    );
    size += out[out.length - 1].length;
    if (at === rest.length || used === at) return out.join("");
    // past MAX_COMMAND characters, the arguments left follow as they are
    if (size > MAX_COMMAND)
      return `${out.join("")} ${rest.slice(at).join(" ")}`;
  }
}

/** What a command reads, when the line says: its here-document, or what
 * echo, printf or cat <<EOF before it in its pipeline prints. */
function knownInput(run: Invocation, line: Line): string | undefined {
  if (run.command.stdin !== undefined) return run.command.stdin;
  if (run.position === 0 || run.command.redirects.some(([op]) => op === "<")) {
    return undefined;
  }
  return fedText(line.members(run)[run.position - 1]);
}

/** A function defined here, run twice in one pipeline: name() { name | name & }. */
function forkBomb(run: Invocation, line: Line): boolean {
  if (!line.functions.has(run.name)) return false;
  const count = line.remember(
    "fork bomb " + run.name,
    run,
    () => line.members(run).filter((other) => other.name === run.name).length,
  );
  return count > 1;
}

/** The rule, command and options that take a value of a program whose
 * options take one dash or two alike (terraform -destroy, --destroy), all
 * spelt with two: each option one name, never letters run together. */
function twoDashes(
  rule: Rule,
  run: Invocation,
  withValue: string[],
): [Rule, Invocation, string[]] {
  const spelt = (words: string[]) =>
    words.map((w) => (isOption(w) && w[1] !== "-" ? "-" + w : w));
  const spelled: Rule = { ...rule };
  if (rule.option) spelled.option = spelt(rule.option);
  if (rule["not option"]) spelled["not option"] = spelt(rule["not option"]);
  const inner: Invocation = { ...run, args: spelt(run.args) };
  return [spelled, inner, spelt(withValue)];
}

/** The rules whose command fits `name`, or that name none, in order. */
function rulesFor(data: Policy, name: string): Rule[] {
  let rules = data.byCommand.get(name);
  if (!rules) {
    // any name may come: keep the cache small
    if (data.byCommand.size > 1000) data.byCommand.clear();
    rules = data.rules.filter((r) => !r.command || matches(name, r.command));
    data.byCommand.set(name, rules);
  }
  return rules;
}

/** The words before the first option (find's paths). */
function leading(args: string[]): string[] {
  const end = args.findIndex(
    (arg) => isOption(arg) || arg === "(" || arg === "!",
  );
  return args.slice(0, end < 0 ? args.length : end);
}

/** Where the first word that is not an option stands (git's push, ...). */
function subcommand(args: string[], withValue: string[]): number | undefined {
  let i = 0;
  while (i < args.length) {
    if (takesValue(args[i], withValue)) {
      i += 2;
    } else if (isOption(args[i])) {
      i++;
    } else {
      return i;
    }
  }
  return undefined;
}

/** Options, positional words, and the values of --name=value options. */
function split(
  args: string[],
  withValue: string[],
): [string[], string[], string[]] {
  const options: string[] = [];
  const positionals: string[] = [];
  const values: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      options.push(arg);
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (isOption(arg)) {
      options.push(arg);
      if (takesValue(arg, withValue)) {
        i++;
      } else if (arg.startsWith("--") && arg.includes("=")) {
        values.push(arg.slice(arg.indexOf("=") + 1));
      }
    } else {
      positionals.push(arg);
    }
  }
  return [options, positionals, values];
}

/** The words a rule's "target" looks at, by its "targets". */
function pickTargets(
  rule: Rule,
  args: string[],
  positionals: string[],
  values: string[],
): string[] {
  const mode = rule.targets ?? "all";
  let found: string[];
  if (mode === "leading") {
    found = leading(args);
  } else if (mode === "last") {
    found = positionals.slice(-1);
  } else if (mode === "after first") {
    found = positionals.slice(1);
  } else if (mode !== "all") {
    found = args
      .filter((arg) => arg.startsWith(mode))
      .map((arg) => arg.slice(mode.length));
  } else {
    found = [...positionals, ...values];
  }
  if (!found.length && "default target" in rule) {
    found = [rule["default target"]!];
  }
  return found;
}

/** A string's length in characters (code points), as bash counts them. */
function length(text: string): number {
  const pairs = text.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g);
  return text.length - (pairs?.length ?? 0);
}

/** Why the bash command must be refused, or undefined to allow it.
 *
 * `cwd` is the project folder (hello_ack's cwd): deletes inside it, and in
 * the temp folders, are allowed. `rules` are those of every rules file unless
 * given (templatePolicy(): the template's alone). */
export function check(
  command: string,
  cwd = "",
  rules?: Policy,
): Refusal | undefined {
  command = command.replaceAll("\\\n", ""); // bash joins continued lines
  if (command.length > MAX_COMMAND && length(command) > MAX_COMMAND) {
    return TOO_LONG;
  }
  try {
    rules ??= policy();
  } catch (err) {
    // fail closed, and say which file is at fault
    if (err instanceof RulesError) return err.refusal;
    throw err;
  }
  return new Checker(rules, cwd).check(command, 0);
}

/** Reads the rules now, so that the first command is not kept waiting; when
 * they cannot be used (then every bash call is refused), tells the user and
 * the log of extension `name`. */
export function warnIfRulesUnusable(
  name: string,
  ext: {
    log(message: string): void;
    notify(level: "warn", message: string): void;
  },
): void {
  try {
    policy();
  } catch (err) {
    if (!(err instanceof RulesError)) throw err;
    const { reason, instead } = err.refusal;
    const warning = `${name}: the guard cannot use its rules: ${reason}. Instead, ${instead}.`;
    ext.log(warning);
    ext.notify("warn", warning);
  }
}

/** Why a tool call must be refused, or undefined to allow it. */
export function checkToolCall(
  toolName: unknown,
  toolArgs: unknown,
  cwd: unknown = "",
): Refusal | undefined {
  if (
    toolName !== "bash" ||
    typeof toolArgs !== "object" ||
    toolArgs === null
  ) {
    return undefined; // the guard judges bash command lines only
  }
  if (Array.isArray(toolArgs)) return undefined;
  const command: unknown = (toolArgs as Record<string, unknown>).command;
  if (typeof command !== "string") {
    return undefined; // not a command line; zot's bash tool rejects it anyway
  }
  return check(command, typeof cwd === "string" ? cwd : "");
}
