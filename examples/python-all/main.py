#!/usr/bin/env python3
# demo-ext: A zot extension
#
# A zot extension: zot starts this file and talks to it in JSON lines over
# stdin/stdout. The files at the top of this folder are yours: edit the
# handlers. The package in zot/ handles the protocol; copier update brings
# its fixes.
from __future__ import annotations

import ask
import audit
import conventions
import picker
from zot import Event, Extension, InvalidArguments, display, prompt
from zot.guard import check_tool_call, warn_if_rules_unusable

NAME = "demo-ext"
VERSION = "0.1.0"
COMMAND_HELP = "A zot extension"
TOOL_DESCRIPTION = "Echo the given text back, optionally in upper case."

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


# The capabilities in files of their own add their handlers.
ask.register(ext)
audit.register(ext)
conventions.register(ext)
picker.register(ext)


if __name__ == "__main__":
    ext.run()
