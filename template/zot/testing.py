"""A fake zot for unit tests: it runs an extension in the test's process and
talks to it in JSON lines, as zot does, so a test calls a command or a tool
by the name zot knows it by, whatever the function behind it is called.

    zot = Zot(main.ext)                  # hello, hello_ack, registrations
    reply = zot.command("hi", "there")   # a Reply: reply.action, reply.prompt
    result = zot.tool("echo", {"text": "x"})  # a Result: result.text, ...
    zot.stop()

zot's own tools, which the extension runs with ext.call_tool, answer what
the test says: Zot(main.ext, tools={"read": "its text"}); zot.calls lists
the calls.

This file belongs to the template: `copier update` brings its fixes.
"""

from __future__ import annotations

import json
import queue
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .runtime import Extension

# How long a test waits for the extension: far longer than it should take.
WAIT = 5.0


@dataclass
class Reply:
    """A command's answer: action is prompt, insert, display, open_panel,
    tool_prompt or noop."""

    action: str = "noop"
    prompt: str = ""
    insert: str = ""
    display: str = ""
    error: str = ""
    panel: dict | None = None  # the panel it opens, if any
    tool_name: str = ""  # tool_prompt: zot runs this tool, then sends prompt
    tool_args: dict | None = None


@dataclass
class Result:
    """A tool's answer to the model."""

    text: str  # the text of its blocks, one after the other
    is_error: bool
    content: list = field(default_factory=list)
    structured_content: Any = None
    activate_tools: list = field(default_factory=list)  # deferred tools it shows


class Call:
    """A tool call under way (Zot.start_tool)."""

    def __init__(self, zot: Zot, call_id: str, reply: queue.Queue) -> None:
        self._zot, self.id, self._reply = zot, call_id, reply

    def result(self) -> Result:
        """Wait for the call's result."""
        frame = self._zot._wait(self._reply, f"the result of tool call {self.id}")
        content = frame.get("content") or []
        text = "".join(block.get("text", "") for block in content)
        structured = frame.get("structured_content")
        activate = frame.get("activate_tools") or []
        return Result(
            text, frame.get("is_error") is True, content, structured, activate
        )

    def cancel(self) -> None:
        """Tell the extension zot has given up on the call (tool_cancel)."""
        with self._zot._lock:
            self._zot._running.discard(self.id)
        self._zot.send({"type": "tool_cancel", "id": self.id})

    def no_result(self, seconds: float = 0.5) -> bool:
        """Whether the call sends no result for SECONDS: zot drops the result
        of a call it has cancelled."""
        try:
            self._reply.get(timeout=seconds)
        except queue.Empty:
            return True
        return False


