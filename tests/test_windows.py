"""Which flavours zot for Windows can start. There is no Windows here: each
generated manifest's exec is resolved with zot's rules as Windows applies
them (a backslash separator, PATHEXT's extensions, programs and batch files
only), by the smoke test's resolve_exec (the one it uses on Windows),
against what ./build leaves there (Go's, run for windows/amd64)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import copier
import copier._main
import pytest
from conftest import run
from flavours import FLAVOURS, LANGUAGES, ROOT
from host import process

# What zot for Windows starts for each flavour, beside a PATH with node and
# python on it: the program's file name, or the start error's text.
STARTS = {
    "python": "main.py is a script",
    "shell": "main.sh is a script",
    "go": "start.exe",
    "go-sdk": "start.exe",
    "typescript": "node.exe",
    "typescript-tsx": "node.exe",
}


@pytest.fixture
def windows_path(tmp_path) -> Path:
    """A folder on PATH as on Windows, with node and python in it."""
    folder = tmp_path / "Program Files"
    folder.mkdir()
    for program in ("node.exe", "python.exe", "py.exe"):
        (folder / program).write_bytes(b"MZ")
    return folder


def resolve_on_windows(ext_dir: Path, exe: str, path: Path | str) -> str:
    """resolve_exec's program for exe, as on Windows with PATH=path."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", str(path))
        patch.delenv("PATHEXT", raising=False)
        return process.resolve_exec(str(ext_dir), exe, windows=True)


def windows_start(project: Path, path: Path) -> str:
    manifest = json.loads((project / "extension.json").read_text())
    try:
        return Path(resolve_on_windows(project, manifest["exec"], path)).name
    except process.StartError as error:
        return str(error)


@pytest.mark.parametrize("variant", LANGUAGES)
def test_which_flavours_zot_starts_on_windows(projects, tmp_path, windows_path, variant):
    project = projects.fresh_copy(tmp_path, variant, ["commands", "tools"])
    if variant.startswith("go"):
        for binary in project.glob("demo-ext*"):
            binary.unlink()  # the Linux build's
        env = {**os.environ, "GOOS": "windows", "GOARCH": "amd64"}
        result = run(["./build"], project, env=env, timeout=600)
        assert result.returncode == 0, result.stderr
        assert "build: ./start.exe is ready" in result.stdout
        assert (project / "start.exe").read_bytes()[:2] == b"MZ"  # a Windows program
    started = windows_start(project, windows_path)
    assert STARTS[variant] in started, started
    if started == "node.exe":  # and what node is given to run is there
        manifest = json.loads((project / "extension.json").read_text())
        assert (project / manifest["args"][0]).is_file()


def test_windows_resolution_follows_zot_and_gos_rules(tmp_path, windows_path):
    folder = tmp_path / "ext"
    folder.mkdir()

    def starts(exe: str) -> str:
        try:
            return os.path.relpath(resolve_on_windows(folder, exe, windows_path), tmp_path)
        except process.StartError as error:
            return f"error: {error}"

    assert starts("./start") == 'error: exec "./start" finds no program (with .COM;.EXE;.BAT;.CMD)'
    (folder / "build").write_text("")
    assert starts("./start") == 'error: exec "./start" finds no program: run ./build first'
    (folder / "start").write_text("#!/bin/sh\n")
    assert starts("./start").endswith(
        "start is a script: Windows starts programs (.exe) and batch files (.bat, .cmd) only"
    )
    (folder / "start.cmd").write_text("@echo off\n")
    assert starts("./start") == "ext/start.cmd"  # a batch file: cmd.exe runs it
    (folder / "start.exe").write_bytes(b"MZ")
    assert starts("./start") == "ext/start.exe"  # PATHEXT's order: .exe before .cmd
    assert starts(".\\start") == "ext/start.exe"  # zot joins it; the same file
    (folder / "bin").mkdir()
    (folder / "bin" / "tool.exe").write_bytes(b"MZ")
    assert starts("bin/tool") == "ext/bin/tool.exe"
    assert starts("node") == "Program Files/node.exe"  # a bare name: PATH only
    scripts = tmp_path / "usr-bin"
    scripts.mkdir()
    (scripts / "node").write_text("#!/bin/sh\n")  # as Git Bash puts on PATH
    path = f"{scripts}{os.pathsep}{windows_path}"
    assert resolve_on_windows(folder, "node", path) == str(windows_path / "node.exe")
    assert starts("start").startswith('error: exec "start" finds no program')
    (folder / "main.py").write_text("#!/usr/bin/env python3\n")
    assert "main.py is a script" in starts("./main.py")


@pytest.mark.parametrize("variant", LANGUAGES)
def test_copying_on_windows_says_when_zot_cannot_start_the_flavour(
    tmp_path, monkeypatch, capsys, variant
):
    """copier's closing message, as copier renders it on Windows."""
    monkeypatch.setattr(copier._main, "OS", "windows")
    answers = {**FLAVOURS[variant], "name": "demo-ext", "ci": False}
    copier.run_copy(str(ROOT), str(tmp_path / "ext"), data=answers, defaults=True, vcs_ref="HEAD")
    message = capsys.readouterr().err
    cannot = "is a script" in STARTS[variant]
    assert ("Note: zot for Windows cannot start" in message) == cannot, message
    if cannot:
        assert "Under WSL it runs as on Linux; or choose Go or\nTypeScript." in message
