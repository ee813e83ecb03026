"""Trying the extension by hand: ./smoke-test --interactive."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time

from .cases import CASE_KEY, zot_tools_of
from .process import WINDOWS
from .project import FixtureError, Snapshot, snapshot
from .protocol import (
    EVENTS,
    PANEL_KEYS,
    SYSTEM_PROMPT,
    SessionOver,
    answer_problem,
    check_command_response,
    check_tool_result,
    event_frame,
    json_type,
    q,
    sample_args,
    schema_parts,
)
from .report import Report
from .session import Session
from .terminal import box, keyboard, read_keys, setup_readline

# --- trying it by hand: --interactive --------------------------------------------

CONSOLE_HELP = """\
  /NAME ARGS          invoke a slash command, as typed in zot
  tools               the tools, with their schemas
  tool NAME           show NAME's schema and offer a template of its arguments
  tool NAME {JSON}    call a tool (the arguments are checked against the schema
                      first; tool! sends them unchecked)
  bash COMMAND        ask the guard about a bash command
  events              the events it subscribed to and the ones zot knows
  event NAME {JSON}   send an event (the JSON adds or changes fields)
  prompt TEXT         send before_agent_start with TEXT as the system prompt
  intercept NAME {JSON}  ask any intercept it subscribed to (tool_call,
                      turn_start, assistant_message, before_agent_start)
  (a handler that runs one of zot's tools gets smoke.json's "zot_tools"
  answer, or the one you type when asked)
  raw                 show every frame, both ways (again: stop)
  save [FILE]         add what you tried to smoke.json (or FILE) as cases, each
                      with the project folder it ran in
  help                this text
  quit                shut it down the way zot does (also ctrl-d)
