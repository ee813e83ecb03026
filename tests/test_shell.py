"""The shell flavour: its own files, jq 1.6 and the newest jq, and the update
from 0.2.0 (one main.sh) into main.sh + zot/runtime.sh + zot/jq/; the guard
engine in zot/guard/guard.jq, judged against zot/guard/guard.py.

The newest jq is built from source once per machine into .cache/ (PyPI's
`jq` package ships jq's source in its sdist), so a fresh CI machine needs
only PyPI and a C compiler.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import runpy
import shutil
import signal
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
from smoke_test import protocol
from test_update import edit

JQ_VERSION = "1.8.2"
# The `jq` package on PyPI whose sdist has deps/jq-1.8.2.tar.gz.
JQ_SDIST = "jq==1.12.0"
JQ_DIR = ROOT / ".cache" / f"jq-{JQ_VERSION}"
RUNTIME = ["zot/runtime.sh", "zot/jq/zot.jq", "zot/jq/reader.jq", "zot/jq/writer.jq"]
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
    return runpy.run_path(str(projects.get("python", ["guard"]) / "zot" / "guard" / "guard.py"))[
        "check"
    ]


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


def test_a_command_not_checked_in_time_is_refused(project, tmp_path):
    """The guard gives up after max_seconds (zot waits 5 s): with none, even
    ls is refused, with the rule and what to do."""
    edit(project / "zot/guard/guard.jq", "def max_seconds: 2;", "def max_seconds: 0;")
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake(cwd=GUARD_CWD)
        reason = ext.intercept("bash", {"command": "ls -la && git status"})["reason"]
        assert "(too-slow): a command that takes over 0 s to check" in reason, reason
        assert ext.shutdown() == 0


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
    """A 3 MiB frame with characters cut by jq 1.6's 4 KiB blocks; a burst.
    (How long the frame takes is the benchmark's to say.)"""
    text = ("é" * 2047 + "x") * 768  # 4,095 bytes: 2-byte characters across blocks
    with ExtensionProcess(project, data_dir=tmp_path, env=jq_env) as ext:
        ext.handshake()
        reply = ext.tool(TOOL, {"text": text}, timeout=30)
        assert reply["content"][0]["text"] == text
        if run(["jq", "--version"], project, env=jq_env).stdout.startswith("jq-1.6"):
            assert "sed" in programs(ext), programs(ext)  # not mawk's byte-at-a-time reads
        lines = [
            line({"type": "tool_call", "id": f"p{i}", "name": TOOL, "args": {"text": f"n{i}"}})
            for i in range(500)
        ]
        answers = pipeline(ext, lines, {f"p{i}": "tool_result" for i in range(500)})
        assert all(answers[f"p{i}"]["content"][0]["text"] == f"n{i}" for i in range(500))
        assert ext.shutdown() == 0


def programs(ext: ExtensionProcess) -> list[str]:
    """The names of the programs in the extension's process group (as the
    smoke test finds them)."""
    return [name for _, name in ext.process._members()]


def test_without_stdbuf_awk_wraps_the_lines(project, tmp_path):
    """jq 1.6 reads zot's lines wrapped as JSON strings: by GNU sed under
    stdbuf where both exist, else by awk; the awk path answers the same."""
    jq = shutil.which("jq")
    if not jq or not run([jq, "--version"], project).stdout.startswith("jq-1.6"):
        pytest.skip("the wrapping is for jq 1.6, not on PATH here")
    bin_dir = tmp_path / "bin"  # PATH's programs but stdbuf
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for program in Path(folder).glob("*") if Path(folder).is_dir() else []:
            target = bin_dir / program.name
            if program.name != "stdbuf" and not target.exists() and os.access(program, os.X_OK):
                target.symlink_to(program)
    text = ("é" * 2047 + "x") * 16
    env = {**os.environ, "PATH": str(bin_dir)}
    with ExtensionProcess(project, data_dir=tmp_path / "data", env=env) as ext:
        ext.handshake()
        assert ext.tool(TOOL, {"text": text}, timeout=30)["content"][0]["text"] == text
        assert "sed" not in programs(ext) and "awk" in " ".join(programs(ext))
        hostile_session(ext)
        assert ext.shutdown() == 0


def test_an_intercept_is_answered_at_once_while_tools_run(project, jq_env, tmp_path):
    edit(project / "main.sh", "\tprintf '%s' \"$1\"\n}", "\tsleep 5\n\tprintf '%s' \"$1\"\n}")
    with ExtensionProcess(project, data_dir=tmp_path, env=jq_env) as ext:
        ext.handshake()
        # Once the reader has compiled the guard (its start-up is not measured here)
        assert ext.intercept("bash", {"command": "ls"})["block"] is False
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
    """zot/runtime.sh and zot/jq/ are the same in every project; the guard's
    engine and rules come with guard."""
    one = render(tmp_path / "one", language="shell", capabilities=["tools"])
    two = render(tmp_path / "two", language="shell", capabilities=CAPABILITIES, name="other")
    for name in RUNTIME:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    assert not (one / "zot/guard").exists()
    assert (two / "zot/guard/guard-rules.json").is_file() and (two / "zot/guard/guard.jq").is_file()
    scripts = ["zot/runtime.sh", "test_main.sh", "main.sh"]
    for check in (
        [f"{BIN}/shellcheck", *scripts],
        [shutil.which("shfmt") or "shfmt", "-d", *scripts],
    ):
        result = run(check, two)
        assert result.returncode == 0, f"{check}:\n{result.stdout}{result.stderr}"


def test_handlers_see_what_hello_ack_says(project, tmp_path):
    """The shell's host info: variables set from hello_ack before any handler."""
    usage = "printf 'display\\nUsage: /%s TEXT\\n\\nSends TEXT to the model.' 'demo-ext'"
    variables = '"$HOST_ZOT_VERSION" "$HOST_PROVIDER" "$HOST_MODEL" "$NEWER_HOST"'
    shown = "printf 'display\\n%s|%s|%s|%s|' " + variables
    edit(project / "main.sh", usage, shown)
    assert run(["./build"], project).returncode == 0
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake(zot_version="0.2.0", provider="acme", model="m-1")
        assert ext.command("demo-ext", "")["display"] == "0.2.0|acme|m-1|1|"
        assert ext.shutdown() == 0
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake(zot_version=None, provider=7, model=None, capabilities=None)
        assert ext.command("demo-ext", "")["display"] == "||||"
        assert ext.shutdown() == 0


def test_a_jq_error_in_an_argument_check_fails_the_build(project):
    edit(project / "main.sh", '.text | test("\\\\S")', '.text | tst("\\\\S")')
    result = run(["./build"], project)
    assert result.returncode != 0
    assert "tst/1 is not defined" in result.stderr


# -- panels, the ask tool, before_agent_start, tool_cancel, rich results --------

PICK, ASK = "demo-ext-pick", "demo_ext_confirm"


def call(ext: ExtensionProcess, rid: str, name: str, args) -> None:
    ext.send({"type": "tool_call", "id": rid, "name": name, "args": args})


def no_frame(ext: ExtensionProcess, wait: float = 0.5) -> None:
    with pytest.raises(TimeoutError):
        ext.read_frame(wait)


def test_the_picker_the_ask_tool_and_the_prompt_as_a_newer_zot_drives_them(
    project, jq_env, tmp_path
):
    repo = tmp_path / "repo"  # hello_ack's cwd is tmp_path
    repo.mkdir()
    (repo / "CONVENTIONS.md").write_text("Indent with tabs.\n")
    with ExtensionProcess(project, data_dir=tmp_path, env=jq_env) as ext:
        hello, frames = ext.handshake()
        assert hello["capabilities"] == [
            "commands",
            "tools",
            "events",
            "panels",
            "tool_cancel",
            "call_tool",
        ]
        tools = {f["name"]: f for f in frames if f["type"] == "register_tool"}
        assert tools[ASK]["interactive"] is True and tools[ASK]["output_schema"]["required"]
        assert "interactive" not in tools[TOOL] and "output_schema" not in tools[TOOL]
        subscribe = next(f for f in frames if f["type"] == "subscribe")
        assert subscribe["intercept"] == ["tool_call", "before_agent_start"]

        opened = ext.command(PICK, "anything")
        assert opened["action"] == "open_panel" and opened["open_panel"]["id"] == "pick-1"
        ext.send({"type": "panel_key", "panel_id": "pick-1", "key": "rune", "text": "j"})
        assert ext.read_frame()["lines"][1] == "› Review the uncommitted changes for bugs."
        ext.send({"type": "panel_resize", "panel_id": "pick-1", "width": 80})
        ext.send({"type": "panel_key", "panel_id": "pick-2", "key": "down"})  # no such panel
        ext.send({"type": "panel_key", "panel_id": "pick-1", "key": "enter"})
        assert ext.read_frame() == {"type": "panel_close", "panel_id": "pick-1"}
        assert ext.read_frame() == {
            "type": "submit",
            "text": "Review the uncommitted changes for bugs.",
        }
        ext.send({"type": "panel_key", "panel_id": "pick-1", "key": "enter"})  # closed: ignored

        call(ext, "a1", ASK, {"action": "push"})
        assert ext.read_frame() == {
            "type": "notify",
            "level": "info",
            "message": "demo-ext is waiting for your answer",
        }
        assert ext.read_frame()["panel"]["lines"] == ["push", "", "› Approve", "  Decline"]
        ext.send({"type": "panel_key", "panel_id": "ask-2", "key": "down"})
        assert ext.read_frame()["lines"] == ["push", "", "  Approve", "› Decline"]
        ext.send({"type": "panel_key", "panel_id": "ask-2", "key": "rune", "text": "y"})
        frames = ext.read_until("tool_result")
        assert [f["type"] for f in frames] == ["panel_close", "clear_notes", "tool_result"]
        assert frames[-1]["structured_content"] == {"approved": True, "action": "push"}
        assert frames[-1]["content"] == [
            {"type": "text", "text": "**Approved** by the user: push", "format": "markdown"}
        ]

        call(ext, "a2", ASK, {"action": "push"})
        assert [ext.read_frame()["type"] for _ in range(2)] == ["notify", "open_panel"]
        ext.send({"type": "panel_close", "panel_id": "ask-3"})  # zot closes it: declined
        frames = ext.read_until("tool_result")
        assert [f["type"] for f in frames] == ["clear_notes", "tool_result"]
        assert frames[-1]["structured_content"] == {"approved": False, "action": "push"}

        call(ext, "a3", ASK, {"action": "push"})
        assert [ext.read_frame()["type"] for _ in range(2)] == ["notify", "open_panel"]
        ext.send({"type": "tool_cancel", "id": "a3"})
        assert ext.read_frame() == {"type": "panel_close", "panel_id": "ask-4"}
        assert ext.read_frame() == {"type": "clear_notes"}
        ext.send({"type": "panel_key", "panel_id": "ask-4", "key": "enter"})
        ext.send({"type": "tool_cancel", "id": "a3"})  # finished: ignored
        no_frame(ext)  # never a tool_result for a cancelled call

        answer = ext.request(
            {
                "type": "event_intercept",
                "event": "before_agent_start",
                "system_prompt": "You are zot.",
                "cwd": str(repo),
            }
        )
        assert answer["system_prompt"] == (
            "You are zot.\n\n## Project conventions (CONVENTIONS.md)\n\nIndent with tabs.\n"
        )
        answer = ext.intercept("x", {}, event="before_agent_start")  # hello_ack's cwd: none
        assert answer == {"type": "event_intercept_response", "id": answer["id"]}

        refusal = ext.intercept("bash", {"command": "rm -rf /"})
        assert refusal["block"] is True
        assert ext.read_frame() == {"type": "notify", "level": "warn", "message": refusal["reason"]}
        assert ext.tool(TOOL, {"text": "still here"})["content"][0]["text"] == "still here"
        assert ext.shutdown() == 0
        assert not ext.leftovers()
        log = ext.stderr()
    assert "panel_key for a panel that is not open: pick-2" in log
    assert "panel_key for a panel that is not open: pick-1" in log
    assert 'ignored tool_cancel for "a3"' in log


def test_on_zot_0_1_62_the_picker_notes_the_choice_and_the_ask_tool_declines(project, tmp_path):
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake(capabilities=None)  # zot 0.1.62 lists no capabilities
        assert ext.command(PICK, "")["open_panel"]["id"] == "pick-1"
        ext.send({"type": "panel_key", "panel_id": "pick-1", "key": "end"})
        ext.read_frame()
        ext.send({"type": "panel_key", "panel_id": "pick-1", "key": "enter"})
        assert ext.read_frame() == {"type": "panel_close", "panel_id": "pick-1"}
        assert ext.read_frame() == {
            "type": "notify",
            "level": "info",
            "message": "Chosen: List the TODO comments and suggest which to do first. "
            "(this zot cannot submit it: paste it yourself)",
        }
        result = ext.tool(ASK, {"action": "push"})
        assert result["is_error"] is True
        assert result["content"][0]["text"] == (
            "this zot cannot ask the user from a tool (it needs a newer zot): ask in the chat instead"
        )
        no_frame(ext, 0.2)
        assert ext.shutdown() == 0


@pytest.mark.parametrize(
    ("capabilities", "want", "intercept"),
    [
        (["panel"], ["commands", "panels", "call_tool"], None),
        (["ask"], ["tools", "panels", "tool_cancel", "call_tool"], None),
        (["prompt"], ["events", "call_tool"], ["before_agent_start"]),
        (["tools"], ["tools", "tool_cancel", "call_tool"], None),
    ],
)
def test_hello_lists_what_is_registered(projects, capabilities, want, intercept):
    with ExtensionProcess(projects.get("shell", capabilities)) as ext:
        hello, frames = ext.handshake()
        assert hello["capabilities"] == want
        subscribe = [f for f in frames if f["type"] == "subscribe"]
        assert [f["intercept"] for f in subscribe] == ([intercept] if intercept else [])
        assert ext.shutdown() == 0


def test_a_cancelled_call_is_killed_with_its_children_and_never_answered(project, tmp_path):
    """tool_cancel kills the handler's subshell and what it started; its hook runs."""
    edit(
        project / "main.sh",
        "\tprintf '%s' \"$1\"\n}",
        '\text_on_cancel log "cancelled $1"\n\tsleep "${1#slow}"\n\tprintf \'%s\' "$1"\n}',
    )
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake()
        before = set(ext.process.members())
        call(ext, "c1", TOOL, {"text": "slow3"})
        call(ext, "c2", TOOL, {"text": "slow1"})
        deadline = time.monotonic() + 5
        while not [m for m in ext.process.members() if "sleep" in m]:
            assert time.monotonic() < deadline, "the calls never started"
            time.sleep(0.02)
        ext.send({"type": "tool_cancel", "id": "c1"})
        ext.send({"type": "tool_cancel", "id": "nobody"})
        assert ext.read_frame(3)["id"] == "c2"  # the other call runs on
        no_frame(ext, 3.0)  # c1's sleep would have ended by now
        assert not [m for m in set(ext.process.members()) - before if "sleep" in m]
        assert ext.shutdown() == 0
        log = ext.stderr()
    assert "cancelled slow3" in log and "cancelled slow1" not in log
    assert 'ignored tool_cancel for "nobody"' in log


def test_rich_results_markdown_images_and_structured_content(project, tmp_path):
    text = "".join(f'line {i} "quoted" \\ \t{i}\n' for i in range(20000))  # 0.6 MB
    (tmp_path / "big.md").write_text(text)
    edit(
        project / "main.sh",
        "\tprintf '%s' \"$1\"\n}",
        "\tcase $1 in\n"
        "\tbig) ext_markdown \"$(<big.md)\"$'\\n' ;;\n"
        "\tbad) ext_structured '{not json' ;;\n"
        "\tfail) ext_text 'partial'\n\t\treturn 3 ;;\n"
        "\t*)\n"
        "\t\tprintf 'plain'\n"
        "\t\text_text 'second'\n"
        "\t\text_image image/png $'iVBO\\nRw0K\\n'\n"
        "\t\text_structured $'{\"n\":\\n 1}'\n"
        "\t\t;;\n"
        "\tesac\n}",
    )
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake(cwd=str(tmp_path))
        (project / "big.md").write_text(text)
        result = ext.tool(TOOL, {"text": "all"})
        assert result == {
            "type": "tool_result",
            "id": result["id"],
            "is_error": False,
            "content": [
                {"type": "text", "text": "plain"},
                {"type": "text", "text": "second"},
                {"type": "image", "mime_type": "image/png", "data": "iVBORw0K"},
            ],
            "structured_content": {"n": 1},
        }
        started = time.monotonic()
        result = ext.tool(TOOL, {"text": "big"}, timeout=10)
        assert result["content"] == [{"type": "text", "text": text, "format": "markdown"}]
        assert time.monotonic() - started < 3
        result = ext.tool(TOOL, {"text": "bad"})
        assert result["is_error"] and "ext_structured got no JSON" in result["content"][0]["text"]
        result = ext.tool(TOOL, {"text": "fail"})
        assert result["is_error"] and result["content"] == [{"type": "text", "text": "partial"}]
        assert ext.shutdown() == 0


def test_a_panel_left_open_is_closed_and_bad_panel_frames_are_skipped(project, tmp_path):
    edit(project / "picker.sh", "\t\tenter)\n", "\t\ttab) return ;;\n\t\tenter)\n")
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake()
        ext.command(PICK, "")
        for frame in (
            {"type": "panel_key", "key": "down"},
            {"type": "panel_key", "panel_id": 7, "key": "down"},
            {"type": "panel_key", "panel_id": "../pick-1", "key": "down"},
            {"type": "panel_key", "panel_id": "pick-1", "key": ["x"]},
            {"type": "panel_close"},
            {"type": "panel_close", "panel_id": "nope"},
        ):
            ext.send(frame)
        ext.send({"type": "panel_key", "panel_id": "pick-1", "key": "tab"})  # returns
        assert ext.read_frame() == {"type": "panel_close", "panel_id": "pick-1"}
        no_frame(ext, 0.3)
        assert ext.shutdown() == 0


def test_without_jq_it_says_so_before_hello(projects, tmp_path):
    """A PATH without jq (and a folder named jq where an empty PATH entry
    looks): a clear error on stderr, nothing on stdout, exit status 1."""
    project = projects.get("shell", ["commands"])
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("bash", "env", "mktemp", "cat", "rm"):
        if shutil.which(name):
            (tools / name).symlink_to(shutil.which(name))
    result = subprocess.run(
        ["./main.sh"],
        check=False,
        cwd=project,
        env={**os.environ, "PATH": f":{tools}"},
        input='{"type":"hello_ack"}\n',
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1 and result.stdout == "", result
    assert "jq not found on the PATH zot gives it: install jq 1.6 or newer" in result.stderr


def test_nothing_is_registered_before_hello_ack(projects):
    with ExtensionProcess(projects.get("shell", ["commands"])) as ext:
        assert ext.read_frame()["type"] == "hello"
        ext.send_raw(b"garbage before hello_ack\n")
        ext.send({"type": "event", "event": "turn_start"})
        with pytest.raises(TimeoutError):
            ext.read_frame(timeout=0.5)  # nothing yet: zot has not answered hello
        ext.send({"type": "hello_ack", "protocol_version": 1, "cwd": str(ext.ext_dir)})
        frames = ext.read_until("ready")
        assert [f["type"] for f in frames] == ["register_command", "ready"]
        assert ext.command("demo-ext", "x")["action"] == "prompt"
        assert ext.shutdown() == 0
        assert "skipped a line before hello_ack: garbage before hello_ack" in ext.stderr()


# -- calling zot's tools, tool options, intercepts that rewrite ------------------

CUT = "[zot cut this result: over 256 KiB]"
TOO_OLD = "cannot call read: this zot is too old to run its tools for extensions (update zot)"
BAD_CALL = "call_tool requires a name and JSON object args"
# main.sh's tool calls zot's tool named by its text's first word with the
# rest as arguments, and prints the status, REPLY and REPLY_TEXT.
CALLER = (
    '\text_call_tool "${1%% *}" "${1#* }"\n'
    '\tprintf \'%s\\037%s\\037%s\' "$?" "$REPLY" "$REPLY_TEXT"\n}'
)
MORE_HANDLERS = r"""
more() {
	ext_activate_tools "$1" other "$1"
	printf 'activated'
}
turn() {
	[[ $1 != 3 ]] || printf 'enough'
}
message() {
	case $1 in
	secret*) ext_hide_message 'a secret' ;;
	same) printf 'same' ;;
	fail) return 4 ;;
	*) printf '%s!' "$1" ;;
	esac
}
ask_read() {
	local name=${1%% *}
	ext_tool_prompt "${name#-}" "${1#* }" 'Summarise it.'
}
ext_tool --namespace files --namespace-description 'File tools' --namespace-instructions 'Use them.' \
	--exposure deferred --deferred --replay safe --output-schema '{"type": "object"}' \
	more 'More tools.' '{"type": "object"}' '.name // "x"' more
ext_intercept_turn_start turn
ext_intercept_assistant_message message
ext_command ask-read 'Read a file, then ask' ask_read
"""
REWRITING_GUARD = """guard() {
	case $1 in
	read) ext_modify_args '{"path": "safe/notes.txt"}' ;;
	write) ext_modify_args '["not", "an object"]' ;;
	bash) ext_modify_args '{"command": "true"}' ;;
	esac
"""


def with_new_handlers(project: Path) -> Path:
    """The project with handlers that use every feature of the newest zot."""
    edit(project / "main.sh", "\tprintf '%s' \"$1\"\n}", CALLER)
    edit(project / "main.sh", "\n# Sourced", MORE_HANDLERS + "\n# Sourced")
    edit(project / "main.sh", "guard() {\n", REWRITING_GUARD)
    return project


def called(reply: dict) -> tuple[str, dict, str]:
    """What CALLER printed: ext_call_tool's status, REPLY (parsed), REPLY_TEXT."""
    status, result, text = reply["content"][0]["text"].split("\x1f")
    return status, json.loads(result), text


def error_result(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}], "is_error": True}


