"""What only the TypeScript flavour has: npm, tsc, esbuild, tsx, its guard module,
its exit, its update from 0.2.0."""

from __future__ import annotations

import json
import os
import random
import re
import runpy
import shutil
import signal
import time
from pathlib import Path

import pytest
from conftest import (
    CAPABILITIES,
    GUARD_ALLOWED,
    GUARD_CWD,
    GUARD_REFUSED,
    ROOT,
    VARIANTS,
    build,
    render,
    run,
)
from host import ExtensionProcess
from robustness import line as frame_line
from robustness import pipeline, rule_of
from test_update import clone_template, commit_all, edit, generate, git, smoke, tag_releases, update

GUARD_TS = "template/zot/guard/guard.ts"
TOOL = "demo_ext"

TYPESCRIPT = [variant for variant in VARIANTS if VARIANTS[variant].language == "typescript"]


def update_status(project: Path) -> list[str]:
    return git(project, "status", "--porcelain").splitlines()


# Changes that a careless port judges differently: blanks Python and
# JavaScript do not agree on, characters beyond U+FFFF (one character in
# Python, two UTF-16 units in JavaScript), quotes, wrappers and nesting.
ODD = ["\v", "\f", "\r", "\x85", "\xa0", "\u2028", "\u3000", "\ufeff", "é", "😀", "𝒳"]
SEPARATORS = [" && ", "; ", " | ", " || ", " & ", "\n", " |& ", "\\\n"]
WRAPPERS = ["sudo ", "sudo -u root ", "env X=1 ", "nohup ", "timeout 5 ", "xargs ", "time "]


def mutation(rng: random.Random, case: str, cases: list[str]) -> str:
    """A case of guard-cases.json changed a little."""
    kind = rng.randrange(8)
    if kind == 0:
        return rng.choice(WRAPPERS) + case
    if kind == 1:
        quoted = "'" + case.replace("'", "'\\''") + "'"
        return rng.choice(["bash -c ", "sh -c ", "eval ", "su -c "]) + quoted
    if kind == 2:
        opening, closing = rng.choice([("$(", ")"), ("`", "`"), ("(", ")"), ("echo $(", ")")])
        return opening + case + closing
    if kind == 3:
        return rng.choice(cases) + rng.choice(SEPARATORS) + case
    if kind == 4:
        return case + rng.choice(SEPARATORS) + rng.choice(cases)
    if kind == 5:
        blanks = [" ", "  ", "\t", *ODD]
        return "".join(word + rng.choice(blanks) for word in case.split(" ")).rstrip()
    if kind == 6:
        at = rng.randint(0, len(case))
        return case[:at] + rng.choice([*ODD, "'", '"', "\\", "$", "(", ")", "`", "#"]) + case[at:]
    return rng.choice(['"', "'"]) + case + rng.choice(['"', "'", ""])


def guard_commands() -> list[str]:
    """Every case of guard-cases.json, and a few hundred changed a little."""
    cases = [*GUARD_REFUSED, *GUARD_ALLOWED]
    rng = random.Random(7)  # the same commands on every run
    changed = [mutation(rng, rng.choice(cases), cases) for _ in range(600)]
    limits = ["😀" * 65536, "😀" * 65536 + "x", "cat <<- EOF\nx\nEOF"]
    limits.append("cd " + "😀/" * 1400 + "; rm -rf ../x")  # 4096 UTF-16 units, not characters
    return cases + changed + limits


