"""zot/runtime.py and the Python skeleton, driven as zot drives them.

The project's own unit tests cover each feature; these check what a
session shows from outside: odd frames of the new kinds never reach stdout
or crash the extension, a slow tool cancelled by zot gets no result, an
older host gets the fallbacks, start-up imports nothing new, and what a
tool call runs ends with the call.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import CAPABILITIES, ROOT, slow_tool
from host import ExtensionProcess

NEWER = {"capabilities": ["call_tool"]}


@pytest.fixture(scope="module")
def project(projects):
    return projects.get("python", CAPABILITIES)


def silent(proc: ExtensionProcess, seconds: float = 0.3) -> bool:
    try:
        frame = proc.read_frame(seconds)
    except TimeoutError:
        return True
    raise AssertionError(f"unexpected frame: {frame}")


def test_hello_lists_what_the_extension_uses(project):
    with ExtensionProcess(project) as proc:
        hello, frames = proc.handshake(**NEWER)
        capabilities = ["commands", "tools", "events", "panels", "tool_cancel", "call_tool"]
        assert hello["capabilities"] == capabilities
        subscribe = next(f for f in frames if f["type"] == "subscribe")
        assert subscribe["intercept"] == ["tool_call", "before_agent_start"]
        tools = {f["name"]: f for f in frames if f["type"] == "register_tool"}
        assert "interactive" not in tools["demo_ext"] and "output_schema" not in tools["demo_ext"]
        assert tools["demo_ext_confirm"]["interactive"] is True


def test_odd_frames_of_the_new_kinds_are_ignored(project):
    odd = [
        {"type": "panel_key"},
        {"type": "panel_key", "panel_id": ["x"], "key": "enter"},
        {"type": "panel_key", "panel_id": "nope", "key": 1, "text": None},
        {"type": "panel_close", "panel_id": None},
        {"type": "panel_resize", "panel_id": "nope", "width": 80},
        {"type": "tool_cancel"},
        {"type": "tool_cancel", "id": {"a": 1}},
        {"type": "tool_cancel", "id": "never-called"},
    ]
    with ExtensionProcess(project) as proc:
        proc.handshake(**NEWER)
        for frame in odd:
            proc.send(frame)
        assert silent(proc)
        # Still answering, whatever fields a before_agent_start carries.
        for fields in ({"cwd": ["x"], "system_prompt": 3}, {"cwd": "/nonexistent"}):
            frame = {"type": "event_intercept", "event": "before_agent_start", **fields}
            reply = proc.request(frame)
            assert reply == {"type": "event_intercept_response", "id": reply["id"]}
        assert proc.tool("demo_ext", {"text": "hi"})["content"] == [{"type": "text", "text": "hi"}]
        assert proc.shutdown() == 0
        assert "panel that is not open: 'nope'" in proc.stderr()


def test_a_slow_tool_cancelled_by_zot_sends_no_result(tmp_path, project):
    slow = tmp_path / "slow"
    shutil.copytree(project, slow)
    main = slow / "main.py"
    anchor, replacement = slow_tool("python", 1)
    main.write_text(main.read_text().replace(anchor, replacement))
    with ExtensionProcess(slow) as proc:
        proc.handshake(**NEWER)
        proc.send({"type": "tool_call", "id": "slow", "name": "demo_ext", "args": {"text": "x"}})
        proc.send({"type": "tool_cancel", "id": "slow"})
        # Meanwhile other requests are answered; the cancelled one never is.
        assert proc.command("demo-ext", "")["action"] == "display"
        assert silent(proc, 1.5)
        assert proc.tool("demo_ext", {"text": "y"}, timeout=3)["is_error"] is False


def test_an_older_zot_gets_the_fallbacks(project):
    with ExtensionProcess(project) as proc:
        proc.read_frame()  # hello
        # zot 0.1.62's hello_ack has no capabilities.
        proc.send({"type": "hello_ack", "protocol_version": 1, "cwd": str(project.parent)})
        proc.read_until("ready")
        result = proc.tool("demo_ext_confirm", {"action": "Delete it."})
        assert result["is_error"] is True
        assert "needs a newer zot" in result["content"][0]["text"]
        panel = proc.command("demo-ext-pick", "")["open_panel"]
        proc.send({"type": "panel_key", "panel_id": panel["id"], "key": "enter", "text": ""})
        close, note = proc.read_frame(), proc.read_frame()
        assert close == {"type": "panel_close", "panel_id": panel["id"]}
        assert note["type"] == "notify" and note["message"].startswith("Chosen: Explain")
        assert proc.shutdown() == 0


def reads_with_zot(tmp_path, project):
    """A copy of the project whose tool answers what zot's read tool does."""
    copy = tmp_path / "reads"
    shutil.copytree(project, copy)
    main = copy / "main.py"
    anchor, _ = slow_tool("python", 1)
    call = '    return ext.call_tool("read", {"path": text}, cancelled)'
    main.write_text(main.read_text().replace(anchor, call))
    return copy


