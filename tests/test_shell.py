"""The shell flavour: its own files, jq 1.6 and the newest jq, and the update
from 0.2.0 (one main.sh) into main.sh + zot_runtime.sh + jq/; the guard
engine in jq/guard.jq, judged against guard.py.

The newest jq is built from source once per machine into .cache/ (PyPI's
`jq` package ships jq's source in its sdist), so a fresh CI machine needs
only PyPI and a C compiler.
"""

from __future__ import annotations

import fcntl
import os
import random
import runpy
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import pytest
from conftest import CAPABILITIES, GUARD_ALLOWED, GUARD_CWD, GUARD_REFUSED, ROOT, render, run
from host import ExtensionProcess
from robustness import TOOL, hostile_session, line, pipeline, refusals
from test_update import edit

JQ_VERSION = "1.8.2"
# The `jq` package on PyPI whose sdist has deps/jq-1.8.2.tar.gz.
JQ_SDIST = "jq==1.12.0"
JQ_DIR = ROOT / ".cache" / f"jq-{JQ_VERSION}"
RUNTIME = ["zot_runtime.sh", "jq/zot.jq", "jq/reader.jq", "jq/writer.jq", "jq/guard.jq"]
BIN = os.path.dirname(sys.executable)  # shellcheck and shfmt live here


def build_jq(target: Path) -> None:
    """Download jq's source from PyPI and build a static jq into target/bin."""
    if not (shutil.which("cc") and shutil.which("make")):
        pytest.skip("a C compiler and make are needed to build jq")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:"]
            + ["--no-deps", "--dest", str(work), JQ_SDIST],
            check=True,
        )
        (sdist,) = work.glob("jq-*.tar.gz")
        with tarfile.open(sdist) as outer:
            member = next(m for m in outer if m.name.endswith(f"deps/jq-{JQ_VERSION}.tar.gz"))
            source = outer.extractfile(member)
            assert source is not None
            with tarfile.open(fileobj=source) as inner:
                # filter= arrived in Python 3.11.4; older 3.11s extract as before
                safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                inner.extractall(work, **safe)
        src = work / f"jq-{JQ_VERSION}"
        configure = ["./configure", "--with-oniguruma=builtin", "--disable-docs"]
        configure += ["--disable-shared", "--enable-static"]
        for step in (configure, ["make", f"-j{os.cpu_count() or 2}"]):
            result = subprocess.run(step, cwd=src, capture_output=True, text=True, check=False)
            assert result.returncode == 0, f"{step}: {result.stdout[-2000:]}{result.stderr[-2000:]}"
        (target / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / "jq", target / "bin" / "jq")


