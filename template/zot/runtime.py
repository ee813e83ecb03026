"""The zot extension protocol: JSON lines over stdin/stdout.

This file belongs to the template: `copier update` replaces it with the
template's newest version. Write your handlers in main.py instead; they
import what they use from the package zot:

    from zot import Extension, display

    ext = Extension("my-ext", "0.1.0")

    @ext.command("hi", "Say hi")
    def hi(args: str) -> dict:
        return display(f"hi {args}")

    ext.run()

Requests (commands, tools, intercepts) run on worker threads, so a slow tool
never delays a guard decision; events and panel keys run on the read loop, in
order.

Nothing a handler starts outlives the extension: every process started from
here carries ZOT_EXT_RUN in its environment (its children and the ones it
leaves running in the background inherit it), and on shutdown or the end of
stdin each process that carries this run's value is stopped.

A program a tool call starts with run() ends when the call ends: the handler
returned (before the result is sent), zot cancelled the call, or run's
timeout passed; every process it started goes with it, a setsid one too. A
program meant to outlive the call is started with subprocess.Popen: it ends
with the extension. One meant to outlive the extension is started without
the variable: env -u ZOT_EXT_RUN setsid PROGRAM.

A handler runs one of zot's own tools (read, bash, ...) with ext.call_tool:
the read loop hands zot's answer to the waiting handler (newer hosts only).
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import sys
import threading
from collections.abc import Iterable
from threading import Event
from typing import TYPE_CHECKING, Any, Callable, TextIO

if TYPE_CHECKING:
    import subprocess


class HostInfo:
    """hello_ack: what zot says about itself and the session (ext.host).
    A field zot did not send, or sent with another type, is empty."""

    protocol_version: int = 0
    capabilities: list | None = None  # None from zot 0.1.62, which lists none
    zot_version: str = ""
    provider: str = ""
    model: str = ""
    cwd: str = ""  # the user's project folder (the process runs in extension_dir)
    extension_dir: str = ""
    data_dir: str = ""

    def __init__(self, frame: dict | None = None) -> None:
        self.frame = frame or {}  # hello_ack as it came, other fields included
        for name in HostInfo.__annotations__:  # the fields above
            value, default = self.frame.get(name), getattr(HostInfo, name)
            wanted = list if default is None else type(default)
            if isinstance(value, wanted) and not isinstance(value, bool):
                setattr(self, name, value)

    def get(self, name: str, default: Any = None) -> Any:
        """hello_ack's field NAME as it came (ext.host.get("cwd") of older code)."""
        return self.frame.get(name, default)

    def __repr__(self) -> str:
        return f"HostInfo({self.frame!r})"


class InvalidArguments(ValueError):
    """Bad arguments from the model; the message tells it what to send."""


def prompt(text: str) -> dict:
    """A command answer that submits TEXT as a new user message."""
    return {"action": "prompt", "prompt": text}


def insert(text: str) -> dict:
    """A command answer that puts TEXT into the user's editor."""
    return {"action": "insert", "insert": text}


def display(text: str) -> dict:
    """A command answer that shows TEXT in the chat, without the model."""
    return {"action": "display", "display": text}


def error(text: str) -> dict:
    """A command answer shown as an error."""
    return {"error": text}


# --- Tool results -----------------------------------------------------------


class ToolResult(dict):
    """A tool's whole answer (see tool_result); a tool may return a str instead.
    ext.call_tool returns zot's answer as one."""

    @property
    def text(self) -> str:
        """The text of its text blocks, one after the other."""
        blocks = self.get("content") or []
        return "".join(b.get("text", "") for b in blocks if isinstance(b, dict))


def text_block(text: str) -> dict:
    """A content block of plain text."""
    return {"type": "text", "text": text}


def markdown_block(text: str) -> dict:
    """A content block of text that zot shows as Markdown (newer hosts)."""
    return {"type": "text", "text": text, "format": "markdown"}


def image_block(data: bytes, mime_type: str) -> dict:
    """A content block holding an image, e.g. the bytes of a PNG file."""
    import base64  # here, not at the top: start-up counts

    encoded = base64.b64encode(data).decode("ascii")
    return {"type": "image", "mime_type": mime_type, "data": encoded}


def tool_result(
    *content: str | dict,
    structured_content: Any = None,
    is_error: bool = False,
    activate_tools: Iterable[str] = (),
) -> ToolResult:
    """A tool's answer: content blocks (a str is a text block), is_error,
    structured_content, the JSON value the tool's output_schema describes,
    and activate_tools, deferred tools zot then shows to the model."""
    blocks = [text_block(b) if isinstance(b, str) else b for b in content]
    result = ToolResult(content=blocks, is_error=is_error)
    if structured_content is not None:
        result["structured_content"] = structured_content
    if activate_tools:
        result["activate_tools"] = list(activate_tools)
    return result


def tool_prompt(tool_name: str, tool_args: dict, text: str) -> dict:
    """A command answer that has zot run its tool TOOL_NAME with TOOL_ARGS,
    then send TEXT to the model (newer hosts; zot 0.1.62 gets TEXT alone)."""
    if not (
        isinstance(tool_name, str) and tool_name and isinstance(text, str) and text
    ):
        return error("tool_prompt requires a name and prompt")
    if not isinstance(tool_args, dict):
        return error("tool_prompt args must be a JSON object")
    fields = {"tool_name": tool_name, "tool_args": tool_args, "prompt": text}
    return {"action": "tool_prompt", **fields}


