"""The guard benchmark (bench/guard.py) scores, lists misses and writes its page.

Behaviour only, no timing: a quick run of the Python runtime, without
cc-safety-net, on a small table with two expectations made wrong on purpose.
"""

from __future__ import annotations

import json
import re
import sys

from conftest import ROOT, run

BEGIN = "<!-- Written by bench/guard.py from here to the end marker: edit above. -->"
END = "<!-- End of what bench/guard.py writes. -->"


def test_quick_run_scores_the_table_and_rewrites_only_its_part_of_the_page(tmp_path):
    cases = tmp_path / "guard-cases.json"
    cases.write_text(
        json.dumps(
            {
                "cwd": "/home/user/project",
                "refused": {"rm -rf /": "no-such-rule", "ls -la": "made-up-rule"},
                "allowed": ["git status", "rm -rf ~"],
            }
        )
    )
    page = tmp_path / "guard.md"
    page.write_text(f"# Kept\n\nWritten by hand.\n\n{BEGIN}\n\nold figures\n\n{END}\n\nKept too.\n")
    bench = [sys.executable, str(ROOT / "bench" / "guard.py"), "--quick", "--only", "python"]
    result = run([*bench, "--cases", str(cases), "--out", str(page)], ROOT, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr

    text = page.read_text()
    assert text.startswith("# Kept\n\nWritten by hand.\n\n" + BEGIN)
    assert text.endswith(END + "\n\nKept too.\n")
    assert "old figures" not in text
    assert "cc-safety-net" not in text.split(BEGIN)[1]
    assert "Quick run" in text

    assert "| Python | 1/2 (50.0%) | 1/2 (50.0%) | 2/4 (50.0%) |" in text
    assert "- `made-up-rule` (1): `ls -la`" in text  # a refused case allowed
    alarm = next(line for line in text.splitlines() if "`rm -rf ~`" in line)
    assert re.fullmatch(r"- `[a-z-]+` \(1\): `rm -rf ~`", alarm), alarm  # by the rule given
    assert re.search(r"- `rm -rf /`: `no-such-rule` → `[a-z-]+`", text)  # right verdict, other rule

    costs = [line for line in text.splitlines() if line.startswith("| Python | ")][1:]
    assert [line.split(" | ")[1] for line in costs] == ["round trip", "in process"]
    for line in costs:
        assert len(re.findall(r"\d+\.\d+ ms", line)) == 4, line
    assert "- Python: realistic allowed, dense allowed" in text
    assert re.search(r"Python +1/2 \(50\.0%\) +1/2 \(50\.0%\) +2/4 \(50\.0%\)", result.stdout)