@pytest.mark.parametrize("variant", TYPESCRIPT)
def test_guard_gives_the_verdicts_of_guard_py(projects, variant):
    """The running extension refuses by the same rule as guard.py, or allows."""
    guard_py = projects.get("python", ["guard"]) / "zot" / "guard" / "guard.py"
    check = runpy.run_path(str(guard_py))["check"]
    commands = guard_commands()
    expected = []
    for command in commands:
        try:
            refusal = check(command, GUARD_CWD)
        except Exception:  # noqa: BLE001 - a crash refuses, with no rule
            expected.append("")
        else:
            expected.append(refusal.rule if refusal else None)
    assert 200 < sum(rule is not None for rule in expected) < len(commands) - 200
    ids = [f"g{i}" for i in range(len(commands))]
    lines = [
        frame_line(
            {"type": "event_intercept", "id": rid, "event": "tool_call", "tool_id": "t"}
            | {"tool_name": "bash", "tool_args": {"command": command}}
        )
        for rid, command in zip(ids, commands, strict=True)
    ]
    with ExtensionProcess(projects.get(variant, ["guard"])) as ext:
        ext.handshake(cwd=GUARD_CWD)
        answers = pipeline(ext, lines, dict.fromkeys(ids, "event_intercept_response"))
    got = [answers[rid] for rid in ids]
    got = [rule_of(answer.get("reason", "")) if answer["block"] else None for answer in got]
    wrong = [(c, g, e) for c, g, e in zip(commands, got, expected, strict=True) if g != e]
    assert not wrong, wrong[:10]


def test_build_keeps_the_lockfile_and_skips_what_did_not_change(projects, tmp_path):
    project = projects.fresh_copy(tmp_path, "typescript", CAPABILITIES)
    rendered = render(tmp_path / "rendered", language="typescript", capabilities=["tools"])
    # npm install found package-lock.json in sync with package.json
    assert (project / "package-lock.json").read_text() == (
        rendered / "package-lock.json"
    ).read_text()

    bundle = project / "dist" / "index.js"
    built = bundle.stat().st_mtime_ns
    result = run(["./build"], project)
    assert result.returncode == 0, result.stderr
    assert "added" not in result.stdout  # no npm install
    assert bundle.stat().st_mtime_ns == built  # no new bundle

    handler = project / "src" / "extension.ts"
    handler.write_text(handler.read_text().replace("Return it in upper case.", "Shout it."))
    result = run(["./build"], project)
    assert result.returncode == 0, result.stderr
    assert "Shout it." in bundle.read_text()


@pytest.mark.parametrize("variant", TYPESCRIPT)
def test_type_errors_fail_the_build(projects, tmp_path, variant):
    project = projects.fresh_copy(tmp_path, variant, CAPABILITIES)
    handler = project / "src" / "extension.ts"
    source = handler.read_text()
    handler.write_text(source + '\nexport const broken: number = "text";\n')
    result = run(["./build"], project)
    assert result.returncode != 0
    assert "TS2322" in result.stdout + result.stderr
    handler.write_text(source)
    assert run(["./build"], project).returncode == 0


@pytest.mark.parametrize("variant", TYPESCRIPT)
def test_unit_tests_catch_a_broken_handler(projects, tmp_path, variant):
    project = projects.fresh_copy(tmp_path, variant, CAPABILITIES)
    handler = project / "src" / "extension.ts"
    source = handler.read_text()
    broken = source.replace("text.toUpperCase()", "text.toLowerCase()")
    assert broken != source
    handler.write_text(broken)
    result = run(["npm", "test"], project)
    assert result.returncode != 0
    assert re.search(r"fail [1-9]", result.stdout), result.stdout


