"""Unit tests of main.py's handlers: python3 -m unittest (which also runs the
tests of the template's code in zot/). ./smoke-test checks the whole
extension the way zot runs it."""

import unittest

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


if __name__ == "__main__":
    unittest.main()
