"""The audit log: zot's lifecycle events, one JSON line each, appended to
NAME-events.jsonl in zot's data folder. main.py adds it to the extension
(register)."""

from __future__ import annotations

import json
import os
import time

from zot import Extension

EVENTS = [
    "session_start",
    "turn_start",
    "tool_call",
    "turn_end",
    "assistant_message",
]


def register(ext: Extension) -> None:
    """Record EVENTS in EXT's audit log."""

    @ext.on(*EVENTS)
    def record_event(frame: dict) -> None:
        """Append one JSON line per event to the audit log in zot's data_dir."""
        data_dir = ext.host.data_dir or ext.host.extension_dir or "."
        path = os.path.join(data_dir, f"{ext.name}-events.jsonl")
        try:
            with open(path, "a", encoding="utf-8") as audit:
                audit.write(json.dumps({**frame, "received_at": utc_now()}) + "\n")
        except OSError as err:
            ext.log(f"could not write the audit log: {err}")
            return
        ext.log(f"event {frame.get('event')}")


def utc_now() -> str:
    """The time in UTC, RFC 3339 with milliseconds (2025-01-31T12:00:00.000+00:00)."""
    now = time.time()
    millis = int(now * 1000) % 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{millis:03d}+00:00"