def test_npm_test_runs_each_test_file_without_a_shell_pattern(projects, tmp_path):
    """npm runs scripts with cmd.exe on Windows, which expands no *: zot/test.ts
    finds the test files itself, also in a folder below src/."""
    project = projects.fresh_copy(tmp_path, "typescript", ["commands", "tools"])
    package = json.loads((project / "package.json").read_text())
    assert "*" not in package["scripts"]["test"]
    below = project / "src" / "more"
    below.mkdir()
    (below / "deep.test.ts").write_text(
        'import test from "node:test";\ntest("a test one folder down", () => {});\n'
    )
    result = run(["npm", "test"], project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "a test one folder down" in result.stdout
    assert "the tool echoes its text" in result.stdout  # src/extension.test.ts's
    assert re.search(r"ok +zot/runtime.test.ts: \d+ tests", result.stdout)


def test_the_bundle_runs_without_node_modules(projects, tmp_path):
    """zot runs dist/index.js with node; nothing in node_modules is needed."""
    project = projects.fresh_copy(tmp_path, "typescript", CAPABILITIES)
    shutil.rmtree(project / "node_modules")
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake()
        assert ext.tool("demo_ext", {"text": "hi"})["content"][0]["text"] == "hi"
        assert ext.shutdown() == 0


@pytest.mark.parametrize("variant", TYPESCRIPT)
def test_ready_comes_at_once_after_hello_ack(projects, variant, record_property):
    """Registrations follow hello_ack at once, inside zot's 250 ms watchdog."""
    project = projects.get(variant, CAPABILITIES)
    with ExtensionProcess(project) as ext:
        ext.read_frame(timeout=20)  # hello, after node (and tsx) started
        hello_ms = (time.monotonic() - ext.started) * 1000
        ext.send({"type": "hello_ack", "protocol_version": 1, "data_dir": str(project)})
        acked = time.monotonic()
        ext.read_until("ready")
        ready_ms = (time.monotonic() - acked) * 1000
        assert ext.shutdown() == 0
    record_property("start_to_hello_ms", round(hello_ms))
    record_property("hello_ack_to_ready_ms", round(ready_ms, 1))
    assert ready_ms < 250


def test_failing_handlers_are_answered_and_not_fatal(projects, tmp_path):
    project = projects.fresh_copy(tmp_path, "typescript", CAPABILITIES)
    handler = project / "src" / "extension.ts"
    source = handler.read_text()
    # (a line of the skeleton, what to insert before it)
    for line, insert in [
        ("  const text = args.trim();", 'if (args === "boom") throw new Error("boom");'),
        (
            "  return uppercase ? text.toUpperCase() : text;",
            'void Promise.reject(new Error("lost")); if (text === "bang") throw new Error("bang");',
        ),
        (
            "  const refusal = checkToolCall(toolName, toolArgs, ext.host.cwd);",
            'if (JSON.stringify(toolArgs).includes("explode")) throw new Error("kaboom");',
        ),
    ]:
        assert line in source, line
        source = source.replace(line, f"  {insert}\n{line}")
    handler.write_text(source)
    assert run(["./build"], project).returncode == 0
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake()
        assert ext.command("demo-ext", "boom")["error"] == "demo-ext failed: boom"
        reply = ext.tool("demo_ext", {"text": "bang"})
        assert reply["is_error"] is True
        assert reply["content"][0]["text"] == "demo-ext failed: bang"
        reply = ext.intercept("bash", {"command": "explode"})
        assert reply["block"] is True and "kaboom" in reply["reason"]
        assert ext.tool("demo_ext", {"text": "fine"})["content"][0]["text"] == "fine"
        assert "unhandled: lost" in ext.stderr()
        assert ext.shutdown() == 0


@pytest.mark.parametrize("variant", TYPESCRIPT)
@pytest.mark.parametrize("own_group", [True, False], ids=["own-group", "shared-group"])
@pytest.mark.parametrize("ending", ["shutdown", "eof"])
def test_exit_leaves_no_process_within_zots_grace(projects, tmp_path, variant, own_group, ending):
    """Within zot's 2 s grace after shutdown or the end of input, nothing of
    it is left (how fast is the benchmark's "stop after ready").

    A fresh TMPDIR gives tsx an empty cache, so it starts esbuild's service
    process to compile src/: the extension must stop it before it exits.
    """
    project = projects.get(variant, CAPABILITIES)
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    with ExtensionProcess(project, data_dir=tmp_path, env=env, own_group=own_group) as ext:
        ext.handshake()
        if variant == "typescript-tsx":
            assert any("esbuild" in member for member in ext.process.members())
        assert ext.tool(TOOL, {"text": "x"})["is_error"] is False
        if ending == "shutdown":
            ext.send({"type": "shutdown"})
        ext.close_stdin()
        assert ext.wait(2) == 0  # zot's grace: after it, zot kills the extension
        assert not ext.process.members()  # at once: nothing to wait for
        if own_group:  # no zombie either: the extension reaped what it stopped
            ps = run(["ps", "-o", "pid=,stat=,args=", "-g", str(ext.proc.pid)], tmp_path)
            assert ps.stdout.strip() == "", ext.stderr()


def fake_node(tmp_path: Path, version: str) -> str:
    """A PATH whose `node` reports `version` and runs everything else."""
    real = shutil.which("node")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "node"
    script.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = --version ] && {{ echo v{version}; exit 0; }}\n'
        f'[ "$1" = -e ] && exec {real} -e "Object.defineProperty(process, '
        f"'versions', {{ value: {{ node: '{version}' }} }}); $2\" \"$3\"\n"
        f'exec {real} "$@"\n'
    )
    script.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


