"""The build hook: idempotent, and a clear hint when a toolchain is missing."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from conftest import CAPABILITIES, HANDLER, LANGUAGES, run

# What each language's build needs; hiding it must give an install hint.
TOOLCHAIN = {"python": "python3", "shell": "jq"}


def bare_path(tmp_path: Path, hide: str) -> str:
    """A PATH with the basic tools a build uses, minus `hide`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ["sh", "bash", "dirname", "chmod", "python3", "jq", "env", "cat", "sed"]:
        found = shutil.which(tool)
        if found and tool != hide:
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


@pytest.mark.parametrize("language", LANGUAGES)
def test_build_is_idempotent_and_sets_the_exec_bit(projects, tmp_path, language):
    project = projects.fresh_copy(tmp_path, language, CAPABILITIES)
    handler = project / HANDLER[language]
    handler.chmod(handler.stat().st_mode & ~(stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    for _ in range(2):
        result = run(["./build"], project)
        assert result.returncode == 0, result.stderr
        assert "ready" in result.stdout
    assert os.access(handler, os.X_OK)
    assert not (project / "__pycache__").exists()


@pytest.mark.parametrize("language", LANGUAGES)
def test_missing_toolchain_gives_an_install_hint(projects, tmp_path, language):
    project = projects.fresh_copy(tmp_path, language, CAPABILITIES)
    env = {**os.environ, "PATH": bare_path(tmp_path, TOOLCHAIN[language])}
    result = run(["sh", "./build"], project, env=env)
    assert result.returncode != 0
    assert f"{TOOLCHAIN[language]} not found" in result.stderr
    assert "install" in result.stderr.lower()
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("language", LANGUAGES)
def test_syntax_errors_fail_the_build(projects, tmp_path, language):
    project = projects.fresh_copy(tmp_path, language, CAPABILITIES)
    handler = project / HANDLER[language]
    handler.write_text(handler.read_text() + "\n(((\n")
    result = run(["./build"], project)
    assert result.returncode != 0
