"""Nothing a handler starts outlives the extension, in every flavour.

A tool handler, written the plain way in each language, starts a child that
backgrounds a grandchild (`sh -c 'sleep 100 &'`) and then a second child
(`sleep 60`). On shutdown or the end of stdin the extension stops them all;
on tool_cancel the call's processes stop, started through the runtime's
call-tied helper (Python run, Go processes.Command, TypeScript spawnForCall;
in shell every request's processes). When a call returns, what it started
through the helper is gone by the time its result arrives, the handler's own
timeout stops a whole tree, and a program started the plain way on purpose
outlives the call and ends with the extension. Each with and without a process group of
the extension's own (zot 0.1.62 starts it in zot's). The processes are found
as the runtime marks them: by the run's ZOT_EXT_RUN in /proc/PID/environ.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest
from conftest import LANGUAGES, VARIANTS, build, register_in_go
from host import ExtensionProcess

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")

# The tools each flavour gets: "spawn" starts the processes the plain way,
# "spawn_tied" through the runtime's helper that ties them to the call.
PYTHON = """
@ext.tool("spawn", "Start a background process and wait for another.", {"type": "object"})
def spawn(args: object) -> str:
    subprocess.run(["sh", "-c", "sleep 100 &"])
    subprocess.run(["sleep", "60"])
    return "done"


@ext.tool("spawn_tied", "The same, tied to the call.", {"type": "object"})
def spawn_tied(args: object, cancelled: Event) -> str:
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    run(["sh", "-c", "sleep 100 &"], cancelled, **quiet)
    run(["sleep", "60"], cancelled)
    return "done"


@ext.tool("spawn_returns", "Start programs in the background and return.", {"type": "object"})
def spawn_returns(args: object, cancelled: Event) -> str:
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    run(["sh", "-c", "sleep 300 & setsid sleep 301 &"], cancelled, **quiet)
    subprocess.Popen(["sleep", "302"], **quiet)  # on purpose: ends with the extension
    return "done"


@ext.tool("spawn_timeout", "Run programs for 0.5 s at most.", {"type": "object"})
def spawn_timeout(args: object, cancelled: Event) -> str:
    try:
        run(["sh", "-c", "setsid sleep 303 & sleep 304"], cancelled, timeout=0.5)
    except subprocess.TimeoutExpired:
        return "timed out"
    return "done"

"""
GO = """
func spawn(args json.RawMessage) ext.ToolResult {
	_ = exec.Command("sh", "-c", "sleep 100 &").Run()
	_ = exec.Command("sleep", "60").Run()
	return ext.TextResult("done")
}

func spawnTied(ctx context.Context, args json.RawMessage) ext.ToolResult {
	_ = processes.Command(ctx, "sh", "-c", "sleep 100 &").Run()
	_ = processes.Command(ctx, "sleep", "60").Run()
	return ext.TextResult("done")
}

func spawnReturns(ctx context.Context, args json.RawMessage) ext.ToolResult {
	_ = processes.Command(ctx, "sh", "-c", "sleep 300 & setsid sleep 301 &").Run()
	_ = exec.Command("sleep", "302").Start() // on purpose: ends with the extension
	return ext.TextResult("done")
}

func spawnTimeout(ctx context.Context, args json.RawMessage) ext.ToolResult {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_ = processes.Command(ctx, "sh", "-c", "setsid sleep 303 & sleep 304").Run()
	if ctx.Err() != nil {
		return ext.TextResult("timed out")
	}
	return ext.TextResult("done")
}
"""
GO_REGISTER = """	extension.Tool("spawn", "Start a background process and wait for another.",
		json.RawMessage(`{"type": "object"}`), spawn)
	extension.ToolWithOptions("spawn_tied", "The same, tied to the call.",
		json.RawMessage(`{"type": "object"}`), ext.ToolOptions{}, spawnTied)
	extension.ToolWithOptions("spawn_returns", "Start programs in the background and return.",
		json.RawMessage(`{"type": "object"}`), ext.ToolOptions{},
		schema.Checked(json.RawMessage(`{"type": "object"}`), ext.TextErrorResult, spawnReturns))
	extension.ToolWithOptions("spawn_timeout", "Run programs for 0.5 s at most.",
		json.RawMessage(`{"type": "object"}`), ext.ToolOptions{},
		schema.Checked(json.RawMessage(`{"type": "object"}`), ext.TextErrorResult, spawnTimeout))