@pytest.mark.parametrize(
    ("variant", "version", "needed"),
    [("typescript", "19.9.0", "20"), ("typescript-tsx", "20.5.1", "20.6")],
)
def test_node_too_old_for_the_runner_is_refused_clearly(
    projects, tmp_path, variant, version, needed
):
    project = projects.fresh_copy(tmp_path, variant, CAPABILITIES)
    env = {**os.environ, "PATH": fake_node(tmp_path, version)}
    result = run(["./build"], project, env=env)
    assert result.returncode != 0
    assert f"Node.js v{version} is too old" in result.stderr
    assert f"needs Node.js {needed} or newer" in result.stderr
    assert "nodejs.org" in result.stderr


def test_node_20_5_is_enough_for_the_bundle(projects, tmp_path):
    project = projects.fresh_copy(tmp_path, "typescript", CAPABILITIES)
    env = {**os.environ, "PATH": fake_node(tmp_path, "20.5.1")}
    result = run(["./build"], project, env=env)
    assert result.returncode == 0, result.stderr


def test_guard_and_runtime_are_the_templates_files(tmp_path):
    """The runtime and the guard are plain files in zot/, the same in every project."""
    one = render(tmp_path / "one", language="typescript", capabilities=["tools"])
    two = render(
        tmp_path / "two",
        language="typescript",
        ts_runner="tsx",
        capabilities=CAPABILITIES,
        name="other",
    )
    for name in ["runtime.ts", "runtime.test.ts", "main.ts", "testing.ts", "test.ts"]:
        assert (one / "zot" / name).read_text() == (two / "zot" / name).read_text()
    assert not (one / "zot" / "guard").exists()
    assert sorted(path.name for path in (one / "src").iterdir()) == [
        "extension.test.ts",
        "extension.ts",
    ]
    assert (two / "zot/guard/guard.ts").read_text() == (ROOT / GUARD_TS).read_text()
    assert (one / "build").read_text() == (ROOT / "hooks" / "typescript").read_text()
    assert os.access(one / "build", os.X_OK)


def test_a_command_added_to_the_old_extension_object_is_a_reported_conflict(tmp_path):
    """0.2.0 listed handlers in `extension` at the end of src/extension.ts.

    That object is gone: an entry a user added there comes back as a
    conflict, and turns into one registration call.
    """
    repo = clone_template(tmp_path)
    tag_releases(repo)
    project = generate(
        repo, tmp_path / "ext", "v0.2.0", language="typescript", capabilities=["commands", "tools"]
    )
    handler = project / "src" / "extension.ts"
    shout = '{ name: "shout", description: "Shout TEXT", run: shout }'
    edit(
        handler,
        "  commands: [{ name: COMMAND, description: COMMAND_HELP, run: runCommand }],",
        f"  commands: [\n    {{ name: COMMAND, description: COMMAND_HELP, run: runCommand }},\n"
        f"    {shout},\n  ],",
    )
    edit(
        handler,
        "\n// --- The tool the model calls",
        "\nexport function shout(args: string): CommandReply {\n"
        '  return { action: "display", display: args.toUpperCase() };\n'
        "}\n\n// --- The tool the model calls",
    )
    commit_all(project, "my command")
    result = update(project, "--vcs-ref", "HEAD")
    assert result.returncode == 0, result.stderr
    assert "UU src/extension.ts" in update_status(project)
    conflict = re.compile(
        r"^<<<<<<< .*?\n(.*?)^=======\n(.*?)^>>>>>>> .*?\n", re.MULTILINE | re.DOTALL
    )
    conflicts = conflict.findall(handler.read_text())
    old_object = [ours for ours, _ in conflicts if "export const extension" in ours]
    assert len(old_object) == 1 and shout in old_object[0]

    def resolve(match: re.Match) -> str:
        """What the user does: keep both sides, but the old object becomes a call."""
        ours, theirs = match.groups()
        if "export const extension" in ours:
            return theirs + 'ext.command("shout", "Shout TEXT", shout);\n'
        return ours + theirs

    handler.write_text(conflict.sub(resolve, handler.read_text()))
    build(project)
    smoke(project)
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake()
        assert ext.command("shout", "hey")["display"] == "HEY"
        assert ext.shutdown() == 0


