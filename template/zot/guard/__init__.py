"""The guard: from zot.guard import check_tool_call, warn_if_rules_unusable.

guard.py is the engine, guard-rules.json the template's rules and
guard-cases.json what they must refuse and allow (test_guard.py checks it);
your own rules go in guard-policy.json, in the extension's folder.

The engine is imported and the rules read on first use, not at start-up:
warn_if_rules_unusable does it after ready (ext.on_hello), and a tool call
that comes first waits for it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .guard import Refusal

__all__ = ["Refusal", "check", "check_tool_call", "warn_if_rules_unusable"]

_reading = threading.Lock()  # one thread reads the rules, the others wait


def check_tool_call(
    tool_name: object, tool_args: object, cwd: object = ""
) -> Refusal | None:
    """Why a tool call must be refused, or None to allow it."""
    with _reading:
        from .guard import check_tool_call as check
    return check(tool_name, tool_args, cwd)


def warn_if_rules_unusable(name: str, ext: Any) -> None:
    """Reads the rules; when they cannot be used (then every bash call is
    refused), tells the user and the log of extension `name`."""
    with _reading:
        from .guard import warn_if_rules_unusable as warn

        warn(name, ext)


def __getattr__(name: str) -> Any:
    if name in ("Refusal", "check"):
        from . import guard

        return getattr(guard, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
