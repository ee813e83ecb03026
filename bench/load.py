#!/usr/bin/env python3
"""A reproducible load: N busy processes beside a benchmark or a test run.

    python bench/load.py 2 -- COMMAND [ARG...]   run COMMAND with two busy processes beside it

Each busy process spins on one core at normal priority. They are stopped by
their pids when the command ends (on an error or Ctrl-C too), and each one
also stops by itself when the process that started it is gone, so even a
`kill -9` of the benchmark leaves none behind. bench/run.py --load uses the
same class.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Self

# The busy process: spins, ignores Ctrl-C (whoever started it stops it) and
# ends when it is orphaned (its parent changes).
SPIN = """\
import os, signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
parent = os.getppid()
while os.getppid() == parent:
    for _ in range(100_000):
        pass
"""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a live process, in seconds (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class Load:
    """`count` busy processes, from __enter__ to __exit__."""

    def __init__(self, count: int):
        self.count = count
        self.procs: list[subprocess.Popen] = []
        self.started = 0.0
        self.cpu: list[float] = []  # CPU seconds each one got, read before the stop
        self.seconds = 0.0  # how long they ran

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def start(self) -> None:
        self.started = time.monotonic()
        for _ in range(self.count):
            self.procs.append(
                subprocess.Popen(
                    [sys.executable, "-S", "-c", SPIN],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                )
            )

    def stop(self) -> None:
        """SIGTERM each by its pid, SIGKILL what is still there after 2 s."""
        if not self.procs:
            return
        self.seconds = time.monotonic() - self.started
        self.cpu = [cpu_seconds(p.pid) for p in self.procs]
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs = []

    def share(self) -> float | None:
        """The mean share of a core each busy process got while it ran (0 to 1)."""
        if not self.cpu or self.seconds <= 0:
            return None
        return sum(self.cpu) / len(self.cpu) / self.seconds

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def raise_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit, so that `finally` and `with` blocks run."""

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def main(argv: list[str]) -> int:
    usage = "usage: python bench/load.py N -- COMMAND [ARG...]"
    if len(argv) < 3 or argv[1] != "--" or not argv[0].isdigit():
        print(usage, file=sys.stderr)
        return 2
    raise_on_sigterm()
    count, command = int(argv[0]), argv[2:]
    with Load(count) as load:
        print(f"load: {count} busy processes (pids {load.pids})", file=sys.stderr, flush=True)
        proc = subprocess.Popen(command)
        try:
            code = proc.wait()
        except BaseException:
            # Ctrl-C reached the command too (same terminal); SIGTERM did not
            if proc.poll() is None:
                proc.terminate()
            proc.wait()
            raise
    share = load.share()
    if share is not None:
        print(f"load: each busy process got {share:.0%} of a core", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
