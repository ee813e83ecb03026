"""The approval tool: demo_ext_confirm shows the model's action in a panel and
answers with the user's choice. main.py adds it to the extension (register)."""

from __future__ import annotations

import itertools

from zot import (
    Answer,
    Event,
    Extension,
    InvalidArguments,
    ToolResult,
    markdown_block,
    tool_result,
)

TOOL = "demo_ext_confirm"
DESCRIPTION = (
    "Ask the user to approve an action before you take it."
    " Returns whether they approved."
)
SCHEMA = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "description": "What you want to do, in one sentence.",
        }
    },
    "required": ["action"],
}
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "action": {"type": "string"}},
    "required": ["approved", "action"],
}
TITLE = "Approve?"
FOOTER = "↑/↓ move · enter choose · y/n · esc decline"
OLD_HOST = "this zot cannot ask the user from a tool (it needs a newer zot)"
DECLINED_ADVICE = "Do not do it; ask the user what to do instead."
# Letters that act as keys (zot sends a letter as the key "rune" with its text).
LETTER_KEYS = {"k": "up", "j": "down", "q": "esc", "y": "yes", "n": "no"}
panel_numbers = itertools.count(1)  # the panels are ask-1, ask-2, ...


def register(ext: Extension) -> None:
    """Add the tool TOOL to EXT."""

    @ext.tool(TOOL, DESCRIPTION, SCHEMA, interactive=True, output_schema=OUTPUT_SCHEMA)
    def ask_user(args: dict, cancelled: Event) -> ToolResult:
        """Show the action in a panel and wait for the user's answer."""
        action = args["action"]
        if not action.strip():  # what the schema cannot say
            raise InvalidArguments('"action" must not be blank')
        if not ext.newer_host:
            return tool_result(f"{OLD_HOST}: ask in the chat instead", is_error=True)
        approval = Approval(ext, action)
        ext.notify("info", f"{ext.name} is waiting for your answer")
        ext.open_panel(
            approval.panel_id,
            TITLE,
            approval.lines(),
            FOOTER,
            on_key=approval.on_key,
            on_close=approval.on_close,
        )
        # The keys arrive meanwhile; None when zot cancels the call (it then
        # gets no result).
        approved = approval.answer.wait(cancelled)
        ext.close_panel(approval.panel_id)  # unless zot closed it
        ext.clear_notes()
        if approved:
            text = f"**Approved** by the user: {action}"
        else:
            text = f"**Declined** by the user: {action}. {DECLINED_ADVICE}"
        verdict = {"approved": bool(approved), "action": action}
        return tool_result(markdown_block(text), structured_content=verdict)


class Approval:
    """One approval panel: the keys choose, enter (or y, n, esc) answers."""

    def __init__(self, ext: Extension, action: str) -> None:
        self.ext = ext
        self.panel_id = f"ask-{next(panel_numbers)}"
        self.action = action
        self.approve = True  # which line is selected: Approve or Decline
        self.answer = Answer()

    def lines(self) -> list:
        marks = ["› ", "  "] if self.approve else ["  ", "› "]
        return [self.action, "", marks[0] + "Approve", marks[1] + "Decline"]

    def on_key(self, key: str, text: str) -> None:
        key = LETTER_KEYS.get(text, "") if key == "rune" else key
        if key in ("up", "down"):
            self.approve = key == "up"
            self.ext.render_panel(self.panel_id, TITLE, self.lines(), FOOTER)
        elif key in ("enter", "yes", "no", "esc"):
            self.answer.give(self.approve if key == "enter" else key == "yes")

    def on_close(self) -> None:
        """zot closed the panel: that declines."""
        self.answer.give(False)