# --- Intercept decisions ------------------------------------------------------


class ToolCallDecision:
    """A tool_call intercept's whole answer: BLOCK refuses the call (the
    model reads REASON), MODIFIED_ARGS (a dict) replaces its arguments."""

    def __init__(
        self, block: bool = False, reason: str = "", modified_args: dict | None = None
    ) -> None:
        self.block, self.reason, self.modified_args = block, reason, modified_args


class AssistantMessageDecision:
    """An assistant_message intercept's whole answer: BLOCK hides the text,
    REPLACE_TEXT is what the user sees instead."""

    def __init__(
        self, block: bool = False, reason: str = "", replace_text: str = ""
    ) -> None:
        self.block, self.reason, self.replace_text = block, reason, replace_text


class Answer:
    """One answer that a thread gives and another waits for: a panel's key
    handler (on the read loop) answering a tool call waiting on a worker."""

    def __init__(self) -> None:
        self._given = Event()
        self._lock = threading.Lock()
        self.value: Any = None

    def give(self, value: Any) -> bool:
        """Set the answer; False (and nothing changes) if it was given before."""
        with self._lock:
            if self._given.is_set():
                return False
            self.value = value
            self._given.set()
            return True

    def wait(self, cancelled: Event | None = None) -> Any:
        """The answer once given; None, and no answer counts any more, when
        CANCELLED is set first (zot has given up on the call)."""
        while not self._given.wait(None if cancelled is None else 0.05):
            if cancelled.is_set() and self.give(None):
                break
        return self.value


# --- Processes ---------------------------------------------------------------

# This run's mark: the extension's pid and a random number. Extension.run
# puts it in the environment before hello: every process started from here
# carries it.
RUN_VARIABLE = "ZOT_EXT_RUN"
RUN = f"{os.getpid()}.{os.urandom(8).hex()}"


class _Call(Event):
    """A tool call's `cancelled`: each program run() starts for the call
    carries ZOT_EXT_RUN=<RUN>/<number>/<run>, so the end of the call, and of
    each run, finds every process it started."""

    def __init__(self, number: int, call_id: str) -> None:
        super().__init__()
        self.id = call_id  # zot's id of the call: call_tool's parent_id
        self.mark = f"{RUN}/{number}"
        self.ran = False  # whether run() started a process for the call
        self.runs = itertools.count(1)  # numbers the runs (atomic next)
        self.groups: list = []  # the process groups run() made for the call


def run(
    argv: list[str],
    cancelled: Event,
    *,
    input: str | bytes | None = None,
    timeout: float | None = None,
    **options: Any,
) -> subprocess.CompletedProcess:
    """Run ARGV for a tool call and wait for it, like subprocess.run with its
    output captured as text; OPTIONS go to subprocess.Popen (cwd, env,
    stdout=subprocess.DEVNULL, ...). stdin is INPUT, or empty.

    ARGV runs in a process group of its own, and ends when the tool call
    (CANCELLED is the handler's) ends, with every process it started, one
    left in the background or in a session of its own too (found by its
    ZOT_EXT_RUN; without /proc, its process group only):
    - the handler returned: stopped before the result is sent;
    - zot cancelled the call (CANCELLED is set): stopped at once, and
      returncode is negative;
    - TIMEOUT seconds passed: stopped, and subprocess.TimeoutExpired is
      raised, as subprocess.run does.
    With an Event of your own (outside a tool call) only the process group
    is stopped, when it is set or on timeout.

    A program meant to outlive the call is started with subprocess.Popen: it
    ends with the extension. One meant to outlive the extension:
    env -u ZOT_EXT_RUN setsid PROGRAM.
    """
    import signal  # here, not at the top: start-up counts
    import subprocess
    import time

    env = dict(options.pop("env", None) or os.environ)
    call = cancelled if isinstance(cancelled, _Call) else None
    mark = ""
    if call is not None:
        mark = f"{call.mark}/{next(call.runs)}"  # the call's, and this run's own
        env[RUN_VARIABLE] = mark
        call.ran = True
    options = {
        "stdin": subprocess.DEVNULL if input is None else subprocess.PIPE,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "text": True,
        **options,
    }
    deadline = None if timeout is None else time.monotonic() + timeout
    killed, so_far = False, (None, None)  # the output before a timeout
    with subprocess.Popen(argv, env=env, start_new_session=True, **options) as proc:
        if call is not None:
            call.groups.append(proc.pid)
        while True:
            wait = 0.05 if deadline is None else deadline - time.monotonic()
            if (cancelled.is_set() or wait <= 0) and not killed:
                killed = True
                try:  # not reaped yet: the group this call made is still its own
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass  # it left its group, which is empty
            if wait <= 0:  # out of time: what left the group goes too
                if mark:
                    _stop_processes(mark)
                proc.wait()
                raise subprocess.TimeoutExpired(argv, timeout, *so_far)
            try:
                stdout, stderr = proc.communicate(input, timeout=min(wait, 0.05))
                break
            except subprocess.TimeoutExpired as err:  # bytes so far, as run's
                input, so_far = None, (err.output, err.stderr)  # input went in
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


