"""The guard's own tests (python3 -m unittest runs them with yours): the
template's rules give every verdict of guard-cases.json. Your guard-policy.json
is left out, so a rule you switch off there fails nothing here; ./smoke-test
checks the extension with it."""

import json
import os
import unittest

from .guard import HERE, check, template_policy

CASES_FILE = "zot/guard/guard-cases.json"


class GuardCasesTest(unittest.TestCase):
    def test_the_rules_give_the_verdicts_of_guard_cases_json(self):
        with open(os.path.join(HERE, CASES_FILE), encoding="utf-8") as file:
            cases = json.load(file)
        rules, cwd = template_policy(), cases["cwd"]
        for command, rule in cases["refused"].items():
            with self.subTest(command=command):
                refusal = check(command, cwd, rules)
                self.assertEqual(refusal and refusal.rule, rule, "must refuse")
        for command in cases["allowed"]:
            with self.subTest(command=command):
                self.assertIsNone(check(command, cwd, rules), "must allow")