def test_a_tool_calls_zots_tools_on_a_newer_zot(project, jq_env, tmp_path):
    """call_tool frames field by field, zot's answers routed to the handler
    that waits while the read loop goes on; a cancelled outer call cancels
    its call, whose late answer is dropped quietly."""
    with_new_handlers(project)
    with ExtensionProcess(project, data_dir=tmp_path, env=jq_env) as ext:
        hello, _ = ext.handshake()
        assert hello["capabilities"][-1] == "call_tool"
        call(ext, "c1", TOOL, {"text": 'read {\n "path": "notes.txt"}'})
        first = ext.read_frame()
        assert first == {
            "type": "call_tool",
            "id": first["id"],
            "name": "read",
            "args": {"path": "notes.txt"},
            "parent_id": "c1",
        }
        assert first["id"].startswith("call-"), first
        call(ext, "c2", TOOL, {"text": 'bash {"command": "ls"}'})  # two wait side by side
        second = ext.read_frame()
        assert second["parent_id"] == "c2" and second["id"] != first["id"]
        ext.send({"type": "tool_result", "id": "call-1-1", "content": []})  # no such call
        for text in (" {}", "read [1]", "read {"):  # no name, no object: nothing sent
            assert called(ext.tool(TOOL, {"text": text})) == ("1", error_result(BAD_CALL), BAD_CALL)
        ext.send({"type": "tool_result", "id": second["id"], "content": "x", "is_error": "yes"})
        reply = ext.read_reply()
        assert reply["id"] == "c2" and called(reply) == (
            "0",
            {"content": [], "is_error": False},
            "",
        )
        text = [{"type": "text", "text": "1: a"}, {"type": "image", "data": "x"}]
        ext.send(
            {"type": "tool_result", "id": first["id"], "name": "read", "content": text}
            | {"is_error": True, "truncated": True}
        )
        reply = ext.read_reply()
        assert reply["id"] == "c1" and called(reply) == (
            "1",
            {
                "content": [*text, {"type": "text", "text": CUT}],
                "is_error": True,
                "truncated": True,
            },
            f"1: a\n{CUT}",
        )

        call(ext, "c3", TOOL, {"text": 'read {"path": "big"}'})
        third = ext.read_frame()
        ext.send({"type": "tool_cancel", "id": "c3"})
        assert ext.read_frame() == {"type": "call_tool_cancel", "id": third["id"]}
        ext.send({"type": "tool_result", "id": third["id"], "content": []})  # late: dropped
        no_frame(ext, 0.3)
        assert ext.shutdown() == 0
        log = ext.stderr()
    assert log.count("ignored a tool_result") == 1, log
    assert 'ignored a tool_result for "call-1-1": no call of zot\'s tools waits for it' in log


