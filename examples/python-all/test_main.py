"""Unit tests of main.py's handlers: python3 -m unittest (which also runs the
tests of the template's code in zot/). ./smoke-test checks the whole
extension the way zot runs it."""

import json
import unittest
from pathlib import Path

import main
from zot.testing import Zot


class HandlerTest(unittest.TestCase):
    """The handlers, called by the names zot knows them by."""

    @classmethod
    def setUpClass(cls):
        cls.zot = Zot(main.ext)  # runs main.ext as zot runs it

    @classmethod
    def tearDownClass(cls):
        cls.zot.stop()

    def test_command_sends_the_text_to_the_model(self):
        reply = self.zot.command("demo-ext", "  why is the sky blue?  ")
        self.assertEqual(reply.action, "prompt")
        self.assertIn("why is the sky blue?", reply.prompt)

    def test_command_without_text_shows_usage(self):
        for args in ("", "   ", "\t\n"):
            reply = self.zot.command("demo-ext", args)
            self.assertEqual(reply.action, "display")
            self.assertTrue(reply.display.startswith("Usage: /demo-ext"))

    def test_tool_echoes_the_text(self):
        for args, text in [
            ({"text": "hello"}, "hello"),
            ({"text": "abc", "uppercase": True}, "ABC"),
            ({"text": 'héllo 😀 "q" \\ $(x)'}, 'héllo 😀 "q" \\ $(x)'),
        ]:
            result = self.zot.tool("demo_ext", args)
            self.assertEqual((result.text, result.is_error), (text, False), args)

    def test_tool_refuses_bad_arguments_with_a_helpful_error(self):
        for args, hint in [
            ({}, '"text" is required'),
            ({"text": " "}, '"text" must not be blank'),
            ({"text": 42}, '"text" must be a string'),
            ({"text": "x", "uppercase": "yes"}, '"uppercase" must be true or false'),
            ([1, 2], "the arguments must be an object"),
        ]:
            result = self.zot.tool("demo_ext", args)
            self.assertTrue(result.is_error, args)
            self.assertTrue(result.text.startswith("invalid arguments: "), args)
            self.assertIn(hint, result.text)

    def test_events_are_appended_to_the_audit_log(self):
        log = Path(self.zot.data_dir, "demo-ext-events.jsonl")
        log.unlink(missing_ok=True)  # a log of an earlier test
        self.zot.event("session_start", step=1)
        lines = log.read_text(encoding="utf-8").splitlines()
        event = json.loads(lines[-1])
        self.assertEqual((event["event"], event["step"]), ("session_start", 1))
        self.assertIn("received_at", event)

    def test_guard_refuses_dangerous_commands_and_tells_the_user(self):
        reason = self.zot.intercept("bash", {"command": "rm -rf /"})
        self.assertTrue(reason and reason.startswith("refused by demo-ext ("), reason)
        note = self.zot.next("notify")
        self.assertEqual((note["level"], note["message"]), ("warn", reason))

    def test_guard_allows_everyday_commands(self):
        for tool, args in [
            ("bash", {"command": "ls -la"}),
            ("bash", {"command": "rm -rf node_modules"}),
            ("read", {"path": "/etc/hosts"}),
        ]:
            self.assertIsNone(self.zot.intercept(tool, args), args)

    def test_conventions_are_added_to_the_system_prompt(self):
        conventions = Path(self.zot.project, "CONVENTIONS.md")
        conventions.write_text("Use tabs.\n", encoding="utf-8")
        self.addCleanup(conventions.unlink)
        heading = "\n\n## Project conventions (CONVENTIONS.md)\n\n"
        new = self.zot.before_agent_start("You help.")
        self.assertEqual(new, "You help." + heading + "Use tabs.\n")

    def test_no_conventions_keep_the_prompt(self):
        self.assertIsNone(self.zot.before_agent_start("You help."))
        conventions = Path(self.zot.project, "CONVENTIONS.md")
        conventions.write_text(" \n\t\n", encoding="utf-8")  # only blanks
        self.addCleanup(conventions.unlink)
        self.assertIsNone(self.zot.before_agent_start("You help."))

    def test_conventions_are_cut_to_fit_one_mib(self):
        conventions = Path(self.zot.project, "CONVENTIONS.md")
        conventions.write_text("é" * main.MAX_PROMPT, encoding="utf-8")  # 2 MiB
        self.addCleanup(conventions.unlink)
        size = len(self.zot.before_agent_start("abc").encode())
        self.assertTrue(main.MAX_PROMPT - 2 < size <= main.MAX_PROMPT, size)

    def picker_lines(self, selected: int) -> list:
        marks = ["› " if i == selected else "  " for i in range(len(main.PICKS))]
        return [mark + pick for mark, pick in zip(marks, main.PICKS)]

    def open_picker(self) -> str:
        """Run /demo-ext-pick: the id of the panel it opens."""
        reply = self.zot.command("demo-ext-pick")
        self.assertEqual(reply.action, "open_panel")
        self.assertEqual(reply.panel["title"], main.PICK_TITLE)
        self.assertEqual(reply.panel["lines"], self.picker_lines(0))
        return reply.panel["id"]

    def test_picker_keys_move_the_selection_and_enter_sends_it(self):
        panel_id = self.open_picker()
        moves = [("down", "", 1), ("rune", "j", 2), ("end", "", 3), ("down", "", 3)]
        moves += [("up", "", 2), ("rune", "k", 1), ("home", "", 0), ("up", "", 0)]
        moves += [("pagedown", "", 3), ("pageup", "", 0), ("down", "", 1)]
        for key, text, selected in moves:
            self.zot.key(panel_id, key, text)
            render = self.zot.next("panel_render")
            self.assertEqual(render["lines"], self.picker_lines(selected), key + text)
        self.zot.key(panel_id, "tab")
        self.assertTrue(self.zot.quiet())
        self.zot.key(panel_id, "enter")
        self.assertEqual(self.zot.next("panel_close")["panel_id"], panel_id)
        self.assertEqual(self.zot.next("submit")["text"], main.PICKS[1])

    def test_picker_closes_on_esc_or_q(self):
        for key, text in [("esc", ""), ("rune", "q")]:
            panel_id = self.open_picker()
            self.zot.key(panel_id, key, text)
            self.assertEqual(self.zot.next("panel_close")["panel_id"], panel_id)

    def ask(self, action: str):
        """Call demo_ext_confirm for ACTION: the call, and the id of its panel."""
        call = self.zot.start_tool("demo_ext_confirm", {"action": action})
        self.assertEqual(self.zot.next("notify")["level"], "info")
        panel = self.zot.next("open_panel")["panel"]
        self.assertEqual(panel["lines"], [action, "", "› Approve", "  Decline"])
        return call, panel["id"]

    def test_ask_answers_with_the_users_choice(self):
        for keys, approved in [
            ([("enter", "")], True),
            ([("down", ""), ("enter", "")], False),
            ([("rune", "y")], True),
            ([("rune", "n")], False),
            ([("esc", "")], False),
        ]:
            call, panel_id = self.ask("Delete the build folder.")
            for key, text in keys:
                self.zot.key(panel_id, key, text)
            result = call.result()
            verdict = {"approved": approved, "action": "Delete the build folder."}
            self.assertEqual(result.structured_content, verdict, keys)

    def test_ask_cancelled_closes_its_panel_and_sends_no_result(self):
        call, panel_id = self.ask("Deploy.")
        call.cancel()
        self.assertEqual(self.zot.next("panel_close")["panel_id"], panel_id)
        self.assertTrue(call.no_result())

    def test_ask_refuses_bad_arguments(self):
        for args, hint in [
            ({}, '"action" is required'),
            ({"action": 1}, '"action" must be a string'),
            ({"action": " "}, '"action" must not be blank'),
        ]:
            result = self.zot.tool("demo_ext_confirm", args)
            self.assertTrue(result.is_error, args)
            self.assertEqual(result.text, f"invalid arguments: {hint}")


class OlderZotTest(unittest.TestCase):
    """zot 0.1.62 takes no panel a tool opens and no submit."""

    @classmethod
    def setUpClass(cls):
        cls.zot = Zot(main.ext, newer=False)

    @classmethod
    def tearDownClass(cls):
        cls.zot.stop()

    def test_picker_shows_the_choice_to_paste(self):
        panel_id = self.zot.command("demo-ext-pick").panel["id"]
        self.zot.key(panel_id, "enter")
        self.zot.next("panel_close")
        self.assertIn(f"Chosen: {main.PICKS[0]}", self.zot.next("notify")["message"])

    def test_ask_says_to_ask_in_the_chat(self):
        result = self.zot.tool("demo_ext_confirm", {"action": "Deploy."})
        self.assertTrue(result.is_error)
        self.assertIn("ask in the chat instead", result.text)


if __name__ == "__main__":
    unittest.main()
