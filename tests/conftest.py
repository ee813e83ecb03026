"""Shared fixtures: render the template from this checkout and build it."""

from __future__ import annotations

import contextlib
import fcntl
import filecmp
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from flavours import (  # noqa: F401 - the suite imports them from here
    CAPABILITIES,
    COMBINATIONS,
    FLAVOURS,
    HANDLER,
    LANGUAGE_ANSWERS,
    LANGUAGES,
    NO_PROCESS,
    ROOT,
    SDK_CAPABILITIES,
    SDK_DIR,
    SDK_IS_REAL,
    SDK_MODULE,
    VARIANTS,
    Variant,
    combo_id,
    configure_go,
    render,
    slow_tool,
    use_sdk,
)

# The guard's shared table: rendered as zot/guard/guard-cases.json into every
# project with the guard, which ./smoke-test and the unit tests read.
GUARD_CASES_FILE = ROOT / "template" / "zot" / "guard" / "guard-cases.json"
GUARD_CASES = json.loads(GUARD_CASES_FILE.read_text())
GUARD_CWD = GUARD_CASES.get("cwd", "/home/user/project")  # the project folder they assume
GUARD_REFUSED: dict[str, str] = GUARD_CASES["refused"]  # command -> the rule refusing it
GUARD_ALLOWED: list[str] = GUARD_CASES["allowed"]
# Hypothesis tests run derandomized; HYPOTHESIS_SCALE=10 tries ten times as
# many examples, to search harder locally.
HYPOTHESIS_SCALE = int(os.environ.get("HYPOTHESIS_SCALE", "1"))


def pytest_report_header() -> str:
    which = (
        "a checkout (ZOT_SDK_DIR)"
        if SDK_IS_REAL
        else "the stand-in (set ZOT_SDK_DIR for a checkout)"
    )
    return f"zot's Go SDK: {which} at {SDK_DIR}"


# The tests that take minutes (each renders, updates and builds a project per
# release, or per hostile answer): they start first, so that with -n 2 the
# workers share them instead of one of them ending the run alone.
LONGEST_FIRST = (
    "test_update.py::test_every_release_renders_and_updates_to_this_checkout",
    "test_hostile_answers.py::test_any_free_text_renders_verbatim",
    "test_hostile_answers.py::test_free_text_builds_and_passes_its_smoke_test",
    "test_robustness.py::test_guard_decides_fast_on_commands_built_to_be_slow",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        where = item.nodeid.partition("[")[0]
        return next(
            (i for i, name in enumerate(LONGEST_FIRST) if where.endswith(name)), len(LONGEST_FIRST)
        )

    items.sort(key=rank)  # stable: the rest keep their order


def pytest_configure(config: pytest.Config) -> None:
    # Keep the user's copier settings (defaults, trust) out of every test.
    # Each worker, and any other run, sets it up: in one step (os.replace), so
    # that no copier reads it half written.
    settings = Path(tempfile.gettempdir()) / "zot-ext-template-copier-settings.yml"
    if not settings.is_file() or settings.read_text() != "{}\n":
        written = settings.with_name(f"{settings.name}.{os.getpid()}")
        written.write_text("{}\n")
        os.replace(written, settings)
    os.environ["COPIER_SETTINGS_PATH"] = str(settings)
    # Each TypeScript project's ./build runs npm install: once the first has
    # fetched the packages, the others take them from npm's cache.
    os.environ.setdefault("npm_config_prefer_offline", "true")
    os.environ.setdefault("npm_config_update_notifier", "false")
    configure_go()


def run(cmd: list[str], cwd: Path, timeout: float = 120, **kwargs):
    return subprocess.run(
        cmd, check=False, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kwargs
    )


def smoke(project: Path, *args: str, timeout: float = 120) -> dict:
    """Run the project's ./smoke-test (with `args`); its report, which must pass."""
    result = run(["./smoke-test", "--json", *args], project, timeout=timeout)
    report = json.loads(result.stdout)
    failed = [c for c in report["checks"] if c["status"] == "fail"]
    assert result.returncode == 0 and report["passed"], (failed, result.stderr)
    return report


def differences(left: Path, right: Path) -> list[str]:
    """Files that differ between two trees (recursively)."""
    compared = filecmp.dircmp(left, right)
    found = [*compared.left_only, *compared.right_only, *compared.diff_files, *compared.funny_files]
    for sub in compared.common_dirs:
        found += [f"{sub}/{name}" for name in differences(left / sub, right / sub)]
    return found


def register_in_go(source: str, registrations: str) -> str:
    """main.go with more registrations at the end of its init."""
    init_end = "}\n\nfunc main() {"
    assert init_end in source
    return source.replace(init_end, registrations + init_end)


def build(project: Path) -> None:
    use_sdk(project)
    result = run(["./build"], project)
    assert result.returncode == 0, f"build failed:\n{result.stdout}\n{result.stderr}"


class Projects:
    """Rendered and built projects, made once per test run and shared.

    With pytest-xdist the workers share them too: the first worker to need a
    project renders and builds it under a file lock, the others wait for it.
    """

    def __init__(self, base: Path):
        self.base = base
        self.base.mkdir(exist_ok=True)

    @contextlib.contextmanager
    def _making(self, name: str):
        """Yield the path of project `name`, or None once it has been made."""
        with open(self.base / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            done = self.base / f"{name}.built"
            if done.exists():
                yield None
            else:
                shutil.rmtree(self.base / name, ignore_errors=True)
                yield self.base / name
                done.touch()

    def get(self, variant: str, capabilities: list[str], **answers) -> Path:
        """The project of a variant (see VARIANTS) with these capabilities."""
        name = f"{variant}-{combo_id(capabilities)}"
        if answers:
            key = json.dumps(answers, sort_keys=True).encode()
            name += "-" + hashlib.sha256(key).hexdigest()[:8]
        language = VARIANTS[variant].language
        with self._making(name) as dst:
            if dst:
                answers = {**dict(VARIANTS[variant].answers), **answers}
                render(dst, language=language, capabilities=capabilities, **answers)
                if (dst / "build").exists():  # not when it runs no process
                    if language == "typescript":
                        self._seed_node_modules(dst)
                    build(dst)
        return self.base / name

    def _seed_node_modules(self, project: Path) -> None:
        """Hard-link the packages of one project built from scratch.

        Its ./build ran the real npm install; the others' ./build then finds
        node_modules up to date (still running npm install to check), which
        keeps the TypeScript matrix quick.
        """
        with self._making("npm-seed") as seed:
            if seed:
                render(seed, language="typescript", capabilities=["commands"])
                build(seed)

        def link(src: str, dst: str) -> None:
            if os.path.basename(src) == ".package-lock.json":
                shutil.copy2(src, dst)  # npm may rewrite it in place
            else:
                os.link(src, dst)

        shutil.copytree(
            self.base / "npm-seed" / "node_modules",
            project / "node_modules",
            symlinks=True,
            copy_function=link,
            ignore=shutil.ignore_patterns(".build-*"),
        )

    def fresh_copy(self, tmp_path: Path, variant: str, capabilities: list[str]) -> Path:
        """A private copy a test may change."""
        dst = tmp_path / "ext"
        shutil.copytree(self.get(variant, capabilities), dst, symlinks=True)
        return dst


@pytest.fixture(scope="session")
def projects(tmp_path_factory: pytest.TempPathFactory) -> Projects:
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each worker's own
    return Projects(base / "projects")
