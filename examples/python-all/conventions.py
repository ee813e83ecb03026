"""The project's conventions in the system prompt: before each agent run,
CONVENTIONS.md of the project zot works in is added to it. main.py adds it to
the extension (register)."""

from __future__ import annotations

import os

from zot import Extension

CONVENTIONS_FILE = "CONVENTIONS.md"
MAX_PROMPT = 1 << 20  # zot takes a system prompt of at most 1 MiB (UTF-8)


def register(ext: Extension) -> None:
    """Add the project's CONVENTIONS_FILE to EXT's system prompts."""

    @ext.intercept_before_agent_start
    def add_conventions(frame: dict) -> str | None:
        """The system prompt with the project's conventions added, or None."""
        folder = frame.get("cwd")
        if not isinstance(folder, str) or not folder:
            folder = ext.host.cwd  # the project zot started in
        if not folder:
            return None
        text = read_conventions(ext, os.path.join(folder, CONVENTIONS_FILE))
        if not text.strip():
            return None
        base = frame.get("system_prompt")
        heading = f"\n\n## Project conventions ({CONVENTIONS_FILE})\n\n"
        head = (base if isinstance(base, str) else "") + heading
        room = MAX_PROMPT - len(head.encode())
        if room < 0:
            ext.log(f"kept the system prompt: it leaves no room for {CONVENTIONS_FILE}")
            return None
        # Cut the text to the room left, at a character boundary.
        return head + text.encode()[:room].decode("utf-8", "ignore")


def read_conventions(ext: Extension, path: str) -> str:
    """The first MAX_PROMPT bytes of the file at PATH; "" if there is none."""
    try:
        if not os.path.isfile(path):  # not a folder, a pipe...: do not hang
            return ""
        with open(path, "rb") as file:
            return file.read(MAX_PROMPT).decode("utf-8", "replace")
    except OSError as err:
        ext.log(f"could not read {path}: {err}")
        return ""