"""
TYPESCRIPT = """
ext.tool(
  "spawn",
  "Start a background process and wait for another.",
  { type: "object" },
  async () => {
    await once(spawn("sh", ["-c", "sleep 100 &"], { stdio: "ignore" }), "close");
    await once(spawn("sleep", ["60"], { stdio: "ignore" }), "close");
    return "done";
  },
);

ext.tool(
  "spawn_tied",
  "The same, tied to the call.",
  { type: "object" },
  async (_args, signal) => {
    const quiet = { stdio: "ignore" } as const;
    await once(spawnForCall("sh", ["-c", "sleep 100 &"], signal, quiet), "close");
    await once(spawnForCall("sleep", ["60"], signal, quiet), "close");
    return "done";
  },
);

ext.tool(
  "spawn_returns",
  "Start programs in the background and return.",
  { type: "object" },
  async (_args, signal) => {
    const quiet = { stdio: "ignore" } as const;
    const script = "sleep 300 & setsid sleep 301 &";
    await once(spawnForCall("sh", ["-c", script], signal, quiet), "close");
    spawn("sleep", ["302"], { ...quiet, detached: true }).unref(); // on purpose
    return "done";
  },
);

ext.tool(
  "spawn_timeout",
  "Run programs for 0.5 s at most.",
  { type: "object" },
  async (_args, signal) => {
    const script = "setsid sleep 303 & sleep 304";
    const options = { stdio: "ignore", timeout: 500 } as const;
    const [, stoppedBy] = await once(spawnForCall("sh", ["-c", script], signal, options), "close");
    return stoppedBy ? "timed out" : "done";
  },
);
"""
SHELL = r"""
spawn() {
	sh -c 'sleep 100 &'
	sleep 60
	printf 'done'
}

ext_tool spawn 'Start a background process and wait for another.' '{"type": "object"}' '.' spawn
ext_tool spawn_tied 'The same (every request is tied to its call).' '{"type": "object"}' '.' spawn

spawn_returns() {
	sh -c 'sleep 300 & setsid sleep 301 &'
	ext_background sleep 302 # on purpose: ends with the extension
	printf 'done'
}

spawn_timeout() {
	if ext_timeout 0.5 sh -c 'setsid sleep 303 & sleep 304'; then
		printf 'done'
	else
		printf 'timed out'
	fi
}

ext_tool spawn_returns 'Start programs in the background and return.' '{"type": "object"}' '.' spawn_returns
ext_tool spawn_timeout 'Run programs for 0.5 s at most.' '{"type": "object"}' '.' spawn_timeout
"""


def add_spawning_tools(project: Path, variant: str) -> None:
    handler = project / VARIANTS[variant].handler
    source = handler.read_text()
    if variant == "python":
        source = source.replace("from zot import ", "import subprocess\n\nfrom zot import run, ")
        source = source.replace(
            '\nif __name__ == "__main__":', PYTHON + '\nif __name__ == "__main__":'
        )
    elif variant.startswith("go"):
        source = source.replace("import (\n", 'import (\n\t"os/exec"\n\t"time"\n', 1)
        source = register_in_go(source, GO_REGISTER) + GO
    elif variant.startswith("typescript"):
        imports = 'import { spawn } from "node:child_process";\n'
        imports += 'import { once } from "node:events";\n'
        imports += 'import { spawnForCall } from "../zot/runtime.js";\n'
        source = imports + source + TYPESCRIPT
    else:
        last = source.index("\n# Sourced (as test_main.sh does)")
        source = source[:last] + "\n" + SHELL + source[last:]
    handler.write_text(source)


@pytest.fixture(scope="module")
def spawning(projects, tmp_path_factory):
    """The project of a flavour with the spawning tools, built once."""
    built: dict[str, Path] = {}

    def get(variant: str) -> Path:
        if variant not in built:
            project = tmp_path_factory.mktemp(f"spawning-{variant}") / "ext"
            shutil.copytree(projects.get(variant, ["tools"]), project, symlinks=True)
            add_spawning_tools(project, variant)
            build(project)
            built[variant] = project
        return built[variant]

    return get


# --- Finding the processes ---------------------------------------------------


def environ(pid: str) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read().split(b"\0")
    except OSError:
        return []


def command(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def pids() -> list[str]:
    return [name for name in os.listdir("/proc") if name.isdigit()]


def run_value(extension_pid: int, timeout: float = 10) -> str:
    """The run's ZOT_EXT_RUN, from the first process that carries it."""
    prefix = f"ZOT_EXT_RUN={extension_pid}.".encode()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in pids():
            for entry in environ(pid):
                if entry.startswith(prefix):
                    return entry.split(b"=", 1)[1].split(b"/")[0].decode()
        time.sleep(0.02)
    raise AssertionError(f"no process carries ZOT_EXT_RUN={extension_pid}.*")


