"""zot's side of the protocol: its limits, the frames it sends, and how it
judges the extension's answers."""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import math
import re
import signal

HELLO_TIMEOUT = 3.0  # zot itself waits for hello forever
READY_IDLE = 0.25  # zot's watchdog: auto-ready after 250 ms without a frame
READY_GRACE = 3.0  # zot waits at most 3 s for ready
SHUTDOWN_GRACE = 2.0  # then SIGTERM, 1 s later SIGKILL
MAX_LINE = 4 * 1024 * 1024  # a longer stdout line disconnects the extension
# request type -> (the answer it needs, zot's timeout in seconds)
REQUESTS = {
    "command_invoked": ("command_response", 30.0),
    "tool_call": ("tool_result", 60.0),
    "event_intercept": ("event_intercept_response", 5.0),
}
ANSWER_TYPES = [answer for answer, _ in REQUESTS.values()]
HELLO_ACK = {"type": "hello_ack", "protocol_version": 1, "capabilities": ["call_tool"]}
HELLO_ACK.update(zot_version="smoke-test", provider="anthropic")
HELLO_ACK.update(model="claude-sonnet-4-5")  # cwd and the folders come per session
# zot 0.1.62 and older: no capabilities in hello_ack, no tool_cancel, no
# spontaneous open_panel, submit or clear_notes, no before_agent_start.
OLD_HELLO_ACK = {
    key: value for key, value in HELLO_ACK.items() if key != "capabilities"
}
OLD_HELLO_ACK["zot_version"] = "0.1.62"
# Frames unknown to older hosts.
NEWER_FRAMES = ["open_panel", "submit", "clear_notes", "call_tool", "call_tool_cancel"]
MAX_SYSTEM_PROMPT = 1024 * 1024  # zot refuses a longer before_agent_start prompt
# The keys zot sends to a panel (a rune also carries its text).
PANEL_KEYS = [
    "up",
    "down",
    "left",
    "right",
    "enter",
    "esc",
    "tab",
    "pageup",
    "pagedown",
    "home",
    "end",
    "backspace",
    "delete",
]

BUILTIN_COMMANDS = [
    "help",
    "login",
    "logout",
    "model",
    "sessions",
    "session",
    "jump",
    "compact",
    "study",
    "btw",
    "jail",
    "unjail",
    "skills",
    "reload-ext",
    "yolo",
    "telegram",
    "clear",
    "exit",
]
BUILTIN_TOOLS = [
    "read",
    "write",
    "edit",
    "bash",
    "skill",
    "glob",
    "telegram_send_image",
    "telegram_send_file",
]
EVENTS = [
    "session_start",
    "session_end",
    "user_prompt_submit",
    "turn_start",
    "turn_end",
    "tool_call",
    "tool_result",
    "tool_confirmation_requested",
    "permission_decision",
    "assistant_message",
    "pre_compact",
    "post_compact",
    "subagent_start",
    "subagent_stop",
]
INTERCEPTS = ["tool_call", "turn_start", "assistant_message", "before_agent_start"]
ACTIONS = ["prompt", "insert", "display", "noop", "", "tool_prompt", "open_panel"]
# Frames zot knows that the smoke test only notes (with --verbose).
NOTED = ["submit_slash"]
# register_tool's options with a fixed set of values ("" is the default).
EXPOSURES = ["direct", "codemode", "deferred", "model-only"]
REPLAYS = ["never", "safe", "idempotent", "reconcile"]
# call_tool: zot's refusals (error results, in the order it checks them) and
# its limits.
NOT_OPTED_IN = "extension did not opt in to call_tool"
UNKNOWN_PARENT = "unknown or expired parent tool call"
PARENT_REQUIRED = "parent_id is required while an extension tool is active"
BAD_CALL = "call_tool requires a name and JSON object args"
MAX_TOOL_RESULT = 256 * 1024  # zot cuts a longer result of its tools
# What call_tool answers on zot 0.1.62, which has none: every runtime here,
# and zot's Go SDK in its own words.
TOO_OLD = ["this zot is too old to run its tools for extensions"]
TOO_OLD.append("host does not support call_tool")
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

