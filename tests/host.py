"""Drive a generated extension the way zot's host does, for direct checks.

`ExtensionProcess` starts the extension from its manifest (zot's exec
resolution, cwd = extension folder, own process group), answers hello with a
realistic hello_ack, and lets a test send frames and wait for replies.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Self


def resolve_exec(ext_dir: Path, exec_: str) -> str:
    """Resolve a manifest's exec the way zot does."""
    if os.path.isabs(exec_):
        return exec_
    if exec_.startswith(("./", "../")) or "/" in exec_:
        return str(ext_dir / exec_)
    found = shutil.which(exec_)
    if found is None:
        raise FileNotFoundError(f"{exec_} is not on PATH")
    return found


class ExtensionProcess:
    """One running extension with a reader thread on its stdout."""

    def __init__(self, ext_dir: Path, data_dir: Path | None = None, env=None):
        self.ext_dir = Path(ext_dir)
        manifest = json.loads((self.ext_dir / "extension.json").read_text())
        argv = [resolve_exec(self.ext_dir, manifest["exec"]), *manifest.get("args", [])]
        self.data_dir = Path(data_dir) if data_dir else self.ext_dir
        self.stderr_path = self.ext_dir.parent / f".{self.ext_dir.name}-{os.getpid()}-stderr.log"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in kill()
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            argv,
            cwd=self.ext_dir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,
            env=env,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.raw_lines: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw_lines.append(line)
            self.lines.put(line)
        self.lines.put(None)

    # -- reading -------------------------------------------------------------

    def read_frame(self, timeout: float = 5.0) -> dict:
        """The next stdout line as a JSON object (fails on anything else)."""
        line = self.lines.get(timeout=timeout)
        if line is None:
            raise EOFError(f"extension closed stdout; stderr: {self.stderr()}")
        frame = json.loads(line)
        assert isinstance(frame, dict), f"not a JSON object: {line!r}"
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
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    # -- writing -------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, frame: dict) -> None:
        self.send_raw(json.dumps(frame).encode() + b"\n")

    def handshake(self, **ack) -> tuple[dict, list[dict]]:
        """Read hello, send hello_ack, return (hello, frames up to ready)."""
        hello = self.read_frame()
        self.send(
            {
                "type": "hello_ack",
                "protocol_version": 1,
                "capabilities": ["call_tool"],
                "zot_version": "test",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "cwd": str(self.ext_dir.parent),
                "extension_dir": str(self.ext_dir),
                "data_dir": str(self.data_dir),
                **ack,
            }
        )
        return hello, self.read_until("ready")

    def request(self, frame: dict, timeout: float = 5.0) -> dict:
        """Send a request with a fresh id and return its reply."""
        self.next_id += 1
        frame = {**frame, "id": f"t{self.next_id}"}
        self.send(frame)
        reply = self.read_frame(timeout)
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

    def group_alive(self) -> bool:
        """Whether any process of the extension's process group is left."""
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def kill(self) -> None:
        if self.group_alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=5)
        self._stderr.close()
        self.stderr_path.unlink(missing_ok=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.kill()