@pytest.mark.parametrize("capabilities", [None, []], ids=["zot 0.1.62", "no call_tool"])
def test_on_an_older_zot_a_call_fails_at_once_and_a_tool_prompt_is_a_prompt(
    project, tmp_path, capabilities
):
    with_new_handlers(project)
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake(capabilities=capabilities)
        ext.send({"type": "tool_call", "id": "c1", "name": TOOL, "args": {"text": "read {}"}})
        reply = ext.read_frame()  # no call_tool before it
        assert reply["id"] == "c1" and called(reply) == ("1", error_result(TOO_OLD), TOO_OLD)
        answer = ext.command("ask-read", 'read {"path": "a"}')
        if capabilities is None:
            assert answer == {"type": "command_response", "id": answer["id"]} | {
                "action": "prompt",
                "prompt": "Summarise it.",
            }
        else:  # a newer zot that does not run tools for extensions still knows tool_prompt
            assert answer["action"] == "tool_prompt"
        no_frame(ext, 0.2)
        assert ext.shutdown() == 0
        log = ext.stderr()
    wanted = "zot 0.1.62 cannot run a tool from a command: sent the prompt alone"
    assert (wanted in log) == (capabilities is None), log


def test_a_call_zot_does_not_answer_in_time_is_cancelled(project, tmp_path):
    with_new_handlers(project)
    edit(project / "zot/runtime.sh", "_ext_call_limit=60 ", "_ext_call_limit=1 ")
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake()
        call(ext, "c1", TOOL, {"text": "read {}"})
        frame = ext.read_frame()
        started = time.monotonic()
        assert ext.read_frame(3) == {"type": "call_tool_cancel", "id": frame["id"]}
        assert 0.9 < time.monotonic() - started < 2
        late = "zot did not answer the call of read within 1 s"
        assert called(ext.read_reply()) == ("1", error_result(late), late)
        ext.send({"type": "tool_result", "id": frame["id"], "content": []})  # dropped
        no_frame(ext, 0.3)
        assert ext.shutdown() == 0
        assert "ignored a tool_result" not in ext.stderr()


