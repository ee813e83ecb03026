"""zot's side of the wire in a session: requests sent, frames read and
dispatched, and what the extension registered and showed, as zot keeps it."""

from __future__ import annotations

import math
import queue
import time

from .process import Process
from .protocol import (
    ANSWER_TYPES,
    BAD_CALL,
    BUILTIN_COMMANDS,
    BUILTIN_TOOLS,
    EVENTS,
    EXPOSURES,
    INTERCEPTS,
    MAX_BAD_LINES,
    NEWER_FRAMES,
    NOT_OPTED_IN,
    NOTED,
    PARENT_REQUIRED,
    REPLAYS,
    REQUESTS,
    TOOL_NAME,
    UNKNOWN_PARENT,
    SessionOver,
    describe_status,
    encode,
    panel_problems,
    parse_frame,
    q,
    short,
    tool_answer,
)
from .report import Report


class Wire:
    """zot's side of one session: it sends the requests and reads, dispatches
    and keeps the extension's frames."""

    def __init__(self, opts, report: Report, manifest: dict, process: Process):
        self.opts, self.report = opts, report
        self.manifest, self.process = manifest, process
        self.commands: list[str] = []
        self.tools: dict[str, object] = {}  # name -> schema
        self.events: list[str] = []
        self.intercepts: list[str] = []
        self.settled = False  # zot has stopped waiting for ready
        self.ready_at: float | None = None
        self.hello_ack_at = 0.0
        self.line_at = 0.0  # when the latest stdout line arrived
        self.pending: dict[str, str] = {}  # request id -> the answer type it needs
        self.answered: set[str] = set()
        self.replies: dict[str, dict] = {}  # answers not taken yet, by request id
        self.expired: set[str] = set()  # requests zot stopped waiting for
        self.cancelled: set[str] = set()  # tool calls zot cancelled
        self.dropped: set[str] = set()  # cancelled calls answered all the same
        self.cancelling = ""  # the call whose cancellation a check is judging
        self.answered_requests: list[tuple[str, dict]] = []
        self.hello_caps: list[str] = []
        self.interactive: set[str] = set()  # tools that may wait for the user
        self.panels: dict[str, dict] = {}  # open panels by id: title, lines, footer
        self.shown: dict[str, dict] = {}  # every panel's latest look, closed ones too
        self.opened: list[str] = []  # panel ids in the order they opened
        self.notes: list[str] = []  # notify messages since the last clear_notes
        self.noted: list[str] = []  # every notify message
        self.submitted: list[str] = []  # texts the extension submitted as prompts
        self.command_error = ""  # the error the last command answered
        self.frames = 0  # frames seen so far
        self.watch = None  # sees every frame: watch("in" or "out", frame)
        self.bad_lines = 0
        self.shutdown_ack = False
        self.zot_tools: dict = {}  # smoke.json's answers of zot's tools, by name
        self.tool_calls: list[str] = []  # the tools call_tool asked zot to run
        self.ask_answer = None  # ask_answer(name, args): an answer from a person

    def ms(self, moment: float) -> int:
        return round((moment - self.process.started) * 1000)

    # talking to the extension ------------------------------------------------

    def write(self, data: bytes) -> None:
        try:
            self.process.proc.stdin.write(data)
            self.process.proc.stdin.flush()
        except (OSError, ValueError):
            raise SessionOver(f"cannot write to its stdin: {self.gone()}") from None

    def send(self, frame: dict) -> None:
        self.write(encode(frame))
        if self.watch:
            self.watch("out", frame)

    def gone(self) -> str:
        """Why stdout ended: the exit status and the last line of stderr."""
        code = self.process.wait(1.0)
        if code is None:
            return "it closed stdout but kept running (zot disconnects it)"
        last = self.process.stderr_text(4096).strip().splitlines()[-1:]
        stderr = f"; stderr: {q(last[0], 120)}" if last else ""
        status = describe_status(code)
        return f"the extension exited unexpectedly with {status}{stderr}"

    def next_line(self, timeout: float) -> bytes | None:
        """The next stdout line, or None on timeout; SessionOver at its end."""
        try:
            moment, line = self.process.lines.get(timeout=max(timeout, 0))
        except queue.Empty:
            return None
        if line is None:
            self.process.lines.put((moment, None))  # stay at the end
            raise SessionOver(self.gone())
        if isinstance(line, int):
            limit = "zot's 4 MiB limit (zot disconnects the extension)"
            raise SessionOver(f"a stdout line of {line} bytes exceeds {limit}")
        self.line_at = moment
        return line

    def as_frame(self, line: bytes) -> dict | None:
        """The frame on a stdout line; a line that holds none is reported."""
        frame, problem = parse_frame(line)
        if frame is None:
            self.bad_lines += 1
            if self.bad_lines <= MAX_BAD_LINES:
                check = "stdout must carry only JSON frames"
                self.report.fail(check, f"{problem}: {q(line[:100], 80)}")
        return frame

    def wait_for(self, seconds: float, done) -> bool:
        """Handle frames until done() holds (True) or `seconds` pass (False)."""
        deadline = time.monotonic() + seconds
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            line = self.next_line(left)
            frame = None if line is None else self.as_frame(line)
            if frame is not None:
                self.frames += 1
                self.dispatch(frame)
                if self.watch:
                    self.watch("in", frame)
        return True

    def pump(self, seconds: float, until: str | None = None) -> dict | None:
        """Handle frames for `seconds`, or until the answer to request `until`."""
        self.wait_for(seconds, lambda: until in self.replies)
        return self.replies.pop(until, None) if until else None

    def start(self, kind: str, fields: dict) -> str:
        """Send a request; its id."""
        rid = f"smoke-{len(self.pending) + 1}"
        self.pending[rid] = REQUESTS[kind][0]
        self.send({"type": kind, "id": rid, **fields})
        return rid

    def answer(self, rid: str, kind: str, fields: dict) -> dict | None:
        """The answer to request `rid`, or None after zot's timeout."""
        answer = self.pump(self.timeout(kind), until=rid)
        if answer is None:
            self.expired.add(rid)
        else:
            self.answered_requests.append((kind, fields))
        return answer

    def request(self, kind: str, fields: dict) -> dict | None:
        """Send a request; return its answer, or None after zot's timeout."""
        return self.answer(self.start(kind, fields), kind, fields)

    def timeout(self, kind: str) -> float:
        """zot's timeout for a kind of request, capped by --timeout."""
        return min(REQUESTS[kind][1], self.opts.timeout or math.inf)

    def no_answer(self, kind: str) -> str:
        answer, zots = REQUESTS[kind]
        return f"no {answer} within {self.timeout(kind):g} s (zot's limit: {zots:g} s)"

    # frames from the extension -----------------------------------------------

    def dispatch(self, frame: dict) -> None:
        """Handle one frame from the extension."""
        kind = frame["type"]
        handlers = {
            "register_command": self.on_register_command,
            "register_tool": self.on_register_tool,
            "subscribe": self.on_subscribe,
            "ready": self.on_ready,
            "notify": self.on_notify,
            "clear_notes": self.on_clear_notes,
            "open_panel": self.on_open_panel,
            "panel_render": self.on_panel_render,
            "panel_close": self.on_panel_close,
            "submit": self.on_submit,
            "call_tool": self.on_call_tool,
            "call_tool_cancel": self.on_call_tool_cancel,
        }
        if kind in NEWER_FRAMES and self.opts.old_host:
            self.on_newer_frame(frame)
        elif kind in ANSWER_TYPES:
            self.on_answer(frame)
        elif kind in handlers:
            handlers[kind](frame)
        elif kind == "shutdown_ack":
            self.shutdown_ack = True
        elif kind in NOTED:
            self.report.note(f"{kind} (not simulated by the smoke test)")
        elif kind == "hello":
            self.report.warn("hello", "sent again (zot ignores it)")
        else:
            self.report.warn(f"frame type {q(kind)}", "unknown (zot skips it)")

    def on_answer(self, frame: dict) -> None:
        """Match an answer to its request: every request gets exactly one."""
        kind, rid = frame["type"], frame.get("id")
        label = f"{kind} {q(rid)}"
        if not isinstance(rid, str) or not rid:
            self.report.fail(kind, f"has no string id: {q(frame)}")
        elif rid not in self.pending:
            self.report.fail(label, "answers an id that was never sent")
        elif rid in self.answered:
            self.report.fail(label, "answered twice: answer each request once")
        elif self.pending[rid] != kind:
            self.report.fail(label, f"the request needs a {self.pending[rid]}")
        else:
            self.answered.add(rid)
            if rid in self.cancelled:
                self.dropped.add(rid)
                if rid != self.cancelling:  # else that check says so
                    why = "answers a call zot cancelled (zot drops it)"
                    self.report.fail(label, why)
            elif rid in self.expired:
                self.report.warn(
                    label, "came after its timeout (zot drops late answers)"
                )
            else:
                self.replies[rid] = frame

    def on_register_command(self, frame: dict) -> None:
        name, desc = frame.get("name"), frame.get("description", "")
        if not isinstance(name, str) or not name.strip() or not isinstance(desc, str):
            self.report.fail("register_command", f"needs a name: {q(frame)}")
            return
        label, key = f"register_command /{name}", name.lower()
        if key in (known.lower() for known in self.commands):
            self.report.warn(label, "registered twice (zot keeps the first)")
            return
        if key in BUILTIN_COMMANDS:
            self.report.fail(label, f"shadowed by zot's built-in /{key}")
        elif name.startswith("/") or len(name.split()) != 1:
            self.report.warn(label, "a command name is one word, without the slash")
        else:
            self.report.ok(label, q(desc))
        self.commands.append(name)

    def on_register_tool(self, frame: dict) -> None:
        name, desc = frame.get("name"), frame.get("description", "")
        if not isinstance(name, str) or not isinstance(desc, str):
            self.report.fail("register_tool", f"needs a name: {q(frame)}")
            return
        label, schema = f"register_tool {name}", frame.get("schema")
        if name in self.tools:
            self.report.warn(label, "registered twice (zot keeps the first)")
            return
        problems = []
        if not TOOL_NAME.fullmatch(name):
            problems.append("the name must match ^[A-Za-z0-9_-]{1,64}$")
        if name in BUILTIN_TOOLS:
            problems.append(f"shadowed by zot's built-in tool {name}")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            want = 'a JSON object with "type": "object"'
            problems.append(f"the schema must be {want}, not {q(schema)}")
        if not isinstance(frame.get("output_schema", {}), dict):
            problems.append("output_schema must be a JSON Schema object")
        for key in ("interactive", "deferred"):
            if not isinstance(frame.get(key, False), bool):
                problems.append(f"{key} must be true or false")
        for key in ("namespace", "namespace_description", "namespace_instructions"):
            if not isinstance(frame.get(key, ""), str):
                problems.append(f"{key} must be a string")
        for key, values in (("exposure", EXPOSURES), ("replay", REPLAYS)):
            if frame.get(key, "") not in ["", *values]:
                one_of = ", ".join(values)
                problems.append(f"{key} must be one of {one_of}, not {q(frame[key])}")
        if frame.get("interactive") is True:
            self.interactive.add(name)
        if not problems and not desc.strip():
            self.report.warn(label, "no description for the model")
        else:
            self.report.verdict(label, problems, q(desc))
        if self.settled:
            self.report.warn(label, "after ready: zot adds it only on /reload-ext")
        self.tools[name] = schema

    def on_subscribe(self, frame: dict) -> None:
        events, intercept = frame.get("events") or [], frame.get("intercept") or []
        for names in (events, intercept):
            ok = isinstance(names, list) and all(isinstance(n, str) for n in names)
            if not ok:
                self.report.fail("subscribe", f"needs lists of names: {q(frame)}")
                return
        label = f"subscribe events {short(events)} intercept {short(intercept)}"
        unknown = [name for name in events if name not in EVENTS]
        ignored = [name for name in intercept if name not in INTERCEPTS]
        if unknown:
            self.report.warn(label, f"zot never sends {', '.join(unknown)}")
        if ignored:
            why = f"zot ignores intercept {', '.join(ignored)}"
            self.report.warn(label, f"{why} (it honours {', '.join(INTERCEPTS)})")
        if not unknown and not ignored:
            self.report.ok(label)
        for name in events:
            if name in EVENTS and name not in self.events:
                self.events.append(name)
        for name in intercept:
            if name in INTERCEPTS and name not in self.intercepts:
                self.intercepts.append(name)

    def on_ready(self, frame: dict) -> None:
        if self.settled:
            late = f"came {self.ms(self.line_at)} ms after start"
            self.report.warn("ready", f"{late}, after zot had stopped waiting")
        elif self.ready_at is not None:
            self.report.warn("ready", "sent twice")
        else:
            self.ready_at = self.line_at

    def on_notify(self, frame: dict) -> None:
        level, message = frame.get("level"), frame.get("message")
        if level in ("info", "success", "warn", "error") and isinstance(message, str):
            self.report.note(f"notify ({level}): {short(message, 100)}")
            self.notes.append(message)
            self.noted.append(message)
        else:
            why = "needs a level (info, success, warn, error) and a message"
            self.report.warn("notify", f"{why}: {q(frame)}")

    def on_clear_notes(self, frame: dict) -> None:
        self.report.note(f"clear_notes ({len(self.notes)} notes)")
        self.notes.clear()

    def on_newer_frame(self, frame: dict) -> None:
        """A frame zot 0.1.62 does not know: it logs "unknown frame type"."""
        kind = frame["type"]
        if kind == "clear_notes":  # nothing is lost
            self.report.note("clear_notes (zot 0.1.62 ignores it)")
            return
        lost = "the user never sees it" if kind == "open_panel" else "it is lost"
        why = "check that hello_ack lists capabilities before sending it"
        self.report.fail(
            f"{kind} to zot 0.1.62", f"unknown to older hosts, {lost} ({why})"
        )

    def on_open_panel(self, frame: dict) -> None:
        """A panel opened by the extension itself (from a tool, say)."""
        panel = frame.get("panel")
        problems = panel_problems(panel)
        if problems:
            self.report.fail("open_panel", "; ".join(problems))
        else:
            self.open(panel)

    def open(self, panel: dict) -> None:
        if panel["id"] in self.panels:
            self.report.warn(
                f"open_panel {q(panel['id'])}", "this panel is open already"
            )
        self.report.note(f"open_panel {q(panel['id'])}: {q(panel.get('title', ''))}")
        self.panels[panel["id"]] = self.shown[panel["id"]] = panel
        self.opened.append(panel["id"])

    def on_panel_render(self, frame: dict) -> None:
        pid = frame.get("panel_id")
        problems = panel_problems({**frame, "id": pid})
        if problems:
            self.report.fail("panel_render", "; ".join(problems))
        elif pid not in self.panels:
            self.report.warn(
                f"panel_render {q(pid)}", "no such panel is open (zot ignores it)"
            )
        else:
            fields = ("title", "lines", "footer")
            panel = {"id": pid, **{key: frame[key] for key in fields if key in frame}}
            self.panels[pid] = self.shown[pid] = panel

    def on_panel_close(self, frame: dict) -> None:
        pid = frame.get("panel_id")
        if pid in self.panels:
            del self.panels[pid]
        self.report.note(f"panel_close {q(pid)}")

    def on_submit(self, frame: dict) -> None:
        text = frame.get("text")
        if isinstance(text, str) and text.strip():
            self.report.note(f"submit {q(text)}")
            self.submitted.append(text)
        else:
            self.report.fail("submit", f"needs the text to submit: {q(frame)}")

    def on_call_tool(self, frame: dict) -> None:
        """The extension runs one of zot's tools: zot's refusals, in its order,
        or the answer smoke.json gives in "zot_tools"."""
        rid, name, args = frame.get("id"), frame.get("name"), frame.get("args")
        parent = frame.get("parent_id", "")
        label = f"call_tool {name if isinstance(name, str) else q(name)} {short(args)}"
        if not isinstance(rid, str) or not rid:
            self.report.fail(
                label, f"needs a string id (zot cannot answer): {q(frame)}"
            )
            return
        running = [
            request
            for request, kind in self.pending.items()
            if kind == "tool_result"
            and request not in self.answered | self.cancelled | self.expired
        ]
        refusal = ""
        if "call_tool" not in self.hello_caps:
            refusal = NOT_OPTED_IN
        elif parent and parent not in running:
            refusal = UNKNOWN_PARENT
        elif not parent and running:
            refusal = PARENT_REQUIRED
        elif not isinstance(name, str) or not name or not isinstance(args, dict):
            refusal = BAD_CALL
        if refusal:
            self.report.fail(label, f"zot refuses it: {refusal}")
            answer = tool_answer({"text": refusal, "is_error": True})
        elif name in self.zot_tools:
            self.report.note(f"{label}: answered from smoke.json's zot_tools")
            answer = tool_answer(self.zot_tools[name])
        elif self.ask_answer and (typed := self.ask_answer(name, args)) is not None:
            answer = tool_answer(typed)
        else:
            add = f'add "zot_tools": {{"{name}": "its answer"}} to smoke.json'
            text = f"the smoke test has no answer for zot's tool {name}: {add}"
            self.report.warn(label, f"answered with an error: {text}")
            answer = tool_answer({"text": text, "is_error": True})
        self.tool_calls.append(name if isinstance(name, str) else "")
        self.send({"type": "tool_result", "id": rid, "name": name, **answer})

    def on_call_tool_cancel(self, frame: dict) -> None:
        """zot stops the tool and still sends a result, which came already."""
        self.report.note(f"call_tool_cancel {q(frame.get('id'))}")
