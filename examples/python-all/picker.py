"""The pick panel: /demo-ext-pick lists what items() returns, enter sends
the selected one to the model. main.py adds it to the extension (register)."""

from __future__ import annotations

import itertools

from zot import Extension

COMMAND = "demo-ext-pick"
HELP = "Pick a prompt from a list and send it to the model"
TITLE = "Pick a prompt"
FOOTER = "↑/↓ move · enter send · esc close"
EMPTY = "Nothing to pick."  # the note when items() returns none
# Letters that act as keys (zot sends a letter as the key "rune" with its text).
LETTER_KEYS = {"k": "up", "j": "down", "q": "esc"}
panel_numbers = itertools.count(1)  # the panels are pick-1, pick-2, ...


def items(cwd: str) -> list[str]:
    """What /COMMAND lists, asked each time it opens; CWD is zot's project
    folder. What it raises is shown to the user as an error."""
    # The files git sees changed or new, for one (import subprocess):
    # git = ["git", "ls-files", "--modified", "--others", "--exclude-standard"]
    # return subprocess.check_output(git, cwd=cwd, text=True).splitlines()
    return [
        "Explain how this project is organised.",
        "Review the uncommitted changes for bugs.",
        "Write tests for the code I changed last.",
        "List the TODO comments and suggest which to do first.",
    ]


def register(ext: Extension) -> None:
    """Add /COMMAND to EXT."""

    @ext.command(COMMAND, HELP, opens_panel=True)
    def open_picker(args: str) -> dict:
        """Answer `/COMMAND` (whatever follows it) with the pick panel, or
        with a note when there is nothing to pick."""
        found = items(ext.host.cwd)
        if not found:
            ext.notify("info", EMPTY)
            return {"action": "noop"}
        picker = Picker(ext, found)
        return ext.panel_answer(
            picker.panel_id, TITLE, picker.lines(), FOOTER, on_key=picker.on_key
        )


class Picker:
    """One pick panel: the keys move the selection, enter sends the item."""

    def __init__(self, ext: Extension, items: list) -> None:
        self.ext = ext
        self.items = items
        self.panel_id = f"pick-{next(panel_numbers)}"
        self.selected = 0

    def lines(self) -> list:
        marks = ["› " if i == self.selected else "  " for i in range(len(self.items))]
        return [mark + item for mark, item in zip(marks, self.items)]

    def on_key(self, key: str, text: str) -> None:
        key = LETTER_KEYS.get(text, "") if key == "rune" else key
        last = len(self.items) - 1
        moves = {"up": self.selected - 1, "down": self.selected + 1}
        moves.update(home=0, pageup=0, end=last, pagedown=last)
        if key in moves:
            self.selected = min(max(moves[key], 0), last)
            self.ext.render_panel(self.panel_id, TITLE, self.lines(), FOOTER)
        elif key == "esc":
            self.ext.close_panel(self.panel_id)
        elif key == "enter":
            self.ext.close_panel(self.panel_id)
            self.send_to_model(self.items[self.selected])

    def send_to_model(self, text: str) -> None:
        """Submit TEXT as the user's message; zot 0.1.62 and older cannot."""
        if self.ext.newer_host:
            self.ext.submit(text)
        else:
            note = f"Chosen: {text} (this zot cannot submit it: paste it yourself)"
            self.ext.notify("info", note)
