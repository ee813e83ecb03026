"""Which flavours zot for Windows can start. There is no Windows here: each
generated manifest's exec is resolved with zot's rules as Windows applies
them (a backslash separator, PATHEXT's extensions, programs and batch files
only), by the smoke test's resolve_exec (the one it uses on Windows),
against what ./build leaves there (Go's, run for windows/amd64)."""

from __future__ import annotations

import json
import os
import signal
import time
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
    else:
        assert "the\nsmoke test as python smoke-test (Windows has no python3)." in message


def linux_as_windows(monkeypatch) -> list[int]:
    """The smoke test's Windows process code, run here: the snapshot and the
    creation times come from /proc (start times in ticks since boot, ordered
    as Windows' are); terminate kills only the process created then. Returns
    the pids terminate ended."""
    from smoke_test import windows

    def snapshot() -> list[tuple[int, int, str]]:
        entries = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            name, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat.rsplit(")")[1].split()
            if fields[0] != "Z":
                entries.append((int(pid), int(fields[1]), name))
        return entries

    def created(pid: int) -> int | None:
        try:
            return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")")[1].split()[19])
        except OSError:
            return None

    ended = []

    def terminate(pid: int, when: int) -> None:
        if created(pid) == when:
            os.kill(pid, signal.SIGKILL)
            ended.append(pid)

    monkeypatch.setattr(process, "WINDOWS", True)
    monkeypatch.setattr(windows, "snapshot", snapshot)
    monkeypatch.setattr(windows, "created", created)
    monkeypatch.setattr(windows, "terminate", terminate)
    monkeypatch.setattr(windows, "filetime", lambda _: 0)  # ticks since boot
    return ended


def test_on_windows_the_smoke_test_finds_and_ends_the_extensions_tree(tmp_path, monkeypatch):
    """members(), processes() and kill_all() as on Windows, on a real tree:
    the extension (sh), a child and a grandchild."""
    ended = linux_as_windows(monkeypatch)
    tree = "sleep 301 & sh -c 'sleep 302 & wait' & wait"
    ext = process.Process(["sh", "-c", tree], str(tmp_path), reader=False, own_group=False)
    try:
        deadline = time.monotonic() + 10
        while len(ext.members()) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        members = ext.members()
        assert members[0] == str(ext.proc.pid)
        assert sorted(m.split(" ")[1] for m in members[1:]) == ["(sh)", "(sleep)", "(sleep)"]
        below = ext.processes()
        assert sorted(name for name, _ in below.values()).count("sleep") == 2
        assert all(run is None for _, run in below.values())
        ext.kill_all()
        assert ext.proc.poll() is not None
        assert sorted(ended) == sorted(pid for pid, _ in below)
        assert ext.members() == []
    finally:
        ext.close()


def test_on_windows_a_child_is_created_after_its_parent():
    """descendants(): Windows reuses pids, so a process naming a parent pid
    is that parent's child only when created after it; the extension's
    children are found after it exited."""
    from smoke_test import windows

    entries = [
        (0, 0, "idle"),  # its own parent
        (10, 1, "zot"),
        (20, 10, "start.exe"),  # the extension, created at 200
        (21, 20, "node.exe"),  # its child
        (22, 21, "sh.exe"),  # a grandchild
        (23, 20, "old.exe"),  # created before 20: its parent was another 20
        (24, 99, "bash.exe"),  # a child of 99, which exited
    ]
    times = {0: 0, 10: 100, 20: 200, 21: 300, 22: 400, 23: 150, 24: 500}
    found = windows.descendants(20, 200, entries, times.get)
    assert sorted(found) == [(21, 300, "node.exe"), (22, 400, "sh.exe")]
    alive = [e for e in entries if e[0] != 20]  # the extension exited
    assert sorted(windows.descendants(20, 200, alive, times.get)) == sorted(found)
    assert windows.descendants(22, 400, entries, times.get) == []
    assert windows.filetime(0) == 116_444_736_000_000_000  # 1970 in ticks since 1601


def test_on_windows_watch_builds_with_gits_bash(tmp_path, monkeypatch, capsys):
    """./smoke-test --watch runs ./build, a sh script, with the bash of Git
    Bash on Windows; WSL's (in System32) would build for Linux."""
    from smoke_test import watch

    (tmp_path / "build").write_text("#!/bin/sh\n")
    git_bash = tmp_path / "Git" / "usr" / "bin"
    system32 = tmp_path / "Windows" / "System32"
    for folder in (git_bash, system32):
        folder.mkdir(parents=True)
        (folder / "bash").write_text("#!/bin/sh\n")
        (folder / "bash").chmod(0o755)
    assert watch.build_command(str(tmp_path)) == ["./build"]
    monkeypatch.setattr(watch, "WINDOWS", True)
    monkeypatch.setenv("PATH", f"{git_bash}{os.pathsep}{system32}")
    assert watch.build_command(str(tmp_path)) == [str(git_bash / "bash"), "./build"]
    monkeypatch.setenv("PATH", str(system32))
    assert watch.build_command(str(tmp_path)) is None
    assert "./build needs Git Bash on Windows" in capsys.readouterr().out
    (tmp_path / "build").unlink()
    assert watch.build_command(str(tmp_path)) is None


def test_on_windows_the_smoke_test_skips_guard_cases_and_says_why(projects, monkeypatch, capsys):
    """zot for Windows runs commands with cmd.exe in a C:\\ folder, which the
    guard (it reads sh) counts as no project: the table is not judged there,
    and the SKIP line says so; every other check runs as on Linux."""
    from smoke_test import cli, session

    project = projects.get("python", ["commands", "tools", "guard"])
    monkeypatch.setattr(session, "WINDOWS", True)
    status = cli.main(["--dir", str(project), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 0, report
    checks = {c["check"]: c for c in report["checks"]}
    skipped = checks["guard-cases.json"]
    assert skipped["status"] == "skip"
    assert "zot for Windows runs commands with cmd.exe" in skipped["detail"]
    assert checks['intercept bash "rm -rf /"']["status"] == "pass"
