"""The benchmark (bench/run.py) runs and writes a well-formed report.

Performance is measured, not asserted: this only keeps the benchmark from
rotting. A quick run of the Python variant, with the floors it compares with,
once with nothing beside it and once with a busy process (--load); and the
busy processes stopped by the benchmark whatever ends it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT, run

# with pytest made unimportable: the benchmark needs none of the suite's tools
NO_PYTEST = (
    "import runpy, sys; sys.modules['pytest'] = None; sys.argv = sys.argv[1:];"
    " runpy.run_path(sys.argv[0], run_name='__main__')"
)
BENCH = [sys.executable, "-c", NO_PYTEST, str(ROOT / "bench" / "run.py")]
TIME = r"([\d.]+ ms|timeout)"


def table(markdown: str, header_start: str) -> list[list[str]]:
    """The rows (cells) of the Markdown table whose header starts so."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def spinning(pid: int) -> bool:
    """Whether `pid` is one of bench/load.py's busy processes, still running."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z" and any(b"getppid" in arg for arg in argv)


def test_quick_bench_of_python_writes_a_well_formed_report(tmp_path):
    out = tmp_path / "out"
    bench = [*BENCH, "--quick", "--only", "python", "--load", "0,1", "--out", str(out)]
    result = run(bench, ROOT, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr

    markdown = (out / "results.md").read_text()
    assert re.match(r"Measured \d{4}-\d\d-\d\d on .+, \d+ cores", markdown)
    for version in ("Python 3.", "Node.js", "go", "jq-", "bash"):
        assert version in markdown.split("\n", 1)[0]
    assert "nothing started beside it" in markdown
    assert re.search(
        r"1 busy process beside it \(`--load 1`, each given \d+% of a core\)", markdown
    )

    rows = table(markdown, "| | spawn→hello")
    header, separator, body = rows[0], rows[1], rows[2:]
    assert all(re.fullmatch(r"-+", cell) for cell in separator)
    assert all(len(row) == len(header) for row in body), body
    by_label = {row[0]: row for row in body}
    assert set(by_label) >= {
        "floor: minimal Go",
        "floor: `cat` echo (per call)",
        "Python (./main.py)",
    }
    python = dict(zip(header, by_label["Python (./main.py)"], strict=True))
    assert re.fullmatch(r"[\d.]+ ms \([\d.]+×\)", python["spawn→ready p50"])
    assert re.fullmatch(r"[\d.]+ ms \([\d.]+×\)", python["tool p50"])
    assert re.fullmatch(r"[\d,]+/s", python["pipelined tool calls"])
    assert re.fullmatch(r"[\d.]+ ms", python["intercept during 2 s tool (worst)"])
    assert re.fullmatch(r"[\d.]+ MiB \([\d.]+×\)", python["peak RSS"])

    # every load: the figures side by side, the guard's new ones for the variant
    rows = table(markdown, "| | load |")
    header, body = rows[0], rows[2:]
    assert all(len(row) == len(header) for row in body), body
    loads = {(row[0], row[1]): dict(zip(header, row, strict=True)) for row in body}
    for load in ("no load", "--load 1"):
        python = loads["Python (./main.py)", load]
        assert re.fullmatch(r"[\d.]+ ms", python["spawn→ready p50"])
        assert re.fullmatch(r"[\d,]+/s", python["pipelined tool calls"])
        for title in ("first intercept after ready: p50 / worst", "stop after ready: p50 / worst"):
            assert re.fullmatch(rf"{TIME} / {TIME}( \(\d+ past 2 s\))?", python[title]), title
        title = "1 MiB policy: first decision (worst) / later p50 / later worst"
        assert re.fullmatch(rf"{TIME} / {TIME} / {TIME}", python[title]), title
        floor = loads["floor: minimal Go", load]
        assert floor["first intercept after ready: p50 / worst"] == "— / —"  # no guard

    # start-up beside the language's floor and without the guard, each load
    rows = table(markdown, "| | load | floor |")
    header, body = rows[0], rows[2:]
    starts = {(row[0], row[1]): dict(zip(header, row, strict=True)) for row in body}
    for load in ("no load", "--load 1"):
        python = starts["Python (./main.py)", load]
        assert python["floor"] == "`python3 -c pass`"
        for title in ("floor p50", "without guard p50", "with guard p50"):
            assert re.fullmatch(r"[\d.]+ ms", python[title]), title
        for title in ("÷ floor", "÷ without guard"):
            assert re.fullmatch(r"[\d.]+×", python[title]), title
        drift = r"[\d.]+×" if load != "no load" else "—"
        for title in ("÷ floor vs idle", "÷ without guard vs idle"):
            assert re.fullmatch(drift, python[title]), title
        assert starts["Python (no bytecode cache)", load]["floor"].endswith(" -c pass`")

    rows = table(markdown, "| variant | target")
    assert rows[0] == ["variant", "target", "no load", "--load 1"]
    targets = rows[2:]
    assert {row[1] for row in targets} >= {
        "first intercept after ready (worst) < 5 s, zot's limit",
        "stop after ready (worst) < 200 ms",
        "later decisions with a 1 MiB policy (worst) < 500 ms",
        "ready with the guard ≤ 1.3× without it",
        "ready ≤ 2.5× `python3 -c pass`",
        "floor ratio ≤ 1.5× the idle one",
    }
    for row in targets:  # the console shows the same verdicts
        for cell, where in zip(row[2:], ["", " (--load 1)"], strict=True):
            shown, mark = cell.rsplit(" ", 1)
            if mark == "n/a":  # a ratio to the idle one, in the idle round
                assert not where and row[1].endswith("the idle one"), row
                continue
            assert mark in ("✅", "❌"), row
            verdict = "met" if mark == "✅" else "MISSED"
            assert f"{verdict}  {row[0]}: {row[1]}: measured {shown}{where}\n" in result.stdout

    assert (out / "startup.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads((out / "results.json").read_text())
    assert report["quick"] is True
    assert 1024 * 1024 - 4096 < report["policy"]["bytes"] <= 1024 * 1024
    idle, loaded = report["rounds"]
    assert (idle["load"], idle["pids"], loaded["load"]) == (0, [], 1)
    for r in report["rounds"]:
        assert {s["key"] for s in r["subjects"]} >= {"floor", "pipe", "python"}
        assert not any(s["error"] for s in r["subjects"])
        python = next(s["results"] for s in r["subjects"] if s["key"] == "python")
        assert python["policy_decisions"] >= 7  # every probe command, verdicts checked
    # the busy process ran beside the second round, and is gone
    assert len(loaded["pids"]) == 1 and loaded["share"] > 0.05, loaded
    assert not any(spinning(pid) for pid in loaded["pids"])


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_bench_stops_its_busy_processes(tmp_path, signum):
    bench = [*BENCH, "--quick", "--only", "python", "--load", "2", "--out", str(tmp_path)]
    proc = subprocess.Popen(
        bench, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        work, pids = None, []
        for line in proc.stdout:
            if line.startswith("work folder: "):
                work = line.split(": ", 1)[1].strip()
            if match := re.match(
                r"load: 2 busy processes beside the benchmark \(pids (.+)\)", line
            ):
                pids = json.loads(match[1])
                break
        assert len(pids) == 2, pids
        deadline = time.monotonic() + 10  # a busy machine may be slow to show them
        while not all(spinning(pid) for pid in pids):
            assert time.monotonic() < deadline, f"the busy processes {pids} are not running"
            time.sleep(0.05)
        proc.send_signal(signum)
        assert proc.wait(30) == (130 if signum == signal.SIGINT else 128 + signum)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(0.1)
    assert not any(spinning(pid) for pid in pids)
    assert work and not os.path.exists(work)


def test_load_runs_a_command_beside_busy_processes_and_stops_them():
    """bench/load.py N -- COMMAND: the command sees N busy siblings; none is left."""
    siblings = (
        "import os\n"
        "parent = os.getppid()\n"
        "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
        "    try:\n"
        "        stat = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()\n"
        "        argv = open(f'/proc/{pid}/cmdline', 'rb').read()\n"
        "    except OSError:\n"
        "        continue\n"
        "    if int(stat[1]) == parent and b'getppid' in argv and int(pid) != os.getpid():\n"
        "        print(pid)\n"
    )
    load = [sys.executable, str(ROOT / "bench" / "load.py")]
    result = run([*load, "2", "--", sys.executable, "-c", siblings], ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    pids = [int(pid) for pid in result.stdout.split()]
    assert len(pids) == 2, result.stdout
    assert not any(spinning(pid) for pid in pids)
    assert re.search(r"each busy process got \d+% of a core", result.stderr)

    failing = run([*load, "1", "--", sys.executable, "-c", "raise SystemExit(3)"], ROOT)
    assert failing.returncode == 3  # the command's status
