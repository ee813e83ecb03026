"""The interactive copier flow, answered by keystrokes in a real terminal."""

from __future__ import annotations

import filecmp
import os
import shutil
import sys
from pathlib import Path

import pexpect
from conftest import ROOT, render

DOWN, SPACE, ENTER, CLEAR = "\x1b[B", " ", "\r", "\x15"  # arrow down, space, enter, ctrl-u


def differences(left: Path, right: Path) -> list[str]:
    """Files that differ between two trees (recursively)."""
    compared = filecmp.dircmp(left, right)
    found = [*compared.left_only, *compared.right_only, *compared.diff_files, *compared.funny_files]
    for sub in compared.common_dirs:
        found += [f"{sub}/{name}" for name in differences(left / sub, right / sub)]
    return found


def test_keystrokes_give_the_same_project_as_data_answers(tmp_path):
    typed = tmp_path / "typed" / "tty-ext"
    copier = shutil.which("copier", path=os.path.dirname(sys.executable)) or "copier"
    child = pexpect.spawn(
        copier,
        ["copy", "--vcs-ref", "HEAD", str(ROOT), str(typed)],
        env={**os.environ, "TERM": "xterm", "NO_COLOR": "1"},
        dimensions=(50, 200),
        encoding="utf-8",
        timeout=30,
    )
    try:
        child.expect("Extension id")
        child.send(ENTER)  # default: the folder's name
        child.expect("One line that says what the extension does")
        child.send(CLEAR + "Typed by hand, with 'quotes' & é" + ENTER)
        child.expect("First version")
        child.send(ENTER)
        child.expect("Language of the handler")
        child.send(DOWN + ENTER)  # python -> shell
        child.expect("What the extension does")
        # commands and tools start selected: drop tools, add guard
        child.send(DOWN + SPACE + DOWN + DOWN + SPACE + ENTER)
        child.expect("Name of the slash command")
        child.send(ENTER)
        child.expect("Add a GitHub Actions workflow")
        child.send(ENTER)  # default: yes
        child.expect("Open a pull request each week")
        child.send(ENTER)  # default: no
        child.expect("Next steps:")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before

    expected = render(
        tmp_path / "data" / "tty-ext",
        name="tty-ext",
        description="Typed by hand, with 'quotes' & é",
        language="shell",
        capabilities=["commands", "guard"],
    )
    assert differences(typed, expected) in ([], [".copier-answers.yml"])

    # The answers differ at most in _commit: copier commits a dirty checkout anew
    def answers(project: Path) -> list[str]:
        lines = (project / ".copier-answers.yml").read_text().splitlines()
        return [line for line in lines if not line.startswith("_commit:")]

    assert answers(typed) == answers(expected)
    assert "- guard" in answers(typed)
