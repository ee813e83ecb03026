"""The interactive copier flow, answered by keystrokes in a real terminal; and
./smoke-test --interactive, whose ctrl-c cancels a tool call and saves a case
that replays."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pexpect
from conftest import ROOT, differences, render
from test_smoke_test_cancel import cancels, cases_of, project, smoke_test

DOWN, SPACE, ENTER, CLEAR = "\x1b[B", " ", "\r", "\x15"  # arrow down, space, enter, ctrl-u


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
        child.expect("Your team's guard policy")
        child.send(ENTER)  # default: none
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


def test_a_tool_call_stopped_with_ctrl_c_is_saved_as_a_case_that_replays(tmp_path):
    """ctrl-c while a call runs a program, while it waits on nothing, and in
    its panel after a key: each saved, each passing when ./smoke-test replays
    it (the raw extension of test_smoke_test_cancel)."""
    folder = project(tmp_path, [])
    child = pexpect.spawn(
        str(folder / "smoke-test"),
        ["--interactive"],
        cwd=str(folder),
        env={**os.environ, "TERM": "xterm", "NO_COLOR": "1"},
        dimensions=(50, 160),
        encoding="utf-8",
        timeout=20,
    )
    try:
        for mode in ("long", "waits"):
            child.expect("zot> ")
            child.send(f'tool work {{"mode": "{mode}"}}\r')
            time.sleep(1.0)  # the person waits a while
            child.sendcontrol("c")
            child.expect("cancelled: zot sent tool_cancel")
        child.expect("zot> ")
        child.send('tool work {"mode": "panel"}\r')
        child.expect("┌─ Wait")
        child.expect("keys go to the panel")
        child.send("y")
        time.sleep(0.5)  # the key reaches the panel
        child.sendcontrol("c")
        child.expect("cancelled: zot sent tool_cancel")
        child.expect("zot> ")
        child.send("save\r")
        child.expect("saved 3 cases")
        child.send("quit\r")
        child.expect("shut down the way zot does")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before
    saved = {
        case["args"]["mode"]: case
        for case in json.loads((folder / "smoke.json").read_text())["tools"]
    }
    assert all(case["cancel"] is True for case in saved.values()), saved
    assert saved["panel"]["keys"] == ["y"] and "after_ms" not in saved["panel"], saved
    # half of the second or so the person waited: the call was still running
    for mode in ("long", "waits"):
        assert 0 < saved[mode]["after_ms"] <= 2000 and "keys" not in saved[mode], saved
    (folder / "cancels.jsonl").unlink()
    checks, _ = smoke_test(folder)
    replayed = cases_of(checks)
    assert {mode: check["status"] for mode, check in replayed.items()} == dict.fromkeys(
        ("long", "waits", "panel"), "pass"
    ), replayed
    assert "once it ran sleep 300" in replayed["long"]["detail"], replayed
    assert f"after {saved['waits']['after_ms']} ms" in replayed["waits"]["detail"], replayed
    assert cancels(folder)["panel"]["keys"] == ["y"]
