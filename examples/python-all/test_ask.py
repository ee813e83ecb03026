"""Unit tests of ask.py: the tool demo_ext_confirm and its panel, through a fake zot."""

import unittest

import main
from zot.testing import Zot


class AskTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.zot = Zot(main.ext)

    @classmethod
    def tearDownClass(cls):
        cls.zot.stop()

    def ask(self, action: str):
        """Call demo_ext_confirm for ACTION: the call, and the id of its panel."""
        call = self.zot.start_tool("demo_ext_confirm", {"action": action})
        self.assertEqual(self.zot.next("notify")["level"], "info")
        panel = self.zot.next("open_panel")["panel"]
        self.assertEqual(panel["lines"], [action, "", "› Approve", "  Decline"])
        return call, panel["id"]

    def test_it_answers_with_the_users_choice(self):
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

    def test_cancelled_it_closes_its_panel_and_sends_no_result(self):
        call, panel_id = self.ask("Deploy.")
        call.cancel()
        self.assertEqual(self.zot.next("panel_close")["panel_id"], panel_id)
        self.assertTrue(call.no_result())

    def test_it_refuses_bad_arguments(self):
        for args, hint in [
            ({}, '"action" is required'),
            ({"action": 1}, '"action" must be a string'),
            ({"action": " "}, '"action" must not be blank'),
        ]:
            result = self.zot.tool("demo_ext_confirm", args)
            self.assertTrue(result.is_error, args)
            self.assertEqual(result.text, f"invalid arguments: {hint}")


class OlderZotTest(unittest.TestCase):
    """zot 0.1.62 takes no panel a tool opens."""

    @classmethod
    def setUpClass(cls):
        cls.zot = Zot(main.ext, newer=False)

    @classmethod
    def tearDownClass(cls):
        cls.zot.stop()

    def test_it_says_to_ask_in_the_chat(self):
        result = self.zot.tool("demo_ext_confirm", {"action": "Deploy."})
        self.assertTrue(result.is_error)
        self.assertIn("ask in the chat instead", result.text)


if __name__ == "__main__":
    unittest.main()