@pytest.mark.parametrize("own_group", [True, False], ids=["own-group", "shared-group"])
def test_a_program_a_tool_runs_is_stopped_at_shutdown(projects, tmp_path, own_group):
    """The tool's child process does not outlive the extension."""
    project = projects.fresh_copy(tmp_path, "typescript", CAPABILITIES)
    handler = project / "src" / "extension.ts"
    source = handler.read_text()
    source = 'import { execFile } from "node:child_process";\n' + source.replace(
        "  return uppercase ? text.toUpperCase() : text;",
        '  await new Promise((done) => execFile("sleep", ["30"], done));\n'
        "  return uppercase ? text.toUpperCase() : text;",
    )
    handler.write_text(source)
    build(project)
    with ExtensionProcess(project, data_dir=tmp_path, own_group=own_group) as ext:
        ext.handshake()
        ext.send({"type": "tool_call", "id": "t", "name": TOOL, "args": {"text": "x"}})
        deadline = time.monotonic() + 5
        while not any("sleep" in m for m in ext.process.members()):
            assert time.monotonic() < deadline, "the tool's sleep did not start"
            time.sleep(0.02)
        assert ext.shutdown(timeout=2) == 0  # within zot's grace
        assert not ext.process.members()


def test_a_cancelled_call_aborts_its_signal_and_gets_no_result(projects, tmp_path):
    """The handler's AbortSignal fires on tool_cancel; what it returns then is dropped."""
    project = projects.fresh_copy(tmp_path, "typescript", ["tools"])
    handler = project / "src" / "extension.ts"
    anchor = "  return uppercase ? text.toUpperCase() : text;"
    wait = (
        '  if (text === "wait") {\n'
        '    await new Promise((done) => signal?.addEventListener("abort", done));\n'
        "    ext.log(`aborted: ${signal?.aborted}`);\n"
        '    return "too late";\n'
        "  }\n"
    )
    source = handler.read_text()
    signature = "export async function runTool({ text, uppercase }: ToolArgs): Promise<string> {"
    assert anchor in source and signature in source
    # the handler takes the signal, as the README says a long-running tool does
    source = source.replace(
        signature, signature.replace("ToolArgs)", "ToolArgs, signal?: AbortSignal)")
    )
    handler.write_text(source.replace(anchor, wait + anchor))
    build(project)
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        hello, _ = ext.handshake()
        assert hello["capabilities"] == ["tools", "tool_cancel", "call_tool"]
        ext.send({"type": "tool_call", "id": "w1", "name": TOOL, "args": {"text": "wait"}})
        ext.send({"type": "tool_cancel", "id": "w1"})
        ext.send({"type": "tool_cancel", "id": "w1"})  # no longer running: ignored
        assert ext.tool(TOOL, {"text": "next"})["content"][0]["text"] == "next"
        with pytest.raises(TimeoutError):
            pytest.fail(f"a cancelled call was answered: {ext.read_frame(timeout=0.5)}")
        assert ext.shutdown() == 0
        assert "aborted: true" in ext.stderr()


SPAWNS_AND_FAILS = """
ext.tool(
  "spawn_and_fail",
  "Start programs in the background, then fail.",
  { type: "object" },
  async () => {
    const never = new AbortController().signal; // the call's end stops them
    const script = "sleep 305 & setsid sleep 306 &";
    const quiet = { stdio: "ignore" } as const;
    await once(spawnForCall("sh", ["-c", script], never, quiet), "close");
    throw new Error("it failed");
  },
);
"""


