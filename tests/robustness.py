"""A reusable driver: hostile input for a running extension, and the proof
that it keeps working.

zot's side of the pipe carries whatever the model produced. `hostile_session`
sends a generated extension every kind of line that can arrive (malformed
JSON, wrong types, unknown frames, missing fields, invalid UTF-8, NUL, deep
nesting, ...) interleaved with requests, without waiting for answers, and
checks the three promises of docs/behaviour.md:

- every request with a string id is answered exactly once, with that id;
- stdout carries nothing but JSON frames;
- the extension keeps running and answering.

`pipeline` is the building block: it sends many lines from a writer thread
while the test reads, the way zot does with several requests in flight.
"""

from __future__ import annotations

import json
import queue
import re
import threading
import time
from dataclasses import dataclass, field

from flavours import uses_sdk
from host import ExtensionProcess, protocol

NAME, TOOL = "demo-ext", "demo_ext"
ANSWER = {
    "command_invoked": "command_response",
    "tool_call": "tool_result",
    "event_intercept": "event_intercept_response",
}
DEPTH = 5000  # zot's own JSON parser stops at 10000 levels


def line(frame: object) -> bytes:
    return protocol.encode(frame)


def deep(depth: int) -> str:
    """JSON text of `depth` nested arrays."""
    return "[" * depth + "]" * depth


def pipeline(ext: ExtensionProcess, lines: list[bytes], expect: dict[str, str], timeout=60.0):
    """Send `lines` without waiting; return {id: answer} for the ids in `expect`.

    `expect` maps each request id that must be answered to the answer type it
    needs. Fails on an answer to another id, a second answer, a wrong type, a
    line on stdout that is not a JSON object, or a missing answer. An answer
    with an empty id, to a request that had none, is let through where the
    extension is built on zot's Go SDK, which answers so (zot matches it to no
    request and drops it).
    """
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for chunk in lines:
                ext.send_raw(chunk)
        except BaseException as exc:  # noqa: BLE001 - reported by the reader
            errors.append(exc)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    answers: dict[str, dict] = {}
    deadline = time.monotonic() + timeout
    while len(answers) < len(expect):
        left = deadline - time.monotonic()
        missing = sorted(set(expect) - set(answers))[:5]
        progress = f"no answer to {missing}... ({len(answers)}/{len(expect)} answered)"
        assert left > 0, progress
        try:
            frame = ext.read_frame(timeout=left)
        except queue.Empty:
            raise AssertionError(progress) from None
        assert isinstance(frame.get("type"), str), frame
        if frame["type"] not in ANSWER.values():
            continue
        rid = frame.get("id")
        if rid == "" and uses_sdk(ext.ext_dir):
            continue
        assert rid in expect, f"an answer to an id never asked for: {frame}"
        assert rid not in answers, f"answered twice: {rid}"
        assert frame["type"] == expect[rid], (expect[rid], frame)
        answers[rid] = frame
    writer.join(timeout)
    assert not errors, errors
    return answers


def verdicts(ext: ExtensionProcess, commands: list[str], prefix: str = "g") -> list[bool]:
    """The guard's block for each bash command, all asked at once."""
    return [rule is not None for rule in refusals(ext, commands, prefix)]


def refusals(ext: ExtensionProcess, commands: list[str], prefix: str = "g") -> list:
    """The rule that refuses each bash command (None: allowed), all asked at once."""
    lines, expect = [], {}
    for i, command in enumerate(commands):
        rid = f"{prefix}{i}"
        expect[rid] = "event_intercept_response"
        frame = {"type": "event_intercept", "id": rid, "event": "tool_call"}
        frame.update(tool_id="toolu_1", tool_name="bash", tool_args={"command": command})
        lines.append(line(frame))
    answered = pipeline(ext, lines, expect)
    answers = [answered[f"{prefix}{i}"] for i in range(len(commands))]
    return [rule_of(a.get("reason", "")) if a.get("block") else None for a in answers]


def rule_of(reason: str) -> str:
    """The rule id in a refusal: refused by NAME (RULE): ..."""
    match = re.match(r"refused by [^(]*\(([^()]+)\): ", reason)
    return match[1] if match else ""


@dataclass
class Case:
    """One line sent, and what its answer must satisfy (None: no answer)."""

    label: str
    data: bytes
    rid: str | None = None
    kind: str | None = None  # the answer type, when answered
    check: object = None  # a function of the answer that returns True
    sent: dict = field(default_factory=dict)


def request(label, kind, rid, check=None, **fields) -> Case:
    frame = {"type": kind, "id": rid, **fields}
    return Case(label, line(frame), rid, ANSWER[kind], check)


def is_error(answer: dict) -> bool:
    return answer["is_error"] is True and answer["content"][0]["type"] == "text"


def invalid_arguments(answer: dict) -> bool:
    return is_error(answer) and answer["content"][0]["text"].startswith("invalid arguments:")