class _Nowhere:
    """A stream that drops what is written to it."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


class Extension:
    """One zot extension: register handlers, then call run()."""

    def __init__(self, name: str, version: str) -> None:
        self.name = name
        self.version = version
        self.host = HostInfo()  # hello_ack: cwd (the user's project), data_dir, ...
        self._commands: dict = {}
        self._tools: dict = {}
        self._events: dict = {}
        self._intercepts: dict = {}  # event (one of INTERCEPTS) -> handler
        self._on_hello: Callable[[dict], None] | None = None
        self._opens_panels = False
        self._panels: dict = {}  # open panel id -> (on_key, on_close)
        self._calls: dict = {}  # running tool call id -> its cancellation (_Call)
        self._calls_made = 0
        self._calls_lock = threading.Lock()
        self._host_calls: dict = {}  # call_tool id -> the queue of zot's answer
        self._dropped: set = set()  # call_tool ids whose answer nobody waits for
        self._host_calls_made = 0
        self._stopped = False  # zot has stopped: no call_tool gets an answer
        self._reader: int | None = None  # the read loop's thread
        self._local = threading.local()  # a worker's after_reply, its tool call
        self._write_lock = threading.Lock()
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._workers = threading.Condition()
        self._idle = 0  # workers waiting for a request
        self._handed = 0  # requests handed to waiting workers, not picked up yet
        # Where frames go: zot's stdin once run() (or zot.testing) serves it;
        # until then nowhere, not onto stdout before hello (or into the
        # output of a unit test that calls a handler itself).
        self._out: TextIO | _Nowhere = _Nowhere()
        self._log_to: TextIO | None = None  # the log, if not stderr (zot.testing)

    @property
    def newer_host(self) -> bool:
        """Whether zot is newer than 0.1.62: it takes submit and spontaneous
        open_panel frames and cancels tool calls (its hello_ack lists its
        capabilities)."""
        return self.host.capabilities is not None

    # --- Registration ----------------------------------------------------

    def command(
        self, name: str, description: str, *, opens_panel: bool = False
    ) -> Callable:
        """Decorator: handler(args: str) -> dict answers `/NAME ARGS`.

        OPENS_PANEL announces panels in hello (the handler returns
        panel_answer(...))."""

        def register(handler: Callable[[str], dict]) -> Callable[[str], dict]:
            self._commands[name] = (description, handler)
            self._opens_panels |= opens_panel
            return handler

        return register

    def tool(
        self,
        name: str,
        description: str,
        schema: dict,
        *,
        interactive: bool = False,
        output_schema: dict | None = None,
        namespace: str = "",
        namespace_description: str = "",
        namespace_instructions: str = "",
        exposure: str = "",
        deferred: bool = False,
        replay: str = "",
    ) -> Callable:
        """Decorator: handler(args) or handler(args, cancelled) is a tool the
        model calls; it returns a str, a tool_result(...) or any JSON value.

        SCHEMA is the JSON Schema of the arguments: a call whose arguments
        do not fit it is answered with is_error before the handler runs (see
        schema.py). The handler raises InvalidArguments to refuse what the
        schema cannot say. CANCELLED, an Event, is set
        when zot gives up on the call: no result is sent after that.
        INTERACTIVE tools may open panels and wait for the user (no time
        limit); OUTPUT_SCHEMA describes the result's structured_content.

        Newer hosts read the rest (zot 0.1.62 ignores them): NAMESPACE (with
        its NAMESPACE_DESCRIPTION and NAMESPACE_INSTRUCTIONS) groups tools,
        EXPOSURE is one of EXPOSURES, DEFERRED tools reach the model once a
        result's activate_tools names them, REPLAY (one of REPLAYS) tells
        `zot continuous` whether the call may run again. A value outside
        those lists raises ValueError here, before anything is sent.
        """
        for option, value, allowed in (
            ("exposure", exposure, EXPOSURES),
            ("replay", replay, REPLAYS),
        ):
            if value and value not in allowed:
                one_of = ", ".join(allowed)
                raise ValueError(
                    f'tool {name}: {option} "{value}" must be one of {one_of}'
                )
        fields: dict = {"name": name, "description": description, "schema": schema}
        options = {
            "interactive": interactive,
            "output_schema": output_schema,
            "namespace": namespace,
            "namespace_description": namespace_description,
            "namespace_instructions": namespace_instructions,
            "exposure": exposure,
            "deferred": deferred,
            "replay": replay,
        }
        fields.update((key, value) for key, value in options.items() if value)

        def register(handler: Callable) -> Callable:
            self._tools[name] = (fields, handler, _takes_two(handler))
            self._opens_panels |= interactive
            return handler

        return register

    def on(self, *events: str) -> Callable:
        """Decorator: handler(frame: dict) is called for each of EVENTS."""

        def register(handler: Callable[[dict], None]) -> Callable[[dict], None]:
            for event in events:
                self._events[event] = handler
            return handler

        return register

    def intercept_tool_call(
        self, handler: Callable[[Any, Any], str | ToolCallDecision | None]
    ) -> Callable:
        """Decorator: handler(tool_name, tool_args) returns why a tool call
        must be refused, or None to let it run, or a ToolCallDecision (to
        run it with modified_args). zot waits for it (5 s at most, then
        allows the call), so keep it fast."""
        self._intercepts["tool_call"] = handler
        return handler

    def intercept_turn_start(self, handler: Callable[[int], str | None]) -> Callable:
        """Decorator: handler(step) returns why the agent's turn must not
        start (zot aborts it), or None to let it start. 5 s at most."""
        self._intercepts["turn_start"] = handler
        return handler

    def intercept_assistant_message(
        self, handler: Callable[[str], str | AssistantMessageDecision | None]
    ) -> Callable:
        """Decorator: handler(text) returns None to show the model's message
        as is, a str to show instead, or an AssistantMessageDecision (block
        hides it). 5 s at most."""
        self._intercepts["assistant_message"] = handler
        return handler

    def on_hello(self, handler: Callable[[HostInfo], None]) -> Callable:
        """Decorator: handler(host) runs once, on a thread of its own, when
        zot's hello_ack has arrived (HOST is ext.host) and the registrations
        and ready have gone out: a place to warm up, or to tell the user."""
        self._on_hello = handler
        return handler

    def intercept_before_agent_start(
        self, handler: Callable[[dict], str | None]
    ) -> Callable:
        """Decorator: handler(frame) returns the system prompt to use for the
        next run of the agent (at most 1 MiB), or None to keep frame's
        "system_prompt". Newer hosts only; zot waits 5 s at most."""
        self._intercepts["before_agent_start"] = handler
        return handler

    def log(self, message: str) -> None:
        """Log to stderr, which zot writes to ext-NAME.log."""
        print(f"[{self.name}] {message}", file=self._log_to or sys.stderr, flush=True)

    # --- Frames ----------------------------------------------------------

    def send(self, frame: dict) -> None:
        """Write one frame; stdout carries nothing else. Safe from any thread."""
        line = _line(frame)  # ASCII: as many bytes as characters
        if len(line) >= MAX_LINE:
            self.log(f"a {frame.get('type')} of {len(line)} bytes is over zot's limit")
            line = _line(_over_the_limit(frame, len(line)))
        self._write(line)

    def notify(self, level: str, message: str) -> None:
        """Show MESSAGE to the user; LEVEL: info, success, warn or error."""
        self.send({"type": "notify", "level": level, "message": message})

    def clear_notes(self) -> None:
        """Remove the notes that notify showed."""
        self.send({"type": "clear_notes"})

    def submit(self, text: str) -> None:
        """Send TEXT to the model as the user's message (newer hosts only)."""
        if not self._too_old("submit"):
            self.send({"type": "submit", "text": text})

    def _too_old(self, kind: str) -> bool:
        """Whether zot is too old for frames of KIND (then say so in the log)."""
        if self.newer_host:
            return False
        self.log(f"sent no {kind} frame: zot 0.1.62 and older do not take it")
        return True

    # --- Calling zot's tools ---------------------------------------------

    def call_tool(
        self, name: str, args: dict, cancelled: Event | None = None
    ) -> ToolResult:
        """Run zot's tool NAME (read, bash, ...) with ARGS and wait for its
        result, which says is_error when zot refused or the tool failed.

        Inside a tool handler the call is made for the tool call (its
        parent): pass the handler's CANCELLED from another thread. When
        CANCELLED or the tool call's cancellation is set, the call is
        cancelled and returns at once. zot 0.1.62 runs no tools for
        extensions: the result is an error, and nothing is sent."""
        if not (isinstance(name, str) and name and isinstance(args, dict)):
            return tool_result(BAD_CALL, is_error=True)
        if "call_tool" not in (self.host.capabilities or []):
            too_old = "this zot is too old to run its tools for extensions"
            return tool_result(
                f"cannot call {name}: {too_old} (update zot)", is_error=True
            )
        if threading.get_ident() == self._reader:  # zot's answer would wait
            why = "event and panel handlers run on the read loop: use a thread"
            return tool_result(f"cannot call {name} here: {why}", is_error=True)
        parent = cancelled if isinstance(cancelled, _Call) else None
        parent = parent or getattr(self._local, "call", None)
        watched = [event for event in (cancelled, parent) if event is not None]
        answer: queue.SimpleQueue = queue.SimpleQueue()
        with self._calls_lock:
            self._host_calls_made += 1
            call_id, stopped = f"call-{self._host_calls_made}", self._stopped
            if not stopped:
                self._host_calls[call_id] = answer
        frame = {"type": "call_tool", "id": call_id, "name": name, "args": args}
        if parent is not None:
            frame["parent_id"] = parent.id
        if stopped:
            answer.put(None)
        else:
            self.send(frame)
        import time  # here, not at the top: start-up counts

        deadline = time.monotonic() + CALL_TOOL_SECONDS
        while True:
            try:
                reply = answer.get(timeout=0.05)
                break
            except queue.Empty:
                pass
            if any(event.is_set() for event in watched):
                why = f"the call of {name} was cancelled"
            elif time.monotonic() >= deadline:
                why = f"zot did not answer the call of {name} within"
                why += f" {CALL_TOOL_SECONDS:g} s"
            else:
                continue
            with self._calls_lock:  # unless the read loop has just taken it
                waiting = self._host_calls.pop(call_id, None) is not None
                if waiting:
                    self._dropped.add(call_id)  # its answer may still come
            if waiting:
                self.send({"type": "call_tool_cancel", "id": call_id})
                return tool_result(why, is_error=True)
        if reply is None:
            return tool_result(
                f"zot stopped before answering the call of {name}", is_error=True
            )
        return _host_result(reply)

    def _on_host_result(self, frame: dict) -> None:
        """tool_result from zot: the answer to one of call_tool's calls."""
        call_id = _string(frame.get("id"))
        with self._calls_lock:
            answer = self._host_calls.pop(call_id, None)
            dropped = call_id in self._dropped  # cancelled: dropped quietly
            self._dropped.discard(call_id)
        if answer is not None:
            answer.put(frame)
        elif not dropped:
            call_id = frame.get("id")
            self.log(f"ignored a tool_result for no call in flight: {call_id!r}")

    def _stop_host_calls(self) -> None:
        """zot has stopped: no call waits for an answer any more."""
        with self._calls_lock:
            self._stopped = True
            answers, self._host_calls = list(self._host_calls.values()), {}
        for answer in answers:
            answer.put(None)

    def after_reply(self, callback: Callable, *args: Any) -> None:
        """Call CALLBACK(*ARGS) once the request being handled is answered
        (at once when called from anywhere else), e.g. to notify the user of
        a refusal after zot has it."""
        later = getattr(self._local, "after", None)
        if later is None:
            callback(*args)
        else:
            later.append((callback, args))

    # --- Panels ----------------------------------------------------------
    # A panel's handlers run on the read loop: on_key(key, text) for each key
    # (key: up, down, enter, esc, home, end, pageup, pagedown, rune with the
    # character in text, ...), on_close() when zot closes it. Keep them quick:
    # a tool that waits for the user waits on its worker (see Answer).

    def panel_answer(
        self,
        panel_id: str,
        title: str,
        lines: list,
        footer: str = "",
        on_key: Callable[[str, str], None] | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> dict:
        """A command answer that opens a panel (register with opens_panel)."""
        self._panels[panel_id] = (on_key, on_close)
        panel = {"id": panel_id, "title": title, "lines": lines, "footer": footer}
        return {"action": "open_panel", "open_panel": panel}

    def open_panel(
        self,
        panel_id: str,
        title: str,
        lines: list,
        footer: str = "",
        on_key: Callable[[str, str], None] | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        """Open a panel at any time, e.g. from an interactive tool (newer hosts)."""
        if self._too_old("open_panel"):
            return
        panel = self.panel_answer(panel_id, title, lines, footer, on_key, on_close)
        self.send({"type": "open_panel", "panel": panel["open_panel"]})

    def render_panel(
        self, panel_id: str, title: str, lines: list, footer: str = ""
    ) -> None:
        """Show new contents in an open panel."""
        panel = {"panel_id": panel_id, "title": title, "lines": lines}
        self.send({"type": "panel_render", **panel, "footer": footer})

    def close_panel(self, panel_id: str) -> bool:
        """Close a panel; False (and nothing sent) if it is not open, e.g.
        because zot closed it already."""
        if self._panels.pop(panel_id, None) is None:
            return False
        self.send({"type": "panel_close", "panel_id": panel_id})
        return True

    def _on_panel(self, frame: dict) -> None:
        """Route panel_key and panel_close from zot to the panel's handlers."""
        kind, panel_id = frame["type"], frame.get("panel_id")
        if not isinstance(panel_id, str) or panel_id not in self._panels:
            self.log(f"ignored {kind} for a panel that is not open: {panel_id!r}")
            return
        on_key, on_close = self._panels[panel_id]
        try:
            if kind == "panel_close":
                self._panels.pop(panel_id, None)
                if on_close:
                    on_close()
            elif on_key:
                on_key(_string(frame.get("key")), _string(frame.get("text")))
        except Exception as err:  # noqa: BLE001 - keep reading
            self.log(f"{kind} handler of panel {panel_id} failed: {err!r}")

    # --- Requests --------------------------------------------------------

    def _capabilities(self) -> list:
        flags = [
            ("commands", self._commands),
            ("tools", self._tools),
            ("events", self._events or self._intercepts),
            ("panels", self._opens_panels),
            ("tool_cancel", self._tools),  # zot sends tool_cancel only if listed
            ("call_tool", True),  # zot runs call_tool only if listed
        ]
        return [name for name, used in flags if used]

    def _registrations(self) -> str:
        """The registrations and ready, as one write: zot gets them in one burst."""
        frames: list = [
            {"type": "register_command", "name": name, "description": description}
            for name, (description, _) in self._commands.items()
        ]
        for fields, _, _ in self._tools.values():
            frames.append({"type": "register_tool", **fields})
        if self._events or self._intercepts:
            intercept = [event for event in INTERCEPTS if event in self._intercepts]
            events = list(self._events)
            frames.append(
                {"type": "subscribe", "events": events, "intercept": intercept}
            )
        frames.append({"type": "ready"})
        return "".join(map(_line, frames))

    def _on_command(self, frame: dict) -> dict:
        name, args = frame.get("name"), frame.get("args")
        if name not in self._commands:
            return {"type": "command_response", "error": f"unknown command: /{name}"}
        reply = self._commands[name][1](args if isinstance(args, str) else "")
        if reply.get("action") == "tool_prompt" and not self.newer_host:
            reply = prompt(reply.get("prompt", ""))
            self.log(
                "zot 0.1.62 cannot run a tool from a command: sent the prompt alone"
            )
        return {"type": "command_response", **reply}

    def _on_tool_call(self, frame: dict) -> dict:
        name = frame.get("name")
        if name not in self._tools:
            result = tool_result(f"unknown tool: {name}", is_error=True)
            return {"type": "tool_result", **result}
        fields, handler, takes_two = self._tools[name]
        args = frame.get("args")
        from .schema import problems  # here, not at the top: start-up counts

        found = problems(fields["schema"], args)
        if found:  # the handler runs only with arguments that fit its schema
            result = tool_result(
                "invalid arguments: " + "; ".join(found), is_error=True
            )
            return {"type": "tool_result", **result}
        call = self._calls.get(frame["id"]) or _Call(0, frame["id"])
        self._local.call = call  # the parent of the calls of call_tool it makes
        try:
            result = handler(args, call) if takes_two else handler(args)
        except InvalidArguments as err:
            result = tool_result(f"invalid arguments: {err}", is_error=True)
        finally:
            self._local.call = None
            if call.ran:  # what run() started ends with the call, before its result
                left = _stop_processes(call.mark, call.groups)
                if left:
                    still = f"still running after 0.5 s: {left}"
                    self.log(f"killed the processes of tool call {frame['id']} {still}")
        if not isinstance(result, ToolResult):
            result = tool_result(
                result if isinstance(result, str) else json.dumps(result)
            )
        # zot's answer to call_tool passed on as is: zot takes no "truncated".
        fields = {key: value for key, value in result.items() if key != "truncated"}
        return {"type": "tool_result", **fields}

    def _on_intercept(self, frame: dict) -> dict:
        event = frame.get("event")
        handler = self._intercepts.get(event) if isinstance(event, str) else None
        reply: dict = {"type": "event_intercept_response"}
        if event == "before_agent_start" and handler:
            try:
                system_prompt = handler(frame)
            except Exception as err:  # noqa: BLE001 - keep zot's prompt
                self.log(f"before_agent_start handler failed: {err!r}")
                system_prompt = None
            if isinstance(system_prompt, str):
                reply["system_prompt"] = system_prompt
            return reply  # never block: zot does not honour it here
        decision = None
        if event == "tool_call" and handler:
            decision = handler(frame.get("tool_name"), frame.get("tool_args"))
        elif event == "turn_start" and handler:
            step = frame.get("step")
            decision = handler(step if type(step) is int else 0)
        elif event == "assistant_message" and handler:
            text = _string(frame.get("text"))
            decision = handler(text)
            if isinstance(decision, str):
                decision = AssistantMessageDecision(replace_text=decision)
            replace = getattr(decision, "replace_text", "")
            if isinstance(replace, str) and replace not in ("", text):
                reply["replace_text"] = replace  # removed below if it blocks
        if isinstance(decision, str):
            decision = ToolCallDecision(bool(decision), decision)
        if getattr(decision, "block", False):
            reason = _string(decision.reason)
            self.log(f"blocked {event}: {reason}")
            return {"type": reply["type"], "block": True, "reason": reason}
        modified = getattr(decision, "modified_args", None)
        if isinstance(modified, dict):
            reply["modified_args"] = modified
        elif modified is not None:
            kind = type(modified).__name__
            self.log(f"sent no modified_args: a {kind}, not a JSON object (a dict)")
        return {**reply, "block": False}

    def _crash_reply(self, frame: dict, err: Exception) -> dict:
        """If a handler crashes, answer anyway so zot is never left waiting."""
        text, kind = f"{self.name} failed: {err}", frame["type"]
        if kind == "command_invoked":
            return {"type": "command_response", "error": text}
        if kind == "tool_call":
            return {"type": "tool_result", **tool_result(text, is_error=True)}
        if frame.get("event") == "before_agent_start":
            return {"type": "event_intercept_response"}  # keeps zot's prompt
        # A guard that crashes refuses rather than letting the call through.
        return {"type": "event_intercept_response", "block": True, "reason": text}

    def _answer(self, handler: Callable[[dict], dict], frame: dict) -> dict:
        """Run one request handler; its reply, with the request's id."""
        try:
            reply = handler(frame)
        except Exception as err:  # noqa: BLE001 - any bug becomes an error reply
            self.log(f"{frame['type']} handler failed: {err!r}")
            reply = self._crash_reply(frame, err)
        return {**reply, "id": frame["id"]}

    def _reply(self, frame: dict, reply: dict) -> None:
        """Send a reply; never the result of a cancelled tool call."""
        if frame["type"] != "tool_call":
            self.send(reply)
            return
        with self._calls_lock:  # a tool_cancel comes before this, or is too late
            cancelled = self._calls.pop(frame["id"], None)
            if cancelled is None or not cancelled.is_set():
                self.send(reply)
                return
        self.log(f"dropped the result of the cancelled tool call {frame['id']}")

    def _cancel(self, frame: dict) -> None:
        """tool_cancel: zot has given up on a call; its result would be dropped."""
        call_id = frame.get("id")
        with self._calls_lock:
            cancelled = self._calls.get(call_id) if isinstance(call_id, str) else None
            if cancelled is not None:
                cancelled.set()
        if cancelled is None:
            self.log(f"ignored tool_cancel for a call that is not running: {call_id!r}")
        elif cancelled.ran:  # stop what run() started for it, off the read loop
            threading.Thread(
                target=_stop_processes,
                args=(cancelled.mark, cancelled.groups),
                daemon=True,
            ).start()

    # --- Workers ---------------------------------------------------------
    # A worker that is done waits for the next request; a new one starts only
    # when every worker is busy with a handler (bounded threads under bursts).

    def _worker(self, handler: Callable[[dict], dict], frame: dict) -> None:
        while True:
            self._local.after = []
            reply = self._answer(handler, frame)
            with self._workers:
                self._idle += 1  # sending takes no time: the next request can come
            self._reply(frame, reply)
            after, self._local.after = self._local.after, None
            for callback, args in after:
                try:
                    callback(*args)
                except Exception as err:  # noqa: BLE001 - the reply is out
                    self.log(f"after_reply callback failed: {err!r}")
            handler, frame = self._requests.get()
            with self._workers:
                self._handed -= 1
                self._workers.notify()

    def _start(self, handler: Callable[[dict], dict], frame: dict) -> None:
        """Answer a request on a waiting worker, or on a new one."""
        with self._workers:
            # Requests just handed over are picked up in a moment: wait for
            # that rather than start one worker too many.
            while not self._idle and self._handed:
                self._workers.wait()
            if self._idle:
                self._idle -= 1
                self._handed += 1
                self._requests.put((handler, frame))
                return
        threading.Thread(
            target=self._worker, args=(handler, frame), daemon=True
        ).start()

    # --- The read loop ---------------------------------------------------

    def run(self) -> None:
        """Say hello, answer zot until shutdown or the end of stdin, exit."""
        os.environ[RUN_VARIABLE] = RUN  # what handlers start carries it
        self._serve(sys.stdin.buffer, sys.stdout)
        # Exit at once, even with handlers still running: zot has stopped
        # listening. What they started goes too.
        left = _stop_processes(RUN)
        if left:
            self.log(f"killed the processes still running after 0.5 s: {left}")
        os._exit(0)

    def _serve(self, lines: Iterable[bytes], out: TextIO) -> None:
        """Say hello on OUT and answer the frames in LINES until shutdown or
        their end (zot.testing serves a test's fake zot this way)."""
        self._out, self._reader = out, threading.get_ident()
        requests = {
            "command_invoked": self._on_command,
            "tool_call": self._on_tool_call,
            "event_intercept": self._on_intercept,
        }
        # The first line on stdout must be hello.
        hello = {"type": "hello", "name": self.name, "version": self.version}
        self.send({**hello, "capabilities": self._capabilities()})
        registrations = self._registrations()  # ready before zot answers hello
        for raw in lines:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                frame = json.loads(line)
            except RecursionError:
                # Python's parser stops near 1000 levels; zot's goes to 10000.
                frame = _top_level_fields(line)
                self.log(f"could not read a frame nested too deeply: {line[:80]!r}")
                kind, rid = frame.get("type"), frame.get("id")
                if isinstance(kind, str) and kind in requests and isinstance(rid, str):
                    err = ValueError("the request is nested too deeply to read")
                    self.send({**self._crash_reply(frame, err), "id": frame["id"]})
                continue
            except ValueError:
                self.log(f"skipped a malformed line: {line[:80]!r}")
                continue
            if not isinstance(frame, dict):
                self.log(f"skipped a line that is not a JSON object: {line[:80]!r}")
                continue
            kind = frame.get("type")
            if not isinstance(kind, str):  # zot never sends one: skip, never crash
                self.log(f"skipped a frame whose type is not a text: {line[:80]!r}")
                continue
            if kind == "hello_ack":
                self.host = HostInfo(frame)
                self._write(registrations)
                if self._on_hello is not None:
                    threading.Thread(target=self._hello, daemon=True).start()
            elif kind in requests:
                if not isinstance(frame.get("id"), str):
                    self.log(f"skipped a {kind} frame without an id")
                    continue
                if kind == "tool_call":
                    self._calls_made += 1
                    call = _Call(self._calls_made, frame["id"])
                    with self._calls_lock:
                        self._calls[frame["id"]] = call
                self._start(requests[kind], frame)
            elif kind == "event" and _string(frame.get("event")) in self._events:
                try:
                    self._events[frame["event"]](frame)
                except Exception as err:  # noqa: BLE001 - keep reading
                    self.log(f"event handler failed: {err!r}")
            elif kind in ("panel_key", "panel_close"):
                self._on_panel(frame)
            elif kind == "tool_cancel":
                self._cancel(frame)
            elif kind == "tool_result":
                self._on_host_result(frame)
            elif kind == "shutdown":
                self.send({"type": "shutdown_ack"})
                break
            elif kind != "panel_resize":  # panels here do not depend on the size
                self.log(f"ignored a frame of type {kind!r}")
        self._stop_host_calls()

    def _hello(self) -> None:
        try:
            self._on_hello(self.host)
        except Exception as err:  # noqa: BLE001 - the extension runs on
            self.log(f"the hello handler failed: {err!r}")

    def _write(self, lines: str) -> None:
        """Write whole lines at once, never between another thread's."""
        with self._write_lock:
            self._out.write(lines)
            self._out.flush()


# zot disconnects an extension that writes a line of this many bytes or more.
MAX_LINE = 4 * 1024 * 1024

# The intercepts zot honours, in the order subscribe lists them.
INTERCEPTS = ["tool_call", "before_agent_start", "turn_start", "assistant_message"]
# register_tool's exposure and replay values (newer hosts refuse others).
EXPOSURES = ("direct", "codemode", "deferred", "model-only")
REPLAYS = ("never", "safe", "idempotent", "reconcile")

# call_tool: how long a call waits for zot, which gives up after 60 s too,
# and the host's words for a call it cannot make.
CALL_TOOL_SECONDS = 60.0
BAD_CALL = "call_tool requires a name and JSON object args"


def _host_result(frame: dict) -> ToolResult:
    """zot's answer to call_tool as a ToolResult; odd fields read as empty.
    A result zot cut (over 256 KiB) says so in a last text block."""
    content = frame.get("content")
    result = ToolResult(
        content=list(content) if isinstance(content, list) else [],
        is_error=frame.get("is_error") is True,
    )
    if frame.get("truncated") is True:
        result["content"].append(text_block("[zot cut this result: over 256 KiB]"))
        result["truncated"] = True
    return result


def _over_the_limit(frame: dict, size: int) -> dict:
    """What zot gets instead of a frame too long for it: the request's error."""
    why = f"the answer is {size} bytes, over zot's limit of 4 MiB for one line"
    why += ": send less"
    kind, rid = frame.get("type"), frame.get("id")
    if kind == "tool_result":
        return {"type": kind, "id": rid, "content": [text_block(why)], "is_error": True}
    if kind == "command_response":
        return {"type": kind, "id": rid, "action": "noop", "error": why}
    if kind == "event_intercept_response":
        return {"type": kind, "id": rid, "block": True, "reason": why}
    return {"type": "notify", "level": "error", "message": why}


def _line(frame: dict) -> str:
    """A frame as one line of compact JSON."""
    return json.dumps(frame, separators=(",", ":")) + "\n"


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _takes_two(handler: Callable) -> bool:
    """Whether HANDLER takes two positional arguments (args, cancelled)."""
    code = getattr(handler, "__code__", None)
    if code is not None and not hasattr(handler, "__wrapped__"):
        # A function, the quick way (a bound method's self does not count).
        return code.co_argcount - hasattr(handler, "__func__") >= 2
    import inspect  # here, not at the top: rarely needed, and start-up counts

    try:
        parameters = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in kinds for p in parameters) >= 2


def _top_level_fields(line: str) -> dict:
    """The string fields of a JSON object too deeply nested for json.loads."""
    import re  # here, not at the top: rarely needed, and start-up counts

    fields: dict = {}
    depth, key, is_value = 0, None, False
    # strings, brackets, : and ,
    for token in re.findall(r'"(?:[^"\\]|\\.)*"|[][{}:,]', line):
        if token in "{[":
            depth += 1
        elif token in "}]":
            depth -= 1
        elif depth == 1 and token in ":,":
            is_value = token == ":"
        elif depth == 1 and is_value:
            fields[key], is_value = json.loads(token), False
        elif depth == 1:
            key = json.loads(token)
    return fields


# --- Stopping processes -------------------------------------------------------

_PROC = "/proc"  # where the processes' environments are read (tests move it)


def _stop_processes(mark: str, groups: Iterable[int] = ()) -> list[int]:
    """Stop the processes that carry MARK (see _marked; without /proc, the
    process GROUPS made here for it): SIGTERM, then SIGKILL to those still
    there after 0.5 s. Returns those killed."""
    import signal  # here, not at the top: start-up counts
    import time

    signalled: set = set()
    deadline = time.monotonic() + 0.5
    while pids := _marked(mark, groups):
        if time.monotonic() > deadline:
            _signal(pids, signal.SIGKILL)
            return pids
        _signal([pid for pid in pids if pid not in signalled], signal.SIGTERM)
        signalled.update(pids)
        time.sleep(0.02)
    return []


def _signal(pids: list[int], number: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, number)  # a negative pid: that process group
        except OSError:
            pass  # gone already


def _marked(mark: str, groups: Iterable[int] = ()) -> list[int]:
    """The processes whose environment holds ZOT_EXT_RUN=MARK or MARK/...,
    this one aside. A process that has exited reads as empty. Without /proc,
    the processes below this one for RUN, and for a call's mark the GROUPS
    that still have members, as -GROUP (os.kill signals the whole group)."""
    try:
        names = os.listdir(_PROC)
    except OSError:  # no /proc (macOS)
        if mark == RUN:
            return _below(os.getpid())
        return [-group for group in groups if _has_members(group)]
    entry = f"{RUN_VARIABLE}={mark}".encode()
    found = []
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"{_PROC}/{name}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:  # gone, or another user's
            continue
        if entry in environ and any(
            value == entry or value.startswith(entry + b"/")
            for value in environ.split(b"\0")
        ):
            found.append(int(name))
    return found


def _has_members(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except OSError:  # empty (or no longer ours)
        return False
    return True


def _below(root: int) -> list[int]:
    """The live processes under ROOT, from ps."""
    import subprocess  # here, not at the top: start-up counts

    command = ["ps", "-A", "-o", "pid=", "-o", "ppid=", "-o", "stat="]
    try:
        with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as ps:
            lines = ps.communicate()[0].splitlines()
    except OSError:
        return []
    children: dict = {}
    for line in lines:
        pid, ppid, stat = [*line.split(), "", "", ""][:3]
        if pid.isdigit() and ppid.isdigit() and int(pid) != ps.pid and stat[:1] != "Z":
            children.setdefault(int(ppid), []).append(int(pid))
    found, todo = [], [root]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += below
    return found