def test_a_tool_runs_zot_s_read_tool(tmp_path, project):
    with ExtensionProcess(reads_with_zot(tmp_path, project)) as proc:
        proc.handshake(**NEWER)
        proc.send({"type": "tool_call", "id": "t1", "name": "demo_ext", "args": {"text": "a"}})
        call = {"type": "call_tool", "id": "call-1", "name": "read", "args": {"path": "a"}}
        assert proc.read_frame() == {**call, "parent_id": "t1"}
        proc.send({"type": "tool_result", "id": "stray", "content": []})  # logged, skipped
        text = [{"type": "text", "text": "abc"}]
        proc.send({"type": "tool_result", "id": "call-1", "content": text, "truncated": True})
        note = {"type": "text", "text": "[zot cut this result: over 256 KiB]"}
        result = {"type": "tool_result", "content": [*text, note], "is_error": False}
        assert proc.read_frame() == {**result, "id": "t1"}
        # zot cancels the tool call: the call of read is cancelled at once.
        proc.send({"type": "tool_call", "id": "t2", "name": "demo_ext", "args": {"text": "b"}})
        assert proc.read_frame()["id"] == "call-2"
        proc.send({"type": "tool_cancel", "id": "t2"})
        assert proc.read_frame() == {"type": "call_tool_cancel", "id": "call-2"}
        proc.send({"type": "tool_result", "id": "call-2", "content": [], "is_error": True})
        assert silent(proc)  # neither result: both calls were cancelled
        assert proc.shutdown() == 0
        assert "'stray'" in proc.stderr() and "'call-2'" not in proc.stderr()


def test_an_older_zot_is_sent_no_call_tool(tmp_path, project):
    with ExtensionProcess(reads_with_zot(tmp_path, project)) as proc:
        proc.read_frame()  # hello
        proc.send({"type": "hello_ack", "protocol_version": 1, "cwd": str(project.parent)})
        proc.read_until("ready")
        reply = proc.tool("demo_ext", {"text": "a"})  # the next frame with an id
        too_old = "this zot is too old to run its tools for extensions (update zot)"
        assert reply["content"] == [{"type": "text", "text": f"cannot call read: {too_old}"}]
        assert reply["is_error"] is True and proc.spontaneous == []


def test_start_up_imports_nothing_for_the_new_features(projects):
    """base64 and inspect come only when a feature needs them (not the guard)."""
    project = projects.get("python", ["tools", "panel", "ask", "prompt"])
    script = (
        "import sys; before = set(sys.modules); import main;"
        " print(' '.join(sorted(set(sys.modules) - before)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=project, capture_output=True, text=True, check=True
    )
    loaded = set(result.stdout.split())
    late = {"base64", "inspect", "subprocess", "signal"}  # run() and the stop import these
    assert "zot.runtime" in loaded and not loaded & late, loaded


def load_runtime():
    """zot/runtime.py as the template has it, imported here."""
    spec = importlib.util.spec_from_file_location(
        "zot_runtime_under_test", ROOT / "template" / "zot" / "runtime.py"
    )
    runtime = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runtime)
    return runtime


def test_run_answers_like_subprocess_run_with_the_output_captured():
    run = load_runtime().run
    done = run(["sh", "-c", "cat; echo err >&2; exit 3"], threading.Event(), input="in")
    assert (done.returncode, done.stdout, done.stderr) == (3, "in", "err\n")
    assert run(["cat"], threading.Event()).stdout == ""  # stdin is empty, not zot's
    assert run(["pwd"], threading.Event(), cwd="/").stdout == "/\n"


def wait_until_ended(pid: int) -> None:
    """SIGKILL takes effect when the process next runs: PID is gone, or a
    zombie where nothing reaps orphans, within moments."""
    deadline = time.monotonic() + 2
    while True:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                state = stat.read().rpartition(")")[2].split()[0]
        except FileNotFoundError:
            return
        if state == "Z":
            return
        assert time.monotonic() < deadline, f"the background sleep is still {state}"
        time.sleep(0.01)