def call_processes(extension_pid: int) -> dict[str, str]:
    """Live processes that carry a call's mark of the extension's run
    (ZOT_EXT_RUN=PID.HEX/N): pid -> command line. A zombie's environment
    reads as empty."""
    prefix = f"ZOT_EXT_RUN={extension_pid}.".encode()
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            argv = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if any(v.startswith(prefix) and b"/" in v for v in environ):
            found[pid] = argv.replace(b"\0", b" ").decode(errors="replace").strip()
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
@pytest.mark.parametrize("newer", [True, False], ids=["newer-zot", "zot-0.1.62"])
def test_a_call_that_fails_stops_its_programs_before_its_error(projects, tmp_path, newer):
    """spawnForCall finds its call without the call's signal, on zot 0.1.62
    too: what it started, a setsid grandchild included, is gone when the
    error result arrives (checked at once, without waiting)."""
    project = projects.fresh_copy(tmp_path, "typescript", ["tools"])
    handler = project / "src" / "extension.ts"
    imports = 'import { once } from "node:events";\n'
    imports += 'import { spawnForCall } from "../zot/runtime.js";\n'
    handler.write_text(imports + handler.read_text() + SPAWNS_AND_FAILS)
    build(project)
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        try:
            if newer:
                ext.handshake()
            else:
                ext.read_frame()  # hello
                ext.send({"type": "hello_ack", "protocol_version": 1, "data_dir": str(tmp_path)})
                ext.read_until("ready")
            reply = ext.tool("spawn_and_fail", {}, timeout=10)
            left = call_processes(ext.proc.pid)
            assert reply["is_error"] is True, reply
            assert reply["content"][0]["text"] == "demo-ext failed: it failed"
            assert not left, f"running once the result arrived: {left}\n{ext.stderr()}"
            assert ext.shutdown() == 0
        finally:
            for pid in call_processes(ext.proc.pid):
                os.kill(int(pid), signal.SIGKILL)


def test_a_tool_that_calls_zots_read_tool(projects, tmp_path):
    """callTool on the wire: call_tool with the tool call as its parent, the
    answer routed back while other requests go on, cancelled with its call;
    on zot 0.1.62 an error result at once and no call_tool."""
    project = projects.fresh_copy(tmp_path, "typescript", ["tools"])
    handler = project / "src" / "extension.ts"
    anchor = "  return uppercase ? text.toUpperCase() : text;"
    read = (
        '  if (text.startsWith("read ")) {\n'
        '    return await ext.callTool("read", { path: text.slice(5) });\n'
        "  }\n"
    )
    source = handler.read_text()
    assert anchor in source and "): Promise<string> {" in source
    source = source.replace(anchor, read + anchor)
    source = source.replace("): Promise<string> {", "): Promise<ToolOutput> {")
    handler.write_text('import type { ToolOutput } from "../zot/runtime.js";\n' + source)
    build(project)
    cut = {"type": "text", "text": "[zot cut this result: over 256 KiB]"}
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake()
        ext.send({"type": "tool_call", "id": "r1", "name": TOOL, "args": {"text": "read a.txt"}})
        assert ext.read_frame() == {
            "type": "call_tool",
            "id": "call-1",
            "name": "read",
            "args": {"path": "a.txt"},
            "parent_id": "r1",
        }
        assert ext.tool(TOOL, {"text": "next"})["content"][0]["text"] == "next"
        text = {"type": "text", "text": "A"}
        ext.send({"type": "tool_result", "id": "call-1", "content": [text], "truncated": True})
        assert ext.read_frame() == {
            "type": "tool_result",
            "id": "r1",
            "content": [text, cut],
            "is_error": False,
        }
        ext.send({"type": "tool_call", "id": "r2", "name": TOOL, "args": {"text": "read b"}})
        assert ext.read_frame()["id"] == "call-2"
        ext.send({"type": "tool_cancel", "id": "r2"})
        assert ext.read_frame() == {"type": "call_tool_cancel", "id": "call-2"}
        ext.send({"type": "tool_result", "id": "call-2", "content": [], "is_error": True})
        assert ext.shutdown() == 0
        assert "tool_result" not in ext.stderr()  # the late answer is dropped quietly
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.read_frame()  # hello
        ext.send({"type": "hello_ack", "protocol_version": 1, "data_dir": str(tmp_path)})
        ext.read_until("ready")
        old = "cannot call read: this zot is too old to run its tools for extensions (update zot)"
        reply = ext.tool(TOOL, {"text": "read a.txt"})  # the next frame: no call_tool
        assert reply["content"] == [{"type": "text", "text": old}] and reply["is_error"]
        assert ext.shutdown() == 0


