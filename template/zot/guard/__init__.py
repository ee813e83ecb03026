"""The guard: from zot.guard import check_tool_call, warn_if_rules_unusable.

guard.py is the engine, guard-rules.json the template's rules and
guard-cases.json what they must refuse and allow (test_guard.py checks it);
your own rules go in guard-policy.json, in the extension's folder.
"""

from .guard import Refusal, check, check_tool_call, warn_if_rules_unusable

__all__ = ["Refusal", "check", "check_tool_call", "warn_if_rules_unusable"]