def echoes(text: str):
    return lambda answer: not answer.get("is_error") and answer["content"][0]["text"] == text


def allowed(answer: dict) -> bool:
    return answer.get("block", False) is False  # zot reads a missing block as false


def refused(answer: dict) -> bool:
    return answer["block"] is True and bool(answer["reason"])


def commanded(answer: dict) -> bool:
    """A command_response zot can show: an error, or a known action."""
    return bool(answer.get("error")) or answer.get("action") in ("prompt", "display", "noop")


def hostile_cases() -> list[Case]:
    """Every kind of line zot's side could send, with what must happen."""
    junk = [
        ("malformed JSON", b"this is not json\n"),
        ("truncated JSON", b'{"type": "tool_call", "id": "cut", "name": \n'),
        ("a JSON array", b'[{"type": "tool_call", "id": "arr"}]\n'),
        ("a JSON number", b"42\n"),
        ("a JSON string", b'"tool_call"\n'),
        ("JSON null", b"null\n"),
        ("an empty line", b"\n"),
        ("blanks only", b" \t  \n"),
        ("a lone CR", b"\r\n"),
        ("NUL bytes", b"\x00\x00\n"),
        ("NUL before a frame", b'\x00{"type":"no_such_frame"}\n'),
        ("invalid UTF-8 junk", b"\xff\xfe\xc3\x28 not utf-8\n"),
        ("an unknown frame type", line({"type": "no_such_frame", "id": "u1"})),
        ("a number as type", line({"type": 42, "id": "u2"})),
        ("a list as type", line({"type": ["tool_call"], "id": "u6", "name": TOOL})),
        ("an object as type", line({"type": {"tool_call": 1}, "id": "u7"})),
        ("a list as event", line({"type": "event", "event": ["turn_start"]})),
        ("no type", line({"id": "u3", "name": TOOL})),
        ("tool_cancel", line({"type": "tool_cancel", "id": "u4"})),
        ("one of our own frames", line({"type": "tool_result", "id": "u5", "content": []})),
        ("tool_call without id", line({"type": "tool_call", "name": TOOL, "args": {"text": "x"}})),
        ("command without id", line({"type": "command_invoked", "name": NAME, "args": "x"})),
        ("intercept without id", line({"type": "event_intercept", "event": "tool_call"})),
        ("a number as id", line({"type": "tool_call", "id": 7, "name": TOOL, "args": {}})),
        ("null as id", line({"type": "command_invoked", "id": None, "name": NAME})),
    ]
    cases = [Case(label, data) for label, data in junk]
    crlf = {"type": "tool_call", "id": "crlf", "name": TOOL, "args": {"text": "ok"}}
    cases.append(
        Case("CRLF line end", line(crlf)[:-1] + b"\r\n", "crlf", "tool_result", echoes("ok"))
    )
    cases += [
        request("tool_call without name", "tool_call", "noname", is_error, args={"text": "x"}),
        request("unregistered tool", "tool_call", "unknown", is_error, name="nope", args={}),
        request("a number as tool name", "tool_call", "numname", is_error, name=7, args={}),
        request("command without name", "command_invoked", "cmdnoname", commanded, args="x"),
        request("unregistered command", "command_invoked", "cmdunknown", commanded, name="nope"),
        request("command args a number", "command_invoked", "cmdnum", commanded, name=NAME, args=4),
        request("command args a list", "command_invoked", "cmdlist", commanded, name=NAME, args=[]),
        request("command args null", "command_invoked", "cmdnull", commanded, name=NAME, args=None),
        request("intercept without event", "event_intercept", "noevent", allowed),
        request("an unknown intercept", "event_intercept", "turn", allowed, event="turn_start"),
    ]
    for i, args in enumerate(
        [
            None,
            [],
            [1, 2],
            "text",
            42,
            True,
            {},
            {"text": None},
            {"text": 5},
            {"text": ""},
            {"text": ["a"]},
            {"text": {"a": 1}},
            {"text": "x", "uppercase": "yes"},
            {"text": "x", "uppercase": None},
            {"text": "x", "uppercase": [True]},
        ]
    ):
        cases.append(
            request(
                f"tool args {args!r}",
                "tool_call",
                f"bad{i}",
                invalid_arguments,
                name=TOOL,
                args=args,
            )
        )
    for i, (tool_name, tool_args) in enumerate(
        [
            ("bash", None),
            ("bash", []),
            ("bash", "rm -rf /"),
            ("bash", 42),
            ("bash", {}),
            ("bash", {"command": None}),
            ("bash", {"command": 42}),
            ("bash", {"command": ["rm"]}),
            ("bash", {"command": {"rm": "-rf"}}),
            (None, {"command": "rm -rf /"}),
            (42, {"command": "rm -rf /"}),
            (["bash"], {"command": "rm -rf /"}),
            ("write", {"path": "rm -rf /", "content": "rm -rf /"}),
            ("Bash", {"command": "rm -rf /"}),
        ]
    ):
        cases.append(
            request(
                f"intercept {tool_name!r} {tool_args!r}",
                "event_intercept",
                f"judge{i}",
                allowed,
                event="tool_call",
                tool_name=tool_name,
                tool_args=tool_args,
            )
        )
    texts = {
        "non-BMP": "😀 𝄞 \U0010ffff 日本",
        "NUL escaped": "a\x00b\x00",
        "controls": "\x01\x1f\x7f\u2028\u2029\ufeff",
        "quotes": "\"'`$(x)\\n\\\\ {{ x }} {% x %}",
        "a lone surrogate": "a\ud800b",
    }
    for i, (label, text) in enumerate(texts.items()):
        data = (
            json.dumps(
                {"type": "tool_call", "id": f"text{i}", "name": TOOL, "args": {"text": text}}
            ).encode()
            + b"\n"
        )
        check = {"a lone surrogate": is_error_or_echo, "NUL escaped": echoes_or_refuses_nul}
        check = check.get(label, echoes(text))
        cases.append(Case(f"text {label}", data, f"text{i}", "tool_result", check))
        # The same text after a command: answered too (the shell flavour
        # refuses NUL there as well).
        command = {"type": "command_invoked", "id": f"say{i}", "name": NAME, "args": text}
        cases.append(
            Case(f"command text {label}", line(command), f"say{i}", "command_response", commanded)
        )
    bad_utf8 = b'{"type":"tool_call","id":"utf8","name":"%s","args":{"text":"a\xff\xfe\xc3b"}}\n'
    cases.append(
        Case(
            "invalid UTF-8 in args",
            bad_utf8 % TOOL.encode(),
            "utf8",
            "tool_result",
            lambda a: a["content"][0]["text"][:1] == "a",
        )
    )
    nested = b'{"type":"tool_call","id":"deep","name":"%s","args":{"text":"x","d":%s}}\n'
    cases.append(
        Case(
            "deeply nested args",
            nested % (TOOL.encode(), deep(DEPTH).encode()),
            "deep",
            "tool_result",
            lambda a: True,
        )
    )
    guarded = (
        b'{"type":"event_intercept","id":"deepguard","event":"tool_call",'
        b'"tool_name":"bash","tool_args":{"command":"rm -rf /","d":%s}}\n'
    )
    cases.append(
        Case(
            "deeply nested tool_args",
            guarded % deep(DEPTH).encode(),
            "deepguard",
            "event_intercept_response",
            refused,
        )
    )
    deep_command = b'{"type":"command_invoked","id":"deepcmd","name":"%s","args":%s}\n'
    cases.append(
        Case(
            "deeply nested command args",
            deep_command % (NAME.encode(), deep(DEPTH).encode()),
            "deepcmd",
            "command_response",
            commanded,
        )
    )
    return cases


