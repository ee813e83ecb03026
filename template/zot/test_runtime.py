"""The runtime's own tests (python3 -m unittest runs them with yours): the
frames of a small extension, played through the fake zot of testing.py."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import shutil
import signal
import subprocess
import threading
import unittest

from . import runtime
from .runtime import (
    AssistantMessageDecision,
    Extension,
    HostInfo,
    ToolCallDecision,
    image_block,
    markdown_block,
    tool_prompt,
    tool_result,
)
from .schema import problems
from .testing import Zot

HERE = os.path.dirname(os.path.abspath(__file__))


def probe() -> Extension:
    """A small extension that uses what the runtime offers."""
    ext = Extension("probe", "1.0.0")

    @ext.command("notes", "Notify, then clear the notes")
    def notes(args):
        ext.notify("warn", args)
        ext.clear_notes()
        return {"action": "noop"}

    @ext.command("panel", "Open a panel", opens_panel=True)
    def panel(args):
        def on_key(key, text):
            ext.render_panel("p", "Keys", [key, text], "footer")
            if key == "esc":
                ext.close_panel("p")

        def closed():
            ext.notify("info", "closed")

        if args == "now":
            ext.open_panel("p", "Keys", [], "footer", on_key=on_key, on_close=closed)
            return {"action": "noop"}
        return ext.panel_answer(
            "p", "Keys", [], "footer", on_key=on_key, on_close=closed
        )

    @ext.tool("rich", "Blocks", {"type": "object"}, output_schema={"type": "object"})
    def rich(args):
        blocks = [markdown_block("**b**"), image_block(b"PNG", "image/png")]
        structured = {"structured_content": {"n": 1}, "activate_tools": ("count",)}
        return tool_result("plain", *blocks, **structured)

    @ext.tool("count", "Count to N", {"type": "object", "required": ["n"]})
    def count(args):
        return str(args["n"])

    @ext.tool("wait", "Wait until zot cancels", {"type": "object"}, interactive=True)
    def wait(args, cancelled):
        ext.notify("info", "waiting")
        cancelled.wait(10)
        return "too late"

    @ext.intercept_before_agent_start
    def system_prompt(frame):
        if frame["system_prompt"] == "crash":
            raise RuntimeError("boom")
        if frame["system_prompt"] == "keep":
            return None
        return f"new {ext.newer_host}"

    options = {"namespace": "ns", "namespace_description": "d"}
    options.update(namespace_instructions="i", exposure="deferred", replay="safe")

    @ext.tool("host", "Run zot's tool", {"type": "object"}, deferred=True, **options)
    def host(args, cancelled):
        given = cancelled if args.get("give") else None
        result = ext.call_tool(args.get("name"), args.get("args", {}), given)
        if cancelled.is_set():  # the result goes nowhere: show it
            ext.notify("info", result.text)
        return result

    @ext.command("host", "Run zot's tool, or have zot run it")
    def command(args):
        if args == "prompt":
            return tool_prompt("read", {"path": "a"}, "Sum it up")
        if args in ("", "[]"):
            return tool_prompt("read" if args else "", json.loads(args or "{}"), "x")
        return {"action": "display", "display": ext.call_tool(args, {}).text}

    @ext.on("turn_end")
    def on_the_read_loop(frame):
        ext.notify("info", ext.call_tool("read", {}).text)

    @ext.intercept_tool_call
    def guard(name, args):
        if name == "edit":
            return ToolCallDecision(modified_args={**args, "safe": True})
        if name in ("write", "glob"):
            return ToolCallDecision(name == "glob", "no glob", ["not", "a", "dict"])
        return "no bash" if name == "bash" else None

    @ext.intercept_turn_start
    def turn_start(step):
        return f"too many steps: {step}" if step > 2 else None

    @ext.intercept_assistant_message
    def message(text):
        if text == "crash":
            raise RuntimeError("boom")
        if text == "secret":
            return AssistantMessageDecision(block=True, reason="hidden")
        return text.upper() if text.lower().startswith("shout") else None

    return ext


TAGS = itertools.count(1)


def sleeps(tag: str) -> list:
    """The sleep processes running with TEST_TAG=TAG in their environment:
    [pid, process group, session, its argument] each. One that has exited
    (a zombie too) has an empty command line: it is not listed."""
    entry, found = f"TEST_TAG={tag}".encode(), []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as file:
                argv = file.read().split(b"\0")
            with open(f"/proc/{name}/environ", "rb") as file:
                environ = file.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as file:
                stat = file.read().rpartition(b")")[2].split()
        except OSError:  # not a process, or gone
            continue
        if argv[0] == b"sleep" and entry in environ:
            found.append([int(name), int(stat[2]), int(stat[3]), argv[1].decode()])
    return found


def starter(tag: str, popened: list) -> Extension:
    """An extension whose tools start sleeps tagged TAG: through run() (the
    shell script SCRIPT, after FIRST if given), or with subprocess.Popen
    (kept in POPENED). They answer the sleeps running as they return."""
    ext = Extension("starter", "1.0.0")
    env = {**os.environ, "TEST_TAG": tag}

    @ext.tool("start", "Run SCRIPT with run()", {"type": "object"})
    def start(args, cancelled):
        if "first" in args:  # a run of its own, which goes on after SCRIPT's
            runtime.run(["sh", "-c", args["first"]], cancelled, env=env)
        options = {"env": env}
        if "timeout" in args:
            options["timeout"] = args["timeout"]
        try:
            runtime.run(["sh", "-c", args["script"]], cancelled, **options)
        except subprocess.TimeoutExpired as err:
            output = (err.stdout or b"").decode()  # bytes, as subprocess.run's
            stopped = {"timeout": err.timeout, "output": output}
            return json.dumps({**stopped, "running": sleeps(tag)})
        # The background ones may still be on their way to exec sleep.
        wait_for(lambda: len(sleeps(tag)) >= args.get("count", 0))
        return json.dumps({"running": sleeps(tag)})

    @ext.tool("popen", "Start a sleep with subprocess.Popen", {"type": "object"})
    def popen(args, cancelled):
        quiet = subprocess.DEVNULL
        popened.append(
            subprocess.Popen(["sleep", "302"], env=env, stdin=quiet, stdout=quiet)
        )
        wait_for(lambda: sleeps(tag))
        return json.dumps({"running": sleeps(tag)})

    return ext


def wait_for(done) -> None:
    """Wait (a little) until DONE() is true."""
    for _ in range(500):
        if done():
            return
        threading.Event().wait(0.01)
    raise AssertionError("waited 5 s in vain")


class RuntimeTest(unittest.TestCase):
    def start(self, newer: bool = True) -> Zot:
        zot = Zot(probe(), newer=newer)
        self.addCleanup(zot.stop)
        return zot

    def test_hello_and_registrations_say_what_is_used(self):
        zot = self.start()
        capabilities = ["commands", "tools", "events", "panels", "tool_cancel"]
        self.assertEqual(zot.hello["capabilities"], [*capabilities, "call_tool"])
        tools = [f for f in zot.registrations if f["type"] == "register_tool"]
        rich, _, wait, host = tools
        self.assertEqual(rich["output_schema"], {"type": "object"})
        self.assertNotIn("interactive", rich)
        self.assertEqual((wait["interactive"], "output_schema" in wait), (True, False))
        self.assertEqual(
            host,
            {
                "type": "register_tool",
                "name": "host",
                "description": "Run zot's tool",
                "schema": {"type": "object"},
                "namespace": "ns",
                "namespace_description": "d",
                "namespace_instructions": "i",
                "exposure": "deferred",
                "deferred": True,
                "replay": "safe",
            },
        )
        subscribe = [f for f in zot.registrations if f["type"] == "subscribe"]
        self.assertEqual(
            subscribe,
            [
                {
                    "type": "subscribe",
                    "events": ["turn_end"],
                    "intercept": [
                        "tool_call",
                        "before_agent_start",
                        "turn_start",
                        "assistant_message",
                    ],
                }
            ],
        )

    def test_exposure_and_replay_outside_their_lists_are_refused(self):
        ext = Extension("probe", "1.0.0")
        for option, value, allowed in [
            ("exposure", "hidden", "direct, codemode, deferred, model-only"),
            ("replay", "always", "never, safe, idempotent, reconcile"),
        ]:
            with self.assertRaises(ValueError) as raised:
                ext.tool("t", "T", {"type": "object"}, **{option: value})
            wanted = f'tool t: {option} "{value}" must be one of {allowed}'
            self.assertEqual(str(raised.exception), wanted)
        self.assertEqual(ext._registrations(), '{"type":"ready"}\n')

    def test_call_tool_in_a_tool_call_names_its_parent(self):
        answers = {"read": {"text": "cut", "truncated": True}, "ls": lambda a: a["p"]}
        zot = Zot(probe(), tools=answers)
        self.addCleanup(zot.stop)
        call = zot.start_tool("host", {"name": "read", "args": {"path": "a"}})
        result = call.result()
        self.assertEqual(
            zot.calls,
            [
                {
                    "type": "call_tool",
                    "id": "call-1",
                    "name": "read",
                    "args": {"path": "a"},
                    "parent_id": call.id,
                }
            ],
        )
        # Passed on as the tool's own result: the note stays, "truncated" not.
        note = "[zot cut this result: over 256 KiB]"
        self.assertEqual((result.text, result.is_error), ("cut" + note, False))
        self.assertEqual(result.content[1], {"type": "text", "text": note})
        result = zot.tool("host", {"name": "ls", "args": {"p": "x"}, "give": True})
        self.assertEqual((zot.calls[1]["id"], result.text), ("call-2", "x"))
        result = zot.tool("host", {"name": "bash"})
        wanted = "this test's zot has no answer for its tool bash"
        self.assertEqual((result.text, result.is_error), (wanted, True))

    def test_frames_go_nowhere_until_zot_is_served(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):  # as a test that calls a handler
            ext = probe()
            ext.notify("info", "not served")
        self.assertEqual(out.getvalue(), "")
        zot = Zot(ext)
        self.addCleanup(zot.stop)
        ext.notify("info", "served")
        self.assertEqual(zot.next("notify")["message"], "served")

    def test_call_tool_elsewhere_has_no_parent(self):
        zot = Zot(probe(), tools={"read": "text"})
        self.addCleanup(zot.stop)
        self.assertEqual(zot.command("host", "read").display, "text")
        self.assertNotIn("parent_id", zot.calls[0])
        zot.event("turn_end")  # on the read loop, which the answer needs
        wanted = "cannot call read here: event and panel handlers run on the"
        self.assertTrue(zot.next("notify")["message"].startswith(wanted))
        self.assertEqual(len(zot.calls), 1)

    def test_call_tool_never_sends_what_zot_cannot_take(self):
        bad = "call_tool requires a name and JSON object args"
        too_old = "this zot is too old to run its tools for extensions (update zot)"
        for newer, name, args, wanted in [
            (True, "", {}, bad),
            (True, "read", [], bad),
            (False, "read", {}, f"cannot call read: {too_old}"),
        ]:
            zot = self.start(newer)
            result = zot.tool("host", {"name": name, "args": args})
            self.assertEqual((result.text, result.is_error), (wanted, True))
            self.assertEqual(zot.calls, [])

    def test_call_tool_cancelled_or_unanswered_cancels_at_zot(self):
        answering, release = threading.Event(), threading.Event()

        def slow(args):
            answering.set()
            return release.wait(5) and "late"

        zot = Zot(probe(), tools={"slow": slow})
        self.addCleanup(zot.stop)
        self.addCleanup(release.set)
        call = zot.start_tool("host", {"name": "slow"})
        # Cancelled once zot has taken the call (before, zot refuses it).
        self.assertTrue(answering.wait(5))
        call.cancel()
        cancel = {"type": "call_tool_cancel", "id": "call-1"}
        self.assertEqual(zot.next("call_tool_cancel"), cancel)
        self.assertEqual(
            zot.next("notify")["message"], "the call of slow was cancelled"
        )
        self.assertTrue(call.no_result(0.1))
        seconds = runtime.CALL_TOOL_SECONDS
        self.addCleanup(setattr, runtime, "CALL_TOOL_SECONDS", seconds)
        runtime.CALL_TOOL_SECONDS = 0.1
        result = zot.tool("host", {"name": "slow"})
        wanted = "zot did not answer the call of slow within 0.1 s"
        self.assertEqual((result.text, result.is_error), (wanted, True))
        self.assertEqual(zot.next("call_tool_cancel")["id"], "call-2")
        release.set()  # the answers come late: dropped quietly
        zot.send({"type": "tool_result", "id": "call-9"})
        zot.send({"type": "tool_result", "id": ["odd"]})
        self.assertTrue(zot.quiet(0.1))
        self.assertIn("no call in flight: 'call-9'", zot.log())
        self.assertNotIn("'call-1'", zot.log())

    def test_call_tool_reads_odd_fields_as_empty_and_ends_with_zot(self):
        release = threading.Event()
        zot = Zot(probe(), tools={"slow": lambda args: release.wait(5) and "late"})
        self.addCleanup(release.set)
        call = zot.start_tool("host", {"name": "slow"})
        wait_for(lambda: zot.calls)
        odd = {"content": "x", "is_error": "yes", "truncated": 1}
        zot.send({"type": "tool_result", "id": "call-1", **odd})
        result = call.result()
        self.assertEqual((result.content, result.is_error), ([], False))
        call = zot.start_tool("host", {"name": "slow"})
        wait_for(lambda: len(zot.calls) == 2)
        zot.stop()
        wanted = "zot stopped before answering the call of slow"
        self.assertEqual(call.result().text, wanted)

    def test_tool_prompt_and_its_fallback_on_an_older_zot(self):
        zot = self.start()
        reply = zot.command("host", "prompt")
        self.assertEqual(
            (reply.action, reply.tool_name, reply.tool_args, reply.prompt),
            ("tool_prompt", "read", {"path": "a"}, "Sum it up"),
        )
        for args, wanted in [
            ("", "tool_prompt requires a name and prompt"),
            ("[]", "tool_prompt args must be a JSON object"),
        ]:
            self.assertEqual(zot.command("host", args).error, wanted)
        zot = self.start(newer=False)
        reply = zot.command("host", "prompt")
        self.assertEqual(
            (reply.action, reply.prompt, reply.tool_name), ("prompt", "Sum it up", "")
        )
        wanted = "zot 0.1.62 cannot run a tool from a command: sent the prompt alone"
        self.assertIn(wanted, zot.log())

    def test_intercepts_that_rewrite_abort_or_hide(self):
        zot = self.start()
        answer = zot.intercept_response(
            "tool_call", tool_name="edit", tool_args={"p": 1}
        )
        allowed = {
            "type": "event_intercept_response",
            "id": answer["id"],
            "block": False,
        }
        self.assertEqual(answer, {**allowed, "modified_args": {"p": 1, "safe": True}})
        answer = zot.intercept_response("tool_call", tool_name="write", tool_args={})
        self.assertEqual(answer, {**allowed, "id": answer["id"]})
        self.assertIn("sent no modified_args: a list, not a JSON object", zot.log())
        answer = zot.intercept_response("tool_call", tool_name="glob", tool_args={})
        self.assertEqual(
            (answer["block"], answer["reason"], "modified_args" in answer),
            (True, "no glob", False),
        )
        self.assertEqual(zot.intercept("bash", {}), "no bash")
        self.assertIsNone(zot.intercept("read", {}))
        self.assertIsNone(zot.turn_start(2))
        self.assertEqual(zot.turn_start(3), "too many steps: 3")
        self.assertEqual(zot.intercept_response("turn_start", step="x")["block"], False)
        self.assertEqual(zot.assistant_message("shout it"), "SHOUT IT")
        for text in ("as is", "SHOUT"):  # no replace_text: the same text
            answer = zot.intercept_response("assistant_message", text=text)
            self.assertEqual(answer, {**allowed, "id": answer["id"]})
        answer = zot.intercept_response("assistant_message", text="secret")
        self.assertEqual(
            answer,
            {
                "type": "event_intercept_response",
                "id": answer["id"],
                "block": True,
                "reason": "hidden",
            },
        )
        self.assertIsNone(zot.assistant_message("secret"))
        answer = zot.intercept_response("assistant_message", text="crash")
        self.assertEqual(
            (answer["block"], answer["reason"]), (True, "probe failed: boom")
        )

    def test_notify_and_clear_notes(self):
        zot = self.start()
        self.assertEqual(zot.command("notes", "hi").action, "noop")
        note = {"type": "notify", "level": "warn", "message": "hi"}
        self.assertEqual(zot.next("notify"), note)
        zot.next("clear_notes")

    def test_panel_keys_go_to_the_open_panel_only(self):
        for args in ("", "now"):
            zot = self.start()
            reply = zot.command("panel", args)
            if args:
                self.assertEqual(zot.next("open_panel")["panel"]["id"], "p")
            else:
                self.assertEqual((reply.action, reply.panel["id"]), ("open_panel", "p"))
            zot.key("p", "rune", "x")
            render = zot.next("panel_render")
            self.assertEqual(
                (render["lines"], render["footer"]), (["rune", "x"], "footer")
            )
            zot.key("other", "rune", "x")
            zot.send({"type": "panel_resize", "width": 80, "height": 20})
            self.assertTrue(zot.quiet(0.1))
            zot.close_panel("p")
            self.assertEqual(zot.next("notify")["message"], "closed")
            zot.key("p", "rune", "x")  # closed: forgotten
            self.assertTrue(zot.quiet(0.1))
            self.assertIn("'other'", zot.log())

    def test_closing_a_panel_forgets_it(self):
        zot = self.start()
        zot.command("panel")
        zot.key("p", "esc")
        zot.next("panel_render")
        zot.next("panel_close")
        zot.key("p", "esc")
        self.assertTrue(zot.quiet(0.1))

    def test_rich_results(self):
        result = self.start().tool("rich", {})
        content = [
            {"type": "text", "text": "plain"},
            {"type": "text", "text": "**b**", "format": "markdown"},
            {"type": "image", "mime_type": "image/png", "data": "UE5H"},
        ]
        self.assertEqual(result.content, content)
        self.assertEqual(
            (result.structured_content, result.activate_tools, result.is_error),
            ({"n": 1}, ["count"], False),
        )
        self.assertEqual(self.start().tool("count", {"n": 1}).activate_tools, [])

    def test_a_cancelled_call_never_gets_a_result(self):
        zot = self.start()
        call = zot.start_tool("wait", {})
        self.assertEqual(zot.next("notify")["message"], "waiting")
        call.cancel()
        zot.send({"type": "tool_cancel", "id": "unknown"})
        self.assertTrue(call.no_result(0.2))
        rich = zot.start_tool("rich", {})
        self.assertEqual(rich.result().text, "plain**b**")
        rich.cancel()  # finished: ignored
        self.assertTrue(zot.quiet(0.1))
        self.assertIn("'unknown'", zot.log())

    def test_an_older_zot_gets_no_frames_it_cannot_take(self):
        zot = self.start(newer=False)
        self.assertEqual(zot.command("panel", "now").action, "noop")
        self.assertTrue(zot.quiet(0.1))
        self.assertIn("sent no open_panel frame", zot.log())

    def test_before_agent_start_replaces_or_keeps_the_prompt(self):
        for newer in (True, False):
            zot = self.start(newer)
            self.assertEqual(zot.before_agent_start("old"), f"new {newer}")
            self.assertIsNone(zot.before_agent_start("keep"))
            self.assertIsNone(zot.before_agent_start("crash"))
            self.assertIn("boom", zot.log())

    def test_host_info_is_typed(self):
        zot = self.start()
        host = zot.ext.host
        self.assertEqual((host.cwd, host.data_dir), (zot.project, zot.data_dir))
        self.assertEqual((host.capabilities, host.protocol_version), (["call_tool"], 1))
        host = HostInfo({"cwd": 7, "model": "m", "protocol_version": True, "x": 1})
        self.assertEqual((host.cwd, host.model, host.protocol_version), ("", "m", 0))
        self.assertEqual((host.capabilities, host.get("x")), (None, 1))
        self.assertIsNone(self.start(newer=False).ext.host.capabilities)

    def test_arguments_that_do_not_fit_the_schema_never_reach_the_handler(self):
        zot = self.start()
        self.assertEqual(zot.tool("count", {"n": 3}).text, "3")
        for args, text in [
            ({}, '"n" is required'),
            ([], "the arguments must be an object"),
        ]:
            result = zot.tool("count", args)
            self.assertEqual(
                (result.text, result.is_error), (f"invalid arguments: {text}", True)
            )

    def test_the_schema_checks_of_schema_cases_json(self):
        with open(os.path.join(HERE, "schema-cases.json"), encoding="utf-8") as file:
            cases = json.load(file)["cases"]
        for case in cases:
            with self.subTest(schema=case["schema"], args=case["args"]):
                self.assertEqual(
                    problems(case["schema"], case["args"]), case["problems"]
                )

    def test_a_tool_zot_does_not_know_is_a_test_error(self):
        with self.assertRaisesRegex(AssertionError, r"no tool nope is registered"):
            self.start().tool("nope", {})


@unittest.skipUnless(os.path.isdir("/proc"), "reads the processes in /proc")
class ProcessesTest(unittest.TestCase):
    """run() ties a program to its tool call: it ends when the call does,
    with every process it started."""

    def start(self) -> tuple:
        """A fake zot that runs starter(), and the tag of its sleeps."""
        tag, popened = f"{os.getpid()}.{next(TAGS)}", []
        zot = Zot(starter(tag, popened))
        self.addCleanup(zot.stop)
        self.addCleanup(self.stop_sleeps, tag, popened)
        return zot, tag

    def stop_sleeps(self, tag: str, popened: list) -> None:
        """What a failed test left: the sleeps it started (by pid)."""
        for process in popened:
            process.kill()
            process.wait()
        for pid, *_ in sleeps(tag):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # it ended meanwhile

    def test_a_program_left_in_the_background_ends_before_the_result(self):
        zot, tag = self.start()
        script = {"script": "sleep 300 >/dev/null 2>&1 &", "count": 1}
        result = json.loads(zot.tool("start", script).text)
        self.assertEqual(len(result["running"]), 1)  # as the handler returned
        self.assertEqual(sleeps(tag), [])  # at the result: stopped before it

    @unittest.skipUnless(shutil.which("setsid"), "needs setsid")
    def test_a_grandchild_in_a_session_of_its_own_ends_before_the_result(self):
        zot, tag = self.start()
        script = {"script": "setsid sleep 300 >/dev/null 2>&1 &", "count": 1}
        result = json.loads(zot.tool("start", script).text)
        [[pid, _, session, _]] = result["running"]
        self.assertEqual(session, pid)  # out of the group run() made
        self.assertEqual(sleeps(tag), [])

    @unittest.skipUnless(shutil.which("setsid"), "needs setsid")
    def test_run_s_timeout_stops_that_run_s_whole_tree(self):
        zot, tag = self.start()
        script = "echo started; setsid sleep 300 & sleep 300"
        args = {"first": "sleep 301 >/dev/null 2>&1 &", "script": script}
        call = zot.start_tool("start", {**args, "timeout": 2})
        wait_for(lambda: len(sleeps(tag)) == 3)  # before the timeout
        result = json.loads(call.result().text)
        self.assertEqual((result["timeout"], result["output"]), (2, "started\n"))
        # As TimeoutExpired came, the first run's program still ran: it
        # belongs to the call, which ends after that.
        self.assertEqual([argument for *_, argument in result["running"]], ["301"])
        self.assertEqual(sleeps(tag), [])

    def test_a_program_started_with_popen_outlives_the_call(self):
        zot, tag = self.start()
        running = json.loads(zot.tool("popen", {}).text)["running"]
        self.assertEqual(len(running), 1)
        # Still running: it ends with the extension (see Extension.run).
        self.assertEqual(sleeps(tag), running)

    @unittest.skipUnless(shutil.which("setsid"), "needs setsid")
    def test_tool_cancel_stops_the_programs_and_no_result_is_sent(self):
        zot, tag = self.start()
        call = zot.start_tool("start", {"script": "setsid sleep 300 & sleep 300"})
        wait_for(lambda: len(sleeps(tag)) == 2)
        call.cancel()
        wait_for(lambda: sleeps(tag) == [])
        self.assertTrue(call.no_result(0.2))

    def test_without_proc_the_process_group_ends_before_the_result(self):
        self.addCleanup(setattr, runtime, "_PROC", runtime._PROC)
        runtime._PROC = os.path.join(HERE, "no-such-proc")  # as on macOS
        zot, tag = self.start()
        script = {"script": "sleep 300 >/dev/null 2>&1 &", "count": 1}
        result = json.loads(zot.tool("start", script).text)
        self.assertEqual(len(result["running"]), 1)
        self.assertEqual(sleeps(tag), [])
