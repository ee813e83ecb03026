"""The person's terminal in --interactive: line editing, keys one at a time,
panels drawn as boxes."""

from __future__ import annotations

import contextlib
import os
import re
import sys

# What a terminal sends for a key -> the key zot names in panel_key.
KEY_CODES = {
    "\x1b[A": "up", "\x1bOA": "up", "\x1b[B": "down", "\x1bOB": "down",
    "\x1b[C": "right", "\x1bOC": "right", "\x1b[D": "left", "\x1bOD": "left",
    "\x1b[H": "home", "\x1bOH": "home", "\x1b[1~": "home", "\x1b[F": "end",
    "\x1bOF": "end", "\x1b[4~": "end", "\x1b[5~": "pageup", "\x1b[6~": "pagedown",
    "\x1b[3~": "delete", "\r": "enter", "\n": "enter", "\t": "tab",
    "\x7f": "backspace", "\x08": "backspace", "\x1b": "esc",
}  # fmt: skip


def box(panel: dict, width: int) -> str:
    """A panel drawn as a text box, the way zot shows it above the editor."""
    title, footer = panel.get("title", ""), panel.get("footer", "")
    lines = panel.get("lines", [])
    inner = min(max([len(title) + 2, len(footer) + 2, *map(len, lines), 20]), width - 4)

    def fit(text: str) -> str:
        return text if len(text) <= inner else text[: inner - 1] + "…"

    top = f"┌─ {fit(title)} ".ljust(inner + 3, "─") + "┐"
    bottom = (f"└─ {fit(footer)} " if footer else "└").ljust(inner + 3, "─") + "┘"
    body = [f"│ {fit(line).ljust(inner)} │" for line in lines]
    return "\n".join([top, *body, bottom])


def setup_readline(words: list[str]):
    """Line editing, history and tab completion of `words`: the readline
    module, or None where Python has none."""
    try:
        import readline  # only for a person at a terminal
    except ImportError:
        return None

    def complete(text: str, state: int):
        typed = readline.get_line_buffer()
        matches = [word for word in words if word.startswith(typed)]
        cut = len(typed) - len(text)
        return matches[state][cut:] if state < len(matches) else None

    readline.set_completer_delims(" ")
    readline.set_completer(complete)
    readline.parse_and_bind("tab: complete")
    return readline


@contextlib.contextmanager
def keyboard(tty: bool):
    """Keys one by one, unechoed (ctrl-c still interrupts), while a panel is open."""
    if not tty:
        yield
        return
    import termios  # here, not at the top: only panels need them
    import tty as terminal

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    terminal.setcbreak(fd)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def read_keys(tty: bool) -> list[str]:
    """The keys typed since the last call, in order (a held arrow key, a
    paste); without a terminal, a line of one key name."""
    if not tty:
        line = sys.stdin.readline()
        return [line.strip() or "esc"] if line.strip() or not line else []
    import select

    fd = sys.stdin.fileno()
    if not select.select([fd], [], [], 0.05)[0]:
        return []
    return split_keys(os.read(fd, 1024).decode("utf-8", "replace"))


# Escape sequences of keys zot does not send (F1, shift-tab, ...): skipped.
OTHER_SEQUENCE = re.compile(r"\x1b(\[[0-9;]*[A-Za-z~]|O.)")
SEQUENCES = sorted(KEY_CODES, key=len, reverse=True)  # the longest first


def split_keys(data: str) -> list[str]:
    """What a terminal sent, as the keys zot names and typed characters."""
    keys, at = [], 0
    while at < len(data):
        code = next((c for c in SEQUENCES if data.startswith(c, at)), None)
        other = OTHER_SEQUENCE.match(data, at)
        if code and not (other and len(other.group()) > len(code)):
            keys.append(KEY_CODES[code])
            at += len(code)
        elif other:
            at = other.end()
        else:
            if data[at].isprintable():
                keys.append(data[at])
            at += 1
    return keys
