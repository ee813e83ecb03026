"""./smoke-test --watch: an edit, and the build and the smoke test run again."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time

import pytest


def lines_of(proc: subprocess.Popen) -> queue.Queue:
    out: queue.Queue = queue.Queue()

    def read() -> None:
        for line in proc.stdout:
            out.put(line)

    threading.Thread(target=read, daemon=True).start()
    return out


def wait_for(out: queue.Queue, text: str, seen: list[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = out.get(timeout=0.5)
        except queue.Empty:
            continue
        seen.append(line)
        if text in line:
            return
    pytest.fail(f"no {text!r} within {timeout} s:\n{''.join(seen)}")


@pytest.mark.parametrize(("language", "edited"), [("python", "main.py"), ("go", "main.go")])
def test_an_edit_builds_and_smoke_tests_again(projects, tmp_path, language, edited):
    project = projects.fresh_copy(tmp_path, language, ["commands"])
    # a process group of our own, so that stopping it stops what it started
    proc = subprocess.Popen(
        ["./smoke-test", "--watch"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen: list[str] = []
    try:
        out = lines_of(proc)
        wait_for(out, "waiting for a change", seen)
        source = project / edited
        source.write_text(source.read_text().replace("concretely", "precisely"))
        wait_for(out, f"watch: {edited} changed", seen)
        wait_for(out, "watch: ./build", seen)
        wait_for(out, "0 failed", seen)
        wait_for(out, "waiting for a change", seen)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=10)
    assert sum("smoke test of demo-ext" in line for line in seen) == 2, "".join(seen)
