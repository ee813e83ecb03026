#!/usr/bin/env python3
# demo-ext: A zot extension
#
# A zot extension: zot starts this file and talks to it in JSON lines over
# stdin/stdout. This file is yours: edit the handlers below. The package in
# zot/ handles the protocol and the guard's rules (yours go in guard-policy.json);
# copier update brings its fixes.
from __future__ import annotations

import itertools
import json
import os
import time

from zot import (
    Answer,
    Event,
    Extension,
    InvalidArguments,
    ToolResult,
    display,
    markdown_block,
    prompt,
    tool_result,
)
from zot.guard import check_tool_call, warn_if_rules_unusable

NAME = "demo-ext"
VERSION = "0.1.0"
COMMAND_HELP = "A zot extension"
TOOL_DESCRIPTION = "Echo the given text back, optionally in upper case."
CONVENTIONS_FILE = "CONVENTIONS.md"

ext = Extension(NAME, VERSION)


@ext.command("demo-ext", COMMAND_HELP)
def run_command(args: str) -> dict:
    """Answer `/demo-ext ARGS`."""
    text = args.strip()
    if not text:
        # display shows a note in the chat without calling the model.
        return display("Usage: /demo-ext TEXT\n\nSends TEXT to the model.")
    # prompt submits the text as a new user message.
    return prompt(f"Answer briefly and concretely:\n\n{text}")


TOOL_SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The text to echo back."},
        "uppercase": {"type": "boolean", "description": "Return it in upper case."},
    },
    "required": ["text"],
}


@ext.tool("demo_ext", TOOL_DESCRIPTION, TOOL_SCHEMA)
def run_tool(args: dict, cancelled: Event) -> str:
    """Answer the tool call. ARGS fit TOOL_SCHEMA: the runtime answers a call
    that does not with an error for the model, and never calls this."""
    text = args["text"]
    if not text.strip():  # what the schema cannot say
        raise InvalidArguments('"text" must not be blank')
    # A long-running tool checks `if cancelled.is_set(): return ""` now and then
    # to stop early when cancelled: zot has given up on the call.
    return text.upper() if args.get("uppercase") else text


@ext.on("session_start", "turn_start", "tool_call", "turn_end", "assistant_message")
def record_event(frame: dict) -> None:
    """Append one JSON line per event to the audit log in zot's data_dir."""
    data_dir = ext.host.data_dir or ext.host.extension_dir or "."
    path = os.path.join(data_dir, f"{NAME}-events.jsonl")
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


@ext.intercept_tool_call
def guard(tool_name: object, tool_args: object) -> str | None:
    """Why a tool call must be refused, or None to let it run."""
    refusal = check_tool_call(tool_name, tool_args, ext.host.cwd)
    if refusal is None:
        return None
    message = refusal.message(NAME)
    # The model reads the reason; tell the user too, once zot has the refusal.
    ext.after_reply(ext.notify, "warn", message)
    return message


# Read the rules before zot asks; if they cannot be used, say so at once.
ext.on_hello(lambda host: warn_if_rules_unusable(NAME, ext))


# Panels are numbered in the order they open: pick-1, ask-2, ...
panel_numbers = itertools.count(1)
# Letters that act as keys in the panels.
LETTER_KEYS = {"k": "up", "j": "down", "q": "esc", "y": "yes", "n": "no"}


def key_name(key: str, text: str) -> str:
    """The key pressed in a panel (zot sends a letter as "rune" with its text)."""
    return LETTER_KEYS.get(text, "") if key == "rune" else key


PICK_HELP = "Pick a prompt from a list and send it to the model"
PICK_TITLE = "Pick a prompt"
PICK_FOOTER = "↑/↓ move · enter send · esc close"
PICKS = [
    "Explain how this project is organised.",
    "Review the uncommitted changes for bugs.",
    "Write tests for the code I changed last.",
    "List the TODO comments and suggest which to do first.",
]


class Picker:
    """One pick panel: the keys move the selection, enter sends the prompt."""

    def __init__(self) -> None:
        self.panel_id = f"pick-{next(panel_numbers)}"
        self.selected = 0

    def lines(self) -> list:
        marks = ["› " if i == self.selected else "  " for i in range(len(PICKS))]
        return [mark + item for mark, item in zip(marks, PICKS)]

    def on_key(self, key: str, text: str) -> None:
        key, last = key_name(key, text), len(PICKS) - 1
        moves = {"up": self.selected - 1, "down": self.selected + 1}
        moves.update(home=0, pageup=0, end=last, pagedown=last)
        if key in moves:
            self.selected = min(max(moves[key], 0), last)
            ext.render_panel(self.panel_id, PICK_TITLE, self.lines(), PICK_FOOTER)
        elif key == "esc":
            ext.close_panel(self.panel_id)
        elif key == "enter":
            ext.close_panel(self.panel_id)
            send_to_model(PICKS[self.selected])