def echoes_or_refuses_nul(answer: dict) -> bool:
    """A bash variable cannot hold NUL: the shell flavour refuses such text."""
    text = answer["content"][0]["text"]
    return echoes("a\x00b\x00")(answer) or (invalid_arguments(answer) and "NUL" in text)


def is_error_or_echo(answer: dict) -> bool:
    """A lone surrogate: each language reads it its own way, but answers."""
    return isinstance(answer["content"][0]["text"], str)


# Requests with a field of a type zot never sends (a number as a tool's name,
# a list as a command's args): zot's Go SDK cannot decode them and answers
# nothing, where the runtimes answer each.
SDK_UNDECODABLE = {"numname", "cmdnum", "cmdlist", "judge10", "judge11", "deepcmd"}


def hostile_session(ext: ExtensionProcess) -> int:
    """Send every hostile case at once; check every answer. Returns the count."""
    cases = hostile_cases()
    unanswered = SDK_UNDECODABLE if uses_sdk(ext.ext_dir) else set()
    expect = {case.rid: case.kind for case in cases if case.rid and case.rid not in unanswered}
    answers = pipeline(ext, [case.data for case in cases], expect)
    wrong = [
        (case.label, answers[case.rid])
        for case in cases
        if case.rid in expect and case.check and not case.check(answers[case.rid])
    ]
    assert not wrong, wrong
    assert_keeps_working(ext)
    assert_stdout_is_frames(ext)
    return len(cases)


def assert_keeps_working(ext: ExtensionProcess) -> None:
    assert ext.proc.poll() is None, f"the extension exited: {ext.stderr()}"
    answer = ext.tool(TOOL, {"text": "still here"})
    assert answer["content"][0]["text"] == "still here"


def assert_stdout_is_frames(ext: ExtensionProcess) -> None:
    for raw in list(ext.raw_lines):
        assert raw.endswith(b"\n"), raw[:80]
        frame = json.loads(raw)
        assert isinstance(frame, dict) and isinstance(frame.get("type"), str), raw[:80]
