"""Go-specific checks: the guard is the Python skeleton's, string for string."""

from __future__ import annotations

import importlib.util
import json

from conftest import run


def python_guard(projects) -> list[list[str]]:
    """(pattern, what, instead) of the rendered Python skeleton's guard."""
    project = projects.get("python", ["guard"])
    spec = importlib.util.spec_from_file_location("python_guard", project / "guard.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [list(entry) for entry in module.DANGEROUS]


DUMP_TEST = """package main

import (
\t"encoding/json"
\t"fmt"
\t"testing"
)

func TestDumpGuard(t *testing.T) {
\tvar out [][]string
\tfor _, d := range dangerous {
\t\tout = append(out, []string{d.pattern.String(), d.what, d.instead})
\t}
\tline, _ := json.Marshal(out)
\tfmt.Printf("GUARD %s\\n", line)
}
"""


def test_go_guard_has_the_python_guards_patterns_and_texts(projects, tmp_path):
    project = projects.fresh_copy(tmp_path, "go", ["guard"])
    (project / "dump_test.go").write_text(DUMP_TEST)
    result = run(["go", "test", "-count=1", "-run", "TestDumpGuard", "-v", "."], project)
    assert result.returncode == 0, result.stdout + result.stderr
    dumped = next(line for line in result.stdout.splitlines() if line.startswith("GUARD "))
    assert json.loads(dumped.removeprefix("GUARD ")) == python_guard(projects)