@ext.command("demo-ext-pick", PICK_HELP, opens_panel=True)
def open_picker(args: str) -> dict:
    """Answer `/demo-ext-pick` (whatever follows it) with the pick panel."""
    picker = Picker()
    lines = picker.lines()
    return ext.panel_answer(
        picker.panel_id, PICK_TITLE, lines, PICK_FOOTER, on_key=picker.on_key
    )


def send_to_model(text: str) -> None:
    """Submit TEXT as the user's message; zot 0.1.62 and older cannot."""
    if ext.newer_host:
        ext.submit(text)
    else:
        note = f"Chosen: {text} (this zot cannot submit it: paste it yourself)"
        ext.notify("info", note)


ASK_DESCRIPTION = (
    "Ask the user to approve an action before you take it."
    " Returns whether they approved."
)
ASK_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "description": "What you want to do, in one sentence.",
        }
    },
    "required": ["action"],
}
ASK_OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "action": {"type": "string"}},
    "required": ["approved", "action"],
}
ASK_TITLE = "Approve?"
ASK_FOOTER = "↑/↓ move · enter choose · y/n · esc decline"
OLD_HOST = "this zot cannot ask the user from a tool (it needs a newer zot)"
DECLINED_ADVICE = "Do not do it; ask the user what to do instead."


class Approval:
    """One approval panel: the keys choose, enter (or y, n, esc) answers."""

    def __init__(self, action: str) -> None:
        self.panel_id = f"ask-{next(panel_numbers)}"
        self.action = action
        self.approve = True  # which line is selected: Approve or Decline
        self.answer = Answer()

    def lines(self) -> list:
        marks = ["› ", "  "] if self.approve else ["  ", "› "]
        return [self.action, "", marks[0] + "Approve", marks[1] + "Decline"]

    def on_key(self, key: str, text: str) -> None:
        key = key_name(key, text)
        if key in ("up", "down"):
            self.approve = key == "up"
            ext.render_panel(self.panel_id, ASK_TITLE, self.lines(), ASK_FOOTER)
        elif key in ("enter", "yes", "no", "esc"):
            self.answer.give(self.approve if key == "enter" else key == "yes")

    def on_close(self) -> None:
        """zot closed the panel: that declines."""
        self.answer.give(False)


@ext.tool(
    "demo_ext_confirm",
    ASK_DESCRIPTION,
    ASK_SCHEMA,
    interactive=True,
    output_schema=ASK_OUTPUT_SCHEMA,
)
def ask_user(args: dict, cancelled: Event) -> ToolResult:
    """Show the action in a panel and wait for the user's answer."""
    action = args["action"]
    if not action.strip():  # what the schema cannot say
        raise InvalidArguments('"action" must not be blank')
    if not ext.newer_host:
        return tool_result(f"{OLD_HOST}: ask in the chat instead", is_error=True)
    approval = Approval(action)
    ext.notify("info", f"{NAME} is waiting for your answer")
    ext.open_panel(
        approval.panel_id,
        ASK_TITLE,
        approval.lines(),
        ASK_FOOTER,
        on_key=approval.on_key,
        on_close=approval.on_close,
    )
    # The keys arrive meanwhile; None when zot cancels the call (it then gets
    # no result).
    approved = approval.answer.wait(cancelled)
    ext.close_panel(approval.panel_id)  # unless zot closed it
    ext.clear_notes()
    if approved:
        text = f"**Approved** by the user: {action}"
    else:
        text = f"**Declined** by the user: {action}. {DECLINED_ADVICE}"
    verdict = {"approved": bool(approved), "action": action}
    return tool_result(markdown_block(text), structured_content=verdict)


MAX_PROMPT = 1 << 20  # zot takes a system prompt of at most 1 MiB (UTF-8)


@ext.intercept_before_agent_start
def add_conventions(frame: dict) -> str | None:
    """The system prompt with the project's CONVENTIONS.md added, or None."""
    folder = frame.get("cwd")
    if not isinstance(folder, str) or not folder:
        folder = ext.host.cwd  # the project zot started in
    if not isinstance(folder, str) or not folder:
        return None
    path = os.path.join(folder, CONVENTIONS_FILE)
    try:
        if not os.path.isfile(path):  # not a folder, a pipe...: do not hang
            return None
        with open(path, "rb") as file:
            text = file.read(MAX_PROMPT).decode("utf-8", "replace")
    except OSError as err:
        ext.log(f"could not read {path}: {err}")
        return None
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


if __name__ == "__main__":
    ext.run()