SAMPLE_ARGS = "smoke test"
SYSTEM_PROMPT = "You are zot, a coding agent."  # sent with before_agent_start
# A value of the wrong type for each JSON type, to build invalid arguments.
WRONG_VALUES = {"string": 12345, "integer": "one", "number": "one", "boolean": "yes"}
WRONG_VALUES.update(array="not a list", object="not an object")
# Set in the extension's environment, and so inherited by its children.
MARK = "SMOKE_TEST_RUN"
STDERR_LINES = 20  # lines of the extension's stderr shown when something fails
MAX_BAD_LINES = 5  # non-JSON stdout lines reported one by one


class StartError(Exception):
    """The extension cannot be started at all (exit status 2)."""


class SessionOver(Exception):
    """The extension died or was disconnected: the later checks cannot run."""


def short(value: object, limit: int = 60) -> str:
    """A value on one line, cut to about `limit` characters."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        value = json.dumps(value)
    text = " ".join(value.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def q(value: object, limit: int = 60) -> str:
    """A value quoted for a report line."""
    text = short(value, limit)
    return f'"{text}"' if isinstance(value, (str, bytes)) else text


def describe_status(code: int) -> str:
    """A process's exit status in words."""
    if code == 127:
        return "exit status 127 (a command was not found, e.g. the #! interpreter)"
    if code >= 0:
        return f"exit status {code}"
    try:
        return f"signal {signal.Signals(-code).name}"
    except ValueError:
        return f"signal {-code}"


def encode(frame: object) -> bytes:
    """A frame as zot writes it (Go's encoding/json): one line of compact
    JSON, text beyond ASCII as UTF-8, <, >, &, U+2028 and U+2029 escaped."""
    text = json.dumps(frame, ensure_ascii=False, separators=(",", ":"))
    for char in "<>&\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    # A lone surrogate (no text zot has) as the escape ensure_ascii gives it.
    return text.encode("utf-8", "backslashreplace") + b"\n"


