"""A lean zot host for timing: raw pipe file descriptors, no reader thread.

The extension is started by the generated smoke-test's own `Process` (its
folder, a process group of its own, pipes, stderr aside), loaded from the
template through tests/host.py, and its hello is answered with the smoke
test's hello_ack. What differs is the reading: a reader thread and a queue
cost tens of microseconds a hand-off, which is noise next to a 1 ms target,
so this driver reads and writes the pipes directly from the calling thread
(poll + os.read); what it times is the pipe, the extension and one
json.loads per reply.
"""

from __future__ import annotations

import json
import os
import select
import sys
import threading
import time
from pathlib import Path
from typing import Self

# The smoke test's package, as every generated project has it in zot/.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "template" / "zot"))
from smoke_test import process, protocol
from smoke_test.protocol import encode

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def hello_ack(ext_dir: Path, data_dir: Path) -> dict:
    frame = protocol.hello_ack(str(ext_dir.parent), str(ext_dir), str(data_dir))
    return {**frame, "zot_version": "bench"}


def command_line(ext_dir: Path) -> list[str]:
    """What zot starts for the extension in `ext_dir`."""
    return process.command_line(str(ext_dir))


class Timeout(Exception):
    pass


class Extension:
    """One running extension. `started` is taken just before the spawn."""

    def __init__(self, argv: list[str], cwd: Path, log: Path, env: dict | None = None):
        self.cwd = Path(cwd)
        self.log = log
        self.process = process.Process(argv, str(cwd), env=env, reader=False)
        self.started = self.process.started
        self.proc = self.process.proc
        assert self.proc.stdin and self.proc.stdout
        self.fd_in = self.proc.stdin.fileno()
        self.fd_out = self.proc.stdout.fileno()
        self._poll = select.poll()
        self._poll.register(self.fd_out, select.POLLIN)
        self._buf = b""
        self._stash: dict[str, dict] = {}  # replies read while waiting for another
        self.rusage = None
        self.last_reply: dict = {}  # the answer round_trip() read last

    # -- reading -------------------------------------------------------------

    def read_line(self, timeout: float = 10.0) -> bytes:
        deadline = time.monotonic() + timeout
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                line, self._buf = self._buf[:end], self._buf[end + 1 :]
                return line
            left = deadline - time.monotonic()
            if left <= 0 or not self._poll.poll(left * 1000):
                raise Timeout(f"no line within {timeout} s")
            data = os.read(self.fd_out, 1 << 16)
            if not data:
                raise EOFError("the extension closed stdout")
            self._buf += data

    def read_frame(self, timeout: float = 10.0) -> dict:
        return json.loads(self.read_line(timeout))

    def read_until(self, frame_type: str, timeout: float = 10.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            frame = self.read_frame(max(0.001, deadline - time.monotonic()))
            if frame.get("type") == frame_type:
                return frame

    def reply(self, request_id: str, timeout: float = 10.0) -> dict:
        """The reply with this id; replies to other ids are kept for later."""
        if request_id in self._stash:
            return self._stash.pop(request_id)
        deadline = time.monotonic() + timeout
        while True:
            frame = self.read_frame(max(0.001, deadline - time.monotonic()))
            if frame.get("id") == request_id:
                return frame
            if "id" in frame:
                self._stash[frame["id"]] = frame

    # -- writing -------------------------------------------------------------

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd_in, view) :]

    def send(self, frame: dict) -> None:
        self.write(encode(frame))

    def handshake(self, data_dir: Path) -> tuple[float, float]:
        """hello, hello_ack, ready: seconds from the spawn to hello and to ready."""
        hello = self.read_frame()
        t_hello = time.monotonic() - self.started
        assert hello.get("type") == "hello", hello
        self.send(hello_ack(self.cwd, data_dir))
        self.read_until("ready", timeout=5)
        return t_hello, time.monotonic() - self.started

    def round_trip(self, frame: dict, timeout: float = 10.0) -> float:
        """Send one request, wait for its answer (in last_reply); seconds."""
        started = time.monotonic()
        self.write(encode(frame))
        reply = self.last_reply = self.reply(frame["id"], timeout)
        elapsed = time.monotonic() - started
        assert reply["type"] in (
            "command_response",
            "tool_result",
            "event_intercept_response",
            "tool_call",
        ), reply
        return elapsed

    def pipelined(self, frames: list[bytes], timeout: float = 120.0) -> float:
        """Write every frame without waiting; seconds until all are answered.

        A writer thread sends while this thread reads, so neither pipe can fill
        up and stall the other side.
        """
        assert not self._buf and not self._stash, "answers still unread"
        payload = b"".join(frames)
        errors: list[BaseException] = []

        def writer() -> None:
            try:
                self.write(payload)
            except OSError as err:
                errors.append(err)

        started = time.monotonic()
        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        answered = 0
        deadline = started + timeout
        while answered < len(frames):
            left = deadline - time.monotonic()
            if left <= 0 or not self._poll.poll(left * 1000):
                raise Timeout(f"{answered} of {len(frames)} answered within {timeout} s")
            data = os.read(self.fd_out, 1 << 20)
            if not data:
                raise EOFError("the extension closed stdout")
            answered += data.count(b"\n")
            tail = data.rfind(b"\n")
            self._buf = data[tail + 1 :] if tail >= 0 else self._buf + data
        elapsed = time.monotonic() - started
        thread.join(5)
        if errors:
            raise errors[0]
        return elapsed

    # -- the process tree ----------------------------------------------------

    def group(self) -> list[int]:
        return group_pids(self.proc.pid)

    # -- ending --------------------------------------------------------------

    def shutdown(self, timeout: float = 5.0) -> float:
        """zot's shutdown: the frame, stdin closed at once; seconds until exit."""
        started = time.monotonic()
        try:
            self.send({"type": "shutdown"})
        except BrokenPipeError:
            pass
        self.proc.stdin.close()
        deadline = started + timeout
        while True:
            pid, status, rusage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                self.rusage = rusage
                return time.monotonic() - started
            if time.monotonic() > deadline:
                raise Timeout(f"still running {timeout} s after shutdown")
            time.sleep(0.0005)

    def close(self) -> None:
        """Kill whatever is left of the process group; keep its stderr in the log."""
        tail = self.process.close()
        try:
            self.proc.stdout.close()
        except OSError:
            pass
        if tail:
            with open(self.log, "a", encoding="utf-8") as log:
                log.write(tail + "\n")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- /proc -------------------------------------------------------------------