class Zot:
    """zot as the extension sees it, after the handshake. newer=False plays
    zot 0.1.62, whose hello_ack lists no capabilities (and which never
    answers call_tool).

    TOOLS says what zot's own tools answer the extension's ext.call_tool:
    tool name -> a str (the text), a dict with "text" (or "content", a list
    of blocks), "is_error", "truncated", or a function of the args that
    returns one. A tool without an answer gives an error result."""

    def __init__(
        self, ext: Extension, *, newer: bool = True, tools: dict | None = None
    ) -> None:
        self.ext = ext
        self.newer = newer
        self.zot_tools = dict(tools or {})  # zot's tools: name -> answer
        self.calls: list = []  # the call_tool frames the extension sent
        self.project = tempfile.mkdtemp(prefix="zot-test-project-")  # hello_ack's cwd
        self.data_dir = tempfile.mkdtemp(prefix="zot-test-data-")
        self._lines: queue.Queue = queue.Queue()  # to the extension
        self._replies: dict = {}  # request id -> the queue its reply comes on
        self._frames: queue.Queue = queue.Queue()  # frames sent on their own
        self._log: list = []
        self._ids = 0
        self._running: set = set()  # the ids of the tool calls under way
        self._lock = threading.Lock()
        ext._log_to = _Lines(self._log.append)
        self._thread = threading.Thread(
            target=ext._serve,
            args=(self._feed(), _Lines(self._take)),
            daemon=True,
        )
        self._thread.start()
        self.hello = self.next("hello")
        capabilities = {"capabilities": ["call_tool"]} if newer else {}
        self.send(
            {
                "type": "hello_ack",
                "protocol_version": 1,
                "cwd": self.project,
                "data_dir": self.data_dir,
                **capabilities,
            }
        )
        self.registrations = [self.next("")]
        while self.registrations[-1]["type"] != "ready":
            self.registrations.append(self.next(""))
        self.commands = self._names("register_command")
        self.tools = self._names("register_tool")

    def _names(self, kind: str) -> list:
        return [frame["name"] for frame in self.registrations if frame["type"] == kind]

    def _take(self, line: str) -> None:
        """A line from the extension: a reply goes to its request."""
        frame = json.loads(line)
        if frame.get("type") == "call_tool":
            self.calls.append(frame)
            if self.newer:  # zot 0.1.62 logs a frame it does not know
                threading.Thread(
                    target=self._run_tool, args=(frame,), daemon=True
                ).start()
            return
        with self._lock:
            reply = self._replies.pop(frame.get("id"), None)
            self._running.discard(frame.get("id"))
        (reply or self._frames).put(frame)

    def _run_tool(self, frame: dict) -> None:
        """Answer call_tool as zot does: a refusal, or the test's answer (on a
        thread of its own, like zot: the answer may take its time)."""
        name, parent = frame.get("name"), frame.get("parent_id")
        with self._lock:
            running = set(self._running)
        answer: Any = {"is_error": True}
        if parent and parent not in running:
            answer["text"] = "unknown or expired parent tool call"
        elif not parent and running:
            answer["text"] = "parent_id is required while an extension tool is active"
        elif name not in self.zot_tools:
            answer["text"] = f"this test's zot has no answer for its tool {name}"
        else:
            answer = self.zot_tools[name]
            answer = answer(frame.get("args")) if callable(answer) else answer
        if isinstance(answer, str):
            answer = {"text": answer}
        text = [{"type": "text", "text": answer.get("text", "")}]
        fields = {"id": frame.get("id"), "name": name}
        fields.update(content=answer.get("content") or text)
        fields.update(is_error=answer.get("is_error") is True)
        truncated = {"truncated": True} if answer.get("truncated") else {}
        self.send({"type": "tool_result", **fields, **truncated})

    def _feed(self) -> Iterator[bytes]:
        """The extension's stdin: it has handled a line when it reads the next."""
        while (item := self._lines.get()) is not None:
            line, handled = item
            yield line
            handled.set()

    def send(self, frame: dict) -> threading.Event:
        """Send one frame to the extension; the returned event is set once the
        extension has handled it (or handed it to a worker, for a request)."""
        handled = threading.Event()
        self._lines.put((json.dumps(frame).encode() + b"\n", handled))
        return handled

    def _handled(self, frame: dict) -> None:
        """Send a frame the extension handles as it reads it, and wait for that."""
        if not self.send(frame).wait(WAIT):
            raise AssertionError(
                f"the extension did not take {frame} within {WAIT:g} s"
            )

    def _request(self, frame: dict) -> tuple:
        """Send a request with a new id: the id and the queue of its reply.
        The frames sent on their own before it are forgotten."""
        while not self._frames.empty():
            self._frames.get()
        with self._lock:
            self._ids += 1
            request_id, reply = f"test-{self._ids}", queue.Queue()
            self._replies[request_id] = reply
            if frame["type"] == "tool_call":
                self._running.add(request_id)
        self.send({**frame, "id": request_id})
        return request_id, reply

    def _wait(self, reply: queue.Queue, what: str) -> dict:
        try:
            return reply.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"no {what} within {WAIT:g} s") from None

    def command(self, name: str, args: str = "") -> Reply:
        """Run the slash command /NAME with ARGS, as the user types it."""
        if name not in self.commands:
            self._not_registered("command", name, self.commands)
        frame = {"type": "command_invoked", "name": name, "args": args}
        answer = self._wait(self._request(frame)[1], f"answer to /{name}")
        fields = {key: answer[key] for key in vars(Reply()) if key in answer}
        if "open_panel" in answer:
            fields["panel"] = answer["open_panel"]
        return Reply(**fields)

    def start_tool(self, name: str, args: Any = None) -> Call:
        """Call the tool NAME with ARGS (the model's JSON) and return at once."""
        if name not in self.tools:
            self._not_registered("tool", name, self.tools)
        frame = {"type": "tool_call", "name": name, "args": args}
        return Call(self, *self._request(frame))

    def tool(self, name: str, args: Any = None) -> Result:
        """Call the tool NAME with ARGS and return its result."""
        return self.start_tool(name, args).result()

    def intercept_response(self, event: str, **fields: Any) -> dict:
        """Send the intercept EVENT (tool_call, turn_start, assistant_message,
        before_agent_start) with FIELDS (tool_name, tool_args, step, text,
        ...); the extension's whole answer: block, reason, modified_args,
        replace_text, system_prompt."""
        frame = {"type": "event_intercept", "event": event, **fields}
        return self._wait(self._request(frame)[1], f"answer to the {event} intercept")

    def intercept(self, tool: str, args: Any) -> str | None:
        """Ask about a call of TOOL with ARGS before it runs: why the
        extension refuses it, or None when it lets it run."""
        answer = self.intercept_response("tool_call", tool_name=tool, tool_args=args)
        return answer.get("reason", "") if answer.get("block") else None

    def turn_start(self, step: int = 1) -> str | None:
        """Ask before the agent's turn STEP starts: why the extension aborts
        it, or None when it lets it start."""
        answer = self.intercept_response("turn_start", step=step)
        return answer.get("reason", "") if answer.get("block") else None

    def assistant_message(self, text: str, step: int = 1) -> str | None:
        """Show the model's message TEXT: what the user sees (TEXT, or the
        extension's replace_text), or None when the extension hides it."""
        answer = self.intercept_response("assistant_message", step=step, text=text)
        return None if answer.get("block") else answer.get("replace_text") or text

    def before_agent_start(self, system_prompt: str, **fields: Any) -> str | None:
        """The system prompt the extension gives for the next turn, or None
        when it keeps SYSTEM_PROMPT. FIELDS go in the frame too (cwd, ...)."""
        fields["system_prompt"] = system_prompt
        answer = self.intercept_response("before_agent_start", **fields)
        return answer.get("system_prompt")

    def event(self, name: str, **fields: Any) -> None:
        """Send the event NAME with FIELDS (session_start, turn_end, ...) and
        wait until the extension has handled it."""
        self._handled({"type": "event", "event": name, **fields})

    def key(self, panel_id: str, key: str, text: str = "") -> None:
        """Press KEY (up, down, enter, esc, rune with TEXT, ...) in a panel."""
        self._handled(
            {"type": "panel_key", "panel_id": panel_id, "key": key, "text": text}
        )

    def close_panel(self, panel_id: str) -> None:
        """Close a panel, as the user does with ctrl-c."""
        self._handled({"type": "panel_close", "panel_id": panel_id})

    def next(self, kind: str) -> dict:
        """The next frame the extension sent on its own (notify,
        panel_render, submit, ...), which must be of type KIND ("": any)."""
        frame = self._wait(self._frames, f"{kind or 'frame'} from the extension")
        if kind and frame["type"] != kind:
            raise AssertionError(f"the extension sent {frame}, not a {kind}")
        return frame

    def quiet(self, seconds: float = 0.3) -> bool:
        """Whether the extension sends nothing on its own for SECONDS."""
        try:
            self._frames.put(self._frames.get(timeout=seconds))
        except queue.Empty:
            return True
        return False

    def log(self) -> str:
        """What the extension logged so far."""
        return "".join(self._log)

    def stop(self) -> None:
        """Send shutdown, wait for the extension to stop, remove the folders."""
        self.send({"type": "shutdown"})
        self._lines.put(None)
        self._thread.join(WAIT)
        for folder in (self.project, self.data_dir):
            shutil.rmtree(folder, ignore_errors=True)

    def _not_registered(self, kind: str, name: str, names: list) -> None:
        raise AssertionError(
            f"no {kind} {name} is registered (registered: {names}): "
            f"register it in main.py, or test the {kind} you have"
        )


class _Lines:
    """A text stream that hands each whole line written to it to TAKE."""

    def __init__(self, take: Any) -> None:
        self._take, self._part = take, ""

    def write(self, text: str) -> int:
        *lines, self._part = (self._part + text).split("\n")
        for line in lines:
            self._take(line + "\n")
        return len(text)

    def flush(self) -> None:
        pass
