"""Unit tests of picker.py: /demo-ext-pick and its panel, through a fake zot."""

import unittest

import main
import picker
from zot.testing import Zot


def picker_lines(selected: int) -> list:
    marks = ["› " if i == selected else "  " for i in range(len(picker.PICKS))]
    return [mark + pick for mark, pick in zip(marks, picker.PICKS)]


class PickerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.zot = Zot(main.ext)

    @classmethod
    def tearDownClass(cls):
        cls.zot.stop()

    def open_picker(self) -> str:
        """Run /demo-ext-pick: the id of the panel it opens."""
        reply = self.zot.command("demo-ext-pick")
        self.assertEqual(reply.action, "open_panel")
        self.assertEqual(reply.panel["title"], picker.TITLE)
        self.assertEqual(reply.panel["lines"], picker_lines(0))
        return reply.panel["id"]

    def test_keys_move_the_selection_and_enter_sends_it(self):
        panel_id = self.open_picker()
        moves = [("down", "", 1), ("rune", "j", 2), ("end", "", 3), ("down", "", 3)]
        moves += [("up", "", 2), ("rune", "k", 1), ("home", "", 0), ("up", "", 0)]
        moves += [("pagedown", "", 3), ("pageup", "", 0), ("down", "", 1)]
        for key, text, selected in moves:
            self.zot.key(panel_id, key, text)
            render = self.zot.next("panel_render")
            self.assertEqual(render["lines"], picker_lines(selected), key + text)
        self.zot.key(panel_id, "tab")
        self.assertTrue(self.zot.quiet())
        self.zot.key(panel_id, "enter")
        self.assertEqual(self.zot.next("panel_close")["panel_id"], panel_id)
        self.assertEqual(self.zot.next("submit")["text"], picker.PICKS[1])

    def test_esc_or_q_closes_it(self):
        for key, text in [("esc", ""), ("rune", "q")]:
            panel_id = self.open_picker()
            self.zot.key(panel_id, key, text)
            self.assertEqual(self.zot.next("panel_close")["panel_id"], panel_id)


class OlderZotTest(unittest.TestCase):
    """zot 0.1.62 takes no submit."""

    @classmethod
    def setUpClass(cls):
        cls.zot = Zot(main.ext, newer=False)

    @classmethod
    def tearDownClass(cls):
        cls.zot.stop()

    def test_the_choice_is_shown_to_paste(self):
        panel_id = self.zot.command("demo-ext-pick").panel["id"]
        self.zot.key(panel_id, "enter")
        self.zot.next("panel_close")
        self.assertIn(f"Chosen: {picker.PICKS[0]}", self.zot.next("notify")["message"])


if __name__ == "__main__":
    unittest.main()
