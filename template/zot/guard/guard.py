"""The guard: bash commands refused before they run.

The rules are data, in guard-rules.json (the template's, replaced on `copier
update`), the team's files guard-policy.json includes, and guard-policy.json
(yours: rules you add, rules you switch off).
This file reads a command the way bash splits it, finds each simple command
behind its wrappers (sudo, env, xargs, bash -c '...', $(...)), and asks the
rules about it. It belongs to the template: `copier update` replaces it.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass
from typing import Any

# The extension's folder (this file is zot/guard/guard.py in it): the rules
# files' names are relative to it, guard-policy.json (yours) is in it.
HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The template's rules, beside this file and its guard-cases.json.
RULES_FILE = "zot/guard/guard-rules.json"
# A longer command is refused unread: checking it could take too long.
MAX_COMMAND = 65536
# Code inside code (bash -c '...', eval ...) deeper than this is refused.
MAX_DEPTH = 8
# So are $(...), `...` and ( ... ) nested deeper than this.
MAX_NESTING = 32
# Where cd leads stops being followed past a path this long.
MAX_PATH = 4096
# A rules file larger than this is refused unread: every decision would be slow.
MAX_RULES_BYTES = 1024 * 1024

# Runs of ordinary characters, runs of blanks, or one character of syntax.
TOKEN = re.compile(r"[^ \t\n'\"\\$`()|&;<>]+|[ \t]+|[\s\S]")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
KEYWORDS = {
    "if",
    "then",
    "elif",
    "else",
    "fi",
    "do",
    "done",
    "while",
    "until",
    "!",
    "{",
    "}",
}
KEYWORDS |= {"esac", "coproc"}
ENDS_WORD = {"\n", ";", "&", "|", "(", ")", "<", ">"}  # and blanks
SYNTAX = set(" \t\n'\"\\$`()|&;<>#")  # the first characters of tokens that are not text
SUBSTITUTION = "$()"  # what a $(...), `...` or <(...) leaves in a word
# What xargs or parallel puts in a word from their input: unknown text.
INPUT = "${:input}"
# The escapes of $'...', as bash reads them.
ANSI_C = re.compile(
    r"\\([abeEfnrtv\\'\"?]|[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}"
    r"|U[0-9A-Fa-f]{1,8}|c[\s\S])"
)
ANSI_C_LETTERS = {"a": 7, "b": 8, "e": 27, "E": 27, "f": 12, "n": 10, "r": 13}
ANSI_C_LETTERS.update({"t": 9, "v": 11})
# parallel's replacement strings: {}, {.}, {/}, {//}, {/.}, {#}, {%}, {1}, ...
PARALLEL_REPLACE = re.compile(r"\{([0-9]*)(\.|/|//|/\.|#|%)?\}")
# What a shell reads in a word other than its text: parallel's command words
# with one of these are judged as words too (as -q keeps them).
QUOTED = set(" \t\n'\"\\$`|&;<>()")
# parallel runs at most this many values one by one; more count as unknown.
MAX_VALUES = 64


@dataclass
class Refusal:
    """Why the guard refuses a command: the rule, its reason, what to do instead."""

    rule: str
    reason: str
    instead: str

    def message(self, name: str) -> str:
        return (
            f"refused by {name} ({self.rule}): {self.reason}. Instead, {self.instead}."
        )


TOO_LONG = Refusal(
    "too-long",
    f"a command of over {MAX_COMMAND} characters, too long to check",
    "split it up, or write long text to a file with the write tool",
)
# At most this many words of commands are judged again in one decision, with
# a variable's value or a call's arguments in place ($cmd, f() { "$@"; }).
MAX_AGAIN = 4096
TOO_MANY_AGAIN = Refusal(
    "too-many-calls",
    f"more than {MAX_AGAIN} words of commands run through variables or function"
    " arguments, too many to check",
    "write the script to a file and run that",
)
TOO_DEEP = Refusal(
    "too-deep",
    f"code nested more than {MAX_DEPTH} levels deep, too deep to check",
    "write the script to a file and run that",
)


# --- Reading a command the way bash splits it ---------------------------------


@dataclass
class Body:
    """A function's body: its commands run where the function is called."""

    name: str
    scope: int  # where it is defined: it is seen there and in its subshells
    depth: int = -1  # the braces open around it; -1 until its { or ( is read
    closed: bool = False  # its } or ) was read: until then its commands run
    runs: list | None = None  # its commands behind their wrappers
    line: Line | None = None
    defs: Defs | None = None  # the functions of the code it is defined in


@dataclass
class Group:
    """The bodies of one name defined in one subshell, judged in turn."""

    bodies: list
    checked: int = 0  # how many are judged (once a decision, at a call)
    moves: bool = False  # a cd in one moved where relative paths point
    busy: bool = False  # being judged: a call in them does not judge them again


@dataclass
class Simple:
    """One simple command: its words, redirections and where it stands."""

    words: list
    redirects: list  # [operator, target]: "<", ">" (any output) or "<<" (text)
    pipeline: int
    subs: list  # the simple commands of its $(...), `...` and <(...)
    nested: bool  # inside ( ), $( ), `` or <( ): a cd there does not last
    stdin: str | None = None  # a here-document's text
    scope: int = 0  # the subshell it stands in
    body: Body | None = None  # the function whose body it is in
    keywords: int = 0  # how many of its first words are keywords ({, if, ...)