def test_run_stops_the_whole_group_once_cancelled():
    """The background sleep holds the output open: run waits for it, until
    the call is cancelled."""
    run = load_runtime().run
    cancelled = threading.Event()
    threading.Timer(0.3, cancelled.set).start()
    started = time.monotonic()
    done = run(["sh", "-c", "sleep 30 & echo $!; wait"], cancelled)
    assert done.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 2
    wait_until_ended(int(done.stdout))


def test_run_s_timeout_with_an_event_of_one_s_own_stops_the_process_group():
    """Outside a tool call there is no call's mark: the group goes, and run
    raises what subprocess.run raises, with the output so far."""
    run = load_runtime().run
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        run(["sh", "-c", "sleep 30 & echo $!; wait"], threading.Event(), timeout=1)
    assert 1 <= time.monotonic() - started < 3
    assert raised.value.timeout == 1
    wait_until_ended(int(raised.value.stdout))


def marked_sleeps(extension: int) -> dict:
    """The sleeps that carry the ZOT_EXT_RUN of the extension whose pid is
    EXTENSION: pid -> (its value, whether it leads a session of its own).
    One that has exited (a zombie too) reads as empty: it is not listed."""
    prefix = f"ZOT_EXT_RUN={extension}.".encode()
    found = {}
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as file:
                argv = file.read().split(b"\0")
            with open(f"/proc/{name}/environ", "rb") as file:
                environ = file.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as file:
                session = int(file.read().rpartition(b")")[2].split()[3])
        except OSError:  # not a process, or gone
            continue
        for entry in environ:
            if argv[0] == b"sleep" and entry.startswith(prefix):
                found[int(name)] = (entry.decode().partition("=")[2], session == int(name))
    return found


# The tool starts two sleeps through run(), one in a session of its own,
# and one with subprocess.Popen; zot's answer to call_tool lets it return.
STARTS_SLEEPS = """\
    import subprocess

    from zot import run

    script = "sleep 300 >/dev/null 2>&1 & setsid sleep 300 >/dev/null 2>&1 &"
    run(["sh", "-c", script], cancelled)
    quiet = subprocess.DEVNULL
    subprocess.Popen(["sleep", "301"], stdin=quiet, stdout=quiet, stderr=quiet)
    ext.call_tool("read", {"path": text}, cancelled)
    return text
"""


@pytest.mark.skipif(not shutil.which("setsid"), reason="needs setsid")
def test_what_a_call_runs_ends_before_its_result_popen_s_with_the_extension(tmp_path, project):
    copy = tmp_path / "sleeps"
    shutil.copytree(project, copy)
    main = copy / "main.py"
    anchor, _ = slow_tool("python", 1)
    main.write_text(main.read_text().replace(anchor, STARTS_SLEEPS))
    with ExtensionProcess(copy) as proc:
        try:
            sleeps_end_with_the_call_or_the_extension(proc)
        finally:  # what a failure left: the sleeps this test started
            for pid in marked_sleeps(proc.proc.pid):
                os.kill(pid, signal.SIGKILL)


def sleeps_end_with_the_call_or_the_extension(proc: ExtensionProcess) -> None:
    proc.handshake(**NEWER)
    proc.send({"type": "tool_call", "id": "t1", "name": "demo_ext", "args": {"text": "a"}})
    assert proc.read_frame()["type"] == "call_tool"  # the handler waits for it
    deadline = time.monotonic() + 5
    while len(running := marked_sleeps(proc.proc.pid)) < 3:
        assert time.monotonic() < deadline, f"the sleeps did not start: {running}"
        time.sleep(0.01)
    # run()'s carry a call's mark (RUN/...), Popen's the extension's (RUN).
    assert sorted("/" in value for value, _ in running.values()) == [False, True, True]
    assert sorted(own for _, own in running.values()) == [False, False, True]  # setsid
    text = [{"type": "text", "text": "x"}]
    proc.send({"type": "tool_result", "id": "call-1", "content": text})
    assert proc.read_frame() == {
        "type": "tool_result",
        "id": "t1",
        "content": [{"type": "text", "text": "a"}],
        "is_error": False,
    }
    # At the result, no polling: the call's two are gone, Popen's runs on.
    left = marked_sleeps(proc.proc.pid)
    assert ["/" in value for value, _ in left.values()] == [False], left
    assert proc.shutdown() == 0
    assert marked_sleeps(proc.proc.pid) == {}  # gone with the extension