def _stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat from field 3 (state) on; the name may hold spaces."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def group_pids(pgid: int) -> list[int]:
    """Every live process of process group `pgid` (zot gives each extension one)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = _stat_fields(int(entry))
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def peak_rss_kib(pid: int) -> int:
    """VmHWM: the peak resident set of one process (since its last exec)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def cpu_ticks(pid: int) -> int:
    """utime + stime of one process, all its threads, in clock ticks."""
    try:
        fields = _stat_fields(pid)
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return int(fields[11]) + int(fields[12])


def cpu_ns(pid: int) -> int:
    """Run time of the live threads of one process from schedstat, in ns."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        return 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
    return total


class TreeSampler:
    """The largest VmHWM seen of each process of a group, over several samples."""

    def __init__(self, pgid: int):
        self.pgid = pgid
        self.peaks: dict[int, int] = {}

    def sample(self) -> None:
        for pid in group_pids(self.pgid):
            self.peaks[pid] = max(self.peaks.get(pid, 0), peak_rss_kib(pid))

    @property
    def total_kib(self) -> int:
        return sum(self.peaks.values())

    @property
    def processes(self) -> int:
        return len(self.peaks)


def group_cpu(pgid: int) -> tuple[float, float]:
    """CPU of a process group: (utime+stime in ms, schedstat run time in ms)."""
    pids = group_pids(pgid)
    ticks = sum(cpu_ticks(pid) for pid in pids)
    ns = sum(cpu_ns(pid) for pid in pids)
    return ticks * 1000 / CLOCK_TICKS, ns / 1e6