def test_tool_options_tool_prompt_and_intercepts_that_rewrite(project, jq_env, tmp_path):
    with_new_handlers(project)
    with ExtensionProcess(project, data_dir=tmp_path, env=jq_env) as ext:
        _, frames = ext.handshake()
        more = next(f for f in frames if f.get("name") == "more")
        assert more == {
            "type": "register_tool",
            "name": "more",
            "description": "More tools.",
            "schema": {"type": "object"},
            "namespace": "files",
            "namespace_description": "File tools",
            "namespace_instructions": "Use them.",
            "deferred": True,
            "output_schema": {"type": "object"},
            "exposure": "deferred",
            "replay": "safe",
        }
        subscribe = next(f for f in frames if f["type"] == "subscribe")
        assert subscribe["intercept"] == [
            "tool_call",
            "before_agent_start",
            "turn_start",
            "assistant_message",
        ]
        result = ext.tool("more", {"name": "n"})
        assert result["activate_tools"] == ["n", "other"] and not result["is_error"]

        def intercept(event: str, **fields) -> dict:
            answer = ext.request({"type": "event_intercept", "event": event, **fields})
            return {k: v for k, v in answer.items() if k not in ("type", "id")}

        assert intercept("turn_start", step=1) == {"block": False}
        assert intercept("turn_start", step=3) == {"block": True, "reason": "enough"}
        assert intercept("assistant_message", text="hi") == {
            "block": False,
            "replace_text": "hi!",
        }
        assert intercept("assistant_message", text="same") == {"block": False}
        assert intercept("assistant_message", text="secret x") == {
            "block": True,
            "reason": "a secret",
        }
        assert intercept("assistant_message", text="fail") == {
            "block": True,
            "reason": "demo-ext failed: exit status 4",
        }
        rewritten = {"block": False, "modified_args": {"path": "safe/notes.txt"}}
        assert intercept("tool_call", tool_name="read", tool_args={"path": "n"}) == rewritten
        assert intercept("tool_call", tool_name="write", tool_args={}) == {"block": False}
        ls = intercept("tool_call", tool_name="bash", tool_args={"command": "ls"})
        assert ls == {"block": False, "modified_args": {"command": "true"}}
        refused = intercept("tool_call", tool_name="bash", tool_args={"command": "rm -rf /"})
        assert refused["block"] is True and "modified_args" not in refused

        answer = ext.command("ask-read", 'read {"path": "a"}')
        assert answer == {
            "type": "command_response",
            "id": answer["id"],
            "action": "tool_prompt",
            "tool_name": "read",
            "tool_args": {"path": "a"},
            "prompt": "Summarise it.",
        }
        assert ext.command("ask-read", "- {}")["error"] == "tool_prompt requires a name and prompt"
        assert (
            ext.command("ask-read", "read 7")["error"] == "tool_prompt args must be a JSON object"
        )
        assert ext.shutdown() == 0
        log = ext.stderr()
    assert 'ext_modify_args: not sent, the arguments must be a JSON object: ["not"' in log


