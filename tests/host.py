"""Drive a generated extension the way zot's host does, for direct checks.

The starting and reading are the generated smoke test's own (its manifest
reading, exec resolution, process and hello_ack), imported from the
template's `zot/smoke_test` package: there is one implementation of "start it
the way zot does". On top, `ExtensionProcess` lets a test send frames and wait
for replies.
"""

from __future__ import annotations

import json
import queue
import sys
import time
from pathlib import Path
from typing import Self

# The smoke test's package, as every generated project has it in zot/.
ROOT_OF_SMOKE_TEST = Path(__file__).resolve().parent.parent / "template" / "zot"
sys.path.insert(0, str(ROOT_OF_SMOKE_TEST))
from smoke_test import process, protocol


class ExtensionProcess:
    """One running extension, started from its folder as zot starts it.

    own_group=False starts it in this process's group, as zot 0.1.62 does.
    """

    def __init__(self, ext_dir: Path, data_dir: Path | None = None, env=None, own_group=True):
        self.ext_dir = Path(ext_dir)
        self.data_dir = Path(data_dir) if data_dir else self.ext_dir
        argv = process.command_line(str(self.ext_dir))
        self.process = process.Process(argv, str(self.ext_dir), own_group=own_group, env=env)
        self.raw_lines: list[bytes] = []  # every stdout line, "\n" included
        self.process.tap = self.raw_lines.append
        self.proc = self.process.proc
        self.started = self.process.started
        self.next_id = 0
        self.spontaneous: list[dict] = []  # frames without an id, read by request()
        self.hello: dict = {}  # the extension's hello, once handshake() has read it

    # -- reading -------------------------------------------------------------

    def read_frame(self, timeout: float = 5.0) -> dict:
        """The next stdout line as a JSON object (fails on anything else)."""
        try:
            _, line = self.process.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no frame within {timeout} s") from None
        if line is None:
            self.process.lines.put((0, None))  # stay at the end
            raise EOFError(f"extension closed stdout; stderr: {self.stderr()}")
        assert isinstance(line, bytes), f"a stdout line of {line} bytes (over 4 MiB)"
        frame = json.loads(line)
        assert isinstance(frame, dict), f"not a JSON object: {line!r}"
        return frame

    def read_reply(self, timeout: float = 5.0) -> dict:
        """The next frame with an id (an answer); the others go to `spontaneous`."""
        deadline = time.monotonic() + timeout
        while "id" not in (frame := self.read_frame(max(0.01, deadline - time.monotonic()))):
            self.spontaneous.append(frame)
        return frame

    def read_until(self, frame_type: str, timeout: float = 5.0) -> list[dict]:
        """Frames up to and including the first of `frame_type`."""
        frames = []
        deadline = time.monotonic() + timeout
        while True:
            frames.append(self.read_frame(max(0.01, deadline - time.monotonic())))
            if frames[-1].get("type") == frame_type:
                return frames

    def stderr(self) -> str:
        return self.process.stderr_text(1 << 20)

    # -- writing -------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, frame: dict) -> None:
        self.send_raw(protocol.encode(frame))

    def handshake(self, **ack) -> tuple[dict, list[dict]]:
        """Read hello, send hello_ack, return (hello, frames up to ready)."""
        hello = self.hello = self.read_frame()
        project = str(self.ext_dir.parent)
        frame = protocol.hello_ack(project, str(self.ext_dir), str(self.data_dir))
        self.send({**frame, "zot_version": "test", **ack})
        return hello, self.read_until("ready")

    def request(self, frame: dict, timeout: float = 5.0) -> dict:
        """Send a request with a fresh id and return its reply.

        Frames the extension sends on its own meanwhile (notes, panels; they
        have no id) are kept in `spontaneous`, as zot shows them apart.
        """
        self.next_id += 1
        frame = {**frame, "id": f"t{self.next_id}"}
        self.send(frame)
        reply = self.read_reply(timeout)
        assert reply.get("id") == frame["id"], (frame, reply)
        return reply

    def command(self, name: str, args: str, timeout: float = 5.0) -> dict:
        return self.request({"type": "command_invoked", "name": name, "args": args}, timeout)

    def tool(self, name: str, args, timeout: float = 5.0) -> dict:
        return self.request({"type": "tool_call", "name": name, "args": args}, timeout)

    def intercept(self, tool_name: str, tool_args, event="tool_call", timeout=5.0) -> dict:
        return self.request(
            {
                "type": "event_intercept",
                "event": event,
                "tool_id": "tool-1",
                "tool_name": tool_name,
                "tool_args": tool_args,
                "step": 1,
            },
            timeout,
        )

    # -- ending --------------------------------------------------------------

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass

    def shutdown(self, timeout: float = 2.0) -> int:
        """zot's shutdown: the frame, stdin closed at once, then wait."""
        try:
            self.send({"type": "shutdown"})
        except BrokenPipeError:
            pass
        self.close_stdin()
        return self.wait(timeout)

    def wait(self, timeout: float = 2.0) -> int:
        return self.proc.wait(timeout=timeout)

    def leftovers(self, wait: float = 0.5) -> list[str]:
        """The processes of the extension still running after up to `wait` s.

        Zombies do not count: a process whose parent exited waits there for
        init to reap it (in a container without an init).
        """
        return self.process.leftovers(wait)

    def group_alive(self) -> bool:
        """Whether any process of the extension is left."""
        return bool(self.process.members())

    def kill(self) -> None:
        self.process.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.kill()
