"""zot's extension protocol for main.py: from zot import Extension, display, ...

This package belongs to the template: `copier update` replaces it with the
template's newest version. runtime.py speaks the protocol, testing.py plays
zot in unit tests, and guard/ (with the guard capability) judges bash
commands.
"""

from .runtime import (
    Answer,
    AssistantMessageDecision,
    Event,
    Extension,
    HostInfo,
    InvalidArguments,
    ToolCallDecision,
    ToolResult,
    display,
    error,
    image_block,
    insert,
    markdown_block,
    prompt,
    run,
    text_block,
    tool_prompt,
    tool_result,
)

__all__ = [
    "Answer",
    "AssistantMessageDecision",
    "Event",
    "Extension",
    "HostInfo",
    "InvalidArguments",
    "ToolCallDecision",
    "ToolResult",
    "display",
    "error",
    "image_block",
    "insert",
    "markdown_block",
    "prompt",
    "run",
    "text_block",
    "tool_prompt",
    "tool_result",
]
