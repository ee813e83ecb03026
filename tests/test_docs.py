"""The documentation site builds without warnings (broken links fail)."""

from __future__ import annotations

import os
import sys

from conftest import ROOT, run


def test_docs_build_strict(tmp_path):
    mkdocs = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = run(mkdocs, ROOT, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "index.html").is_file()