In a panel: the arrow keys, enter, tab, home, end, page up/down, backspace,
delete and letters go to the extension; esc closes it, as in zot. ctrl-c
cancels a tool call that waits (zot's tool_cancel), in a panel or not."""


def schema_problems(schema: object, args: object) -> list[str]:
    """What the arguments lack against the tool's schema (the common keywords)."""
    if not isinstance(args, dict):
        return ["the arguments must be a JSON object"]
    props, required = schema_parts(schema)
    problems = [f"{name} is required" for name in required if name not in args]
    types = {"string": str, "integer": int, "number": (int, float), "boolean": bool}
    types.update(array=list, object=dict)
    for name, value in args.items():
        prop = props.get(name)
        kind = json_type(prop)
        wrong_bool = isinstance(value, bool) and kind in ("integer", "number")
        if kind in types and (not isinstance(value, types[kind]) or wrong_bool):
            problems.append(
                f"{name} must be {'an' if kind[0] in 'aeiou' else 'a'} {kind}"
            )
        elif isinstance(prop, dict) and "enum" in prop and value not in prop["enum"]:
            problems.append(f"{name} must be one of {json.dumps(prop['enum'])}")
    if isinstance(schema, dict) and schema.get("additionalProperties") is False:
        problems += [f"{name} is not allowed" for name in args if name not in props]
    return problems


# What the console completes with the tab key, besides names.
WORDS = ["help", "quit", "raw", "save", "tools", "events"]
WORDS += ["tool ", "bash ", "event ", "prompt ", "intercept "]


class Console:
    """A zot of one's own: type commands, call tools, drive panels by hand.

    It starts and drives the extension through the smoke test's own session,
    so what it shows is what zot would get.
    """

    def __init__(self, session: Session, report: Report) -> None:
        self.session, self.report = session, report
        self.raw = False
        self.cases: dict[str, list] = {section: [] for section in CASE_KEY}
        self.stderr_at = 0  # how much of the extension's stderr was shown
        self.width = shutil.get_terminal_size((100, 24)).columns
        # keys one by one need a Unix terminal; Windows types a key's name a line
        self.tty = sys.stdin.isatty() and not WINDOWS
        self.readline = None
        self.typed: dict = {}  # answers of zot's tools typed here, by tool name
        # the project each case tried saw, by the case's id() (None: none)
        self.projects: dict[int, Snapshot | str | None] = {}
        session.watch = self.watch
        session.ask_answer = self.ask_answer

    # output -------------------------------------------------------------------

    def paint(self, kind: str, text: str) -> str:
        return self.report.paint(kind, text) if self.tty else text

    def prompt_text(self) -> str:
        """The prompt, its colour marked for readline (which must not count it)."""
        if not (self.tty and self.report.colour):
            return "zot> "
        return "\001\033[32m\002zot> \001\033[0m\002"

    def say(self, text: str = "") -> None:
        print(text, flush=True)

    def watch(self, way: str, frame: dict) -> None:
        """Every frame as it passes: raw, or as zot would show it."""
        if self.raw:
            arrow = "→" if way == "out" else "←"
            self.say(
                self.paint("note", f"{arrow} {json.dumps(frame, ensure_ascii=False)}")
            )
        if way == "out":
            return
        kind = frame.get("type")
        if kind == "notify":
            level = frame.get("level", "info")
            colour = {"error": "fail", "warn": "warn", "success": "pass"}.get(
                level, "skip"
            )
            self.say(self.paint(colour, f"note ({level}): {frame.get('message', '')}"))
        elif kind == "clear_notes":
            self.say(self.paint("note", "(notes cleared)"))
        elif kind == "submit":
            self.say(
                self.paint("pass", "submit → zot sends it to the model: ")
                + q(frame.get("text"), 200)
            )
        elif kind == "open_panel" and isinstance(frame.get("panel"), dict):
            self.say(box(frame["panel"], self.width))
        elif kind == "panel_render" and frame.get("panel_id") in self.session.shown:
            self.say(box(self.session.shown[frame["panel_id"]], self.width))
        elif kind == "panel_close":
            self.say(
                self.paint(
                    "note",
                    f"(panel {q(frame.get('panel_id'))} closed by the extension)",
                )
            )

    def show_text(self, text: str) -> None:
        """A text as it is, every line (blank ones too) behind a bar."""
        for text_line in text.split("\n"):
            self.say(self.paint("note", "  │ ") + text_line)

    def project(self) -> Snapshot | str:
        """What the project folder holds now, for a case tried next (or why
        it cannot be saved)."""
        try:
            return snapshot(self.session.opts.project_dir)
        except (FixtureError, OSError) as exc:
            return str(exc)

    def show_stderr(self) -> None:
        """What the extension wrote to stderr since last time, apart from the frames."""
        stderr = self.session.process.stderr
        stderr.seek(self.stderr_at)
        data = stderr.read()
        self.stderr_at += len(data)
        for line in data.decode("utf-8", "replace").splitlines():
            self.say(self.paint("note", f"stderr │ {line}"))

    # the loop ------------------------------------------------------------------

    def run(self) -> int:
        try:
            self.session.phase_hello()
            self.session.phase_ready()
        except SessionOver as exc:
            self.report.fail("start", str(exc))
            return 1
        opts = self.session.opts
        path = opts.expect or os.path.join(opts.ext_dir, "smoke.json")
        self.session.zot_tools = zot_tools_of(path)
        self.introduce()
        if self.tty:
            commands = [f"/{name} " for name in self.session.commands]
            tools = [f"tool {name} " for name in self.session.tools]
            events = [f"event {name} " for name in EVENTS]
            self.readline = setup_readline([*WORDS, *commands, *tools, *events])
        while True:
            self.session.pump(0.05)  # frames that came on their own
            self.show_stderr()
            try:
                line = input(self.prompt_text()).strip()
            except EOFError:
                self.say()
                break
            except KeyboardInterrupt:
                self.say()
                continue
            if line in ("quit", "exit"):
                break
            try:
                self.handle(line)
            except KeyboardInterrupt:
                self.say(self.paint("warn", "(interrupted)"))
            except SessionOver as exc:
                self.report.fail("the session ended", str(exc))
                return 1
            self.show_stderr()
        self.session.phase_shutdown()
        self.show_stderr()
        failed = any(check["status"] == "fail" for check in self.report.checks)
        self.say(
            "shut down the way zot does" + (": see the FAIL lines" if failed else "")
        )
        return int(failed)

    def introduce(self) -> None:
        s = self.session
        ready = (
            f"ready in {self.report.ready_ms} ms"
            if self.report.ready_ms is not None
            else "no ready"
        )
        self.say(f"{self.report.extension}: {ready}; `help` lists what you can do.")
        if s.commands:
            self.say("  commands: " + ", ".join(f"/{name}" for name in s.commands))
        if s.tools:
            self.say("  tools:    " + ", ".join(s.tools))
        if s.events:
            self.say("  events:   " + ", ".join(s.events))
        if s.intercepts:
            self.say("  intercepts: " + ", ".join(s.intercepts))
        how = "yours" if s.opts.user_project else "empty; --project DIR uses yours"
        self.say(f"  project:  {s.opts.project_dir} ({how})")

    def ask_answer(self, name: str, args: object) -> object:
        """The extension runs zot's tool NAME, which smoke.json has no answer
        for: the person types it (kept for later calls, and saved)."""
        self.say(
            self.paint("note", f"call_tool {name} {json.dumps(args)}: zot runs it")
        )
        self.say(
            '  type its answer: a text, or JSON such as {"text": "...", "is_error": true}'
        )
        while True:
            try:
                line = input(f"{name} answers> ").strip()
            except (EOFError, KeyboardInterrupt):
                self.say()
                return None
            if not line.startswith("{"):
                answer: object = line
                break
            try:
                answer = json.loads(line)
            except ValueError as exc:
                self.say(self.paint("warn", f"not JSON: {exc}; again"))
                continue
            problem = answer_problem(answer)
            if not problem:
                break
            self.say(self.paint("warn", f"{problem}; again"))
        self.typed[name] = self.session.zot_tools[name] = answer
        return answer

    def offer(self, text: str) -> None:
        """Put TEXT on the next prompt line, ready to edit (or show it)."""
        if self.readline is None:
            self.say(f"  {text}")
            return
        readline = self.readline

        def hook() -> None:
            readline.insert_text(text)
            readline.set_startup_hook(None)

        readline.set_startup_hook(hook)

    def handle(self, line: str) -> None:
        word, _, rest = line.partition(" ")
        rest = rest.strip()
        if not line:
            return
        if line.startswith("/"):
            self.command(word[1:], rest)
        elif word in ("tool", "tool!"):
            self.tool(rest, checked=word == "tool")
        elif word == "tools":
            for name, schema in self.session.tools.items():
                self.say(
                    f"{name}{'  (interactive)' if name in self.session.interactive else ''}"
                )
                self.say("  " + json.dumps(schema, ensure_ascii=False))
        elif word == "bash":
            self.bash(rest)
        elif word == "events":
            self.say("subscribed: " + (", ".join(self.session.events) or "none"))
            self.say("zot's events: " + ", ".join(EVENTS))
        elif word == "event":
            self.event(rest)
        elif word == "prompt":
            self.prompt(rest)
        elif word == "intercept":
            self.intercept(rest)
        elif word == "raw":
            self.raw = not self.raw
            self.say(f"raw frames {'on' if self.raw else 'off'}")
        elif word == "save":
            self.save(rest or os.path.join(self.session.opts.ext_dir, "smoke.json"))
        elif word == "help":
            self.say(CONSOLE_HELP)
        else:
            self.say(f"unknown: {q(word)}; `help` lists what you can do")

    # what a person can do ----------------------------------------------------------

    def command(self, name: str, args: str) -> None:
        s = self.session
        known = [known for known in s.commands if known.lower() == name.lower()]
        if not known:
            self.say(
                f"/{name} is not one of its commands: {', '.join('/' + c for c in s.commands) or 'none'}"
            )
            return
        project = self.project()
        with keyboard(self.tty):  # keys typed before a panel shows go to it
            answer = s.request("command_invoked", {"name": known[0], "args": args})
            self.answered_command(known[0], args, answer, project)

    def answered_command(
        self, name: str, args: str, answer: dict | None, project
    ) -> None:
        s = self.session
        if answer is None:
            self.say(self.paint("fail", s.no_answer("command_invoked")))
            return
        problems, _ = check_command_response(answer)
        if problems:
            self.say(self.paint("fail", "; ".join(problems)))
            return
        case = {"name": name, "args": args, "expect": {}}
        self.projects[id(case)] = project
        action, error = answer.get("action") or "noop", answer.get("error")
        if error:
            self.say(self.paint("fail", f"error (zot shows it in red): {error}"))
            case["expect"] = {"error": True}
        elif action == "open_panel":
            panel = answer["open_panel"]
            s.open(panel)
            self.say(box(panel, self.width))
            submitted = len(s.submitted)
            try:
                case["keys"] = self.drive(panel["id"])
            except KeyboardInterrupt:  # as esc
                case["keys"] = ["esc"]
                s.close_panel(panel["id"])
            case["expect"] = {
                "action": "open_panel",
                "closed": panel["id"] not in s.panels,
            }
            if len(s.submitted) > submitted:
                case["expect"]["submit"] = s.submitted[-1]
        else:
            text = answer.get("prompt" if action == "tool_prompt" else action, "")
            what = {
                "prompt": "prompt → zot sends it to the model:",
                "insert": "insert → zot puts it into the editor:",
                "display": "display → zot shows it in the chat:",
                "tool_prompt": f"tool_prompt → zot runs {answer.get('tool_name')} and sends:",
            }.get(action, f"{action} (nothing to show)")
            self.say(self.paint("pass", what))
            self.show_text(text or "")
            case["expect"] = {"action": action}
            if text:
                case["expect"]["equals" if len(text) <= 80 else "contains"] = text[:80]
        self.cases["commands"].append(case)

    def tool(self, rest: str, checked: bool) -> None:
        s = self.session
        name, _, text = rest.partition(" ")
        if name not in s.tools:
            self.say(
                f"{q(name)} is not one of its tools: {', '.join(s.tools) or 'none'}"
            )
            return
        schema = s.tools[name]
        if not text.strip():
            self.describe(name, schema)
            self.offer(
                f"tool {name} {json.dumps(sample_args(schema), ensure_ascii=False)}"
            )
            return
        try:
            args = json.loads(text)
        except json.JSONDecodeError as exc:
            self.say(self.paint("fail", f"not JSON: {exc.msg} at column {exc.colno}"))
            return
        problems = schema_problems(schema, args) if checked else []
        if problems:
            self.say(self.paint("warn", "against its schema: " + "; ".join(problems)))
            self.say("(tool! sends them anyway: the tool must answer is_error)")
            return
        fields = {"name": name, "args": args}
        case = {"name": name, "args": args, "expect": {}}
        self.projects[id(case)] = self.project()
        before = s.process.processes()
        rid, opened = s.start("tool_call", fields), len(s.opened)
        sent = time.monotonic()
        keys: list[str] = []
        try:
            with keyboard(self.tty):  # keys typed before its panel shows go to it
                while rid not in s.replies:
                    if len(s.opened) > opened and s.opened[-1] in s.panels:
                        opened = len(s.opened)
                        self.drive(s.opened[-1], keys)
                    s.pump(0.05)
        except KeyboardInterrupt:
            if rid not in s.replies:  # else it answered first
                waited = round((time.monotonic() - sent) * 1000)
                self.cancel(case, rid, keys, before, waited)
                return
        answer = s.replies.pop(rid)
        problems, warnings, is_error, joined = check_tool_result(answer)
        for problem in problems + warnings:
            self.say(self.paint("fail" if problem in problems else "warn", problem))
        self.say(
            self.paint(
                "fail" if is_error else "pass", f"is_error {str(is_error).lower()}"
            )
        )
        for block in answer.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "text":
                how = " (markdown)" if block.get("format") == "markdown" else ""
                self.say(self.paint("note", f"text{how}:"))
                self.show_text(str(block.get("text")))
            elif isinstance(block, dict) and block.get("type") == "image":
                size = len(str(block.get("data", ""))) * 3 // 4
                self.say(
                    self.paint(
                        "note", f"image: {block.get('mime_type')}, about {size} bytes"
                    )
                )
        if "structured_content" in answer:
            self.say(
                self.paint("note", "structured_content: ")
                + json.dumps(answer["structured_content"])
            )
        case["expect"] = {"is_error": is_error}
        case["expect"]["text" if len(joined) <= 80 else "contains"] = joined[:80]
        if "structured_content" in answer:
            case["expect"]["structured_content"] = answer["structured_content"]
        if keys:
            case["keys"] = keys
        self.cases["tools"].append(case)

    def cancel(self, case: dict, rid: str, keys: list, before, waited: int) -> None:
        """ctrl-c while tool call `rid` waits, `waited` ms after it was sent:
        zot's tool_cancel. The case saved replays it: the same keys, or,
        without keys, a cancel at the latest after half the time waited (the
        call was still running then), at most 2 s."""
        self.say(
            self.paint("warn", "cancelled: zot sent tool_cancel; no result may follow")
        )
        for problem in self.session.stop_call(rid, before):
            self.report.fail(f"tool {case['name']} cancelled", problem)
        project = self.projects[id(case)]
        case = {**case, "cancel": True}
        self.projects[id(case)] = project
        if keys:
            case["keys"] = keys
        else:
            case["after_ms"] = min(waited // 2, 2000)
        self.cases["tools"].append(case)

    def describe(self, name: str, schema: object) -> None:
        """A tool's arguments, one per line, from its schema."""
        props, required = schema_parts(schema)
        self.say(
            f"{name} takes{' (and asks the user)' if name in self.session.interactive else ''}:"
        )
        for prop, spec in props.items():
            spec = spec if isinstance(spec, dict) else {}
            need = "required" if prop in required else "optional"
            about = (
                f": {spec['description']}"
                if isinstance(spec.get("description"), str)
                else ""
            )
            self.say(f"  {prop} ({json_type(spec) or 'any'}, {need}){about}")
        if not props:
            self.say("  " + json.dumps(schema, ensure_ascii=False))
        self.say(
            self.paint(
                "note", "(a template is on the next line: edit it, enter sends it)"
            )
        )

    def drive(self, pid: str, keys: list[str] | None = None) -> list[str]:
        """Send the keys typed to the panel until it closes; the keys, by name
        (added to `keys`, which keeps them when ctrl-c stops the panel)."""
        s, keys = self.session, [] if keys is None else keys
        self.say(self.paint("note", "(keys go to the panel; esc closes it)"))
        with keyboard(self.tty):
            while pid in s.panels:
                typed = read_keys(self.tty)
                if not typed:
                    s.pump(0.05)
                for key in typed:  # a burst: every key, in order
                    if pid not in s.panels:
                        break
                    keys.append(key)
                    if key == "esc":
                        s.close_panel(pid)
                        self.say(
                            self.paint("note", f"(esc: zot closed panel {q(pid)})")
                        )
                        break
                    frame = {"type": "panel_key", "panel_id": pid, "key": key}
                    if key not in PANEL_KEYS:
                        frame.update(key="rune", text=key)
                    s.send(frame)
                    s.pump(0.2)
        return keys

    def bash(self, command: str) -> None:
        s = self.session
        if "tool_call" not in s.intercepts:
            self.say("it does not intercept tool calls: zot would run the command")
            return
        verdict = s.ask_guard(command)
        if verdict is None:
            return
        block, rule, why, reason = verdict
        if block:
            self.say(self.paint("fail", "refused") + f"  rule: {rule or '(not named)'}")
            self.say(f"  {why or reason}")
        else:
            self.say(self.paint("pass", "allowed") + "  zot would run it")
        expect = {"block": block}
        if block and rule:
            expect["reason_contains"] = f"({rule})"
        case = {
            "tool_name": "bash",
            "tool_args": {"command": command},
            "expect": expect,
        }
        self.projects[id(case)] = None  # the guard reads the command alone
        self.cases["intercepts"].append(case)

    def event(self, rest: str) -> None:
        s = self.session
        name, _, text = rest.partition(" ")
        if not name:
            self.say("which event? `events` lists them")
            return
        try:
            fields = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            self.say(self.paint("fail", f"not JSON: {exc.msg} at column {exc.colno}"))
            return
        if not isinstance(fields, dict):
            self.say(self.paint("fail", "the fields must be a JSON object"))
            return
        if name not in s.events:
            self.say(
                self.paint("warn", f"{name} is not subscribed: zot would not send it")
            )
        case: dict = {"event": name, "fields": fields}
        self.projects[id(case)] = self.project()
        sizes, notes = s.data_sizes(), len(s.noted)
        s.send({**event_frame(name, s.opts.project_dir, s.opts.old_host), **fields})
        s.pump(0.3)
        self.show_written(sizes)
        if len(s.noted) > notes:  # the note it showed is what a case can check
            case["expect"] = {"notify": s.noted[notes]}
        self.cases["events"].append(case)

    def prompt(self, text: str) -> None:
        s = self.session
        if "before_agent_start" not in s.intercepts:
            self.say("it does not intercept before_agent_start: zot keeps its prompt")
            return
        fields = {"event": "before_agent_start", "system_prompt": text or SYSTEM_PROMPT}
        fields.update(cwd=s.opts.project_dir, session_id="try", agent_run_id="try-1")
        case: dict = {"event": "before_agent_start"}
        if text:
            case["system_prompt"] = text
        self.projects[id(case)] = self.project()
        answer = s.request("event_intercept", fields)
        if answer is None:
            self.say(self.paint("fail", s.no_answer("event_intercept")))
            return
        if "system_prompt" in answer:
            self.say(self.paint("pass", "the system prompt becomes:"))
            self.show_text(str(answer["system_prompt"]))
            new = str(answer["system_prompt"])
            key = "system_prompt" if len(new) <= 2000 else "system_prompt_contains"
            case["expect"] = {key: new if len(new) <= 2000 else new[-200:]}
        else:
            self.say(self.paint("pass", "zot keeps the system prompt"))
            case["expect"] = {"keeps_prompt": True}
        self.cases["intercepts"].append(case)
        self.say(
            self.paint(
                "note", f"(the project folder it was given: {s.opts.project_dir})"
            )
        )

    def intercept(self, rest: str) -> None:
        """Any intercept, with the fields given: the whole answer."""
        s = self.session
        name, _, text = rest.partition(" ")
        if name not in s.intercepts:
            self.say(
                f"it intercepts {', '.join(s.intercepts) or 'nothing'}, not {q(name)}"
            )
            return
        try:
            fields = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            self.say(self.paint("fail", f"not JSON: {exc.msg} at column {exc.colno}"))
            return
        if not isinstance(fields, dict):
            self.say(self.paint("fail", "the fields must be a JSON object"))
            return
        if name == "before_agent_start":
            self.prompt(str(fields.get("system_prompt", "")))
            return
        project = self.project()
        answer = s.request("event_intercept", {"event": name, "step": 1, **fields})
        if answer is None:
            self.say(self.paint("fail", s.no_answer("event_intercept")))
            return
        shown = {k: v for k, v in answer.items() if k not in ("type", "id")}
        self.say(
            json.dumps(shown, ensure_ascii=False)
            if shown
            else "(nothing: allowed as it is)"
        )
        known = {"tool_name", "tool_args", "step", "text"}
        case = {"event": name, **{k: v for k, v in fields.items() if k in known}}
        expect = {"block": bool(answer.get("block"))}
        for key in ("modified_args", "replace_text"):
            if key in answer:
                expect[key] = answer[key]
        case["expect"] = expect
        self.projects[id(case)] = project
        self.cases["intercepts"].append(case)

    def show_written(self, before: dict[str, int]) -> None:
        """What the extension appended to files in its data folder (an audit log)."""
        for name, size in self.session.data_sizes().items():
            if size > before.get(name, 0):
                with open(os.path.join(self.session.opts.data_dir, name), "rb") as fh:
                    fh.seek(before.get(name, 0))
                    added = fh.read().decode("utf-8", "replace")
                for text_line in added.splitlines():
                    self.say(self.paint("note", f"{name} + ") + text_line)

    def project_fields(self, case: dict, ext_dir: str) -> dict:
        """The fields that lay out the project case `case` was tried in (its
        files, a git repository's commit and changes); a warning for what
        cannot be kept."""
        project = self.projects.get(id(case))
        if isinstance(project, str):
            self.say(
                self.paint("warn", f"the project is not saved with a case: {project}")
            )
            return {}
        if project is None:
            return {}
        if project.skipped:
            left = ", ".join(project.skipped[:5])
            self.say(self.paint("warn", f"not saved (not text): {left}"))
        return project.fields(ext_dir)

    def save(self, path: str) -> None:
        """Add the cases tried so far to smoke.json, one per line."""
        new = sum(len(cases) for cases in self.cases.values())
        if not new:
            self.say("nothing tried yet: nothing to save")
            return
        data: dict = {"about": "Expected results that ./smoke-test checks."}
        if os.path.exists(path):
            try:
                with open(path, encoding="utf-8") as fh:
                    data = json.load(fh)
            except (OSError, ValueError) as exc:
                self.say(
                    self.paint("fail", f"cannot read {path}: {exc}; nothing saved")
                )
                return
        if not isinstance(data, dict):
            self.say(
                self.paint("fail", f"{path} does not hold a JSON object; nothing saved")
            )
            return
        ext_dir = self.session.opts.ext_dir
        for section, cases in self.cases.items():
            known = data.setdefault(section, [])
            for case in cases:
                with_project = {**case, **self.project_fields(case, ext_dir)}
                if with_project not in known:
                    known.append(with_project)
        if self.typed:
            answers = data.get("zot_tools")
            data["zot_tools"] = {**(answers if isinstance(answers, dict) else {})}
            data["zot_tools"].update(self.typed)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(smoke_json_text(data))
        self.say(
            f"saved {new} case{'s' if new != 1 else ''} to {path}: ./smoke-test checks them now"
        )
        self.cases = {section: [] for section in CASE_KEY}
        self.projects.clear()


def smoke_json_text(data: dict) -> str:
    """smoke.json as the template writes it: one case per line."""
    parts = []
    for key, value in data.items():
        if isinstance(value, list) and value:
            cases = ",\n".join(
                f"    {json.dumps(case, ensure_ascii=False)}" for case in value
            )
            parts.append(f"  {json.dumps(key)}: [\n{cases}\n  ]")
        else:
            parts.append(
                f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}"
            )
    return "{\n" + ",\n".join(parts) + "\n}\n"
