"""The build hook: idempotent, and a clear hint when a toolchain is missing."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import CAPABILITIES, HANDLER, LANGUAGES, VARIANTS, render, run, smoke
from test_update import commit_all, git

# What each language's build needs; hiding any one must give an install hint.
TOOLCHAIN = {"python": ["python3"], "shell": ["jq"], "go": ["go"], "typescript": ["node", "npm"]}
# The basic tools a build uses.
BASICS = ["sh", "bash", "dirname", "chmod", "env", "cat", "sed", "find", "head", "touch"]
MISSING = [
    # the first tool of a language keeps the language's own test id
    pytest.param(variant, tool, id=variant if i == 0 else f"{variant}-{tool}")
    for variant in LANGUAGES
    for i, tool in enumerate(TOOLCHAIN[VARIANTS[variant].language])
]


def bare_path(tmp_path: Path, hide: str) -> str:
    """A PATH with the basic tools and every toolchain, minus `hide`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in BASICS + [tool for tools in TOOLCHAIN.values() for tool in tools]:
        found = shutil.which(tool)
        if found and tool != hide:
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


@pytest.mark.parametrize("language", LANGUAGES)
def test_build_is_idempotent_and_sets_the_exec_bit(projects, tmp_path, language):
    project = projects.fresh_copy(tmp_path, language, CAPABILITIES)
    executables = [project / name for name in VARIANTS[language].executables]
    for executable in executables:
        mode = executable.stat().st_mode
        executable.chmod(mode & ~(stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    for _ in range(2):
        result = run(["./build"], project)
        assert result.returncode == 0, result.stderr
        assert "ready" in result.stdout
    for executable in executables:
        assert os.access(executable, os.X_OK), executable
    assert not (project / "__pycache__").exists()


@pytest.mark.parametrize(("language", "hide"), MISSING)
def test_missing_toolchain_gives_an_install_hint(projects, tmp_path, language, hide):
    project = projects.fresh_copy(tmp_path, language, CAPABILITIES)
    env = {**os.environ, "PATH": bare_path(tmp_path, hide)}
    result = run(["sh", "./build"], project, env=env)
    assert result.returncode != 0
    assert f"{hide} not found" in result.stderr
    assert "install" in result.stderr.lower()
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("language", LANGUAGES)
def test_syntax_errors_fail_the_build(projects, tmp_path, language):
    project = projects.fresh_copy(tmp_path, language, CAPABILITIES)
    handler = project / HANDLER[language]
    handler.write_text(handler.read_text() + "\n(((\n")
    result = run(["./build"], project)
    assert result.returncode != 0


def fake_go(tmp_path: Path, goversion: str) -> str:
    """A PATH whose `go` is a script that reports `goversion`."""
    path = bare_path(tmp_path, "go")
    script = Path(path) / "go"
    script.write_text(
        "#!/bin/sh\n"
        f'[ "$*" = "env GOVERSION" ] && {{ echo {goversion}; exit 0; }}\n'
        'echo "fake go: $*" >&2; exit 3\n'
    )
    script.chmod(0o755)
    return path


def test_go_older_than_1_25_is_refused_clearly(projects, tmp_path):
    project = projects.fresh_copy(tmp_path, "go", CAPABILITIES)
    env = {**os.environ, "PATH": fake_go(tmp_path, "go1.24.7")}
    result = run(["sh", "./build"], project, env=env)
    assert result.returncode != 0
    assert "go1.24.7 is too old" in result.stderr and "Go 1.25 or newer" in result.stderr
    assert "https://go.dev/dl/" in result.stderr
    assert "fake go" not in result.stderr  # stopped before building


def test_go_build_checks_the_code_with_go_vet(projects, tmp_path):
    project = projects.fresh_copy(tmp_path, "go", CAPABILITIES)
    handler = project / "main.go"
    handler.write_text(handler.read_text() + '\nfunc vetMe() { extension.Logf("%d", "text") }\n')
    result = run(["./build"], project)
    assert result.returncode != 0
    assert "vetMe" in result.stderr or "%d" in result.stderr, result.stderr


def test_go_sdk_build_says_when_it_cannot_fetch_the_sdk(tmp_path):
    """Offline (GOPROXY=off here) the first build of the SDK flavour fails clearly."""
    project = render(tmp_path / "ext", language="go", go_sdk=True, capabilities=CAPABILITIES)
    result = run(["./build"], project)
    assert result.returncode != 0
    assert "fetching zot's Go SDK" in result.stdout
    assert "could not fetch zot's Go SDK" in result.stderr
    assert "needs the network" in result.stderr
    assert "git init && git add -A" in result.stderr  # copier update needs git
    assert not (project / "demo-ext").exists()


def test_smoke_test_before_build_says_to_build_first(tmp_path):
    """TypeScript with the node runner: zot runs dist/index.js, which ./build makes."""
    project = render(tmp_path / "ext", language="typescript", ts_runner="node")
    result = run(["./smoke-test"], project)
    assert result.returncode == 2
    assert "dist/index.js does not exist: run ./build first" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("language", "source", "built"),
    [
        ("go", "main.go", "demo-ext"),
        ("go-sdk", "main.go", "demo-ext"),
        ("typescript", "src/extension.ts", "dist/index.js"),
    ],
)
def test_a_stale_build_is_caught(projects, tmp_path, language, source, built):
    """A source edited after ./build: ./smoke-test stops and says so; Go's
    ./start builds again before it starts the binary."""
    project = projects.fresh_copy(tmp_path, language, ["commands", "tools"])
    earlier = os.path.getmtime(project / source) - 10  # built before the edit
    if language.startswith("go"):  # and after every other source
        for path in project.rglob("*.go"):
            os.utime(path, (earlier - 10, earlier - 10))
        os.utime(project / "go.mod", (earlier - 10, earlier - 10))
    os.utime(project / built, (earlier, earlier))
    os.utime(project / source)  # the edit: the newest source
    result = run(["./smoke-test"], project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{source} is newer than {built}: run ./build first" in result.stderr
    if language == "typescript":
        # a git checkout writes files in any order: sources as committed are
        # no edit; a source changed since the commit is
        git(project, "init", "--quiet")
        commit_all(project, "built")
        smoke(project)
        source_path = project / source
        source_path.write_text(source_path.read_text() + "// an edit\n")
        result = run(["./smoke-test"], project)
        assert f"{source} is newer than {built}: run ./build first" in result.stderr
    if language.startswith("go"):
        result = run(["./start"], project, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, result.stderr
        assert f"start: {source} is newer than ./{built}: building it (./build)" in result.stderr
        assert os.path.getmtime(project / built) > earlier  # built again
        smoke(project)


@pytest.mark.parametrize("language", LANGUAGES)
def test_build_names_the_files_copier_left_conflict_markers_in(projects, tmp_path, language):
    project = projects.fresh_copy(tmp_path, language, ["commands"])
    handler = project / HANDLER[language]
    markers = "<<<<<<< before updating\nmine\n=======\ntheirs\n>>>>>>> after updating\n"
    handler.write_text(handler.read_text() + markers)
    result = run(["./build"], project)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"build: conflict markers from copier update in:\n  {HANDLER[language]}\n" in (
        result.stderr
    )
