"""smoke.json's `"cancel": true` for every tool: zot sends tool_cancel once the
call has started (it opened a panel, a program of its own runs, or
`after_ms` passed); the case passes when no result comes afterwards and
nothing the call started is left running.

The extension here is a script of a few lines that speaks the protocol by
hand, one tool whose `mode` says how it behaves, so that each way of getting
cancellation wrong can be had on purpose (and no toolchain is built).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

from conftest import ROOT, run

TOOL_TIMEOUT = 60.0  # zot's for a tool call, which the smoke test waited before

# Modes of the tool `work`:
#   quick     answers at once (the sample arguments: the probe of every tool)
#   long      runs `sleep 300` and stops it on tool_cancel, sending nothing
#   leaky     runs `sleep 300` in a session of its own, and leaves it on tool_cancel
#   waits     runs nothing and waits, sending nothing on tool_cancel
#   stubborn  runs nothing and waits, and answers all the same on tool_cancel
#   panel     opens a panel and waits; on tool_cancel closes it, sending nothing
# Every tool_cancel is logged to cancels.jsonl: the mode, the ms since the call
# and the keys its panel got.
EXTENSION = r"""#!/usr/bin/env python3
import json, os, subprocess, sys, time

def send(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()

def result(rid, text, is_error=False):
    send({"type": "tool_result", "id": rid, "is_error": is_error,
          "content": [{"type": "text", "text": text}]})

CAPS = ["tools", "panels"] + ([] if "--no-cancel" in sys.argv else ["tool_cancel"])
send({"type": "hello", "name": "cancels", "version": "1.0.0", "capabilities": CAPS})
SCHEMA = {"type": "object", "required": ["mode"],
          "properties": {"mode": {"type": "string", "examples": ["quick"]}}}
calls = {}  # id -> (mode, when, its program, its panel's keys)
for line in sys.stdin:
    try:
        frame = json.loads(line)
    except ValueError:
        continue
    kind = frame.get("type")
    if kind == "hello_ack":
        send({"type": "register_tool", "name": "work", "description": "works", "schema": SCHEMA})
        send({"type": "ready"})
    elif kind == "tool_call":
        rid, mode = frame["id"], frame["args"].get("mode")
        if not isinstance(mode, str):
            result(rid, "mode must be a string", is_error=True)
            continue
        if mode == "quick":
            result(rid, "done")
            continue
        program = None
        if mode in ("long", "leaky"):
            program = subprocess.Popen(["sleep", "300"], start_new_session=mode == "leaky")
        elif mode == "panel":
            send({"type": "open_panel", "panel": {"id": rid, "title": "Wait", "lines": ["..."]}})
        calls[rid] = (mode, time.monotonic(), program, [])
    elif kind == "panel_key" and frame["panel_id"] in calls:
        calls[frame["panel_id"]][3].append(frame.get("text") or frame["key"])
    elif kind == "tool_cancel" and frame["id"] in calls:
        mode, when, program, keys = calls.pop(frame["id"])
        took = round((time.monotonic() - when) * 1000)
        with open("cancels.jsonl", "a") as log:
            log.write(json.dumps({"mode": mode, "ms": took, "keys": keys}) + "\n")
        if mode == "long":
            program.terminate()
            program.wait()
        elif mode == "stubborn":
            result(frame["id"], "finished anyway")
        elif mode == "panel":
            send({"type": "panel_close", "panel_id": frame["id"]})
    elif kind == "shutdown":
        break
"""


def project(tmp_path: Path, tools: list[dict], *args: str) -> Path:
    """The extension in a folder of its own, with the smoke test and these
    smoke.json tool cases."""
    folder = tmp_path / "ext"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "template" / "smoke-test", folder / "smoke-test")
    shutil.copytree(ROOT / "template" / "zot" / "smoke_test", folder / "zot" / "smoke_test")
    (folder / "main.py").write_text(EXTENSION)
    (folder / "main.py").chmod(0o755)
    manifest = {"name": "cancels", "version": "1.0.0", "exec": "./main.py", "args": list(args)}
    (folder / "extension.json").write_text(json.dumps(manifest))
    (folder / "smoke.json").write_text(json.dumps({"tools": tools}))
    return folder


def case(mode: str, **fields) -> dict:
    return {"name": "work", "args": {"mode": mode}, "cancel": True, **fields}


def smoke_test(folder: Path, *args: str) -> tuple[dict, float]:
    """The smoke test's checks by label, and how long it ran."""
    began = time.monotonic()
    result = run(["./smoke-test", "--json", *args], folder, timeout=3 * TOOL_TIMEOUT)
    took = time.monotonic() - began
    checks = json.loads(result.stdout)["checks"]
    return {check["check"]: check for check in checks}, took


def cases_of(checks: dict) -> dict:
    """smoke.json's tool cases by their mode: status and detail."""
    found = {}
    for label, check in checks.items():
        match = re.match(r'smoke\.json: tool work \{"mode": "(\w+)"\}', label)
        if match:
            found[match[1]] = check
    return found


def cancels(folder: Path) -> dict:
    """The extension's log of the tool_cancel frames it got, by mode."""
    lines = (folder / "cancels.jsonl").read_text().splitlines()
    return {entry["mode"]: entry for entry in map(json.loads, lines)}


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, exited but not reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def test_a_call_that_stops_its_program_passes_and_one_that_leaves_it_fails(tmp_path):
    folder = project(tmp_path, [case("long", after_ms=5000), case("leaky")])
    checks, _ = smoke_test(folder)
    got = cases_of(checks)
    assert got["long"]["status"] == "pass", got
    assert "once it ran sleep 300" in got["long"]["detail"], got
    assert "nothing it started left running" in got["long"]["detail"], got
    # cancelled as soon as its program ran, long before after_ms
    assert cancels(folder)["long"]["ms"] < 5000
    leaky = got["leaky"]
    assert leaky["status"] == "fail", got
    named = re.search(r"left running after tool_cancel: (\d+) sleep 300$", leaky["detail"])
    assert named, leaky
    pid = int(named[1])
    try:
        assert not alive(pid), "the smoke test kills what the call left"
    finally:
        if alive(pid) and Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x00300\x00":
            os.kill(pid, 9)
    # the other checks are the extension's own: they pass
    others = [c for c in checks.values() if c["status"] == "fail" and c is not leaky]
    assert not others, others


def test_an_answer_before_the_cancel_or_after_it_fails(tmp_path):
    folder = project(tmp_path, [case("quick", after_ms=5000), case("stubborn")])
    checks, _ = smoke_test(folder)
    got = cases_of(checks)
    assert got["quick"]["status"] == "fail"
    assert got["quick"]["detail"].startswith("answered before it could be cancelled"), got
    assert got["stubborn"]["status"] == "fail"
    assert got["stubborn"]["detail"] == "sent a result after tool_cancel (zot drops it)", got
    # said once, on the case's own line
    assert not [label for label in checks if label.startswith("tool_result")], list(checks)


def test_after_ms_says_when_a_call_that_shows_nothing_is_cancelled(tmp_path):
    tools = [case("waits", after_ms=1500), case("panel", after_ms=20000)]
    folder = project(tmp_path, tools)
    checks, _ = smoke_test(folder)
    got = cases_of(checks)
    assert got["waits"]["status"] == "pass", got
    assert "after 1500 ms" in got["waits"]["detail"], got
    assert got["panel"]["status"] == "pass", got
    assert "once its panel opened" in got["panel"]["detail"], got
    logged = cancels(folder)
    # the extension's clock starts when the call reaches it: a little later
    assert logged["waits"]["ms"] >= 1500 - 100, logged
    assert logged["panel"]["ms"] < 20000, logged
    # without after_ms: 300 ms
    (folder / "smoke.json").write_text(json.dumps({"tools": [case("waits")]}))
    (folder / "cancels.jsonl").unlink()
    checks, _ = smoke_test(folder)
    assert cases_of(checks)["waits"]["status"] == "pass", checks
    assert "after 300 ms" in cases_of(checks)["waits"]["detail"], checks
    assert cancels(folder)["waits"]["ms"] >= 300 - 100


def test_a_call_without_a_panel_is_not_waited_for_until_the_tool_timeout(tmp_path):
    folder = project(tmp_path, [])
    _, without = smoke_test(folder)
    (folder / "smoke.json").write_text(json.dumps({"tools": [case("waits")]}))
    checks, took = smoke_test(folder)
    assert cases_of(checks)["waits"]["status"] == "pass", checks
    # before, the case waited for a panel for the whole tool timeout
    assert took - without < TOOL_TIMEOUT / 4, (took, without)


def test_keys_go_to_the_panel_before_the_cancel(tmp_path):
    folder = project(tmp_path, [case("panel", keys=["down", "y"])])
    checks, _ = smoke_test(folder)
    got = cases_of(checks)
    assert got["panel"]["status"] == "pass", got
    assert "after its keys" in got["panel"]["detail"], got
    assert cancels(folder)["panel"]["keys"] == ["down", "y"]


def test_after_ms_needs_cancel_and_no_keys(tmp_path):
    folder = project(tmp_path, [{"name": "work", "args": {"mode": "quick"}, "after_ms": 100}])
    checks, _ = smoke_test(folder)
    assert checks["smoke.json: tools[0] work"]["status"] == "fail"
    assert 'after_ms goes with "cancel": true' in checks["smoke.json: tools[0] work"]["detail"]
    (folder / "smoke.json").write_text(json.dumps({"tools": [case("waits", after_ms=-1)]}))
    checks, _ = smoke_test(folder)
    assert "after_ms must be 0 or more" in checks["smoke.json: tools[0] work"]["detail"]


def test_without_tool_cancel_in_hello_or_on_zot_0_1_62_a_cancel_case_says_why(tmp_path):
    folder = project(tmp_path, [case("waits")], "--no-cancel")
    checks, _ = smoke_test(folder)
    got = cases_of(checks)["waits"]
    assert got["status"] == "fail"
    assert got["detail"].startswith("hello does not list tool_cancel"), got
    folder = project(tmp_path / "old", [case("waits")])
    checks, _ = smoke_test(folder, "--old-host")
    got = cases_of(checks)["waits"]
    assert got["status"] == "skip" and "cancels nothing" in got["detail"], got


# ./smoke-test as on a system without /proc (macOS)
NO_PROC = """import os, sys
isdir = os.path.isdir
os.path.isdir = lambda path: path != "/proc/self" and isdir(path)
sys.path.insert(0, "zot")
from smoke_test.cli import main
sys.exit(main(["--json"]))
"""


def test_without_proc_the_cancel_is_checked_and_what_was_left_is_not(tmp_path):
    folder = project(tmp_path, [case("long", after_ms=500), case("stubborn")])
    result = run([sys.executable, "-c", NO_PROC], folder)
    got = cases_of({c["check"]: c for c in json.loads(result.stdout)["checks"]})
    assert got["long"]["status"] == "pass", got
    assert "after 500 ms" in got["long"]["detail"], got  # no process seen
    assert got["long"]["detail"].endswith("(no /proc: what it started is not checked)")
    assert got["stubborn"]["status"] == "fail", got
