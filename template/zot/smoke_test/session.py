"""The scripted session: the phases a smoke test takes the extension through."""

from __future__ import annotations

import functools
import math
import os
import posixpath
import re
import time

from .cases import (
    CASES_FILE,
    POLICY_ADDS,
    RULES_FILE,
    as_list,
    command_expectations,
    file_expectations,
    guard_files,
    included_paths,
    intercept_expectations,
    load_guard_cases,
    load_smoke_json,
    policy_form_problems,
    prompt_expectations,
    refusal_parts,
    rule_files,
    rules_problems,
    run_cases,
    submodule_of,
    team_policy_url,
    tool_expectations,
    tools_with_cases,
    zot_tools_of,
)
from .process import WINDOWS
from .project import FixtureError, has_fixture, lay_out
from .protocol import (
    HELLO_ACK,
    HELLO_TIMEOUT,
    MAX_BAD_LINES,
    OLD_EVENTS,
    PANEL_KEYS,
    READY_GRACE,
    READY_IDLE,
    SAMPLE_ARGS,
    SHUTDOWN_GRACE,
    SYSTEM_PROMPT,
    SessionOver,
    check_command_response,
    check_intercept_response,
    check_tool_result,
    describe_status,
    event_frame,
    hello_ack,
    invalid_args,
    parse_frame,
    q,
    sample_args,
    short,
    too_old,
)
from .wire import Wire

# A call's result on zot 0.1.62 that says zot is too old to run its tools.
OLD_HOST_FALLBACK = (
    "answered that zot is too old (zot 0.1.62 runs no tools for extensions)"
)
# After tool_cancel: how long a result still counts as sent (zot drops it),
# and how long the call's processes get to stop (the runtimes send SIGTERM,
# then SIGKILL 0.5 s later).
LATE_RESULT = 1.0
STOP_GRACE = 2.0
POLL = 0.03  # how often /proc is looked at meanwhile
# What the guard reads of guard-policy.json (a file it includes: not include).
POLICY_KEYS = ("about", "off", "rules", "lists", "option values", *POLICY_ADDS)
POLICY_KEYS += ("include",)


# The rule of a guard that cannot read its rules: it refuses every command.
UNUSABLE_RULES = "unreadable-rules"