def parse_frame(line: bytes) -> tuple[dict | None, str]:
    """Parse a stdout line as zot does: (frame, "") or (None, the problem)."""

    def reject(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    try:
        frame = json.loads(line.decode("utf-8", "replace"), parse_constant=reject)
    except ValueError as exc:
        return None, f"not JSON ({getattr(exc, 'msg', exc)})"
    if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
        return None, "not a JSON object with a string type"
    return frame, ""


# --- sample data ----------------------------------------------------------------


def schema_parts(schema: object) -> tuple[dict, list]:
    """(properties, required names) of a tool's schema, tolerating junk."""
    schema = schema if isinstance(schema, dict) else {}
    props, required = schema.get("properties"), schema.get("required")
    props = props if isinstance(props, dict) else {}
    required = required if isinstance(required, list) else []
    return props, [name for name in required if isinstance(name, str)]


def json_type(prop: object) -> str:
    """The JSON type a property's schema asks for ("" if it does not say)."""
    kind = prop.get("type") if isinstance(prop, dict) else None
    if isinstance(kind, list):  # e.g. ["string", "null"]
        kind = next((k for k in kind if k != "null"), None)
    return kind if isinstance(kind, str) else ""


def sample_value(prop: object) -> object:
    """A valid value for a property: its first example, its default, else one
    chosen by its enum or its JSON type."""
    prop = prop if isinstance(prop, dict) else {}
    if isinstance(prop.get("examples"), list) and prop["examples"]:
        return prop["examples"][0]
    if "default" in prop:
        return prop["default"]
    if isinstance(prop.get("enum"), list) and prop["enum"]:
        return prop["enum"][0]
    low, kind = prop.get("minimum"), json_type(prop)
    if not isinstance(low, (int, float)) or isinstance(low, bool):
        low = None
    if kind == "integer":
        return 1 if low is None else max(1, math.ceil(low))
    if kind == "number":
        return 1.5 if low is None else max(1.5, low)
    samples = {"boolean": True, "array": [], "object": {}, "null": None}
    return samples.get(kind, SAMPLE_ARGS)


def sample_args(schema: object) -> dict:
    """The schema's first example of whole arguments, or else every required
    property with a sample value and none of the optional ones."""
    examples = schema.get("examples") if isinstance(schema, dict) else None
    if isinstance(examples, list) and examples and isinstance(examples[0], dict):
        return examples[0]
    props, required = schema_parts(schema)
    return {name: sample_value(props.get(name)) for name in required}


def invalid_args(schema: object) -> tuple[dict, str] | None:
    """Arguments the schema forbids and why, or None if it allows anything."""
    props, required = schema_parts(schema)
    if required:
        return {}, "required properties missing"
    for name, prop in props.items():
        kind = json_type(prop)
        if kind in WRONG_VALUES:
            return {name: WRONG_VALUES[kind]}, f"{name} of the wrong type"
    return None


# The events zot 0.1.62 and older send; the rest only newer zot sends.
OLD_EVENTS = ["session_start", "turn_start", "tool_call", "turn_end"]
OLD_EVENTS.append("assistant_message")
event_numbers = itertools.count(1)  # newer zot numbers its events: sequence


def event_frame(event: str, project_dir: str, old: bool = False) -> dict:
    """An event frame with the fields zot sends for that event: newer zot adds
    session_id, cwd and sequence to each; zot 0.1.62 sends only the fields of
    its time (step, stop, error, tool_id, tool_name, tool_args, text)."""
    call = {"step": 1, "tool_id": "toolu_smoke", "tool_name": "bash"}
    call["tool_args"] = {"command": "ls -la"}
    result = {"content": [{"type": "text", "text": "total 0"}], "is_error": False}
    fields = {
        "session_end": {"reason": "exit"},
        "user_prompt_submit": {"text": "Say hello."},
        "turn_start": {"step": 1},
        "turn_end": {"step": 1, "stop": "end_turn"},
        "tool_call": call,
        "tool_result": {**call, "result": {**result, "truncated": False}},
        "tool_confirmation_requested": call,
        "permission_decision": {**call, "decision": "allow", "source": "user"},
        "assistant_message": {"step": 1, "text": "Hello from the smoke test."},
        "pre_compact": {"reason": "manual", "message_count": 12},
        "post_compact": {"reason": "manual", "message_count": 3},
        "subagent_start": {"agent_id": "smoke-agent", "text": "Look around."},
        "subagent_stop": {"agent_id": "smoke-agent", "stop": "end_turn"},
    }.get(event, {})
    if event == "tool_result":
        fields["executed"] = True
    frame = {"type": "event", "event": event, **fields}
    if not old:
        frame.update(session_id="smoke", cwd=project_dir)
        frame["sequence"] = next(event_numbers)
    return frame


# --- judging answers ------------------------------------------------------------
# zot parses every frame into a typed Go struct: a field of the wrong type makes
# it drop the whole frame, so the request looks unanswered.


def check_command_response(frame: dict) -> tuple[list[str], str]:
    """Problems with a command_response, and a one-line summary of it."""
    keys = ("action", "prompt", "insert", "display", "error", "tool_name")
    bad = [key for key in keys if not isinstance(frame.get(key, ""), str)]
    if bad:
        return [f"{', '.join(bad)} must be strings (zot drops the frame)"], ""
    action = frame.get("action", "")
    if frame.get("error"):
        return [], f"error {q(frame['error'])}"
    if action not in ACTIONS:
        return [f"unknown action {q(action)}"], ""
    if action in ("prompt", "insert", "display"):
        if action not in frame:
            return [f"action {action} needs a string {action} field"], ""
        return [], f"{action} {q(frame[action])}"
    if action == "tool_prompt" and not (frame.get("tool_name") and frame.get("prompt")):
        return ["action tool_prompt needs a tool_name and a prompt"], ""
    if action == "open_panel":
        panel = frame.get("open_panel")
        problems = panel_problems(panel)
        return problems, "" if problems else f"opens panel {q(panel['id'])}"
    if not isinstance(frame.get("tool_args", {}), dict):
        return ["tool_args must be a JSON object"], ""
    return [], f"action {action or '(empty)'}"


def panel_problems(panel: object) -> list[str]:
    """What is wrong with a panel (id, title, lines, footer) zot is to show."""
    if not isinstance(panel, dict):
        return [f"a panel must be an object with an id: {q(panel)}"]
    problems = []
    if not isinstance(panel.get("id"), str) or not panel["id"]:
        problems.append("a panel needs an id (a non-empty string)")
    for key in ("title", "footer"):
        if not isinstance(panel.get(key, ""), str):
            problems.append(f"the panel's {key} must be a string")
    lines = panel.get("lines", [])
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        problems.append("the panel's lines must be a list of strings")
    return problems


def check_tool_result(frame: dict) -> tuple[list[str], list[str], bool, str]:
    """Problems and warnings for a tool_result, its is_error and its text."""
    problems, warnings, texts = [], [], []
    is_error, content = frame.get("is_error", False), frame.get("content") or []
    if not isinstance(is_error, bool):
        problems.append("is_error must be a boolean")
    if not isinstance(content, list):
        problems.append("content must be a list of blocks")
        content = []
    for i, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "image" and isinstance(block.get("mime_type"), str):
            data = block.get("data")
            try:
                base64.b64decode(data if isinstance(data, str) else "-", validate=True)
            except (binascii.Error, ValueError):
                problems.append(f"content[{i}]: the image data is not base64")
        else:
            problems.append(f"content[{i}] is not a text or image block: {q(block)}")
    activate = frame.get("activate_tools", [])
    if not isinstance(activate, list) or not all(isinstance(n, str) for n in activate):
        problems.append("activate_tools must be a list of tool names")
    if not problems and not any(texts) and len(texts) == len(content):
        warnings.append('no content: zot shows "(extension returned no content)"')
    return problems, warnings, is_error is True, "\n".join(texts)


def check_intercept_response(frame: dict) -> tuple[list[str], bool, str]:
    """Problems with an event_intercept_response, its block and its reason."""
    block, reason = frame.get("block", False), frame.get("reason", "")
    if not isinstance(block, bool) or not isinstance(reason, str):
        return ["block must be a boolean, reason a string (zot drops it)"], False, ""
    if not isinstance(frame.get("modified_args", {}), dict):
        return ["modified_args must be a JSON object"], block, reason
    if not isinstance(frame.get("replace_text", ""), str):
        return ["replace_text must be a string"], block, reason
    prompt = frame.get("system_prompt", "")
    if not isinstance(prompt, str):
        return ["system_prompt must be a string"], block, reason
    if len(prompt.encode("utf-8", "replace")) > MAX_SYSTEM_PROMPT:
        return ["system_prompt is over 1 MiB (zot keeps the old one)"], block, reason
    return [], block, reason


def too_old(text: str) -> bool:
    """Whether TEXT says zot is too old to run its tools (TOO_OLD)."""
    return any(words in text for words in TOO_OLD)


def answer_problem(answer: object) -> str:
    """What is wrong with an answer of one of zot's tools in smoke.json's
    "zot_tools": a text, or {"text" or "content", "is_error", "truncated"}."""
    if isinstance(answer, str):
        return ""
    if not isinstance(answer, dict):
        return "must be a text or an object"
    unknown = sorted(set(answer) - {"text", "content", "is_error", "truncated"})
    if unknown:
        return f"unknown key {q(unknown[0])} (text, content, is_error, truncated)"
    if not isinstance(answer.get("text", ""), str):
        return "text must be a string"
    if not isinstance(answer.get("content", []), list):
        return "content must be a list of blocks"
    flags = (answer.get("is_error", False), answer.get("truncated", False))
    if not all(isinstance(flag, bool) for flag in flags):
        return "is_error and truncated must be true or false"
    return ""


def tool_answer(answer: object) -> dict:
    """The fields of zot's tool_result for an answer of smoke.json's "zot_tools"."""
    if isinstance(answer, str):
        answer = {"text": answer}
    text, truncated = answer.get("text", ""), answer.get("truncated", False)
    if len(text.encode()) > MAX_TOOL_RESULT:  # zot cuts it, and says so
        text = text.encode()[:MAX_TOOL_RESULT].decode(errors="ignore")
        truncated = True
    content = answer.get("content") or [{"type": "text", "text": text}]
    fields = {"content": content, "is_error": answer.get("is_error", False)}
    return {**fields, **({"truncated": True} if truncated else {})}


def hello_ack(project_dir: str, ext_dir: str, data_dir: str, old: bool = False) -> dict:
    """zot's answer to hello: its version and model, and the three folders."""
    ack = OLD_HELLO_ACK if old else HELLO_ACK
    return {**ack, "cwd": project_dir, "extension_dir": ext_dir, "data_dir": data_dir}