def carrying(value: str, mark: bytes, calls_only: bool = False) -> dict[str, str]:
    """Live processes that carry the run's value (or VALUE/..., a call's; only
    those with `calls_only`: the running extension's own helpers carry the
    run's), and the sleeps that carry the launcher's mark (a runtime that
    forgot to mark them): pid -> command line. A zombie's environment reads
    as empty."""
    entry = f"ZOT_EXT_RUN={value}".encode()
    found = {}
    for pid in pids():
        values = environ(pid)
        call = any(v.startswith(entry + b"/") for v in values)
        ours = value and (call or not calls_only and entry in values)
        if ours or mark in values and command(pid).startswith("sleep"):
            found[pid] = command(pid)
    return found


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        assert time.monotonic() < deadline, what
        time.sleep(0.02)
    return result


def kill_all(value: str, mark: bytes) -> None:
    for pid in carrying(value, mark):
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


@pytest.mark.parametrize("own_group", [True, False], ids=["own-group", "shared-group"])
@pytest.mark.parametrize("ending", ["shutdown", "eof", "cancel"])
@pytest.mark.parametrize("variant", LANGUAGES)
def test_nothing_a_handler_started_outlives_it(spawning, tmp_path, variant, ending, own_group):
    project = spawning(variant)
    tool = "spawn_tied" if ending == "cancel" else "spawn"
    calls_only = ending == "cancel"  # the extension goes on: what the call started
    value = ""
    with ExtensionProcess(project, data_dir=tmp_path, own_group=own_group) as ext:
        mark = ext.process.mark
        try:
            ext.handshake()
            ext.send({"type": "tool_call", "id": "spawn-1", "name": tool, "args": {}})
            value = run_value(ext.proc.pid)
            assert re.fullmatch(rf"{ext.proc.pid}\.[0-9a-f]+", value), value

            def both_running():
                commands = carrying(value, mark, calls_only).values()
                return {"sleep 100", "sleep 60"} <= set(commands)

            wait_for(both_running, 10, f"the tool's processes did not start: {ext.stderr()}")
            started = time.monotonic()
            if ending == "shutdown":
                ext.send({"type": "shutdown"})
            if ending == "cancel":
                ext.send({"type": "tool_cancel", "id": "spawn-1"})
            else:
                ext.close_stdin()
                assert ext.wait(2) == 0
            left = carrying(value, mark, calls_only)
            while left and time.monotonic() - started < 2:
                time.sleep(0.02)
                left = carrying(value, mark, calls_only)
            assert not left, f"still running 2 s after {ending}: {left}\n{ext.stderr()}"
            if ending == "cancel":  # no result for the call, and the extension goes on
                with pytest.raises(TimeoutError):
                    ext.read_reply(0.3)
                assert ext.shutdown() == 0
        finally:
            kill_all(value, mark)


def sleeps(value: str, mark: bytes) -> dict[str, str]:
    """The sleeps of the run still alive: pid -> command line."""
    return {pid: cmd for pid, cmd in carrying(value, mark).items() if cmd.startswith("sleep")}


@pytest.mark.parametrize("variant", LANGUAGES)
def test_a_calls_programs_end_with_it_and_kept_ones_with_the_extension(spawning, tmp_path, variant):
    """The helper's programs are gone when the result arrives (checked at
    once, without waiting); the handler's own timeout stops a whole tree; a
    program started the plain way outlives the call, not the extension."""
    project = spawning(variant)
    value = ""
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        mark = ext.process.mark
        try:
            ext.handshake()
            reply = ext.tool("spawn_returns", {}, timeout=10)
            left = sleeps(value := run_value(ext.proc.pid), mark)
            assert reply.get("is_error") is not True, reply
            assert sorted(left.values()) == ["sleep 302"], f"{left}\n{ext.stderr()}"

            reply = ext.tool("spawn_timeout", {}, timeout=10)
            assert reply["content"][0]["text"] == "timed out", f"{reply}\n{ext.stderr()}"
            left = sleeps(value, mark)
            assert sorted(left.values()) == ["sleep 302"], f"{left}\n{ext.stderr()}"

            assert ext.shutdown() == 0
            left = sleeps(value, mark)
            started = time.monotonic()
            while left and time.monotonic() - started < 2:
                time.sleep(0.02)
                left = sleeps(value, mark)
            assert not left, f"still running 2 s after shutdown: {left}"
        finally:
            kill_all(value, mark)