class Session(Wire):
    """One zot session with the extension, checked step by step."""

    # The phases, in order; each runs the method phase_<name> ("." becomes "_").
    PHASES = "hello ready commands tools events guard guard-rules.json guard-cases.json"
    PHASES += " robustness smoke.json shutdown"

    def run(self) -> None:
        phases = self.PHASES.split()
        if self.opts.guard:
            phases = ["hello", "ready", "explain", "shutdown"]
        for index, name in enumerate(phases):
            try:
                getattr(self, "phase_" + re.sub(r"[.-]", "_", name))()
            except SessionOver as exc:
                self.report.fail(name, str(exc))
                for later in phases[index + 1 :]:
                    self.report.skip(later, "not run: the session ended early")
                return

    # the phases ----------------------------------------------------------------

    def phase_hello(self) -> None:
        """The first stdout line must be hello; answer it with hello_ack."""
        limit = self.opts.hello_timeout or min(
            HELLO_TIMEOUT, self.opts.timeout or math.inf
        )
        line = self.next_line(limit)
        if line is None:
            why = "zot waits forever: it would hang at start-up"
            raise SessionOver(f"no hello within {limit:g} s ({why})")
        hello, _ = parse_frame(line)
        if hello is None or hello["type"] != "hello":
            got = q(line[:100], 80)
            raise SessionOver(f"the first line must be hello, not {got}; zot kills it")
        name, version = hello.get("name"), hello.get("version", "")
        caps = hello.get("capabilities", [])
        if not isinstance(name, str) or not name or not isinstance(version, str):
            raise SessionOver(f"hello needs a name and a version: {q(hello)}")
        if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
            raise SessionOver(f"hello capabilities must be strings: {q(caps)}")
        shown = f"{name} {version or '(no version)'}"
        self.report.ok("hello", f"{shown}, capabilities {short(caps)}")
        self.hello_caps = caps
        for key, value in (("name", name), ("version", version)):
            theirs = self.manifest.get(key, "")
            if value != theirs:
                differs = f"{key} {q(value)} differs from extension.json's {q(theirs)}"
                self.report.warn("hello", differs)
        if self.ms(self.line_at) > 1000:
            took = f"took {self.ms(self.line_at)} ms"
            self.report.warn("hello", f"{took}; zot's start-up waits for it")
        opts = self.opts
        self.send(
            hello_ack(opts.project_dir, opts.ext_dir, opts.data_dir, opts.old_host)
        )
        self.hello_ack_at = time.monotonic()

    def phase_ready(self) -> None:
        """Take registrations until ready, the way zot's watchdog sees them."""
        last = self.hello_ack_at
        deadline = last + READY_GRACE
        while self.ready_at is None:
            wait = min(last + READY_IDLE, deadline) - time.monotonic()
            if wait <= 0:
                break
            line = self.next_line(wait)
            if line is not None:
                last = self.line_at  # zot's watchdog counts every line, even junk
                frame = self.as_frame(line)
                if frame is not None:
                    self.dispatch(frame)
        self.settled = True
        if self.ready_at is not None:
            self.report.ready_ms = self.ms(self.ready_at)
            after = round((self.ready_at - self.hello_ack_at) * 1000)
            self.report.ready_after_ack_ms = after
            start = f"{self.report.ready_ms} ms after start"
            detail = f"{start}, {after} ms after hello_ack"
            self.report.ok("ready", f"{detail} (zot's watchdog: 250 ms of silence)")
        elif time.monotonic() >= deadline:
            self.report.fail("ready", "none within 3 s of hello_ack (zot gives up)")
        else:
            why = "zot's watchdog would mark it ready after 250 ms of silence"
            lost = "tools registered later are lost"
            self.report.fail("ready", f"no ready frame ({why}; {lost})")
        if not (self.commands or self.tools or self.events or self.intercepts):
            self.report.warn("registrations", "none: no commands, tools or events")

    def phase_commands(self) -> None:
        if not self.commands:
            self.report.skip("commands", "none registered")
        for name in list(self.commands):
            label = f"command /{name} {q(SAMPLE_ARGS)}"
            panel = self.check_command(label, name, SAMPLE_ARGS)
            if panel:
                self.exercise_panel(panel)
            elif self.command_error:
                where = "--project's folder"
                where = where if self.opts.user_project else "an empty project folder"
                self.report.skip(
                    f"panel of /{name} (a key, a resize, esc)",
                    f"not run: /{name} answered an error in {where}"
                    f" ({q(self.command_error, 80)}), so no panel opened; a smoke.json"
                    ' case with the project it needs ("files", "git", "project")'
                    " checks it",
                )

    def check_command(self, label, name, args, expect=None, keys=()) -> str:
        """Invoke a command and judge its answer; the panel it opened, if any."""
        mark = self.effects_mark()
        answer = self.request("command_invoked", {"name": name, "args": args})
        self.command_error = (answer or {}).get("error") or ""
        if answer is None:
            self.report.fail(label, self.no_answer("command_invoked"))
            return ""
        problems, summary = check_command_response(answer)
        shown = f"{answer.get('error', '')} {answer.get('display', '')}"
        if self.opts.old_host and expect is not None and too_old(shown):
            self.report.ok(label, OLD_HOST_FALLBACK)
            return ""
        if self.opts.old_host and answer.get("action") == "tool_prompt":
            why = 'zot 0.1.62 shows "unknown action tool_prompt" and runs nothing'
            problems.append(f"{why}: answer a prompt there")
        panel = ""
        if (
            not problems
            and answer.get("action") == "open_panel"
            and not answer.get("error")
        ):
            self.open(answer["open_panel"])
            panel = answer["open_panel"]["id"]
            self.press(panel, keys)
        if not problems and expect is not None:
            problems, summary = command_expectations(answer, expect), ""
            problems += self.panel_expectations(panel, expect, mark)
            problems += self.effect_expectations(mark, expect)
        self.report.verdict(label, problems, summary)
        return panel

    # panels, the way zot's terminal drives them ---------------------------------

    def press(self, pid: str, keys) -> None:
        """Send keys to a panel; wait for each to be handled (a frame, or 0.5 s).

        esc is zot's own: it closes the panel and sends panel_close. A key
        that is not a named key is a rune (a typed character).
        """
        for key in keys:
            if pid not in self.panels:
                self.report.warn(
                    f"key {q(key)} for panel {q(pid)}", "the panel is closed"
                )
                return
            if key == "esc":
                self.close_panel(pid)
                continue
            frame = {"type": "panel_key", "panel_id": pid, "key": key}
            if key not in PANEL_KEYS:
                frame.update(key="rune", text=key)
            seen = self.frames
            self.send(frame)
            self.wait_for(0.5, lambda seen=seen: self.frames > seen)
        if keys:
            self.pump(0.2)  # what follows the last key: a close, a prompt, notes

    def close_panel(self, pid: str) -> None:
        """zot closes a panel (esc, ctrl-c) and tells the extension."""
        self.panels.pop(pid, None)
        self.send({"type": "panel_close", "panel_id": pid})

    def exercise_panel(self, pid: str) -> None:
        """A key, a key for a panel that does not exist, a resize, then esc."""
        self.press(pid, ["down"])
        self.send(
            {"type": "panel_key", "panel_id": "smoke-no-such-panel", "key": "enter"}
        )
        self.send({"type": "panel_resize", "panel_id": pid, "width": 80, "height": 24})
        if pid in self.panels:
            self.close_panel(pid)
        alive, detail = self.still_answering()
        label = f"panel {q(pid)}: a key, a key for no panel, a resize and esc"
        self.report.verdict(label, [] if alive else [detail], detail)

    def panel_expectations(self, pid: str, expect: dict, mark: tuple) -> list[str]:
        """Check what the panel showed and what its keys did (smoke.json)."""
        panel, problems = self.shown.get(pid, {}), []
        wants_panel = {"title", "line", "closed"} & set(expect)
        if not pid and wants_panel:
            return ["opened no panel"]
        if "title" in expect and panel.get("title") != expect["title"]:
            problems.append(f"the panel's title is {q(panel.get('title'))}")
        if "line" in expect and expect["line"] not in panel.get("lines", []):
            problems.append(f"the panel shows {q(panel.get('lines'))}")
        if "closed" in expect and (pid not in self.panels) != expect["closed"]:
            problems.append(
                "the panel is " + ("open" if pid in self.panels else "closed")
            )
        submitted, noted = self.submitted[mark[1] :], self.noted[mark[0] :]
        if "submit" in expect and self.opts.old_host:
            # zot 0.1.62 takes no submit: the text must be shown to paste
            if not any(expect["submit"] in note for note in noted):
                problems.append(
                    f"zot 0.1.62 cannot submit {q(expect['submit'])}, and no note"
                    f" shows it to paste (notes {q(noted)})"
                )
        elif "submit" in expect and expect["submit"] not in submitted:
            problems.append(
                f"submitted {q(submitted[-1:]) if submitted else 'nothing'}"
            )
        if "calls" in expect and self.tool_calls != expect["calls"]:
            problems.append(f"asked zot to run {q(self.tool_calls)}")
        return problems

    # what any case may leave behind -------------------------------------------------

    def data_sizes(self) -> dict[str, int]:
        """The size of each file in zot's data folder."""
        folder = self.opts.data_dir
        return {
            name: os.path.getsize(os.path.join(folder, name))
            for name in os.listdir(folder)
            if os.path.isfile(os.path.join(folder, name))
        }

    def effects_mark(self) -> tuple[int, int, int, dict[str, int]]:
        """Where the notes, the submitted prompts, stderr and the files of
        zot's data folder stand now."""
        sizes = self.data_sizes()
        return len(self.noted), len(self.submitted), self.process.stderr_size(), sizes

    def effect_expectations(self, mark: tuple, expect: dict) -> list[str]:
        """expect's notify, log, files and data_files, for what happened since
        `mark` (see effects_mark)."""
        problems = []
        noted = self.noted[mark[0] :]
        if "notify" in expect and not any(expect["notify"] in n for n in noted):
            problems.append(f"notes {q(noted)}")
        if "log" in expect:
            lines = self.process.stderr_since(mark[2]).splitlines()
            if not any(expect["log"] in line for line in lines):
                problems.append(f"its log (stderr) has {q(lines[-5:])}")
        problems += file_expectations(
            self.opts.project_dir, expect.get("files", {}), "the project"
        )
        problems += file_expectations(
            self.opts.data_dir,
            expect.get("data_files", {}),
            "zot's data folder",
            appended=mark[3],
        )
        return problems

    def prepare(self, label: str, case: dict) -> bool:
        """Lay out the project a smoke.json case runs in. False, with the case
        reported, when it cannot run."""
        if self.opts.user_project:
            if not has_fixture(case):
                return True
            self.report.skip(
                label,
                "it brings its own project, and --project's folder is used as it is"
                " (run without --project to check it)",
            )
            return False
        try:
            lay_out(self.opts.project_dir, case, self.opts.ext_dir)
        except FixtureError as exc:
            self.report.fail(label, f"its project: {exc}")
            return False
        return True

    def check_event(self, label: str, event: str, fields: dict, expect: dict) -> None:
        """Send an event; wait for what it must leave behind (events are not
        answered: up to 5 s, or --timeout)."""
        mark = self.effects_mark()
        self.send(
            {**event_frame(event, self.opts.project_dir, self.opts.old_host), **fields}
        )
        limit = min(5.0, self.opts.timeout or 5.0)
        self.wait_for(limit, lambda: not self.effect_expectations(mark, expect))
        problems = self.effect_expectations(mark, expect)
        if problems and self.process.proc.poll() is not None:
            raise SessionOver(self.gone())
        self.report.verdict(label, problems)

    def phase_tools(self) -> None:
        if not self.tools:
            self.report.skip("tools", "none registered")
        path = self.opts.expect or os.path.join(self.opts.ext_dir, "smoke.json")
        cased = tools_with_cases(path)
        self.zot_tools = zot_tools_of(path)
        for name, schema in list(self.tools.items()):
            args = sample_args(schema)
            if name in self.interactive:
                self.check_interactive_tool(name, args)
            else:
                label = f"tool {name} {short(args)}"
                self.check_tool(
                    label, name, args, want_error=False, cased=name in cased
                )
            invalid = invalid_args(schema)
            if invalid is None:
                label = f"tool {name} with invalid arguments"
                self.report.skip(label, "its schema allows anything")
                continue
            args, why = invalid
            label = f"tool {name} {short(args)} ({why})"
            self.check_tool(label, name, args, want_error=True)

    def check_interactive_tool(self, name: str, args: dict) -> None:
        """A tool that may ask the user: declined with esc, then cancelled."""
        if self.opts.old_host:
            label = f"tool {name} {short(args)} on zot 0.1.62 (it cannot ask the user)"
            self.check_tool(label, name, args)
            return
        label = f"tool {name} {short(args)}, its panel closed with esc"
        self.check_tool(label, name, args, keys=["esc"])
        if "tool_cancel" not in self.hello_caps:
            why = "hello does not list tool_cancel, so zot never cancels a call"
            self.report.skip(f"tool {name} cancelled", why)
            return
        self.check_tool(
            f"tool {name} {short(args)}, cancelled by zot", name, args, cancel=True
        )

    def check_tool(
        self,
        label,
        name,
        args,
        want_error=None,
        expect=None,
        keys=(),
        cancel=False,
        cased=False,
        after_ms=None,
    ):
        """Call a tool and judge its result; keys go to the panel it opens.

        A tool with cases in smoke.json (`cased`) may answer an error for
        arguments the smoke test made up: its cases are what count.

        With `cancel`, zot cancels the call once it has started: after the
        keys (which wait for its panel), or, with `after_ms`, once it opens a
        panel or a program of its own runs, at the latest after `after_ms`;
        without either, once it opens a panel."""
        fields = {"name": name, "args": args}
        before = self.process.processes() if cancel else None
        mark = self.effects_mark()
        rid, opened = self.start("tool_call", fields), len(self.opened)
        sent, started = time.monotonic(), ""
        if keys or (cancel and after_ms is None):
            # wait for the panel the tool opens (or its answer)
            self.wait_for(
                self.timeout("tool_call"),
                lambda: opened < len(self.opened) or rid in self.replies,
            )
        elif cancel:
            started = self.wait_started(rid, opened, before, after_ms)
        panel = self.opened[-1] if opened < len(self.opened) else ""
        if panel:
            self.press(panel, keys)
        if cancel:
            if not started:
                started = "once its panel opened" if panel else "with no panel open"
                started = "after its keys" if keys else started
            took = round((time.monotonic() - sent) * 1000)
            self.cancel(label, rid, panel, before, started, took)
            return
        answer = self.answer(rid, "tool_call", fields)
        if answer is None:
            self.report.fail(label, self.no_answer("tool_call"))
            return
        problems, warnings, is_error, text = check_tool_result(answer)
        for warning in warnings:
            self.report.warn(label, warning)
        if self.opts.old_host and is_error and want_error is not True and too_old(text):
            self.report.ok(label, OLD_HOST_FALLBACK)
            return
        if not problems and want_error is not None and is_error != want_error:
            if want_error:
                problems.append(f"accepted invalid arguments: {q(text)}")
            elif cased:
                why = f"{q(text)}: smoke.json's cases for {name} are what count"
                self.report.warn(label, f"is_error true for these arguments, {why}")
                return
            else:
                problems.append(
                    f"is_error true for valid arguments: {q(text)}. Give its schema"
                    ' "examples" it succeeds with, or add a smoke.json case for it'
                    ' (with "files" for what it reads): README.md shows how'
                )
        if not problems and expect is not None:
            problems = tool_expectations(answer, is_error, text, expect)
            problems += self.panel_expectations(panel, expect, mark)
            problems += self.effect_expectations(mark, expect)
        if not problems and panel in self.panels:
            problems.append(f"answered but left its panel {q(panel)} open")
        summary = f"is_error {str(is_error).lower()}, text {q(text)}"
        self.report.verdict(label, problems, "" if expect is not None else summary)

    def wait_started(self, rid: str, opened: int, before, after_ms: int) -> str:
        """Handle frames until tool call `rid` has started: it opened a panel, a
        program of its own runs, or `after_ms` passed. How it started ("" if
        it answered first)."""
        deadline = time.monotonic() + after_ms / 1000
        ext = self.process.proc.pid
        itself = next(
            (c for (pid, _), (c, _) in (before or {}).items() if pid == ext), ""
        )
        while rid not in self.replies:
            if opened < len(self.opened):
                return "once its panel opened"
            # a fork of the extension (a shell's subshell) runs no program yet
            programs = sorted(
                (key, command)
                for key, command in self.call_processes(before).items()
                if command != itself
            )
            if programs:
                return f"once it ran {short(programs[0][1], 60)}"
            left = deadline - time.monotonic()
            if left <= 0:
                return f"after {after_ms} ms"
            self.wait_for(
                min(POLL, left),
                lambda: opened < len(self.opened) or rid in self.replies,
            )
        return ""

    def call_processes(self, before) -> dict[tuple[int, str], str]:
        """The command lines of the processes a tool call started: of the
        extension's session, not there when the call was sent (`before`), not
        the extension itself, and carrying the call's mark (a runtime marks
        what a call starts through its helper with ZOT_EXT_RUN=RUN/N, and what
        the extension starts otherwise with ZOT_EXT_RUN=RUN) or none at all.
        {} without /proc."""
        now = self.process.processes()
        if now is None or before is None:
            return {}
        return {
            key: command
            for key, (command, run) in now.items()
            if key not in before
            and key[0] != self.process.proc.pid
            and (run is None or "/" in run)
        }

    def cancel(self, label, rid, panel, before, started, took) -> None:
        """zot gives up on a call, `took` ms after it sent it: tool_cancel."""
        if rid in self.replies:
            self.replies.pop(rid)
            why = f"answered before it could be cancelled (within {took} ms)"
            self.report.fail(label, why)
            return
        problems = self.stop_call(rid, before)
        if panel in self.panels:
            problems.append(f"its panel {q(panel)} is still open")
        detail = f"cancelled {started}, {took} ms after the call: no result afterwards"
        detail += ", its panel closed" if panel else ""
        if before is None:
            detail += " (no /proc: what it started is not checked)"
        else:
            detail += ", nothing it started left running"
        self.report.verdict(label, problems, detail)

    def stop_call(self, rid: str, before) -> list[str]:
        """Send tool_cancel for call `rid`. What went wrong: a result came
        afterwards, or processes it started (`before`: those there when it
        was sent) are left running; those are killed."""
        self.cancelled.add(rid)
        self.cancelling = rid  # a late result is this check's, not on_answer's
        try:
            self.send({"type": "tool_cancel", "id": rid})
            sent = time.monotonic()
            self.pump(LATE_RESULT)
            left = self.call_processes(before)
            while left and time.monotonic() - sent < STOP_GRACE:
                self.pump(POLL)
                left = self.call_processes(before)
        finally:
            self.cancelling = ""
        problems = []
        if rid in self.dropped:
            problems.append("sent a result after tool_cancel (zot drops it)")
        if left:
            shown = ", ".join(
                f"{pid} {short(left[pid, start], 80)}" for pid, start in sorted(left)
            )
            problems.append(f"left running after tool_cancel: {shown}")
            for key in left:
                self.process.kill(key)
        return problems

    def phase_events(self) -> None:
        if not self.events:
            self.report.skip("events", "none subscribed")
            return
        events = self.events
        if self.opts.old_host:
            events = [event for event in self.events if event in OLD_EVENTS]
            never = [event for event in self.events if event not in OLD_EVENTS]
            if never:
                self.report.skip(
                    f"events {', '.join(never)}", "zot 0.1.62 never sends them"
                )
            if not events:
                return
        for event in events:
            self.send(event_frame(event, self.opts.project_dir, self.opts.old_host))
        alive, detail = self.still_answering()
        detail = f"delivered; {detail}"
        problems = [] if alive else [detail]
        self.report.verdict(f"events {', '.join(events)}", problems, detail)

    def still_answering(self) -> tuple[bool, str]:
        """Repeat a request answered before: does the extension still answer?"""
        # not a tool that waits for the user: it would wait for nobody
        quick = [
            (kind, fields)
            for kind, fields in self.answered_requests
            if kind != "tool_call" or fields.get("name") not in self.interactive
        ]
        if quick:
            kind, fields = quick[0]
            if self.request(kind, fields) is None:
                return False, f"a repeated {kind} got no answer"
            return True, f"a repeated {kind} is still answered"
        self.pump(0.1)  # nothing to ask: give a crash a moment to show
        if self.process.proc.poll() is not None:
            raise SessionOver(self.gone())
        return True, "still running (there is nothing to ask it)"

    def phase_guard(self) -> None:
        if "tool_call" not in self.intercepts:
            self.report.skip("guard", "no tool_call intercept subscribed")
            commands = []
        else:
            commands = [("rm -rf /", True), ("ls -la", False)]
        for command, block in commands:
            fields = {"event": "tool_call", "tool_id": "toolu_smoke", "step": 1}
            fields.update(tool_name="bash", tool_args={"command": command})
            label = f"intercept bash {q(command)}"
            self.check_intercept(label, fields, want_block=block)
        for event in self.intercepts:
            if event == "before_agent_start":
                self.check_prompt()
            elif event != "tool_call":
                fields = {
                    "event": event,
                    "step": 1,
                    "text": "Hello from the smoke test.",
                }
                self.check_intercept(f"intercept {event}", fields)

    def check_prompt(
        self, label="", cwd="", system_prompt=SYSTEM_PROMPT, expect=None
    ) -> None:
        """before_agent_start: the extension may change the system prompt."""
        label = label or "intercept before_agent_start (the system prompt)"
        if self.opts.old_host:
            self.report.skip(label, "zot 0.1.62 never sends it")
            return
        fields = {"event": "before_agent_start", "system_prompt": system_prompt}
        fields.update(session_id="smoke", agent_run_id="smoke-run")
        fields.update(cwd=cwd or self.opts.project_dir, provider=HELLO_ACK["provider"])
        fields["model"] = HELLO_ACK["model"]
        mark = self.effects_mark()
        answer = self.request("event_intercept", fields)
        if answer is None:
            self.report.fail(
                label, f"{self.no_answer('event_intercept')}; zot keeps the prompt"
            )
            return
        problems, block, _ = check_intercept_response(answer)
        if not problems and block:
            self.report.warn(label, "block is not honoured here (zot starts the run)")
        new = answer.get("system_prompt")
        if not problems and expect is not None:
            problems = prompt_expectations(new, expect)
            problems += self.effect_expectations(mark, expect)
        summary = "kept" if new is None else f"replaced: {q(new, 80)}"
        self.report.verdict(label, problems, "" if expect is not None else summary)

    def phase_guard_rules_json(self) -> None:
        """guard-rules.json, the files guard-policy.json includes, and
        guard-policy.json: rules a guard can apply."""
        folder = self.opts.ext_dir
        names = (RULES_FILE, "guard-policy.json")
        if not any(os.path.exists(os.path.join(folder, name)) for name in names):
            return  # no guard of the template's
        files = self.guard_files
        included = [name for name, _, _ in files[1:-1]]
        include_problems = included_paths(files[-1][1] or {})[1]
        lists = {
            key
            for _, data, _ in files
            if data is not None and isinstance(data.get("lists"), dict)
            for key in data["lists"]
        }
        earlier: dict[str, str] = {}
        for name, data, problem in files:
            if not os.path.exists(os.path.join(folder, name)):
                # the guard refuses every bash command
                fix = " (restore it, or take it out of guard-policy.json's include)"
                module = submodule_of(folder, name)
                url = team_policy_url(folder)
                if module:
                    fix = f" (it comes from a git submodule: git submodule update --init {module})"
                elif url and name.startswith("team-policy/"):
                    fix = f" (your team's policy: git submodule add {url} team-policy)"
                fix = fix if name in included else ""
                self.report.fail(
                    name, f"missing: the guard refuses every bash command{fix}"
                )
                continue
            problems = rules_problems(data, problem, lists, earlier)
            data = data or {}
            if name in included and "include" in data:
                problems.append(
                    "has an include of its own: an included file cannot include"
                    " (list the files in guard-policy.json's include)"
                )
            if name == names[1]:
                problems += include_problems
            if name != RULES_FILE:  # a policy's keys: a misspelt one leaves it out
                known = POLICY_KEYS if name == names[1] else POLICY_KEYS[:-1]
                problems += [
                    f"unknown key {q(key)}: the guard does not read it"
                    f" (a policy has {', '.join(known)})"
                    for key in data
                    if key not in known
                ]
                problems += policy_form_problems(data, files[0][1] or {})
            self.report.verdict(name, problems, "rules well formed")
            rules = data.get("rules")
            for rule in rules if isinstance(rules, list) else []:
                if isinstance(rule, dict) and isinstance(rule.get("id"), str):
                    earlier.setdefault(rule["id"], name)

    def phase_guard_cases_json(self) -> None:
        """guard-cases.json: commands the guard must refuse, and must allow;
        the template's (but those of rules the policy switches off), then
        those a team's policy brings in a guard-cases.json beside it."""
        if not os.path.exists(os.path.join(self.opts.ext_dir, CASES_FILE)):
            return  # no guard, or none of these cases
        if self.opts.no_expect:
            self.report.skip("guard-cases.json", "--no-expect")
            return
        if WINDOWS:
            why = "the guard judges sh commands in a folder like /home/user/project"
            why += "; zot for Windows runs commands with cmd.exe, in C:\\..."
            self.report.skip("guard-cases.json", f"{why} (run it on Linux or macOS)")
            return
        if "tool_call" not in self.intercepts:
            self.report.fail(
                "guard-cases.json", "the extension does not intercept tool_call"
            )
            return
        template = self.guard_files[0][1] or {}
        ids = {
            r.get("id") for r in as_list(template.get("rules")) if isinstance(r, dict)
        }
        judged = self.judge_cases(
            CASES_FILE, "guard-cases.json", ids - set(self.rule_files)
        )
        for name, _, _ in self.guard_files[1:-1] if judged else []:
            path = posixpath.join(posixpath.dirname(name), "guard-cases.json")
            if os.path.exists(os.path.join(self.opts.ext_dir, path)):
                self.judge_cases(path, path, set())

    def judge_cases(self, path: str, label: str, off: set) -> bool:
        """The cases of one table, each as zot's tool_call intercept; cases
        refused by a rule in `off` are left out, and said so. False when
        the guard cannot use its rules (then nothing can be judged)."""
        cases = load_guard_cases(
            os.path.join(self.opts.ext_dir, path), self.report, label
        )
        switched = [rule for _, rule in cases.get("refused", []) if rule in off]
        if switched:
            cases["refused"] = [c for c in cases["refused"] if c[1] not in off]
        for key, want_block in (("refused", True), ("allowed", False)):
            wrong = []
            for command, rule in cases.get(key, []):
                if cases["cwd"]:  # the table's project folder is this session's
                    command = command.replace(cases["cwd"], self.opts.project_dir)
                fields = {"event": "tool_call", "tool_id": "toolu_smoke", "step": 1}
                fields.update(tool_name="bash", tool_args={"command": command})
                answer = self.request("event_intercept", fields)
                if answer is None:
                    wrong.append(f"{q(command)}: {self.no_answer('event_intercept')}")
                    continue
                problems, block, reason = check_intercept_response(answer)
                got_rule = refusal_parts(reason)[0] if block else ""
                if got_rule == UNUSABLE_RULES:  # every command: one line says why
                    self.report.fail(label, f"not judged: {reason}")
                    return False
                if problems or block != want_block:
                    got = "; ".join(problems) or ("refused" if block else "allowed")
                    wrong.append(f"{q(command)}: {got}")
                elif rule and got_rule != rule:
                    wrong.append(
                        f"{q(command)}: refused by {got_rule or 'no rule'}, not {rule}"
                    )
            for problem in wrong:
                verb = "refuse" if want_block else "allow"
                self.report.fail(f"{label}: must {verb}", problem)
            if cases.get(key) and not wrong:
                self.report.ok(f"{label}: {len(cases[key])} commands {key}")
        if switched:
            counts = ", ".join(
                f"{r} ({switched.count(r)})" for r in sorted(set(switched))
            )
            self.report.skip(
                label, f"{len(switched)} commands of rules switched off: {counts}"
            )
        return True

    def phase_explain(self) -> None:
        """--guard COMMAND: the guard's verdict on each command, and why."""
        if "tool_call" not in self.intercepts:
            self.report.fail("guard", "the extension does not intercept tool_call")
            return
        for command in self.opts.guard:
            answered = self.ask_guard(command)
            if answered is None:
                continue
            block, rule, why, reason = answered
            verdict = {
                "command": command,
                "refused": block,
                "rule": rule,
                "reason": reason,
            }
            if block and rule in self.rule_files:
                verdict["file"] = self.rule_files[rule]
            self.report.verdicts.append(verdict)
            if self.report.as_json:
                continue
            if not block:
                print(f"{self.report.paint('pass', 'allowed')}  {command}")
                continue
            source = self.rule_files.get(rule)
            print(f"{self.report.paint('fail', 'refused')}  {command}")
            print(f"         rule: {rule or '(not named)'}")
            if source:
                print(f"         from: {source}")
            print(f"         {why}")

    @functools.cached_property
    def guard_files(self) -> list[tuple[str, dict | None, str]]:
        """The guard's rules files, read once (see cases.guard_files)."""
        return guard_files(self.opts.ext_dir)

    @functools.cached_property
    def rule_files(self) -> dict[str, str]:
        """The file each of the guard's rules comes from, by rule id."""
        return rule_files(self.guard_files)

    def ask_guard(self, command: str) -> tuple[bool, str, str, str] | None:
        """The guard's verdict on a bash command: refused, rule, why, the reason."""
        fields = {"event": "tool_call", "tool_id": "toolu_smoke", "step": 1}
        fields.update(tool_name="bash", tool_args={"command": command})
        answer = self.request("event_intercept", fields)
        if answer is None:
            self.report.fail(f"guard {q(command)}", self.no_answer("event_intercept"))
            return None
        problems, block, reason = check_intercept_response(answer)
        if problems:
            self.report.fail(f"guard {q(command)}", "; ".join(problems))
            return None
        rule, why = refusal_parts(reason) if block else ("", "")
        return block, rule, why, reason

    def check_intercept(self, label, fields, want_block=None, expect=None) -> None:
        mark = self.effects_mark()
        answer = self.request("event_intercept", fields)
        if answer is None:
            no_answer = self.no_answer("event_intercept")
            self.report.fail(label, f"{no_answer}; zot would fail open and allow it")
            return
        problems, block, reason = check_intercept_response(answer)
        if not problems and want_block and not block:
            problems.append("not blocked")
        if not problems and want_block and not reason.strip():
            problems.append("blocked without a reason (the model sees it as the error)")
        if not problems and want_block is False and block:
            problems.append(f"blocked a harmless call: {q(reason)}")
        if not problems and expect is not None:
            problems = intercept_expectations(answer, block, reason, expect)
            problems += self.effect_expectations(mark, expect)
        summary = f"blocked: {q(reason, 80)}" if block else "allowed"
        for key in ("modified_args", "replace_text"):
            if key in answer and not block:
                summary += f", {key} {short(answer[key])}"
        self.report.verdict(label, problems, "" if expect is not None else summary)

    def phase_robustness(self) -> None:
        self.write(b"this is not json\n")
        self.send({"type": "smoke_test_unknown_frame"})
        alive, detail = self.still_answering()
        label = "survives a malformed line and an unknown frame type"
        self.report.verdict(label, [] if alive else [detail], detail)

    def phase_smoke_json(self) -> None:
        """The user's own cases, each with its own line."""
        if self.opts.no_expect:
            self.report.skip("smoke.json", "--no-expect")
            return
        path = self.opts.expect or os.path.join(self.opts.ext_dir, "smoke.json")
        if not os.path.exists(path):
            self.report.skip("smoke.json", "none beside extension.json")
            return
        cases = load_smoke_json(path, self.opts.ext_dir, self.report)
        if cases is not None:
            run_cases(self, cases)

    def phase_shutdown(self) -> None:
        """As zot does: write shutdown, close stdin at once, wait 2 s for exit."""
        began = time.monotonic()
        try:
            self.send({"type": "shutdown"})
        finally:
            try:
                self.process.proc.stdin.close()
            except OSError:
                pass
        code = self.process.wait(SHUTDOWN_GRACE)
        took = round((time.monotonic() - began) * 1000)
        if code is None:
            zot = "zot would SIGTERM it, then SIGKILL it"
            self.report.fail("shutdown", f"still running after 2 s ({zot})")
            self.process.kill_all()
        try:  # read what it wrote before it exited; a child may hold stdout open
            self.pump(0.5)
        except SessionOver:
            pass  # the end of stdout, as it should be
        if self.bad_lines > MAX_BAD_LINES:
            more = f"{self.bad_lines - MAX_BAD_LINES} more such lines"
            self.report.fail("stdout must carry only JSON frames", more)
        if code is None:
            return
        ack = "shutdown_ack seen" if self.shutdown_ack else "no shutdown_ack (optional)"
        if code == 0:
            self.report.ok("shutdown", f"exited 0 after {took} ms, {ack}")
        else:
            status = f"exited with {describe_status(code)} after {took} ms"
            self.report.fail("shutdown", f"{status}, {ack}")
        left = self.process.leftovers(0.3)  # children may still be on their way out
        if left:
            left_behind = f"left child processes behind: {', '.join(left)}"
            self.report.fail("no child processes left", left_behind)
            self.process.kill_all()
        else:
            self.report.ok("no child processes left")