def test_rich_results_and_tool_options_on_the_wire(projects, tmp_path):
    """Markdown, an image from bytes and structured_content, as zot reads them."""
    project = projects.fresh_copy(tmp_path, "typescript", ["tools", "ask"])
    handler = project / "src" / "extension.ts"
    anchor = "  return uppercase ? text.toUpperCase() : text;"
    rich = (
        "  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47]);\n"
        '  const blocks = [rt.markdownBlock(`**${text}**`), rt.imageBlock(png, "image/png")];\n'
        "  if (uppercase) return rt.structuredResult(blocks, { text });\n"
    )
    source = handler.read_text()
    assert anchor in source and "): Promise<string> {" in source
    source = source.replace(anchor, rich + anchor)
    source = source.replace("): Promise<string> {", "): Promise<rt.ToolOutput> {")
    handler.write_text('import * as rt from "../zot/runtime.js";\n' + source)
    build(project)
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        hello, frames = ext.handshake()
        assert hello["capabilities"] == ["tools", "panels", "tool_cancel", "call_tool"]
        tools = {frame["name"]: frame for frame in frames if frame["type"] == "register_tool"}
        assert set(tools[TOOL]) == {"type", "name", "description", "schema"}
        assert tools["demo_ext_confirm"]["interactive"] is True
        assert tools["demo_ext_confirm"]["output_schema"]["required"] == ["approved", "action"]
        reply = ext.tool(TOOL, {"text": "hi", "uppercase": True})
        assert reply == {
            "type": "tool_result",
            "id": reply["id"],
            "content": [
                {"type": "text", "text": "**hi**", "format": "markdown"},
                {"type": "image", "mime_type": "image/png", "data": "iVBORw=="},
            ],
            "structured_content": {"text": "hi"},
            "is_error": False,
        }
        assert ext.tool(TOOL, {"text": "hi"}) == {
            "type": "tool_result",
            "id": f"t{ext.next_id}",
            "content": [{"type": "text", "text": "hi"}],
            "is_error": False,
        }
        assert ext.shutdown() == 0


def test_failing_panel_and_prompt_handlers_are_logged_and_not_fatal(projects, tmp_path):
    """A key handler that throws writes nothing; a system prompt handler that
    throws keeps the prompt."""
    project = projects.fresh_copy(tmp_path, "typescript", ["panel", "prompt"])
    for name, line, insert in [
        (
            "picker.ts",
            '    switch (key === "rune" ? text : key) {',
            'if (key === "tab") throw new Error("no tab");',
        ),
        (
            "conventions.ts",
            "  const { cwd, system_prompt } = frame;",
            'if (frame.system_prompt === "boom") throw new Error("boom");',
        ),
    ]:
        source = (project / "src" / name).read_text()
        assert line in source, line
        (project / "src" / name).write_text(source.replace(line, f"    {insert}\n{line}"))
    build(project)
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        hello, _ = ext.handshake()
        assert hello["capabilities"] == ["commands", "events", "panels", "call_tool"]
        panel = ext.command("demo-ext-pick", "")["open_panel"]["id"]
        ext.send({"type": "panel_key", "panel_id": panel, "key": "tab"})
        ext.send({"type": "panel_key", "panel_id": panel, "key": "down"})
        assert ext.read_frame()["type"] == "panel_render"  # the next frame: tab wrote nothing
        frame = {"type": "event_intercept", "event": "before_agent_start", "system_prompt": "boom"}
        assert ext.request(frame) == {"type": "event_intercept_response", "id": f"t{ext.next_id}"}
        assert ext.shutdown() == 0
        assert "no tab" in ext.stderr() and "boom" in ext.stderr()
