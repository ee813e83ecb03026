"""Unit tests of conventions.py: CONVENTIONS.md in the system prompt, through a
fake zot."""

import unittest
from pathlib import Path

import conventions
import main
from zot.testing import Zot


class ConventionsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.zot = Zot(main.ext)

    @classmethod
    def tearDownClass(cls):
        cls.zot.stop()

    def write(self, text: str) -> None:
        """Put CONVENTIONS.md with TEXT into the fake zot's project folder."""
        path = Path(self.zot.project, conventions.CONVENTIONS_FILE)
        path.write_text(text, encoding="utf-8")
        self.addCleanup(path.unlink)

    def test_they_are_added_to_the_system_prompt(self):
        self.write("Use tabs.\n")
        heading = "\n\n## Project conventions (CONVENTIONS.md)\n\n"
        new = self.zot.before_agent_start("You help.")
        self.assertEqual(new, "You help." + heading + "Use tabs.\n")

    def test_none_keep_the_prompt(self):
        self.assertIsNone(self.zot.before_agent_start("You help."))
        self.write(" \n\t\n")  # only blanks
        self.assertIsNone(self.zot.before_agent_start("You help."))

    def test_they_are_cut_to_fit_one_mib(self):
        limit = conventions.MAX_PROMPT
        self.write("é" * limit)  # 2 MiB
        size = len(self.zot.before_agent_start("abc").encode())
        self.assertTrue(limit - 2 < size <= limit, size)


if __name__ == "__main__":
    unittest.main()
