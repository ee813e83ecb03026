"""Unit tests of audit.py: zot's events in the audit log, through a fake zot."""

import json
import unittest
from pathlib import Path

import main
from zot.testing import Zot


class AuditTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.zot = Zot(main.ext)

    @classmethod
    def tearDownClass(cls):
        cls.zot.stop()

    def test_events_are_appended_to_the_audit_log(self):
        log = Path(self.zot.data_dir, "demo-ext-events.jsonl")
        log.unlink(missing_ok=True)  # a log of an earlier test
        self.zot.event("session_start", step=1)
        lines = log.read_text(encoding="utf-8").splitlines()
        event = json.loads(lines[-1])
        self.assertEqual((event["event"], event["step"]), ("session_start", 1))
        self.assertIn("received_at", event)


if __name__ == "__main__":
    unittest.main()
