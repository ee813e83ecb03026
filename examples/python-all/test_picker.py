"""Unit tests of picker.py: /demo-ext-pick and its panel, through a fake zot."""

import unittest
from unittest import mock

import main
import picker
from zot.testing import Reply, Zot

ITEMS = ["one", "two", "three", "four"]  # what items() returns in most tests


def picker_lines(selected: int, items: list = ITEMS) -> list:
    return [("› " if i == selected else "  ") + item for i, item in enumerate(items)]


class PickerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.zot = Zot(main.ext)

    @classmethod
    def tearDownClass(cls):
        cls.zot.stop()

    def pick_from(self, found) -> Reply:
        """Run /demo-ext-pick with picker.items returning FOUND (raising
        it, if an exception): its answer. items() gets zot's project folder."""
        with mock.patch.object(picker, "items", side_effect=[found]) as items:
            reply = self.zot.command("demo-ext-pick")
        items.assert_called_once_with(self.zot.project)
        return reply

    def open_picker(self) -> str:
        """Open the panel on ITEMS: its id."""
        reply = self.pick_from(ITEMS)
        self.assertEqual(reply.action, "open_panel")
        self.assertEqual(reply.panel["title"], picker.TITLE)
        self.assertEqual(reply.panel["lines"], picker_lines(0))
        return reply.panel["id"]

    def test_it_lists_the_items_of_zots_project_folder(self):
        reply = self.pick_from(["main.py", "README.md"])
        self.assertEqual(reply.panel["lines"], ["› main.py", "  README.md"])

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
        self.assertEqual(self.zot.next("submit")["text"], ITEMS[1])

    def test_esc_or_q_closes_it(self):
        for key, text in [("esc", ""), ("rune", "q")]:
            panel_id = self.open_picker()
            self.zot.key(panel_id, key, text)
            self.assertEqual(self.zot.next("panel_close")["panel_id"], panel_id)

    def test_nothing_to_pick_is_a_note_and_no_panel(self):
        reply = self.pick_from([])
        self.assertEqual((reply.action, reply.error, reply.panel), ("noop", "", None))
        note = self.zot.next("notify")
        self.assertEqual((note["level"], note["message"]), ("info", picker.EMPTY))

    def test_a_failure_of_items_is_the_error_zot_shows(self):
        reply = self.pick_from(OSError("not a git repository"))
        self.assertIn("not a git repository", reply.error)
        self.assertIsNone(reply.panel)

    def test_items_are_texts(self):
        """items() itself, in the fake zot's project folder (empty: put there
        what yours reads)."""
        found = picker.items(self.zot.project)
        self.assertIsInstance(found, list)
        self.assertTrue(all(isinstance(item, str) for item in found), found)


class OlderZotTest(unittest.TestCase):
    """zot 0.1.62 takes no submit."""

    @classmethod
    def setUpClass(cls):
        cls.zot = Zot(main.ext, newer=False)

    @classmethod
    def tearDownClass(cls):
        cls.zot.stop()

    def test_the_choice_is_shown_to_paste(self):
        with mock.patch.object(picker, "items", return_value=ITEMS):
            panel_id = self.zot.command("demo-ext-pick").panel["id"]
        self.zot.key(panel_id, "enter")
        self.zot.next("panel_close")
        self.assertIn(f"Chosen: {ITEMS[0]}", self.zot.next("notify")["message"])


if __name__ == "__main__":
    unittest.main()
