"""The benchmark (bench/run.py) runs and writes a well-formed report.

Performance is measured, not asserted: this only keeps the benchmark from
rotting. A quick run of the Python variant, with the floors it compares with.
"""

from __future__ import annotations

import json
import re
import sys

from conftest import ROOT, run


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


def test_quick_bench_of_python_writes_a_well_formed_report(tmp_path):
    out = tmp_path / "out"
    # with pytest made unimportable: the benchmark needs none of the suite's tools
    no_pytest = (
        "import runpy, sys; sys.modules['pytest'] = None; sys.argv = sys.argv[1:];"
        " runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    bench = [sys.executable, "-c", no_pytest, str(ROOT / "bench" / "run.py"), "--quick"]
    bench += ["--only", "python"]
    result = run([*bench, "--out", str(out)], ROOT, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr

    markdown = (out / "results.md").read_text()
    assert re.match(r"Measured \d{4}-\d\d-\d\d on .+, \d+ cores", markdown)
    for version in ("Python 3.", "Node.js", "go", "jq-", "bash"):
        assert version in markdown.split("\n", 1)[0]

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

    targets = table(markdown, "| variant | target")[2:]
    assert targets and all(row[3] in ("✅ met", "❌ missed") for row in targets), targets
    for row in targets:  # the console shows the same verdicts
        verdict = "met" if row[3] == "✅ met" else "MISSED"
        assert f"{verdict}  {row[0]}: {row[1]}: measured {row[2]}" in result.stdout

    assert (out / "startup.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads((out / "results.json").read_text())
    assert report["quick"] is True
    assert {s["key"] for s in report["subjects"]} >= {"floor", "pipe", "python"}
    assert not any(s["error"] for s in report["subjects"])
