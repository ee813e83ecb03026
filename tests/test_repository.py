"""The template's own code is lint-clean too: Python and shell scripts."""

from __future__ import annotations

import os
import shutil
import sys

import pytest
from conftest import ROOT, run

BIN = os.path.dirname(sys.executable)
PYTHON = ["tests", "scripts/screenshots", "bench"]
# The build hooks of the generated projects are plain shell files too (a
# hook with Jinja in it, *.jinja, is checked once rendered: test_matrix).
HOOKS = sorted(f"hooks/{p.name}" for p in (ROOT / "hooks").iterdir() if p.suffix != ".jinja")
SHELL = ["scripts/test", "scripts/release", "scripts/check-projects", ".ci/run", *HOOKS]


def tool(name: str) -> str:
    return shutil.which(name, path=BIN) or shutil.which(name) or name


@pytest.mark.parametrize(
    "command",
    [
        [tool("ruff"), "check", "--no-cache", *PYTHON],
        [tool("ruff"), "format", "--check", "--no-cache", *PYTHON],
        [tool("shellcheck"), "-s", "sh", *SHELL],
        [tool("shfmt"), "-d", *SHELL],
    ],
    ids=["ruff-check", "ruff-format", "shellcheck", "shfmt"],
)
def test_repository_code_is_clean(command):
    result = run(command, ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