class Parser:
    """A shell's split of a command line into simple commands, quotes read.

    Words keep $NAME and ${...} as written; a command substitution leaves
    SUBSTITUTION in its word, and its commands go into the `subs` of the
    simple command the word belongs to. `commands` holds every simple
    command in the order they end (a substitution's before its command's).
    """

    def __init__(self, text: str) -> None:
        self.tokens = TOKEN.findall(text)
        self.i = 0
        self.commands: list[Simple] = []
        self.functions: set[str] = set()
        self.pipelines = 0
        self.depth = 0
        self.too_deep = False
        self.heredocs: list = []  # (simple command, delimiter, strip tabs)
        self.scope = -1
        self.parents: list[int] = []  # each subshell's parent
        self.bodies: list[Body] = []  # the functions defined, in order
        self.open: list[Body] = []  # the bodies being read, innermost last
        self.braces = 0  # the { read and not yet closed by a }

    def peek(self, ahead: int = 0) -> str:
        at = self.i + ahead
        return self.tokens[at] if at < len(self.tokens) else ""

    def new_pipeline(self) -> int:
        self.pipelines += 1
        return self.pipelines

    def parse(self, end: str = "") -> list[Simple]:
        """The simple commands up to `end` (")" or "`"), or to the text's end."""
        if self.depth >= MAX_NESTING:
            self.too_deep = True
            self.i = len(self.tokens)
            return []
        self.depth += 1
        parent = self.scope  # ( ), $( ), `` and <( ) start a subshell
        self.scope = len(self.parents)
        self.parents.append(parent)
        found: list[Simple] = []
        pipeline = self.new_pipeline()
        while self.i < len(self.tokens):
            token = self.tokens[self.i]
            if token == end:
                self.i += 1
                break
            if token == "|":  # | and |& go on with the pipeline, || ends it
                self.i += 1
                if self.peek() == "|":
                    self.i += 1
                    pipeline = self.new_pipeline()
                elif self.peek() == "&":
                    self.i += 1
            elif token in (";", "&", "\n", ")"):
                self.i += 1
                pipeline = self.new_pipeline()
                if token == "\n":
                    self.read_heredocs()
            elif is_blank(token):
                self.i += 1
            else:
                self.simple_command(found, end, pipeline)
        self.depth -= 1
        self.scope = parent
        return found

    def simple_command(self, found: list[Simple], end: str, pipeline: int) -> None:
        command = Simple([], [], pipeline, [], self.depth > 1, None, self.scope)
        command.body = self.open[-1] if self.open else None
        words = command.words
        while self.i < len(self.tokens):
            token = self.tokens[self.i]
            if token == end or token in (";", "\n", "|", ")"):
                break
            if token == "&":
                if self.i + 1 < len(self.tokens) and self.tokens[self.i + 1] == ">":
                    self.i += 2  # &> and &>>: both outputs into a file
                    if self.peek() == ">":
                        self.i += 1
                    command.redirects.append([">", self.target(command, end)])
                    continue
                break
            if token[0] in " \t":
                self.i += 1
            elif token in ("<", ">"):
                self.redirect(command, end)
            elif token == "(":
                self.i += 1
                self.skip_blanks()
                waiting = len(words) == command.keywords and self.open
                if len(words) == command.keywords + 1 and self.peek() == ")":
                    self.i += 1
                    self.define(command, words.pop())  # name() { ...; }
                elif waiting and self.open[-1].depth < 0:
                    body = self.open[-1]
                    if self.peek() == ")":
                        self.i += 1  # function name() { ...; }
                    else:  # name() ( ... ): the body is a subshell
                        body.depth = self.braces
                        found.extend(self.parse(")"))
                        if not body.closed:  # with the bodies left open in it
                            body.closed = True
                            del self.open[self.open.index(body) :]
                else:
                    found.extend(self.parse(")"))  # a subshell: its commands run
            elif token[0] == "#" and self.starts_word():
                while self.i < len(self.tokens) and self.tokens[self.i] != "\n":
                    self.i += 1  # a comment
            elif token[0] not in SYNTAX and self.ends_after(token, end):
                self.i += 1  # a plain word: the usual case, taken whole
                self.add_word(command, token, end)
            else:
                self.add_word(command, self.word(command, end), end)
        if words or command.redirects:
            found.append(command)
            self.commands.append(command)

    def add_word(self, command: Simple, word: str, end: str) -> None:
        """A word of the command; { and } in front open and close bodies."""
        words = command.words
        if len(words) == command.keywords:
            if word == "function":
                self.skip_blanks()
                if self.peek() and self.peek() not in ENDS_WORD:
                    self.define(command, self.word(command, end))
                return
            if word in KEYWORDS:
                command.keywords += 1
                if word == "{":
                    if self.open and self.open[-1].depth < 0:
                        self.open[-1].depth = self.braces  # the body starts
                    self.braces += 1
                elif word == "}":
                    self.braces = max(0, self.braces - 1)
                    body = self.open[-1] if self.open else None
                    if body and 0 <= body.depth and self.braces <= body.depth:
                        body.closed = True
                        self.open.pop()
        words.append(word)

    def define(self, command: Simple, name: str) -> None:
        """name() or function name: what follows is the function's body."""
        body = Body(name, self.scope)
        self.functions.add(name)
        self.bodies.append(body)
        self.open.append(body)
        command.body = body

    def ends_after(self, token: str, end: str) -> bool:
        """Whether the word ends with this token (no quote or $ joined to it)."""
        following = self.tokens[self.i + 1] if self.i + 1 < len(self.tokens) else " "
        if following == "(" and token[-1] == "=":
            return False  # a=(x y): an array
        return following[0] in " \t" or following in ENDS_WORD or following == end

    def starts_word(self) -> bool:
        """Whether the token stands at a word's start (where # starts a comment)."""
        if self.i == 0:
            return True
        previous = self.tokens[self.i - 1]
        return previous in ENDS_WORD or is_blank(previous)

    def skip_blanks(self) -> None:
        while self.i < len(self.tokens) and is_blank(self.tokens[self.i]):
            self.i += 1

    def redirect(self, command: Simple, end: str) -> None:
        first = self.tokens[self.i]
        words = command.words
        if words and is_number(words[-1]) and self.tokens[self.i - 1] == words[-1]:
            words.pop()  # 2> file: the 2 belongs to the redirection
        self.i += 1
        second = self.peek()
        if second == "(":  # <(...) or >(...): a process substitution, a word
            self.i += 1
            command.subs.extend(self.parse(")"))
            words.append(SUBSTITUTION)
        elif first == "<" and second == "<":
            self.i += 1
            if self.peek() == "<":  # <<< word: a here-string
                self.i += 1
                text = self.target(command, end)
                command.redirects.append(["<<", text])
                if command.stdin is None:
                    command.stdin = text
                return
            strip = self.peek().startswith("-")  # <<-: leading tabs stripped
            if self.peek() == "-":
                self.i += 1  # <<- EOF
            elif strip:
                self.tokens[self.i] = self.tokens[self.i][1:]  # <<-EOF
            self.heredocs.append((command, self.target(command, end), strip))
        elif second == "&":  # >&2 and <&0 copy a descriptor; >& FILE writes it
            self.i += 1
            target = self.target(command, end)
            if first == ">" and not (is_number(target) or target == "-"):
                command.redirects.append([">", target])
        else:
            if second in (">", "|") and first == ">" or second == ">" and first == "<":
                self.i += 1  # >> and >| append or overwrite; <> reads and writes
                first = ">"
            command.redirects.append([first, self.target(command, end)])

    def target(self, command: Simple, end: str) -> str:
        """The word after a redirection operator ("" if there is none)."""
        self.skip_blanks()
        token = self.peek()
        if not token or token in ENDS_WORD or token == end:
            return ""
        return self.word(command, end)

    def read_heredocs(self) -> None:
        """The text of the here-documents started on the line just ended."""
        for command, delimiter, strip in self.heredocs:
            lines: list[str] = []
            line: list[str] = []
            while self.i < len(self.tokens):
                token = self.tokens[self.i]
                self.i += 1
                if token != "\n":
                    line.append(token)
                    continue
                text = "".join(line)
                if (text.lstrip("\t") if strip else text) == delimiter:
                    line = []
                    break
                lines.append(text)
                line = []
            if line:
                lines.append("".join(line))
            command.stdin = "\n".join(lines)
        self.heredocs = []

    def word(self, command: Simple, end: str) -> str:
        """One word, quotes taken off; its substitutions go to command.subs."""
        parts: list[str] = []
        while self.i < len(self.tokens):
            token = self.tokens[self.i]
            if token == end or token in ENDS_WORD or is_blank(token):
                if token == "(" and parts and parts[-1].endswith("="):
                    self.i += 1  # a=(x y): an array's words are data
                    parts.append("(" + self.raw_until(")") + ")")
                    continue
                break
            self.i += 1
            if token == "'":
                parts.append(self.raw_until("'"))
            elif token == '"':
                self.double_quoted(parts, command)
            elif token == "\\":
                if self.peek():
                    parts.append(self.tokens[self.i])
                    self.i += 1
            elif token == "$":
                if self.peek() != '"':  # $"...": a double-quoted string
                    self.dollar(parts, command)
            elif token == "`":
                command.subs.extend(self.parse("`"))
                parts.append(SUBSTITUTION)
            else:
                parts.append(token)
        return "".join(parts)

    def expansion(self, command: Simple, close: str) -> str:
        """The text of ${...} (close "}") or $((...)) (close ")", after its
        "(("), up to its end; the $(...) and `...` in it run: their commands
        go to command.subs."""
        start, depth = self.i, 0
        while self.i < len(self.tokens):
            token = self.tokens[self.i]
            self.i += 1
            if token == "$" and self.peek() == "(" and self.peek(1) != "(":
                self.i += 1
                command.subs.extend(self.parse(")"))
            elif token == "`":
                command.subs.extend(self.parse("`"))
            elif token == "\\":
                self.i += 1
            elif close == "}" and "}" in token:
                break
            elif close == ")" and token == "(":
                depth += 1
            elif close == ")" and token == ")":
                if depth == 0:
                    if self.peek() == ")":
                        self.i += 1
                    break
                depth -= 1
        return "".join(self.tokens[start : self.i])

    def raw_until(self, close: str) -> str:
        """The text up to the token `close` (taken too), as it stands."""
        start = self.i
        while self.i < len(self.tokens) and self.tokens[self.i] != close:
            self.i += 1
        text = "".join(self.tokens[start : self.i])
        self.i += 1
        return text

    def double_quoted(self, parts: list, command: Simple) -> None:
        while self.i < len(self.tokens):
            token = self.tokens[self.i]
            self.i += 1
            if token == '"':
                return
            if token == "\\":
                following = self.peek()
                if following in ("$", "`", '"', "\\"):
                    self.i += 1
                    parts.append(following)
                else:
                    parts.append("\\")
            elif token == "$":
                if self.peek() == "'":  # "$'": no escapes inside double quotes
                    parts.append("$")
                else:
                    self.dollar(parts, command)
            elif token == "`":
                command.subs.extend(self.parse("`"))
                parts.append(SUBSTITUTION)
            else:
                parts.append(token)

    def dollar(self, parts: list, command: Simple) -> None:
        """What follows a $: $(...), $((...)), ${...}, $'...' or a name."""
        following = self.peek()
        if following == "(":
            self.i += 1
            if self.peek() == "(":  # $(( arithmetic )): a number
                self.i += 1
                self.expansion(command, ")")
                parts.append("$((0))")
            else:
                inner = self.parse(")")
                command.subs.extend(inner)
                parts.append(heredoc_text(inner))
        elif following.startswith("{"):  # ${...} as written, up to its }
            parts.append("$" + self.expansion(command, "}"))
        elif following == "'":  # $'...': escapes decoded as bash does
            self.i += 1
            start = self.i
            while self.i < len(self.tokens) and self.tokens[self.i] != "'":
                self.i += 2 if self.tokens[self.i] == "\\" else 1
            parts.append(ansi_c("".join(self.tokens[start : self.i])))
            self.i += 1
        else:
            parts.append("$")


def heredoc_text(inner: list) -> str:
    """What a $(...) leaves in its word: the text of a here-document when
    its only command is cat of one ($(cat <<EOF ... EOF)), or SUBSTITUTION."""
    if len(inner) != 1:
        return SUBSTITUTION
    cat = inner[0]
    if cat.words != ["cat"] or cat.stdin is None:
        return SUBSTITUTION
    if any(op != "<<" for op, _ in cat.redirects):
        return SUBSTITUTION
    return cat.stdin