@pytest.fixture(scope="session")
def new_jq() -> Path:
    """A folder whose jq is jq 1.8.2, built once (xdist workers share it)."""
    JQ_DIR.parent.mkdir(parents=True, exist_ok=True)
    with open(JQ_DIR.parent / f"jq-{JQ_VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (JQ_DIR / "bin" / "jq").is_file():
            build_jq(JQ_DIR)
    version = run([str(JQ_DIR / "bin" / "jq"), "--version"], ROOT).stdout.strip()
    assert version == f"jq-{JQ_VERSION}", version
    return JQ_DIR / "bin"


@pytest.fixture(params=["jq-system", f"jq-{JQ_VERSION}"])
def jq_env(request) -> dict:
    """The environment: the system's jq (1.6 here), or jq 1.8.2 first on PATH."""
    env = dict(os.environ)
    if request.param != "jq-system":
        bin_dir = request.getfixturevalue("new_jq")
        env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return env


@pytest.fixture
def project(projects, tmp_path) -> Path:
    return projects.fresh_copy(tmp_path, "shell", CAPABILITIES)


def test_build_unit_tests_and_smoke_test_pass(project, jq_env):
    for command in (["./build"], ["./test_main.sh"], ["./smoke-test"]):
        result = run(command, project, env=jq_env)
        assert result.returncode == 0, f"{command}:\n{result.stdout}\n{result.stderr}"
    assert "all passed" in run(["./test_main.sh"], project, env=jq_env).stdout


# What the mutations below put into commands: blanks and characters bash and
# regex engines read differently, wrappers, nesting, separators.
ODD = ["\v", "\f", "\r", "\x85", "\xa0", "\u2028", "\u3000", "\ufeff", "é", "ß", "😀"]
JOINERS = [" ", "  ", "\t", "", "\n", ";", " | ", " && ", " || ", " & ", "\\\n", *ODD]
WRAPPERS = [
    "sudo ",
    "sudo -u root ",
    "env X=1 ",
    "nohup ",
    "timeout 5 ",
    "xargs ",
    "command ",
    "exec ",
]
PLACES = ["/", "..", "/tmp", "~", "-", "sub", "$X", "/home/user", GUARD_CWD + "/a"]


def inserted(rnd: random.Random, command: str) -> str:
    """The command with one character of shell syntax put in somewhere."""
    i = rnd.randrange(len(command) + 1)
    return command[:i] + rnd.choice("\"'\\$`(){};|&<># ") + command[i:]


def mutated(rnd: random.Random, cases: list[str], count: int) -> list[str]:
    """Commands made from the table's cases, one to three changes each."""
    changes = [
        lambda c: rnd.choice(WRAPPERS) + c,
        lambda c: f"bash -c '{c}'" if "'" not in c else f'sh -c "{c}"',
        lambda c: f"$({c})" if rnd.random() < 0.5 else f"`{c}`",
        lambda c: f"( {c} )",
        lambda c: f"eval '{c}'" if "'" not in c else f"bash <<EOF\n{c}\nEOF\n",
        lambda c: "".join(p + rnd.choice(JOINERS[:4] + ODD) for p in c.split(" ")),
        lambda c: f"cd {rnd.choice(PLACES)} && {c}",
        lambda c: f"echo x{rnd.choice(JOINERS)}{c}{rnd.choice(JOINERS)}ls",
        lambda c: f"find {rnd.choice(['.', '/', 'build'])} -exec {c} \\;",
        lambda c: inserted(rnd, c),
        lambda c: f"{c}{rnd.choice(JOINERS)}{rnd.choice(cases)}",
    ]
    out = []
    for _ in range(count):
        command = rnd.choice(cases)
        for _ in range(rnd.randint(1, 3)):
            command = rnd.choice(changes)(command)
        out.append(command)
    return out


@pytest.fixture(scope="module")
def guard_check(projects):
    """guard.py's check, the reference for every flavour."""
    return runpy.run_path(str(projects.get("python", ["guard"]) / "guard.py"))["check"]


def test_hostile_input_and_every_guard_verdict(project, jq_env, tmp_path, guard_check):
    """The table's cases and 600 mutations of them: guard.py's rule for each."""
    cases = [*GUARD_REFUSED, *GUARD_ALLOWED]
    commands = cases + mutated(random.Random(7), cases, 600)
    want = [getattr(guard_check(command, GUARD_CWD), "rule", None) for command in commands]
    with ExtensionProcess(project, data_dir=tmp_path, env=jq_env) as ext:
        ext.handshake(cwd=GUARD_CWD)
        hostile_session(ext)
        got = refusals(ext, commands)
        assert ext.shutdown() == 0
    wrong = [(c, g, w) for c, g, w in zip(commands, got, want, strict=True) if g != w]
    assert not wrong, wrong[:10]
    assert sum(w is not None for w in want) > 300  # both verdicts are well represented


def test_a_4_kib_command_is_judged_at_once(project, jq_env, tmp_path):
    """Realistic and dense 4 KiB commands, each judged well within zot's time."""
    realistic = " && ".join(
        f"cd src/m{i} && npm run build -- --prod | tee -a build.log; git add -A && "
        f'git commit -m "step {i}: update the module files and fix the tests" && ls > o{i}.txt'
        for i in range(40)
    )[:4096]
    dense = "; ".join(
        f'rm -rf ./build/x{i} && echo "step {i} done" | tee -a log.txt' for i in range(200)
    )[:4096]
    with ExtensionProcess(project, data_dir=tmp_path, env=jq_env) as ext:
        ext.handshake(cwd=GUARD_CWD)
        for command in (realistic, dense):
            times = []
            for _ in range(5):
                started = time.monotonic()
                assert ext.intercept("bash", {"command": command})["block"] is False
                times.append(time.monotonic() - started)
            assert sorted(times)[2] < 1.0, times
        assert ext.shutdown() == 0


def test_large_frames_and_pipelined_calls(project, jq_env, tmp_path):
    """A 3 MiB frame with characters cut by jq 1.6's 4 KiB blocks; a burst."""
    text = ("é" * 2047 + "x") * 768  # a 2-byte character across every 4 KiB
    with ExtensionProcess(project, data_dir=tmp_path, env=jq_env) as ext:
        ext.handshake()
        started = time.monotonic()
        reply = ext.tool(TOOL, {"text": text}, timeout=30)
        big = time.monotonic() - started
        assert reply["content"][0]["text"] == text
        lines = [
            line({"type": "tool_call", "id": f"p{i}", "name": TOOL, "args": {"text": f"n{i}"}})
            for i in range(500)
        ]
        answers = pipeline(ext, lines, {f"p{i}": "tool_result" for i in range(500)})
        assert all(answers[f"p{i}"]["content"][0]["text"] == f"n{i}" for i in range(500))
        assert ext.shutdown() == 0
    assert big < 10, f"a 3 MiB frame took {big:.1f} s"


def test_an_intercept_is_answered_at_once_while_tools_run(project, jq_env, tmp_path):
    edit(project / "main.sh", "\tprintf '%s' \"$1\"\n}", "\tsleep 5\n\tprintf '%s' \"$1\"\n}")
    with ExtensionProcess(project, data_dir=tmp_path, env=jq_env) as ext:
        ext.handshake()
        for i in range(3):
            ext.send({"type": "tool_call", "id": f"slow{i}", "name": TOOL, "args": {"text": "x"}})
        time.sleep(0.2)
        times = []
        for _ in range(5):
            started = time.monotonic()
            assert ext.intercept("bash", {"command": "rm -rf /"})["block"] is True
            times.append(time.monotonic() - started)
        assert max(times) < 0.5, times  # zot allows the call after 5 s
        assert ext.shutdown() == 0
        assert not ext.leftovers()


def test_runtime_files_are_the_templates_and_lint_clean(tmp_path):
    """zot_runtime.sh and jq/ are the same in every project; the guard's rules come with guard."""
    one = render(tmp_path / "one", language="shell", capabilities=["tools"])
    two = render(tmp_path / "two", language="shell", capabilities=CAPABILITIES, name="other")
    for name in RUNTIME:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    assert not (one / "guard-rules.json").exists() and (two / "guard-rules.json").is_file()
    scripts = ["zot_runtime.sh", "test_main.sh", "main.sh"]
    for check in (
        [f"{BIN}/shellcheck", *scripts],
        [shutil.which("shfmt") or "shfmt", "-d", *scripts],
    ):
        result = run(check, two)
        assert result.returncode == 0, f"{check}:\n{result.stdout}{result.stderr}"


def test_a_jq_error_in_an_argument_check_fails_the_build(project):
    edit(project / "main.sh", '(.text | type) != "string"', '(.text | typ) != "string"')
    result = run(["./build"], project)
    assert result.returncode != 0
    assert "typ/0 is not defined" in result.stderr