@pytest.mark.parametrize(
    ("option", "wrong", "wanted"),
    [
        (
            "--exposure deferred",
            "--exposure hidden",
            'tool more: exposure "hidden" must be one of direct,',
        ),
        (
            "--replay safe",
            "--replay twice",
            'tool more: replay "twice" must be one of never, safe,',
        ),
        ("--deferred", "--defer", "unknown option --defer"),
    ],
)
def test_a_wrong_tool_option_ends_the_extension_before_hello(project, option, wrong, wanted):
    with_new_handlers(project)
    edit(project / "main.sh", option, wrong)
    result = subprocess.run(
        ["./main.sh"], check=False, cwd=project, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 1 and result.stdout == "", result
    assert wanted in result.stderr and result.stderr.startswith("[demo-ext] "), result.stderr


def test_the_unit_test_helpers_answer_zots_tools_and_show_the_frames(project, jq_env):
    with_new_handlers(project)
    script = r"""
        source ./main.sh
        read_a='{"text": "read {\"path\": \"a\"}"}'
        ext_test_frames tool demo_ext "$read_a"
        NEWER_HOST=1
        ext_test_frames tool demo_ext "$read_a"
        ext_test_zot_tool --truncated read 'line 1'
        ext_test_zot_tool --json bash '{"content": [{"type": "text", "text": "no"}], "is_error": true}'
        ext_test_frames tool demo_ext "$read_a"
        printf '%s\n' "$(ext_test_tool demo_ext '{"text": "bash {}"}')"
        ext_test_frames turn_start 3
        ext_test_frames assistant_message hi
        ext_test_frames intercept read '{"path": "a"}'
        ext_test_frames command ask-read 'read {"path": "a"}'
    """
    result = run(["bash", "-c", script], project, env=jq_env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    frames = [json.loads(line) for line in lines[:5] + lines[6:]]
    assert called(frames[0]) == ("1", error_result(TOO_OLD), TOO_OLD)  # zot 0.1.62: none sent
    no_answer = "this test's zot has no answer for its tool read"
    call_frame = {"type": "call_tool", "id": "call-1", "name": "read", "args": {"path": "a"}}
    assert frames[1] == call_frame | {"parent_id": "test"}
    assert called(frames[2]) == ("1", error_result(no_answer), no_answer)
    assert frames[3] == frames[1]
    cut = [{"type": "text", "text": "line 1"}, {"type": "text", "text": CUT}]
    assert called(frames[4]) == (
        "0",
        {"content": cut, "is_error": False, "truncated": True},
        f"line 1\n{CUT}",
    )
    assert lines[5] == "1\x1f" + json.dumps(error_result("no"), separators=(",", ":")) + "\x1fno"
    assert [f.get("reason", f.get("replace_text")) for f in frames[5:7]] == ["enough", "hi!"]
    assert frames[7]["modified_args"] == {"path": "safe/notes.txt"}
    assert frames[8]["action"] == "tool_prompt" and frames[8]["tool_args"] == {"path": "a"}


# -- start-up, stop, the guard's limits, processes, appends, NUL ----------------


def slow_jq(tmp_path: Path, env: dict, seconds: float, program: str = "guard_verdict") -> dict:
    """env with a jq that starts `seconds` late when its program holds
    `program` (the guard's jq: jq 1.6 compiles it and reads the rules in
    0.3 s idle, over a second under load)."""
    real = shutil.which("jq", path=env["PATH"])
    bin_dir = tmp_path / f"slow-jq-{seconds}"
    bin_dir.mkdir()
    wrapper = bin_dir / "jq"
    wrapper.write_text(
        f'#!/bin/sh\ncase "$*" in *{program}*) sleep {seconds} ;; esac\nexec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"}


def until_ready(ext: ExtensionProcess, hello_timeout: float) -> list[dict]:
    """handshake() with a longer wait for hello: the frames up to ready."""
    ext.hello = ext.read_frame(hello_timeout)
    assert ext.hello["type"] == "hello", ext.hello
    ack = protocol.hello_ack(str(ext.ext_dir.parent), str(ext.ext_dir), str(ext.data_dir))
    ext.send({**ack, "zot_version": "test"})
    return ext.read_until("ready")


def test_ready_does_not_wait_for_the_guard_and_an_early_call_waits_for_it(
    project, jq_env, tmp_path
):
    """The guard's jq compiles after ready: with it 1.5 s slow, ready still
    comes at once, an intercept sent right at ready gets the guard's verdict
    once it is there (within zot's 5 s), and a shutdown or the end of input
    right after ready ends the extension within zot's 2 s."""
    env = slow_jq(tmp_path, jq_env, 1.5)
    exts = [ExtensionProcess(project, data_dir=tmp_path, env=env) for _ in range(3)]
    try:
        asking, stopping, ending = exts
        for ext in exts:
            until_ready(ext, hello_timeout=5)
            assert time.monotonic() - ext.started < 1.5  # not waiting for the guard
        started = time.monotonic()
        refused = asking.intercept("bash", {"command": "rm -rf /"}, timeout=30)
        assert refused["block"] is True and "(delete-outside-project)" in refused["reason"]
        assert time.monotonic() - started < 5  # zot allows the call after 5 s
        assert asking.intercept("bash", {"command": "ls"})["block"] is False
        assert stopping.shutdown(timeout=2) == 0  # zot kills it after 2 s
        ending.close_stdin()
        assert ending.wait(timeout=2) == 0
        assert asking.shutdown() == 0
    finally:
        for ext in exts:
            ext.kill()


def test_a_guard_not_ready_in_time_refuses_and_later_calls_get_its_verdicts(project, tmp_path):
    """A guard still compiling 4 s after zot asked refuses the call (zot
    would allow it after 5 s); the next call waits for it, and its late
    verdict on the first call is not taken for the next one's."""
    env = slow_jq(tmp_path, dict(os.environ), 5)
    with ExtensionProcess(project, data_dir=tmp_path, env=env) as ext:
        until_ready(ext, hello_timeout=5)
        started = time.monotonic()
        refused = ext.intercept("bash", {"command": "ls"}, timeout=30)
        assert time.monotonic() - started < 5
        assert refused["block"] is True and "(too-slow)" in refused["reason"], refused
        started = time.monotonic()
        refused = ext.intercept("bash", {"command": "rm -rf /"}, timeout=30)
        assert time.monotonic() - started < 5
        assert refused["block"] is True and "(delete-outside-project)" in refused["reason"]
        assert ext.intercept("bash", {"command": "ls"})["block"] is False
        assert ext.shutdown() == 0


def test_the_log_tells_a_block_and_an_end_of_input_quietly(project, jq_env, tmp_path):
    """zot's log says "blocked a tool call" for a refusal only; stdin ending
    without shutdown (zot stopped) is a stop like any other, with nothing
    logged about it."""
    with ExtensionProcess(project, data_dir=tmp_path, env=jq_env) as ext:
        ext.handshake()
        assert ext.intercept("bash", {"command": "ls"})["block"] is False
        assert ext.intercept("read", {"path": "notes.txt"})["block"] is False
        assert ext.intercept("bash", {"command": "rm -rf /"})["block"] is True
        ext.close_stdin()
        assert ext.wait(timeout=5) == 0
        log = ext.stderr()
    assert log.count("blocked a tool call") == 1, log
    assert "skipped" not in log and "abandoned" not in log, log


def many_rules(count: int) -> str:
    """A policy of `count` ordinary command rules, as JSON text."""
    rule = '{"id": "r%d", "command": ["tool%d"], "reason": "r", "instead": "i"}'
    return '{"rules": [' + ",".join(rule % (i, i) for i in range(count)) + "]}"


def test_a_policy_over_1_mib_is_refused_unread_and_one_just_under_is_quick(
    project, jq_env, tmp_path
):
    """10 MB of rules: refused at once (not read), every bash call refused,
    one warning after ready. Just under 1 MiB of rules: the guard reads
    them and decides within zot's 5 s, the first call too."""
    huge = many_rules(150_000)
    assert len(huge) > 10_000_000
    (project / "guard-policy.json").write_text(huge)
    with ExtensionProcess(project, data_dir=tmp_path, env=jq_env) as ext:
        frames = until_ready(ext, hello_timeout=5)
        reply = ext.intercept("bash", {"command": "ls"})
        assert time.monotonic() - ext.started < 5
        size = len(huge)
        reason = (
            f"refused by demo-ext (unreadable-rules): guard-policy.json is {size} bytes,"
            " over the guard's limit of 1 MiB, so the guard refuses every command."
            " Instead, keep guard-policy.json under 1 MiB (fewer rules, or broader patterns)."
        )
        assert reply["block"] is True and reply["reason"] == reason
        assert ext.shutdown() == 0
        frames += ext.spontaneous
        log = ext.stderr()
    warning = (
        f"demo-ext: the guard cannot use its rules: guard-policy.json is {size} bytes,"
        " over the guard's limit of 1 MiB, so the guard refuses every command."
        " Instead, keep guard-policy.json under 1 MiB (fewer rules, or broader patterns)."
    )
    assert warnings(frames) == [{"type": "notify", "level": "warn", "message": warning}], frames
    assert log.count(warning) == 1, log

    count = 14_400
    while len(large := many_rules(count)) > 1 << 20:
        count -= 50
    assert len(large) > 1_000_000
    (project / "guard-policy.json").write_text(large)
    with ExtensionProcess(project, data_dir=tmp_path, env=jq_env) as ext:
        frames = until_ready(ext, hello_timeout=30)
        # The first call, right after ready, waits for the rules to be read.
        for command, refused in (("tool7 x", True), ("rm -rf /", True), ("ls", False)):
            started = time.monotonic()
            assert ext.intercept("bash", {"command": command})["block"] is refused
            assert time.monotonic() - started < 5  # zot allows the call after 5 s
        assert ext.shutdown() == 0
        assert warnings(frames + ext.spontaneous) == []


def warnings(frames: list[dict]) -> list[dict]:
    """The start-up warnings among the frames (the guard notes its refusals too)."""
    return [f for f in frames if "the guard cannot use its rules" in f.get("message", "")]


def test_a_broken_rules_file_is_told_once_after_ready(project, tmp_path):
    (project / "zot/guard/guard-rules.json").write_text('{"rules": [')
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        _, frames = ext.handshake()
        assert frames[-1]["type"] == "ready"
        note = ext.read_frame()
        assert note["type"] == "notify" and note["level"] == "warn", note
        message = note["message"]
        assert message.startswith(
            "demo-ext: the guard cannot use its rules: zot/guard/guard-rules.json is not valid JSON ("
        )
        assert message.endswith(
            ", so the guard refuses every command."
            " Instead, fix zot/guard/guard-rules.json (./smoke-test points at the problem)."
        )
        reply = ext.intercept("bash", {"command": "ls"})
        assert reply["block"] is True
        assert (
            reply["reason"]
            == "refused by demo-ext (unreadable-rules): " + message.split(": ", 2)[2]
        )
        assert ext.read_frame()["message"] == reply["reason"]  # the refusal's note
        no_frame(ext, 0.3)  # the warning came once
        assert ext.shutdown() == 0
        assert ext.stderr().count(message) == 1


def carrying(run: str) -> list[int]:
    """The processes whose environment has ZOT_EXT_RUN=run or run/..."""
    wanted = f"ZOT_EXT_RUN={run}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                entries = fh.read().split(b"\0")
        except OSError:
            continue
        if any(e == wanted or e.startswith(wanted + b"/") for e in entries):
            found.append(int(pid))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds processes in /proc")
@pytest.mark.parametrize("own_group", [True, False], ids=["own group", "zot's group"])
@pytest.mark.parametrize("end", ["shutdown", "end of input", "tool_cancel"])
def test_nothing_a_handler_started_outlives_it(project, tmp_path, own_group, end):
    """A handler whose child leaves a backgrounded grandchild behind: after
    shutdown, the end of input or tool_cancel no process carries the run's
    ZOT_EXT_RUN, in a process group of its own or in zot's."""
    edit(
        project / "main.sh",
        "\tprintf '%s' \"$1\"\n}",
        '\tprintf \'%s\' "$ZOT_EXT_RUN" >"$1.new" && mv "$1.new" "$1"\n'
        "\tsh -c 'sleep 100 &'\n\tsleep 60\n}",
    )
    marker = tmp_path / "run"
    run = ""
    try:
        with ExtensionProcess(project, data_dir=tmp_path, own_group=own_group) as ext:
            ext.handshake()
            call(ext, "c1", TOOL, {"text": str(marker)})
            deadline = time.monotonic() + 10
            while not marker.exists():
                assert time.monotonic() < deadline, "the handler never ran"
                time.sleep(0.02)
            run = marker.read_text()
            base = run.partition("/")[0]
            assert base.startswith(f"{ext.proc.pid}.") and run != base, run
            while len(carrying(run)) < 2:  # sleep 60, and sleep 100 in the background
                assert time.monotonic() < deadline, "the handler never started its processes"
                time.sleep(0.02)
            if end == "tool_cancel":
                ext.send({"type": "tool_cancel", "id": "c1"})
                deadline = time.monotonic() + 2
                while carrying(run) and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert carrying(run) == []
                no_frame(ext, 0.3)  # and no result for the cancelled call
                assert ext.shutdown() == 0
            elif end == "shutdown":
                assert ext.shutdown() == 0
            else:
                ext.close_stdin()
                assert ext.wait() == 0
            assert carrying(base) == []
    finally:
        for pid in carrying(run.partition("/")[0]) if run else []:
            os.kill(pid, signal.SIGKILL)


# main.sh's tool, for the process contract: by its text, it leaves processes
# running in the background, runs a tree under ext_timeout, or starts a
# program with ext_background, then prints the process ids it knows and
# ZOT_EXT_RUN last.
PROCESS_TOOL = r"""	case $1 in
	leave)
		sleep 300 &
		printf '%s ' "$!"
		setsid sleep 300 &
		printf '%s ' "$!"
		(while :; do sleep 300; done) &
		printf '%s ' "$!"
		sh -c 'sleep 300 >/dev/null 2>&1 &'
		;;
	timeout)
		ext_timeout 0.5 sh -c 'sleep 300 & setsid sleep 300 & sleep 300'
		printf '%s ' "$?"
		;;
	quick)
		ext_timeout 30 sh -c 'exit 3'
		printf '%s ' "$?"
		;;
	keep)
		ext_background sleep 300
		printf '%s ' "$REPLY"
		;;
	wait)
		ext_background sleep 300
		printf '%s %s' "$REPLY" "$ZOT_EXT_RUN" >"$2.new" && mv "$2.new" "$2"
		ext_timeout 60 sh -c 'sleep 300 & setsid sleep 300 & sleep 300'
		;;
	esac
	printf '%s' "$ZOT_EXT_RUN"
}"""


def running(pids) -> list[int]:
    """Those of the processes that run (a zombie, exited, does not)."""
    alive = []
    for pid in map(int, pids):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                state = fh.read().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state not in "ZX":
            alive.append(pid)
    return alive


def process_project(project: Path) -> Path:
    edit(project / "main.sh", "\tprintf '%s' \"$1\"\n}", PROCESS_TOOL)
    edit(project / "main.sh", "\telse\n\t\t.text\n", '\telse\n\t\t.text, (.file // "")\n')
    return project


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds processes in /proc")
@pytest.mark.skipif(not shutil.which("setsid"), reason="starts setsid")
def test_a_call_stops_what_it_started_before_its_result(project, tmp_path):
    """Right when the result arrives (no waiting), nothing the call left
    running runs: in the background, setsid'd, a loop in a subshell of
    bash's (which /proc shows no mark of), a child's background; ext_timeout
    stops a tree and returns 124; ext_background's program outlives the
    call, carrying the run's mark, and ends with the extension."""
    process_project(project)
    base, pids = "", []
    try:
        with ExtensionProcess(project, data_dir=tmp_path) as ext:
            ext.handshake()
            *pids, run = ext.tool(TOOL, {"text": "leave"})["content"][0]["text"].split(" ")
            left, marked = running(pids), carrying(run)  # at once
            base = run.partition("/")[0]
            assert base.startswith(f"{ext.proc.pid}.") and run.startswith(base + "/"), run
            assert len(pids) == 3 and left == [] and marked == [], (pids, left, marked)

            started = time.monotonic()
            status, run = ext.tool(TOOL, {"text": "timeout"}, timeout=30)["content"][0][
                "text"
            ].split(" ")
            elapsed = time.monotonic() - started
            assert (status, carrying(run)) == ("124", []), (status, run)
            assert elapsed >= 0.5, elapsed
            started = time.monotonic()
            status, _ = ext.tool(TOOL, {"text": "quick"}, timeout=30)["content"][0]["text"].split()
            assert status == "3" and time.monotonic() - started < 30

            kept, run = ext.tool(TOOL, {"text": "keep"})["content"][0]["text"].split(" ")
            assert running([kept]) == [int(kept)] and carrying(run) == []
            with open(f"/proc/{kept}/environ", "rb") as fh:
                assert f"ZOT_EXT_RUN={base}".encode() in fh.read().split(b"\0")
            assert ext.tool(TOOL, {"text": "next"})["content"][0]["text"].startswith(base + "/")
            assert running([kept]) == [int(kept)]  # still, after another call
            assert ext.shutdown() == 0
        assert running([kept]) == [] and carrying(base) == []
    finally:
        for pid in running(pids) + (carrying(base) if base else []):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds processes in /proc")
@pytest.mark.skipif(not shutil.which("setsid"), reason="starts setsid")
def test_tool_cancel_stops_the_calls_processes_not_ext_backgrounds(project, tmp_path):
    """A call cancelled while ext_timeout waits for a tree: the tree stops,
    no result comes; the program it started with ext_background runs on."""
    process_project(project)
    marker = tmp_path / "kept"
    base = ""
    try:
        with ExtensionProcess(project, data_dir=tmp_path) as ext:
            ext.handshake()
            call(ext, "c1", TOOL, {"text": "wait", "file": str(marker)})
            deadline = time.monotonic() + 10
            while not marker.exists():
                assert time.monotonic() < deadline, "the handler never ran"
                time.sleep(0.02)
            kept, run = marker.read_text().split(" ")
            base = run.partition("/")[0]
            while len(carrying(run)) < 3:  # the three sleeps of the tree
                assert time.monotonic() < deadline, "the tree never started"
                time.sleep(0.02)
            ext.send({"type": "tool_cancel", "id": "c1"})
            deadline = time.monotonic() + 2
            while carrying(run) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert carrying(run) == [] and running([kept]) == [int(kept)]
            no_frame(ext, 0.3)  # and no result for the cancelled call
            assert ext.shutdown() == 0
        assert carrying(base) == [] and running([kept]) == []
    finally:
        for pid in carrying(base) if base else []:
            os.kill(pid, signal.SIGKILL)


def test_folders_of_killed_extensions_are_removed_after_ready(projects, tmp_path):
    """SIGKILL leaves an extension's temporary folder behind: the next start
    removes those whose process is gone, keeps a running one's, and still
    answers at once."""
    temp = tmp_path / "temp"
    temp.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = temp / f"zot-ext.{gone.pid}.abc123"
    (stale / "sub").mkdir(parents=True)
    (stale / "sub" / "output").write_text("left behind")
    alive = temp / f"zot-ext.{os.getpid()}.def456"  # this test's own pid: running
    alive.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    with ExtensionProcess(projects.get("shell", ["tools"]), data_dir=tmp_path, env=env) as ext:
        ext.handshake()
        assert ext.tool(TOOL, {"text": "x"})["content"][0]["text"] == "x"
        deadline = time.monotonic() + 5
        while stale.exists():
            assert time.monotonic() < deadline, "the killed extension's folder is still there"
            time.sleep(0.02)
        assert alive.is_dir()
        assert ext.shutdown() == 0
    assert sorted(p.name for p in temp.iterdir()) == [alive.name]  # its own is gone too


@pytest.mark.parametrize("where", ["in a string", "before a frame", "past 4 KiB"])
def test_a_raw_nul_does_not_swallow_the_next_frame(project, jq_env, tmp_path, where):
    """A line with a raw NUL byte is no JSON: it is skipped (or refused), and
    the frame after it is answered."""
    bad = {
        "in a string": b'{"type":"tool_call","id":"n1","name":"demo_ext","args":{"text":"a\x00b"}}',
        "before a frame": b'\x00{"type":"tool_call","id":"n1","name":"demo_ext","args":{}}',
        "past 4 KiB": b'{"type":"tool_call","id":"n1","name":"demo_ext","args":{"text":"'
        + b"x" * 5000
        + b'\x00"}}',
    }[where]
    with ExtensionProcess(project, data_dir=tmp_path, env=jq_env) as ext:
        ext.handshake()
        ext.send_raw(
            bad
            + b"\n"
            + line({"type": "tool_call", "id": "n2", "name": TOOL, "args": {"text": "next"}})
        )
        reply = ext.read_reply()
        if reply["id"] == "n1":  # read with the NUL: refused, as bash cannot pass it on
            assert reply["is_error"] is True, reply
            reply = ext.read_reply()
        assert reply["id"] == "n2" and reply["content"][0]["text"] == "next", reply
        assert ext.shutdown() == 0