def ansi_c(text: str) -> str:
    """The text of $'...' with its escapes decoded; a NUL ends it, and a byte
    that is not ASCII, or no character, stands as U+FFFD."""
    out = []
    at = 0
    for match in ANSI_C.finditer(text):
        out.append(text[at : match.start()])
        at = match.end()
        escape = match.group(1)
        kind = escape[0]
        if kind in ANSI_C_LETTERS:
            code = ANSI_C_LETTERS[kind]
        elif kind in "\\'\"?":
            code = ord(kind)
        elif kind == "x":
            code = int(escape[1:], 16)
        elif kind in "uU":
            code = int(escape[1:], 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                code = 0xFFFD
        elif kind == "c":
            letter = ord(escape[1])
            if letter >= 0x80:
                code = 0xFFFD
            elif escape[1] == "?":
                code = 0x7F
            else:
                code = (letter - 32 if 0x61 <= letter <= 0x7A else letter) & 0x1F
        else:
            code = int(escape, 8) & 0xFF
        if kind not in "uU" and 0x80 <= code <= 0xFF:
            code = 0xFFFD  # a byte, not a character
        if code == 0:
            return "".join(out)
        out.append(chr(code))
    out.append(text[at:])
    return "".join(out)


def is_blank(token: str) -> bool:
    return token[0] in " \t"


def is_number(word: str) -> bool:
    return word != "" and all("0" <= c <= "9" for c in word)


# --- The rules ------------------------------------------------------------------


class RulesError(Exception):
    """A rules file the guard cannot use: it refuses every command until fixed."""

    def __init__(self, name: str, problem: str, fix: str) -> None:
        super().__init__(f"{name} {problem}")
        reason = f"{name} {problem}, so the guard refuses every command"
        self.refusal = Refusal("unreadable-rules", reason, fix)


def load_json(name: str) -> dict:
    """A rules file as a JSON object; RulesError naming it when it cannot be."""
    try:
        with open(os.path.join(HERE, name), encoding="utf-8") as file:
            size = os.fstat(file.fileno()).st_size
            if size > MAX_RULES_BYTES:
                problem = f"is {size} bytes, over the guard's limit of 1 MiB"
                fix = f"keep {name} under 1 MiB (fewer rules, or broader patterns)"
                raise RulesError(name, problem, fix)
            data = json.load(file)
    except FileNotFoundError:
        fix = f"restore {name} (git checkout {name}, or copier update)"
        if name not in (RULES_FILE, "guard-policy.json"):
            fix = f"restore {name} (from a submodule: git submodule update --init),"
            fix += ' or take it out of "include" in guard-policy.json'
        raise RulesError(name, "is missing", fix) from None
    except OSError as err:
        problem = f"cannot be read ({err.strerror})"
        raise RulesError(name, problem, f"fix {name}") from None
    except ValueError as err:  # not UTF-8, or not JSON
        fix = f"fix {name} (./smoke-test points at the problem)"
        raise RulesError(name, f"is not valid JSON ({err})", fix) from None
    if not isinstance(data, dict):
        raise RulesError(name, "does not hold a JSON object", f"fix {name}")
    return data


def no_empty_pattern(name: str, data: dict) -> None:
    """RulesError when a rule or a list of rules file `name` has an empty
    pattern, which no two engines would read alike."""
    rules, lists = data.get("rules"), data.get("lists")
    groups = [
        (f"rule {json.dumps(rule.get('id'))}", list(rule.values()))
        for rule in (rules if isinstance(rules, list) else [])
        if isinstance(rule, dict)
    ]
    if isinstance(lists, dict):
        groups += [(f"list {json.dumps(key)}", [value]) for key, value in lists.items()]
    for where, values in groups:
        if any(isinstance(value, list) and "" in value for value in values):
            fix = f"fix {name} (./smoke-test points at the problem)"
            raise RulesError(name, f"has an empty pattern in {where}", fix)


# The keys a policy may have (an included file's "include" is refused first).
POLICY_KEYS = ("about", "include", "lists", "off", "option values", "rules")
# The keys of guard-rules.json a policy adds to: objects merged name by name,
# lists extended ("lists" and "option values" are read on their own).
ADDS_TO = ("classes", "code", "find", "one dash or two", "programs", "shells")
ADDS_TO += ("wrappers",)
POLICY_KEYS += ADDS_TO
# What a policy's new entry of "code" or "wrappers" may hold (a wrapper of
# the template's may hold these too).
NEW_ENTRY: dict = {"code": []}
NEW_ENTRY["wrappers"] = {"options with value": [], "bare options": [], "args": 0}
NEW_ENTRY["wrappers"].update({"assignments": False, "adds args": False})


def is_names(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def is_lists(value: object) -> bool:
    return isinstance(value, dict) and all(is_names(v) for v in value.values())


def is_rules(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


# A policy's keys whose values have a kind, in the order they are checked:
# the key, whether a value is of its kind, and the problem when it is not.
POLICY_KINDS = (
    ("off", is_names, 'has an "off" that is not a list of rule ids'),
    ("rules", is_rules, 'has "rules" that is not a list of rules'),
    ("lists", is_lists, 'has "lists" that is not an object of lists of names'),
    (
        "option values",
        is_lists,
        'has "option values" that is not an object of lists of options',
    ),
)


def policy_keys(name: str, data: dict, template: dict) -> None:
    """RulesError when policy file `name` has a key the guard does not read (a
    misspelt one would be left out unseen), or a value not of its key's kind
    (for what it adds to guard-rules.json, `template`: the kind there)."""
    fix = f"fix {name} (./smoke-test points at the problem)"
    unknown = sorted(key for key in data if key not in POLICY_KEYS)
    if unknown:
        problem = f'has a key the guard does not read: "{unknown[0]}"'
        raise RulesError(name, problem, fix)
    for key, fits_key, problem in POLICY_KINDS:
        if key in data and not fits_key(data[key]):
            raise RulesError(name, problem, fix)
    for key in ADDS_TO:
        if key in data:
            form = template.get(key, [] if key == "one dash or two" else {})
            if key == "programs":  # only its languages' lists: "runs", ...
                form = {"languages": form.get("languages", {})}
            problem = form_problem(form, data[key], key, NEW_ENTRY.get(key))
            if problem:
                raise RulesError(name, problem, fix)


def form_problem(form: object, value: object, where: str, entry=None) -> str:
    """What is wrong with a policy's `value` at `where` (keys joined by /),
    where guard-rules.json has `form`; a new name may be given when `entry`
    (the form of one) is: "" if nothing is."""
    if isinstance(form, list):
        return "" if is_names(value) else f'has "{where}" that is not a list of names'
    if isinstance(form, bool):
        return (
            ""
            if isinstance(value, bool)
            else f'has "{where}" that is not true or false'
        )
    if isinstance(form, (int, float)):
        if is_count(value):
            return ""
        return f'has "{where}" that is not a whole number from 0 to 100'
    if isinstance(form, str):
        return "" if isinstance(value, str) else f'has "{where}" that is not a text'
    if not isinstance(value, dict):
        return f'has "{where}" that is not an object'
    for key in sorted(value):
        known = form.get(key)  # type: ignore[union-attr]
        if isinstance(entry, dict) and isinstance(known, dict):
            known = {**entry, **known}
        elif known is None:
            known = entry
        if known is None:
            return f'has a key the guard does not read: "{where}/{key}"'
        problem = form_problem(known, value[key], f"{where}/{key}")
        if problem:
            return problem
    return ""


def is_count(value: object) -> bool:
    """A whole number from 0 to 100 (1.0 is one): how many words to pass."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return 0 <= value <= 100 and value == int(value)


def added(base: object, more: object) -> object:
    """A policy's value added to the one before: objects merged name by
    name, lists extended; anything else replaces."""
    if isinstance(base, dict) and isinstance(more, dict):
        out = dict(base)
        for key, value in more.items():
            out[key] = added(base.get(key), value)
        return out
    if isinstance(base, list) and isinstance(more, list):
        return base + more
    return more


def included(own: dict, template: dict) -> list:
    """The team's policy files guard-policy.json names in "include", in order."""
    paths = [] if own.get("include") is None else own["include"]
    if not isinstance(paths, list) or not all(
        isinstance(path, str) and path for path in paths
    ):
        fix = 'fix guard-policy.json ("include": ["team-policy/guard-policy.json"])'
        problem = 'has an "include" that is not a list of file paths'
        raise RulesError("guard-policy.json", problem, fix)
    for path in paths:
        if path.startswith("/") or ".." in path.split("/"):
            problem = f"includes {json.dumps(path)}, outside the extension's folder"
            fix = "name a file inside the extension's folder, relative to it"
            raise RulesError("guard-policy.json", problem, fix)
    layers = []
    for path in paths:
        data = load_json(path)
        if "include" in data:
            problem = 'has an "include" of its own (an included file cannot include)'
            fix = f'move the files {path} includes into guard-policy.json\'s "include"'
            raise RulesError(path, problem, fix)
        no_empty_pattern(path, data)
        policy_keys(path, data, template)
        layers.append(data)
    return layers


@functools.cache
def policy() -> dict:
    """guard-rules.json, then each file guard-policy.json includes, then
    guard-policy.json: read on first use. Rules are asked in that order, a
    list replaces the one of its name from the files before, and "off"
    switches rules of its file and the files before off."""
    data = load_json(RULES_FILE)
    own = load_json("guard-policy.json")
    no_empty_pattern(RULES_FILE, data)
    no_empty_pattern("guard-policy.json", own)
    policy_keys("guard-policy.json", own, data)
    return combined([data, *included(own, data), own])


def template_policy() -> dict:
    """guard-rules.json alone: what guard-cases.json is judged with."""
    data = load_json(RULES_FILE)
    no_empty_pattern(RULES_FILE, data)
    return combined([data])


def combined(layers: list) -> dict:
    """The rules files LAYERS, the template's first, as one policy."""
    data = dict(layers[0])
    for layer in layers[1:]:
        for key in ADDS_TO:
            if key in layer:
                data[key] = added(data.get(key), layer[key])
    lists = {k: v for layer in layers for k, v in layer.get("lists", {}).items()}
    kept: list[list] = []
    off: set = set()
    for layer in reversed(layers):  # a file's off holds for it and those before
        off.update(layer.get("off", []))
        kept.append([r for r in layer.get("rules", []) if r.get("id") not in off])
    rules = [rule for layer in reversed(kept) for rule in layer]

    def expand(names: list) -> list:
        out: list[str] = []
        for name in names:
            out.extend(
                expand(lists.get(name[1:], [])) if name.startswith("@") else [name]
            )
        return out

    for rule in rules:
        for key, value in list(rule.items()):
            if isinstance(value, list):
                rule[key] = expand(value)
    # each command's options that take a value: a policy adds to them
    option_values: dict[str, list] = {}
    for layer in layers:
        for name, options in layer.get("option values", {}).items():
            option_values.setdefault(name, []).extend(options)
    # the names of the interpreters whose programs are read
    languages = data.get("programs", {}).get("languages", {})
    names = [n for g in GRAMMARS for n in languages.get(g, {}).get("names", [])]
    return {
        **data,
        "rules": rules,
        "option values": option_values,
        "program names": names,
    }


def matches(word: str, patterns: list) -> bool:
    """Whether `word` fits one of `patterns`, where * stands for any text."""
    entry = NAMES.get(id(patterns))
    if entry is None or entry[0] is not patterns:
        exact = frozenset(p for p in patterns if "*" not in p)
        starts = tuple(p[:-1] for p in patterns if p.find("*") == len(p) - 1)
        globs = [p.split("*") for p in patterns if "*" in p[:-1]]
        entry = (patterns, exact, starts, globs)
        NAMES[id(patterns)] = entry
    return (
        word in entry[1]
        or bool(entry[2])
        and word.startswith(entry[2])
        or any(fits(word, parts) for parts in entry[3])
    )


NAMES: dict[int, tuple] = {}  # each list of patterns, made ready for matches()


def fits(word: str, parts: list) -> bool:
    """Whether `word` is parts[0], anything, parts[1], anything, ... parts[-1].

    Each part is looked for once, left to right: time linear in the word.
    """
    first, last = parts[0], parts[-1]
    if len(word) < len(first) + len(last):
        return False
    if not word.startswith(first) or not word.endswith(last):
        return False
    at, end = len(first), len(word) - len(last)
    for part in parts[1:-1]:
        found = word.find(part, at, end)
        if found < 0:
            return False
        at = found + len(part)
    return True


def basename(word: str) -> str:
    return word[word.rfind("/") + 1 :]


def is_option(word: str) -> bool:
    """-x, -xyz, --long (not -, --, or -1, which is a number)."""
    return (
        len(word) > 1 and word[0] == "-" and not "0" <= word[1] <= "9" and word != "--"
    )


def is_short(word: str) -> bool:
    return len(word) > 1 and word[0] == "-" and word[1] != "-"


def any_option(options: list, wanted: list, with_value: list) -> bool:
    """Whether one of `options` is one of `wanted` (as option_matches says)."""
    return any(
        option_matches(option, w, with_value) for option in options for w in wanted
    )


def value_at(word: str, with_value: list) -> int:
    """Where the first letter of a cluster that takes a value stands (0: none):
    in git checkout -qbNAME, b; the rest of the word is its value."""
    for i in range(1, len(word)):
        if "-" + word[i] in with_value:
            return i
    return 0


def takes_value(word: str, with_value: list) -> bool:
    """Whether the next word is the option's value: -C DIR, or -qb NAME."""
    if word in with_value:
        return True
    return (
        bool(with_value)
        and is_short(word)
        and value_at(word, with_value) == len(word) - 1
    )


def option_matches(word: str, wanted: str, with_value: list = ()) -> bool:
    """-f matches any cluster with an f (-rf) before a letter that takes a
    value (not -bfix); longer names match whole (=value aside)."""
    if len(wanted) == 2 and wanted != "--":
        if not is_short(word):
            return False
        at = value_at(word, with_value) if with_value else 0
        return wanted[1] in (word[1 : at + 1] if at else word[1:])
    name = word.split("=", 1)[0]
    return (
        word == wanted
        or name == wanted
        or "*" in wanted
        and fits(name, wanted.split("*"))
    )


# --- Where a path points ----------------------------------------------------------


def normal(path: str) -> list[str]:
    """The parts of an absolute path, with . and .. worked out."""
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return parts


def climbs_out(path: str) -> bool:
    depth = 0
    for part in path.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def is_wildcard(part: str) -> bool:
    return part.lstrip(".").strip("*?") == "" and "*" in part


def where(word: str, here: str | None, project: list, temp: list) -> str:
    """The class of a path: inside, temp, remote, or one of the unsafe ones.

    `here` is the folder relative paths start from (None: not known),
    `project` the project folder's parts, `temp` the temp folders' parts.
    """
    if word in ("", "{}"):
        return "inside"
    for home in ("$HOME", "${HOME}"):
        if word == home or word.startswith(home + "/"):
            word = "~" + word[len(home) :]
    if SUBSTITUTION in word or "$" in word or "{" in word and "," in word:
        return "unknown"
    if word.startswith("~"):
        if word != "~" and not word.startswith("~/"):
            return "home"  # ~user
        return (
            "home" if len(normal(word[1:])) <= 1 or climbs_out(word[2:]) else "outside"
        )
    if not word.startswith("/") and ":" in word.split("/", 1)[0]:
        return "remote"  # host:path
    relative = not word.startswith("/")
    if relative and here is None:
        return "unknown"
    parts = normal(here + "/" + word if relative and here else word)
    if not parts or len(parts) == 1 and is_wildcard(parts[0]):
        return "root"
    if parts[: len(project)] == project:
        rest = parts[len(project) :]
        return (
            "project"
            if not rest or len(rest) == 1 and is_wildcard(rest[0])
            else "inside"
        )
    if relative and here == "/" + "/".join(project):
        return "parent"  # climbed out of the project
    if len(parts) == 1:
        return "system"
    for top in temp:
        if parts[: len(top)] == top and len(parts) > len(top):
            return "temp"
    return "outside"


def secret_forms(word: str) -> list[str]:
    """A word, and the file it names in @file, name=@file and --opt=file."""
    forms = [word]
    if word.startswith("@"):
        forms.append(word[1:])
    if "=@" in word:
        forms.append(word.split("=@", 1)[1])
    elif word.startswith("--") and "=" in word:
        forms.append(word.split("=", 1)[1])
    out = []
    for form in forms:
        for home in ("$HOME", "${HOME}"):
            if form.startswith(home + "/"):
                form = "~" + form[len(home) :]
        out.append(form)
    return out


# --- Code run by an interpreter -----------------------------------------------------
#
# python -c CODE, node -e CODE, perl -e CODE, ruby -e CODE, or a program read
# from a here-document: the guard reads the program's tokens (names, string
# literals, punctuation), not its meaning. A call of guard-rules.json's
# "programs" that runs a command is judged as that command (one string as
# bash -c STRING), and one that deletes files as rm with the call's paths.

# Names (os.system, .execSync, File::Path::rmtree), escapes, blanks, or one character.
PIECE = re.compile(
    r"(?:\.|::)?[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*"
    r"|=>|==|\\[\s\S]|[ \t]+|[\s\S]"
)
UNKNOWN = "$_"  # what a value the code computes leaves in a string
# A program with more calls that run commands or delete files is refused: checking
# it could take too long. A call's arguments are read up to this many tokens.
MAX_CALLS = 64
MAX_CALL_TOKENS = 128
TOO_MANY_CALLS = Refusal(
    "too-many-calls",
    f"a program with more than {MAX_CALLS} calls that run commands or delete files,"
    " too many to check",
    "write the script to a file and run that",
)
GRAMMARS = ("python", "node", "perl", "ruby")
PY_PREFIXES = {"r", "u", "b", "f", "br", "rb", "fr", "rf"}
CLOSING = {"(": ")", "[": "]", "{": "}", "<": ">", "/": "/", "|": "|", "!": "!"}
# Words that end a perl or ruby call written without ( ): system "ls" if $x
CALL_ENDS = {"if", "unless", "or", "and", "do", "while", "until"}


def program_tokens(code: str, grammar: str) -> list[tuple[str, str]]:
    """A program's tokens: ("n", name), ("s", a string literal's value),
    ("x", a command literal's: `...`, qx(...), %x(...)), ("p", punctuation)."""
    pieces = PIECE.findall(code)
    out: list[tuple[str, str]] = []
    i, n = 0, len(pieces)
    node = grammar == "node"
    hash_comments = not node
    while i < n:
        piece = pieces[i]
        following = pieces[i + 1] if i + 1 < n else ""
        i += 1
        if piece[0] in " \t\r":
            continue
        if piece == "\n":
            if grammar in ("perl", "ruby"):
                out.append(("p", ";"))  # a line ends a statement
        elif piece == "#" and hash_comments or node and piece + following == "//":
            while i < n and pieces[i] != "\n":
                i += 1  # a comment
        elif node and piece + following == "/*":
            i += 1
            while i < n and not (pieces[i - 1] == "*" and pieces[i] == "/"):
                i += 1
            i += 1
        elif piece in ("'", '"', "`"):
            if grammar == "python" and piece == "`":
                out.append(("p", piece))
                continue
            i = quoted(pieces, i, piece, grammar, "", out)
        elif (
            grammar == "python"
            and piece.lower() in PY_PREFIXES
            and following in ("'", '"')
        ):
            i = quoted(pieces, i + 1, following, grammar, piece.lower(), out)
        elif grammar == "perl" and piece in ("q", "qq", "qx") and following in CLOSING:
            i = quoted(pieces, i + 1, following, grammar, piece, out)
        elif (
            grammar == "ruby"
            and piece == "%"
            and following in ("x", "q", "Q")
            and i + 1 < n
            and pieces[i + 1] in CLOSING
        ):
            i = quoted(pieces, i + 2, pieces[i + 1], grammar, "%" + following, out)
        elif piece[0] in WORD_START or piece[0] in ".:" and len(piece) > 1:
            out.append(("n", piece))
        else:
            out.append(("p", piece))
    return out


WORD_START = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def quoted(
    pieces: list, i: int, quote: str, grammar: str, prefix: str, out: list
) -> int:
    """A string or command literal from pieces[i] (after its opening `quote`):
    its value goes to `out`, and where it ends is returned. `prefix` is how
    it was started: r, f, ... (python), q, qq, qx (perl), %q, %Q, %x (ruby)."""
    n = len(pieces)
    close = CLOSING.get(quote, quote) if prefix[-1:] in ("q", "Q", "x") else quote
    triple = grammar == "python" and pieces[i : i + 2] == [quote, quote]
    if triple:
        i += 2
    single = quote == "'" and grammar in ("perl", "ruby") or prefix in ("q", "%q")
    raw = "r" in prefix and grammar == "python"
    command = quote == "`" and grammar in ("perl", "ruby") or prefix in ("qx", "%x")
    interpolates = not single and (
        grammar in ("perl", "ruby")
        or grammar == "node"
        and quote == "`"
        or grammar == "python"
        and "f" in prefix
    )
    value: list[str] = []
    while i < n:
        piece = pieces[i]
        following = pieces[i + 1] if i + 1 < n else ""
        i += 1
        if piece == close and (not triple or pieces[i : i + 2] == [close, close]):
            return ended(out, command, value, i + 2 if triple else i)
        if piece[0] == "\\" and len(piece) > 1:
            escaped = piece[1:]
            if raw or single and escaped not in ("\\", close):
                value.append(piece)
            else:
                value.append({"n": "\n", "t": "\t"}.get(escaped, escaped))
        elif not interpolates:
            value.append(piece)
        elif grammar == "python" and piece in ("{", "}") and following == piece:
            value.append(piece)  # {{ and }} in an f-string
            i += 1
        elif (
            piece == "{"
            and grammar == "python"
            or following == "{"
            and (
                piece == "$"
                and grammar in ("node", "perl")
                or piece == "#"
                and grammar == "ruby"
                or piece == "@"
                and grammar == "perl"
            )
        ):
            while i < n and pieces[i] != "}":
                i += 1  # {...}, ${...}, #{...}: a value the code computes
            i += 1
            value.append(UNKNOWN)
        elif grammar == "perl" and piece in ("$", "@") and following[:1] in WORD_START:
            value.append(UNKNOWN)  # "$dir/x": a variable's value
            i += 1
        else:
            value.append(piece)
    return ended(out, command, value, n)


def ended(out: list, command: bool, value: list, i: int) -> int:
    out.append(("x" if command else "s", "".join(value)))
    return i


def program_code(run: Invocation, spec: dict, stdin: str | None) -> str | None:
    """The program an interpreter runs: the values of its code options
    (python -c CODE), or `stdin`, the text it reads, when it reads its program
    there (python3 <<EOF, perl <<< CODE, echo CODE | ruby)."""
    options = spec.get("code", [])
    with_value = spec.get("options with value", [])
    codes: list[str] = []
    args, i = run.args, 0
    script = None
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            script = args[i] if i < len(args) else None
            break
        if not is_option(arg):
            script = arg
            break
        found, value = code_option_value(arg, options, with_value)
        if not spec.get("code attached", True) and not arg.startswith("--"):
            value = None  # node -pe CODE
        if found:
            if value is None and i < len(args):
                value = args[i]
                i += 1
            if value is not None:
                codes.append(value)
        elif code_option_value(arg, spec.get("last option", []), with_value)[0]:
            return "\n".join(codes) if codes else None  # python -m MODULE ...
        elif takes_value(arg, with_value):
            i += 1
    if codes:
        return "\n".join(codes)
    if stdin is not None and script in (None, "-", "/dev/stdin"):
        return stdin
    return None


def code_option_value(
    arg: str, wanted: list, with_value: list
) -> tuple[bool, str | None]:
    """Whether `arg` is one of the options `wanted`, and its value when it is
    in the word (-cCODE, --eval=CODE; None: the next word)."""
    if arg.startswith("--"):
        for option in wanted:
            if arg == option:
                return True, None
            if option.startswith("--") and arg.startswith(option + "="):
                return True, arg[len(option) + 1 :]
        return False, None
    for k in range(1, len(arg)):
        letter = "-" + arg[k]
        if letter in wanted:
            return True, arg[k + 1 :] if k + 1 < len(arg) else None
        if letter in with_value:
            break  # the rest of the word is that option's value
    return False, None


def program_commands(
    tokens: list, spec: dict, grammar: str, delete_as: dict
) -> list | None:
    """The shell code of the calls in a program that run a command or delete
    files; None when there are too many to check."""
    found: list[str] = []
    calls = 0
    for i, (kind, text) in enumerate(tokens):
        if kind == "x":
            calls += 1
            if calls > MAX_CALLS:
                return None
            found.append(text)  # `...`: run by a shell
            continue
        if kind != "n":
            continue
        what = next(
            (
                k
                for k in ("runs", "deletes", "deletes files")
                if matches(text, spec.get(k, []))
            ),
            None,
        )
        if what is None:
            continue
        args = call_args(tokens, i + 1, grammar)
        if args is None:
            continue
        calls += 1
        if calls > MAX_CALLS:
            return None
        values = [arg_values(arg) for arg in args if is_value(arg)]
        if text[0] == "." and what != "runs" and i > 0 and tokens[i - 1][0] == "s":
            values = [(False, [tokens[i - 1][1]])]  # Path("x").unlink()
        words = [word for is_list, each in values for word in each]
        if what == "runs" and len(values) == 1 and not values[0][0]:
            found.append(words[0])  # one string: a shell runs it
        elif words:
            prefix = [] if what == "runs" else delete_as.get(what, [])
            found.append(" ".join(shell_quoted(w) for w in prefix + words))
    return found


def with_paths(tokens: list, spec: dict) -> list:
    """The tokens with each path object made of a string (Path("x")) as that string."""
    makers = spec.get("path objects", [])
    out, i = [], 0
    while i < len(tokens):
        if (
            tokens[i][0] == "n"
            and matches(tokens[i][1], makers)
            and tokens[i + 1 : i + 2] == [("p", "(")]
            and tokens[i + 2 : i + 3]
            and tokens[i + 2][0] == "s"
            and tokens[i + 3 : i + 4] == [("p", ")")]
        ):
            out.append(tokens[i + 2])
            i += 4
        else:
            out.append(tokens[i])
            i += 1
    return out


def call_args(tokens: list, i: int, grammar: str) -> list | None:
    """The arguments of a call whose name ends before tokens[i], each a list
    of tokens; None when the name is not called there."""
    parens = i < len(tokens) and tokens[i] == ("p", "(")
    if parens:
        i += 1
    elif grammar not in ("perl", "ruby"):
        return None
    args: list[list] = [[]]
    depth = 0
    start = i
    while i < len(tokens):
        if i - start == MAX_CALL_TOKENS:
            args[-1].append(("p", "..."))  # the rest: taken as computed
            break
        kind, text = tokens[i]
        i += 1
        if kind == "p" and text in ("(", "[", "{"):
            depth += 1
        elif kind == "p" and text in (")", "]", "}"):
            if depth == 0:
                break
            depth -= 1
        elif kind == "p" and text == ";":
            if depth == 0 and not parens:
                break
            continue  # a line break inside ( ) or [ ]
        elif depth == 0 and kind == "p" and text == ",":
            args.append([])
            continue
        elif depth == 0 and not parens and kind == "n" and text in CALL_ENDS:
            break
        args[-1].append((kind, text))
    return args


def is_value(arg: list) -> bool:
    """Whether an argument can be a command's word or a path: not an object
    or hash ({...}), a function (=>, function, lambda), or a keyword
    argument (shell=True, exception: true)."""
    if not arg or arg[0] == ("p", "{"):
        return False
    if any(t == ("p", "=>") or t in (("n", "function"), ("n", "lambda")) for t in arg):
        return False
    return not (
        len(arg) > 1 and arg[0][0] == "n" and arg[1] in (("p", "="), ("p", ":"))
    )


def arg_values(arg: list) -> tuple[bool, list]:
    """Whether an argument is a list ([...]), and its values."""
    if arg[0] == ("p", "[") and arg[-1] == ("p", "]"):
        items: list[list] = [[]]
        depth = 0
        for token in arg[1:-1]:
            if token[0] == "p" and token[1] in ("(", "[", "{"):
                depth += 1
            elif token[0] == "p" and token[1] in (")", "]", "}"):
                depth -= 1
            elif depth == 0 and token == ("p", ","):
                items.append([])
                continue
            items[-1].append(token)
        return True, [value_of(item) for item in items if item]
    return False, [value_of(arg)]


def value_of(tokens: list) -> str:
    """The text of string literals, with UNKNOWN for what the code computes."""
    out: list[str] = []
    computed = False
    for kind, text in tokens:
        if kind == "s":
            out.append(text)
            computed = False
        elif not computed:
            out.append(UNKNOWN)
            computed = True
    return "".join(out)


# --- Checking ---------------------------------------------------------------------


@dataclass
class Invocation:
    """A simple command behind its wrappers: what runs, with which words."""

    name: str  # "" for a line of redirections only
    args: list
    command: Simple
    code: list  # shell code it runs: sh -c CODE, eval ..., a here-document
    execs: list  # the commands of find's -exec ... ;
    position: int = 0  # where it stands in its pipeline
    chdir: str | None = None  # the folder a wrapper runs it in: env -C DIR
    from_input: bool = False  # runs code it reads: xargs sh -c, parallel
    refusal: Refusal | None = None  # a program too large to check
    code_on_stdin: bool = False  # runs the lines it reads: parallel alone


class Defs:
    """The functions a piece of code may call: its own, and those of the code
    that runs it (outer: (its Defs, the scope it runs from, and whether all
    are passed on, as eval does, or only those exported, as bash -c does)."""

    def __init__(self, parser: Parser, outer: tuple | None) -> None:
        self.functions = parser.functions  # every name defined
        self.parents = parser.parents
        self.outer = outer
        self.own: dict[str, dict[int, Group]] = {}  # by name, by scope
        self.exported: set[str] = set()
        self.values = assigned(parser.commands)  # the variables set in it
        # eval's functions last after it: their bodies are judged as they stand
        deferred = not (outer and outer[2])
        for body in parser.bodies:
            if body.closed and deferred:
                groups = self.own.setdefault(body.name, {})
                groups.setdefault(body.scope, Group([])).bodies.append(body)
                body.defs = self
                body.runs = []

    def knows(self, name: str) -> bool:
        """Whether a function of this name may be defined (a quick test)."""
        return name in self.functions or bool(self.outer) and self.outer[0].knows(name)

    def export(self, run: Invocation) -> None:
        """export -f NAME (declare -fx NAME): bash -c sees the function too."""
        if run.name in ("export", "declare", "typeset") and any(
            is_short(arg) and "f" in arg for arg in run.args
        ):
            self.exported.update(arg for arg in run.args if not is_option(arg))

    def groups(self, name: str, scope: int, every: bool = True) -> list:
        """The bodies a command `name` in `scope` may run, by where they are
        defined: its subshell, those around it, then the code that runs it
        (every=False: those exported only)."""
        found = []
        own = self.own.get(name) if every or name in self.exported else None
        at = scope if own else -1
        while at >= 0:
            if at in own:
                found.append(own[at])
            at = self.parents[at]
        if self.outer:
            defs, at, passes_all = self.outer
            found += defs.groups(name, at, every and passes_all)
        return found


class Line:
    """The simple commands of one piece of code, grouped by pipeline."""

    def __init__(self, runs: list, defs: Defs) -> None:
        self.defs = defs
        self.functions = defs.functions
        self.pipelines: dict[int, list[Invocation]] = {}
        for run in runs:
            members = self.pipelines.setdefault(run.command.pipeline, [])
            run.position = len(members)
            members.append(run)
        self.memo: dict[tuple, int] = {}  # (what, pipeline) -> a position

    def members(self, run: Invocation) -> list:
        return self.pipelines[run.command.pipeline]


class Checker:
    """One decision: the rules asked about each simple command in turn."""

    def __init__(self, data: dict, cwd: str) -> None:
        self.data = data
        # the project folder; "/" or none is no project: no path is inside it
        self.project = cwd if normal(cwd) and cwd.startswith("/") else "/.project"
        self.project_parts = normal(self.project)
        self.here: str | None = "/" + "/".join(self.project_parts)
        classes = data.get("classes", {})
        self.temp = [normal(folder) for folder in classes.get("temp", [])]
        self.devices = classes.get("device", [])
        self.secrets = classes.get("secret", [])
        self.not_secrets = classes.get("not secret", [])
        self.shells = data.get("shells", [])
        self.again = 0  # words of commands judged again (MAX_AGAIN)
        self.long: dict[str, bool] = {}  # one_dash_or_two, by name

    def check(
        self, text: str, depth: int, outer: tuple | None = None
    ) -> Refusal | None:
        if depth > MAX_DEPTH:
            return TOO_DEEP
        parser = Parser(text)
        parser.parse()
        if parser.too_deep:
            return TOO_DEEP
        defs = Defs(parser, outer)
        runs = []
        for command in parser.commands:
            run = self.unwrap(command.words, command)
            if run.name in defs.values:
                run = self.run_variable(run, defs.values[run.name])
            body = command.body
            if body is not None and body.runs is not None:
                body.runs.append(run)  # runs where the function is called
            else:
                runs.append(run)
            defs.export(run)
        line = Line(runs, defs)
        for run in runs:
            refusal = self.check_run(run, line, depth)
            if refusal:
                return refusal
        return None

    def check_run(self, run: Invocation, line: Line, depth: int) -> Refusal | None:
        if run.chdir is not None:
            return self.in_folder(run, line, depth)
        self.follow_cd(run, line)
        if run.code_on_stdin:
            text = known_input(run, line)
            if text is not None:  # echo 'make a' | parallel: that is its code
                run.from_input, run.code_on_stdin = False, False
                run.code.append(text)
        if run.refusal:
            return run.refusal
        for rule in rules_for(self.data, run.name):
            if self.holds(rule, run, line):
                return Refusal(
                    rule["id"], rule.get("reason", ""), rule.get("instead", "")
                )
        text = fed_text(run)
        if text is not None:
            self.feed(run, line, text)
            if run.refusal:
                return run.refusal
        here = self.here  # a cd in code run by another shell does not last
        # eval runs code in this shell, with its functions; bash -c sees
        # only those exported
        outer = (line.defs, run.command.scope, run.name == "eval")
        for code in run.code:
            refusal = self.check(code, depth + 1, outer)
            self.here = here
            if refusal:
                return refusal
        for words in run.execs:
            inner = self.unwrap(words, run.command)
            refusal = self.check_run(inner, Line([inner], line.defs), depth + 1)
            self.here = here
            if refusal:
                return refusal
        if line.defs.knows(run.name):
            return self.call(run, line, depth)
        return None

    def run_variable(self, run: Invocation, values: list) -> Invocation:
        """A command named by a variable set in the code ($cmd after
        cmd="rm -rf x"): the command of its first value, the others to be
        judged beside it."""
        found = []
        for value in values:
            found.append(split_string(value) + run.args)
            self.again += len(found[-1])
            if self.again > MAX_AGAIN:
                run.refusal = TOO_MANY_AGAIN
                return run
        first, *others = found
        inner = self.unwrap(first, run.command)
        inner.chdir = run.chdir if inner.chdir is None else inner.chdir
        inner.execs.extend(others)
        return inner

    def in_folder(self, run: Invocation, line: Line, depth: int) -> Refusal | None:
        """A command a wrapper runs in another folder (env -C DIR): its
        relative paths start there."""
        here, folder = self.here, run.chdir or ""
        run.chdir = None
        if "$" in folder or folder.startswith("~"):
            self.here = None
        elif folder.startswith("/"):
            self.here = "/" + "/".join(normal(folder))
        elif self.here is not None:
            self.here = "/" + "/".join(normal(self.here + "/" + folder))
        refusal = self.check_run(run, line, depth)
        self.here = here
        return refusal

    def call(self, run: Invocation, line: Line, depth: int) -> Refusal | None:
        """A function called: each body judged where it is first called."""
        for group in line.defs.groups(run.name, run.command.scope):
            if group.busy:
                continue
            if group.checked == len(group.bodies) and group.moves:
                self.here = None  # where a cd leads this time is not followed
            group.busy = True
            while group.checked < len(group.bodies):
                if depth >= MAX_DEPTH:
                    return TOO_DEEP
                body = group.bodies[group.checked]
                group.checked += 1
                here = self.here
                if body.line is None:
                    body.line = Line(body.runs, body.defs)
                for inner in body.runs:
                    refusal = self.check_run(inner, body.line, depth + 1)
                    if refusal:
                        return refusal
                group.moves = group.moves or self.here != here
            refusal = self.forwarded(run, group, depth)
            if refusal:
                return refusal
            group.busy = False
        return None

    def forwarded(self, run: Invocation, group: Group, depth: int) -> Refusal | None:
        """The commands of the bodies that run their arguments ("$@", $1,
        ...), judged again with the arguments of this call in their place."""
        for body in group.bodies:
            for inner in body.runs or []:
                words = with_arguments(inner.command.words, run.args)
                if words is None:
                    continue
                if depth >= MAX_DEPTH:
                    return TOO_DEEP
                self.again += len(words)
                if self.again > MAX_AGAIN:
                    return TOO_MANY_AGAIN
                here = self.here
                new = self.unwrap(words, inner.command)
                if new.name in body.defs.values:
                    new = self.run_variable(new, body.defs.values[new.name])
                refusal = self.check_run(new, Line([new], body.defs), depth + 1)
                self.here = here
                if refusal:
                    return refusal
        return None

    def follow_cd(self, run: Invocation, line: Line) -> None:
        """cd DIR moves where later relative paths point (None: not known)."""
        if run.name not in ("cd", "pushd", "popd"):
            return
        if run.command.nested or len(line.members(run)) > 1:
            self.here = None  # (cd x); ... or cd x | ...: where it ends is not followed
            return
        paths = [arg for arg in run.args if not is_option(arg)]
        path = paths[0] if paths and run.name != "popd" else "~"
        if path == "-" or "$" in path or path.startswith("~"):
            self.here = None
        elif path.startswith("/"):
            self.here = "/" + "/".join(normal(path))
        elif self.here is not None:
            self.here = "/" + "/".join(normal(self.here + "/" + path))
        if self.here is not None and len(self.here) > MAX_PATH:
            self.here = None  # cd a; cd a; ... : too deep to follow

    def unwrap(self, words: list, command: Simple) -> Invocation:
        """The command that runs, behind keywords, assignments and wrappers."""
        wrappers = self.data.get("wrappers", {})
        i, adds_args = 0, False
        state: dict = {"chdir": None, "replace": None, "input file": None}
        state["splits"] = 0
        while i < len(words):
            word = words[i]
            if word in KEYWORDS or "=" in word and ASSIGNMENT.match(word):
                i += 1
                continue
            wrapper = wrappers.get(basename(word))
            if wrapper is None:
                break
            i += 1
            with_value = wrapper.get("options with value", [])
            bare = wrapper.get("bare options", [])
            while i < len(words) and (
                len(words[i]) > 1 and words[i][0] == "-" or words[i] in bare
            ):
                i += 1
                if words[i - 1] == "--":
                    break
                if "values" in wrapper:
                    words, i = wrapper_option(wrapper, words, i, state)
                elif words[i - 1] in with_value:
                    i += 1
            if "value lists" in wrapper:
                return self.parallel(wrapper, words, i, command, state)
            while (
                wrapper.get("assignments")
                and i < len(words)
                and ASSIGNMENT.match(words[i])
            ):
                i += 1
            i += int(wrapper.get("args", 0))
            adds_args = adds_args or wrapper.get("adds args", False)
        name = basename(words[i]) if i < len(words) else ""
        args = words[i + 1 :]
        if state["replace"]:  # xargs -I R: R stands for what xargs reads
            args = [arg.replace(state["replace"], INPUT) for arg in args]
        elif adds_args:
            args = [*args, INPUT]
        run = Invocation(name, args, command, [], [], chdir=state["chdir"])
        self.find_code(run)
        self.code_from_input(run)
        return run

    def code_from_input(self, run: Invocation) -> None:
        """Whether a shell or interpreter runs what xargs reads: xargs sh -c."""
        options = self.code_options(run.name) if INPUT in run.args else []
        args = run.args
        for i in range(len(args) - 1):
            if any(option_matches(args[i], option) for option in options):
                at = i + 2 if args[i + 1] == "--" and i + 2 < len(args) else i + 1
                run.from_input = args[at] == INPUT  # bash -c [--] CODE
                return

    def parallel(
        self, wrapper: dict, words: list, i: int, command: Simple, state: dict
    ) -> Invocation:
        """parallel CMD ::: VALUES: a shell runs CMD once for each value, in
        place of its {} (or after it); values from its input, or from the files
        of ::::, are unknown. With no CMD, each value is a command line."""
        lists = wrapper["value lists"]
        at = next((j for j in range(i, len(words)) if words[j] in lists), len(words))
        values: list[str] = []
        unknown = at == len(words)  # no ::: : the values come from its input
        kind = ""
        for word in words[at:]:
            if word in lists:
                kind = lists[word]
            elif kind == "words":
                values.append(word)
            else:
                unknown = True
        values = list(dict.fromkeys(values))
        cmd = words[i:at]
        # too many to judge one by one: as unknown as values read from input
        if len(values) > MAX_VALUES or len(values) * len(" ".join(cmd)) > MAX_COMMAND:
            values, unknown = [], True
        run = Invocation("parallel", [], command, [], [], chdir=state["chdir"])
        # GNU parallel joins the command's words into one line; with -q, and
        # moreutils' parallel, they stay words (bash -c 'CODE'): both judged
        readings = [cmd]
        if any(c in QUOTED for word in cmd for c in word):
            readings.append([shell_quoted(word) for word in cmd])
        for value in values + ([INPUT] if unknown else []):
            for reading in readings:
                code = fill(reading, value, state["replace"]) if cmd else value
                if code == INPUT:
                    run.from_input = True
                    # no values and no command: it runs the lines it reads
                    run.code_on_stdin = at == len(words) and not state["input file"]
                else:
                    run.code.append(code)
        return run

    def find_code(self, run: Invocation) -> None:
        """The shell code a command runs: sh -c CODE, eval ..., find -exec ... ;"""
        if run.name == "eval":
            run.code.append(" ".join(run.args))
        if matches(run.name, self.shells):
            options = self.code_options(run.name)
            for i, arg in enumerate(run.args[:-1]):
                if any(option_matches(arg, option) for option in options):
                    code = run.args[i + 1]
                    if code == "--" and i + 2 < len(run.args):
                        code = run.args[i + 2]  # bash -c -- CODE
                    run.code.append(code)
                    break
            else:
                positionals = [arg for arg in run.args if not is_option(arg)]
                if run.command.stdin is not None and not positionals:
                    run.code.append(run.command.stdin)  # bash <<EOF, bash <<< CODE
        if run.name == "find":
            self.find_paths(run)
        if matches(run.name, self.data["program names"]):
            self.find_program(run)

    def find_program(self, run: Invocation) -> None:
        """The commands a program run by python -c, node -e, ... hands to a
        shell or runs, and the files it deletes, as shell code."""
        grammar, spec = self.language(run.name)
        code = program_code(run, spec, run.command.stdin)
        if code is not None:
            self.read_program(run, code, grammar, spec)

    def language(self, name: str) -> tuple[str, dict]:
        """The grammar and the "programs" entry of interpreter `name`."""
        languages = self.data.get("programs", {}).get("languages", {})
        for grammar in GRAMMARS:
            spec = languages.get(grammar, {})
            if matches(name, spec.get("names", [])):
                return grammar, spec
        return "", {}

    def read_program(
        self, run: Invocation, code: str, grammar: str, spec: dict
    ) -> None:
        """Adds to run's code what program `code` hands to a shell or runs, and
        the files it deletes, as shell code (too many calls: a refusal)."""
        tokens = with_paths(program_tokens(code, grammar), spec)
        delete_as = self.data.get("programs", {}).get("delete as", {})
        found = program_commands(tokens, spec, grammar, delete_as)
        if found is None:
            run.refusal = run.refusal or TOO_MANY_CALLS
        else:
            run.code.extend(found)

    def feed(self, run: Invocation, line: Line, text: str) -> None:
        """Text printed into a later command of the pipeline that runs what
        it reads: shell code (echo 'CODE' | sh, cat <<EOF | bash), or the
        program of an interpreter (echo 'CODE' | python3)."""
        if self.piped_to(run, line, self.shells):
            run.code.append(text)
        for other in line.members(run):
            if (
                other.position > run.position
                and other.command.stdin is None
                and matches(other.name, self.data["program names"])
            ):
                grammar, spec = self.language(other.name)
                if program_code(other, spec, None) is None and program_code(
                    other, spec, text
                ):
                    self.read_program(run, text, grammar, spec)

    def find_paths(self, run: Invocation) -> None:
        """find's folders first in its words (narrowed to NAME by -name NAME),
        its tests after them, and the commands of its -exec ... ; apart."""
        args, find = run.args, self.data.get("find", {})
        i = 0  # -H, -L, -P, -D opts, -O3: options before the folders
        while i < len(args) and args[i][:2] in ("-H", "-L", "-P", "-D", "-O"):
            i += 2 if args[i] == "-D" else 1
        start = i
        while i < len(args) and not is_option(args[i]) and args[i] not in ("(", "!"):
            i += 1
        folders, tests, execs = args[start:i], args[:start], []
        name, widened = None, False
        while i < len(args):
            if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                end = i + 1
                while end < len(args) and args[end] not in (";", "+"):
                    end += 1
                execs.append(args[i + 1 : end])
                i = end + 1
                continue
            if args[i] in find.get("widened by", []):
                widened = True  # -o, !: what the name does not match may be found too
            elif args[i] in find.get("narrowed by", []) and name is None:
                name = args[i + 1] if i + 1 < len(args) else None
            tests.append(args[i])
            i += 1
        if name is not None and not widened and not any(c in name for c in "*?[\\"):
            folders = [folder + "/" + name for folder in folders or ["."]]
        run.args = folders + tests
        for words in execs:  # the folders take the place of the first {}
            if "{}" in words:
                at = words.index("{}")
                words = words[:at] + (folders or ["."]) + words[at + 1 :]
            run.execs.append(words)

    def code_options(self, name: str) -> list:
        """The options after which a shell or interpreter takes its code (-c)."""
        code = self.data.get("code", {})
        if name in code:
            return code[name]
        for pattern, options in code.items():
            if "*" in pattern and fits(name, pattern.split("*")):
                return options
        return []

    def holds(self, rule: dict, run: Invocation, line: Line) -> bool:
        """Whether every field of `rule` holds for `run` (the command, if any, does)."""
        if rule.get("code from input") and not run.from_input:
            return False
        if rule.get("fork bomb") and not fork_bomb(run, line):
            return False
        if "redirect" in rule:
            outputs = [target for op, target in run.command.redirects if op == ">"]
            if not any(self.has_class(target, rule["redirect"]) for target in outputs):
                return False
        if "exec" in rule and not any(
            words and basename(words[0]) in rule["exec"] for words in run.execs
        ):
            return False
        if "runs output of" in rule:
            inner = [self.unwrap(sub.words, sub).name for sub in run.command.subs]
            if not any(matches(name, rule["runs output of"]) for name in inner):
                return False
        if "piped to" in rule and not self.piped_to(run, line, rule["piped to"]):
            return False
        if "input" in rule and not self.input_has(run, line, rule["input"]):
            return False
        return self.words_hold(rule, run)

    def words_hold(
        self, rule: dict, run: Invocation, with_value: list | None = None
    ) -> bool:
        """Whether the rule's subcommand, option, arg and target fields hold."""
        args = run.args
        if with_value is None:
            with_value = self.data.get("option values", {}).get(run.name, [])
            if self.one_dash_or_two(run.name):
                return self.words_hold(*two_dashes(rule, run, with_value))
        if "subcommand" in rule:
            sub = subcommand(args, with_value)
            if sub is None or args[sub] not in rule["subcommand"]:
                return False
            args = args[sub + 1 :]
        args = args[rule.get("skip", 0) :]
        if not (
            "option" in rule
            or "not option" in rule
            or "arg" in rule
            or "target" in rule
            or "min args" in rule
        ):
            return True
        options, positionals, values = split(args, with_value)
        if "option" in rule and not any_option(options, rule["option"], with_value):
            return False
        if "not option" in rule and any_option(options, rule["not option"], with_value):
            return False
        if len(positionals) < rule.get("min args", 0):
            return False
        if "arg" in rule and not any(matches(arg, rule["arg"]) for arg in positionals):
            return False
        if "target" in rule:
            targets = pick_targets(rule, args, positionals, values)
            return any(self.has_class(target, rule["target"]) for target in targets)
        return True

    def one_dash_or_two(self, name: str) -> bool:
        """Whether the options of command `name` take one dash or two alike."""
        if name not in self.long:
            self.long[name] = matches(name, self.data.get("one dash or two", []))
        return self.long[name]

    def has_class(self, word: str, classes: list) -> bool:
        if "secret" in classes:
            forms = secret_forms(word)
            if any(matches(f, self.secrets) for f in forms) and not any(
                matches(f, self.not_secrets) for f in forms
            ):
                return True
        if "device" in classes and matches(word, self.devices):
            return True
        return where(word, self.here, self.project_parts, self.temp) in classes

    def input_has(self, run: Invocation, line: Line, classes: list) -> bool:
        """Whether what the command reads (< FILE, or earlier in its pipeline) has a class."""
        if any(
            op == "<" and self.has_class(t, classes) for op, t in run.command.redirects
        ):
            return True
        key = ("input", id(classes), run.command.pipeline)
        if key not in line.memo:  # the first member that reads or names such a file
            line.memo[key] = next(
                (
                    other.position
                    for other in line.members(run)
                    if any(
                        self.has_class(a, classes)
                        for a in other.args
                        if not is_option(a)
                    )
                    or any(
                        op == "<" and self.has_class(t, classes)
                        for op, t in other.command.redirects
                    )
                ),
                len(line.members(run)),
            )
        return line.memo[key] < run.position

    def piped_to(self, run: Invocation, line: Line, names: list) -> bool:
        """Whether a later command of the pipeline runs the program it reads."""
        key = ("piped to", id(names), run.command.pipeline)
        if key not in line.memo:  # the last member that runs what it reads
            line.memo[key] = max(
                (
                    other.position
                    for other in line.members(run)
                    if matches(other.name, names) and self.reads_program(other)
                ),
                default=-1,
            )
        return line.memo[key] > run.position

    def reads_program(self, run: Invocation) -> bool:
        """Whether an interpreter takes its program from its standard input."""
        options = self.code_options(run.name)
        if any(
            option_matches(arg, o)
            for arg in run.args
            if is_option(arg)
            for o in options
        ):
            return False
        positionals = [arg for arg in run.args if not is_option(arg)]
        first = positionals[0] if positionals else "-"
        return first in ("-", "/dev/stdin") or "-s" in run.args


def option_value(option: str, names: list, following: str) -> tuple:
    """The value of an option named in `names` (-C DIR, -CDIR, --chdir=DIR),
    and whether it is the next word; (None, False) for another option."""
    if option in names:
        return following, True
    name, equals, value = option.partition("=")
    if equals and name in names and name.startswith("--"):
        return value, False
    if is_short(option) and option[:2] in names and len(option) > 2:
        return option[2:], False
    return None, False


def wrapper_option(wrapper: dict, words: list, i: int, state: dict) -> tuple:
    """A wrapper's option words[i - 1], read: a folder to run in (env -C),
    a string split into words (env -S), a replacement string (xargs -I);
    the words, and where the next option stands."""
    option = words[i - 1]
    following = words[i] if i < len(words) else ""
    values = wrapper["values"]
    for what in ("chdir", "split string", "replace", "input file"):
        names = list(values.get(what, {}))
        value, takes_next = option_value(option, names, following)
        if value is None:
            continue
        default = values[what].get(option) if isinstance(values[what], dict) else ""
        if default and option in names:
            value, takes_next = default, False  # xargs -i: {}, no value
        end = i + 1 if takes_next else i
        if what == "split string" and state["splits"] < MAX_DEPTH:
            state["splits"] += 1  # the string's words come in its place
            return words[: i - 1] + split_string(value) + words[end:], i - 1
        if what != "split string":
            state[what] = value
        return words, end
    if option in wrapper.get("options with value", []):
        i += 1
    return words, i


def split_string(text: str) -> list:
    """The words of env -S's string: split at blanks, quotes and backslashes
    taken off."""
    words: list[str] = []
    word: list[str] = []
    started = False  # a word has begun ('' is one)
    mode = ""  # the quote, or backslash, that the characters before opened
    for c in text:
        if mode in ("'", '"') and c == mode:
            mode = ""
        elif mode == '"' and c == "\\":
            mode = '"\\'
        elif mode:
            word.append(c)
            if mode == '"\\':
                mode = '"'
            elif mode == "\\":
                mode = ""
        elif c in " \t\n\v\f\r":
            if started:
                words.append("".join(word))
            word, started = [], False
        else:
            started = True
            if c in "'\"\\":
                mode = c
            else:
                word.append(c)
    if started:
        words.append("".join(word))
    return words


def fill(cmd: list, value: str, replace: str | None) -> str:
    """parallel's command line for one value: in place of each {} (or of
    parallel -I's string), or after the command; the value quoted."""
    found = False
    out = []
    for word in cmd:
        if replace:
            found = found or replace in word
            word = word.replace(replace, shell_quoted(value))
        elif PARALLEL_REPLACE.search(word):
            found = True
            word = PARALLEL_REPLACE.sub(
                lambda m: shell_quoted(transformed(value, m.group(2) or "")), word
            )
        out.append(word)
    if not found:
        out.append(shell_quoted(value))
    return " ".join(out)


def transformed(value: str, how: str) -> str:
    """A value as {.}, {/}, {//}, {/.}, {#} or {%} give it."""
    if value == INPUT:
        return value
    if how in ("#", "%"):
        return "1"  # the job's or the slot's number
    if how == "//":  # the folder
        path = value.rstrip("/")
        if not path:
            return "/" if value else "."
        if "/" not in path:
            return "."
        return path[: path.rfind("/")].rstrip("/") or "/"
    if how.startswith("/"):
        value = basename(value)
    if how.endswith("."):  # without its extension
        dot = value.rfind(".")
        if dot >= 0 and "/" not in value[dot:]:
            value = value[:dot]
    return value


def shell_quoted(value: str) -> str:
    """A value as one word in shell code (what xargs or parallel read stays
    unknown)."""
    if value == INPUT:
        return value
    return "'" + value.replace("'", "'\\''") + "'"


# Where a function's arguments stand in its body: "$@", $*, $1, ${2}, ...
POSITIONAL = re.compile(r"\$([@*1-9]|\{([@*]|[1-9])\})")
# The commands that set the variables they are given (export X=1).
SETTERS = ("export", "declare", "typeset", "local", "readonly")


def assigned(commands: list) -> dict:
    """The values each variable is set to in the code (cmd="rm -rf x", also
    by export, declare, ...), by the name a command uses for it ("$cmd",
    "${cmd}"); an array's words as written (cmd=(rm -rf x))."""
    values: dict[str, dict] = {}  # each name's values, once each, in order
    for command in commands:
        first = command.words[command.keywords : command.keywords + 1]
        if not first or "=" not in first[0] and first[0] not in SETTERS:
            continue  # the usual case: a command, not an assignment
        words = command.words[command.keywords :]
        if words[0] in SETTERS:
            words = [word for word in words[1:] if not is_option(word)]
        if not words or not all(ASSIGNMENT.match(word) for word in words):
            continue
        for word in words:
            name, value = word.split("=", 1)
            if "[" in name or name.endswith("+"):
                continue  # a[1]=x, a+=x: a part of a value
            if value.startswith("(") and value.endswith(")"):
                value = value[1:-1]
            values.setdefault(name, {})[value] = None
    forms = ("$%s", "${%s}", "${%s[@]}", "${%s[*]}")
    return {form % name: list(v) for name, v in values.items() for form in forms}


def with_arguments(words: list, args: list) -> list | None:
    """The words of a function's command with a call's arguments in place
    of "$@", $1, ...; None when it has none of them."""
    out: list[str] = []
    found = False
    for word in words:
        match = POSITIONAL.fullmatch(word)
        if match is None:
            out.append(word)
            continue
        found = True
        which = match.group(2) or match.group(1)
        if which in ("@", "*"):
            out.extend(args)
        elif int(which) <= len(args):
            out.extend(split_string(args[int(which) - 1]))
    return out if found else None


def fed_text(run: Invocation) -> str | None:
    """What echo or printf prints, or cat of its here-document (cat <<EOF)."""
    if run.name == "printf":
        return printf_text(run.args)
    if run.name == "echo":
        words, escapes = run.args, False
        while words and words[0] in ("-e", "-n", "-E", "-ne", "-en"):
            escapes = "e" in words[0]  # echo -e: \n is a new line
            words = words[1:]
        return ansi_c(" ".join(words)) if escapes else " ".join(words)
    if run.name == "cat" and not run.args and run.command.stdin is not None:
        return run.command.stdin
    return None


# A directive of printf's format: %s, %-10s, %d, %%, ...
DIRECTIVE = re.compile(r"%(%|[-+ #0]*[0-9]*(\.[0-9]*)?[a-zA-Z])")


def printf_text(args: list) -> str:
    """What printf prints: its format, escapes read, with an argument in
    place of each directive, again while arguments are left (past
    MAX_COMMAND characters, the arguments left follow as they are)."""
    if not args:
        return ""
    form, rest = ansi_c(args[0]), list(args[1:])
    out: list[str] = []
    size = 0
    while True:
        used = len(rest)
        out.append(DIRECTIVE.sub(lambda m: printf_value(m, rest), form))
        size += len(out[-1])
        if not rest or used == len(rest):
            return "".join(out)
        if size > MAX_COMMAND:
            return "".join(out) + " " + " ".join(rest)


def printf_value(match: re.Match, rest: list) -> str:
    """What one directive of printf's format prints: %% a %, else the next
    argument (none left: nothing)."""
    if match.group(1) == "%":
        return "%"
    return rest.pop(0) if rest else ""


def known_input(run: Invocation, line: Line) -> str | None:
    """What a command reads, when the line says: its here-document, or what
    echo, printf or cat <<EOF before it in its pipeline prints."""
    if run.command.stdin is not None:
        return run.command.stdin
    if run.position == 0 or any(op == "<" for op, _ in run.command.redirects):
        return None
    return fed_text(line.members(run)[run.position - 1])


def fork_bomb(run: Invocation, line: Line) -> bool:
    """A function defined here, run twice in one pipeline: name() { name | name & }."""
    if run.name not in line.functions:
        return False
    key = ("fork bomb", run.name, run.command.pipeline)
    if key not in line.memo:
        line.memo[key] = sum(other.name == run.name for other in line.members(run))
    return line.memo[key] > 1


def two_dashes(rule: dict, run: Invocation, with_value: list) -> tuple:
    """The rule, command and options that take a value of a program whose
    options take one dash or two alike (terraform -destroy, --destroy), all
    spelt with two: each option one name, never letters run together."""

    def spelt(words: list) -> list:
        return ["-" + w if is_option(w) and w[1] != "-" else w for w in words]

    args = spelt(run.args)
    rule = {
        **rule,
        **{k: spelt(rule[k]) for k in ("option", "not option") if k in rule},
    }
    inner = Invocation(run.name, args, run.command, run.code, run.execs)
    return rule, inner, spelt(with_value)


def rules_for(data: dict, name: str) -> list:
    """The rules whose command fits `name`, or that name none, in order."""
    cache = data.setdefault("by command", {})
    if name not in cache:
        if len(cache) > 1000:  # any name may come: keep the cache small
            cache.clear()
        cache[name] = [
            r
            for r in data["rules"]
            if "command" not in r or matches(name, r["command"])
        ]
    return cache[name]


def leading(args: list) -> list:
    """The words before the first option (find's paths)."""
    out = []
    for arg in args:
        if is_option(arg) or arg in ("(", "!"):
            break
        out.append(arg)
    return out


def subcommand(args: list, with_value: list) -> int | None:
    """Where the first word that is not an option stands (git's push, ...)."""
    i = 0
    while i < len(args):
        if takes_value(args[i], with_value):
            i += 2
        elif is_option(args[i]):
            i += 1
        else:
            return i
    return None


def split(args: list, with_value: list) -> tuple[list, list, list]:
    """Options, positional words, and the values of --name=value options."""
    options: list[str] = []
    positionals: list[str] = []
    values: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            options.append(arg)
            positionals.extend(args[i + 1 :])
            break
        if is_option(arg):
            options.append(arg)
            if takes_value(arg, with_value):
                i += 1
            elif arg.startswith("--") and "=" in arg:
                values.append(arg.split("=", 1)[1])
        else:
            positionals.append(arg)
        i += 1
    return options, positionals, values


def pick_targets(rule: dict, args: list, positionals: list, values: list) -> list:
    """The words a rule's "target" looks at, by its "targets"."""
    mode = rule.get("targets", "all")
    if mode == "leading":
        found = leading(args)
    elif mode == "last":
        found = positionals[-1:]
    elif mode == "after first":
        found = positionals[1:]
    elif mode != "all":
        found = [arg[len(mode) :] for arg in args if arg.startswith(mode)]
    else:
        found = positionals + values
    if not found and "default target" in rule:
        found = [rule["default target"]]
    return found


def check(command: str, cwd: str = "", rules: dict | None = None) -> Refusal | None:
    """Why the bash command must be refused, or None to allow it.

    `cwd` is the project folder (hello_ack's cwd): deletes inside it, and in
    the temp folders, are allowed. `rules` are those of every rules file
    unless given (template_policy(): the template's alone).
    """
    command = command.replace("\\\n", "")  # bash joins continued lines
    if len(command) > MAX_COMMAND:
        return TOO_LONG
    try:
        rules = policy() if rules is None else rules
    except RulesError as err:  # fail closed, and say which file is at fault
        return err.refusal
    return Checker(rules, cwd).check(command, 0)


def warn_if_rules_unusable(name: str, ext: Any) -> None:
    """Reads the rules now, so that the first command is not kept waiting; when
    they cannot be used (then every bash call is refused), tells the user and
    the log of extension `name` (ext.notify, ext.log)."""
    try:
        policy()
    except RulesError as err:
        reason, fix = err.refusal.reason, err.refusal.instead
        warning = f"{name}: the guard cannot use its rules: {reason}. Instead, {fix}."
        ext.log(warning)
        ext.notify("warn", warning)


def check_tool_call(
    tool_name: object, tool_args: object, cwd: object = ""
) -> Refusal | None:
    """Why a tool call must be refused, or None to allow it."""
    if tool_name != "bash" or not isinstance(tool_args, dict):
        return None  # the guard judges bash command lines only
    command = tool_args.get("command")
    if not isinstance(command, str):
        return None  # not a command line; zot's bash tool rejects it anyway
    return check(command, cwd if isinstance(cwd, str) else "")
