"""The runtime's own tests (python3 -m unittest runs them with yours): the
frames of a small extension, played through the fake zot of testing.py."""

from __future__ import annotations

import json
import os
import unittest

from .runtime import Extension, HostInfo, image_block, markdown_block, tool_result
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
        return tool_result("plain", *blocks, structured_content={"n": 1})

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

    return ext


class RuntimeTest(unittest.TestCase):
    def start(self, newer: bool = True) -> Zot:
        zot = Zot(probe(), newer=newer)
        self.addCleanup(zot.stop)
        return zot

    def test_hello_and_registrations_say_what_is_used(self):
        zot = self.start()
        capabilities = ["commands", "tools", "events", "panels", "tool_cancel"]
        self.assertEqual(zot.hello["capabilities"], capabilities)
        tools = [f for f in zot.registrations if f["type"] == "register_tool"]
        rich, _, wait = tools
        self.assertEqual(rich["output_schema"], {"type": "object"})
        self.assertNotIn("interactive", rich)
        self.assertEqual((wait["interactive"], "output_schema" in wait), (True, False))
        subscribe = [f for f in zot.registrations if f["type"] == "subscribe"]
        self.assertEqual(subscribe[0]["intercept"], ["before_agent_start"])

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
            self.assertTrue(zot.quiet())
            zot.close_panel("p")
            self.assertEqual(zot.next("notify")["message"], "closed")
            zot.key("p", "rune", "x")  # closed: forgotten
            self.assertTrue(zot.quiet())
            self.assertIn("'other'", zot.log())

    def test_closing_a_panel_forgets_it(self):
        zot = self.start()
        zot.command("panel")
        zot.key("p", "esc")
        zot.next("panel_render")
        zot.next("panel_close")
        zot.key("p", "esc")
        self.assertTrue(zot.quiet())

    def test_rich_results(self):
        result = self.start().tool("rich", {})
        content = [
            {"type": "text", "text": "plain"},
            {"type": "text", "text": "**b**", "format": "markdown"},
            {"type": "image", "mime_type": "image/png", "data": "UE5H"},
        ]
        self.assertEqual(result.content, content)
        self.assertEqual(
            (result.structured_content, result.is_error), ({"n": 1}, False)
        )

    def test_a_cancelled_call_never_gets_a_result(self):
        zot = self.start()
        call = zot.start_tool("wait", {})
        self.assertEqual(zot.next("notify")["message"], "waiting")
        call.cancel()
        zot.send({"type": "tool_cancel", "id": "unknown"})
        self.assertTrue(call.no_result())
        rich = zot.start_tool("rich", {})
        self.assertEqual(rich.result().text, "plain**b**")
        rich.cancel()  # finished: ignored
        self.assertTrue(zot.quiet())
        self.assertIn("'unknown'", zot.log())

    def test_an_older_zot_gets_no_frames_it_cannot_take(self):
        zot = self.start(newer=False)
        self.assertEqual(zot.command("panel", "now").action, "noop")
        self.assertTrue(zot.quiet())
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
