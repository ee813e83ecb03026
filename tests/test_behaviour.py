"""Drive each generated extension directly and check what it answers."""

from __future__ import annotations

import json
import time

import pytest
from conftest import (
    CAPABILITIES,
    COMBINATIONS,
    HANDLER,
    LANGUAGES,
    NO_PROCESS,
    SDK_CAPABILITIES,
    VARIANTS,
    build,
    combo_id,
    run,
    slow_tool,
)
from host import ExtensionProcess
from robustness import allowed

NAME, TOOL = "demo-ext", "demo_ext"
PICK, ASK = "demo-ext-pick", "demo_ext_confirm"  # panel_command and ask_tool
MAX_LINE = 4 * 1024 * 1024  # zot's limit for one JSON line


@pytest.fixture(params=LANGUAGES)
def language(request) -> str:
    return request.param


@pytest.fixture
def ext(projects, language, tmp_path):
    """A running extension with every capability, past its handshake."""
    with ExtensionProcess(projects.get(language, CAPABILITIES), data_dir=tmp_path) as proc:
        proc.handshake()
        yield proc


# zot's Go SDK answers an unknown tool in its own words and leaves out false
# fields (zot reads a missing is_error or block as false).
UNKNOWN_TOOL = {"go-sdk": 'no handler for tool "not_registered"'}


def is_error(reply: dict) -> bool:
    return reply.get("is_error", False)


def hello_capabilities(capabilities: list[str], language: str) -> list[str]:
    """What hello announces for the chosen capabilities, in its order."""
    if language == "go-sdk":
        return SDK_CAPABILITIES
    uses = {
        "commands": {"commands", "panel"},
        "tools": {"tools", "ask"},
        "events": {"events", "guard", "prompt"},
        "panels": {"panel", "ask"},
        "tool_cancel": {"tools", "ask"},
    }
    if language == "go":  # any command may answer with a panel
        uses["panels"] = {"commands", "panel", "ask"}
    # call_tool, the opt-in zot requires before it runs its tools for an
    # extension, always: a handler of any kind may call them.
    return [name for name, chosen in uses.items() if chosen & set(capabilities)] + ["call_tool"]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("capabilities", [c for c in COMBINATIONS if c != NO_PROCESS], ids=combo_id)
def test_registers_exactly_the_chosen_capabilities(projects, language, capabilities):
    with ExtensionProcess(projects.get(language, capabilities)) as proc:
        hello, frames = proc.handshake()
        assert hello["type"] == "hello" and hello["name"] == NAME
        assert hello["capabilities"] == hello_capabilities(capabilities, language)
        assert [f["type"] for f in frames].count("ready") == 1
        commands = [f["name"] for f in frames if f["type"] == "register_command"]
        assert commands == [NAME] * ("commands" in capabilities) + [PICK] * (
            "panel" in capabilities
        )
        tools = {f["name"]: f for f in frames if f["type"] == "register_tool"}
        assert list(tools) == [TOOL] * ("tools" in capabilities) + [ASK] * ("ask" in capabilities)
        if "tools" in capabilities:
            assert tools[TOOL]["schema"]["type"] == "object"
            assert tools[TOOL]["schema"]["required"] == ["text"]
            assert "interactive" not in tools[TOOL] and "output_schema" not in tools[TOOL]
        if "ask" in capabilities:
            assert tools[ASK]["interactive"] is True
            assert tools[ASK]["schema"]["required"] == ["action"]
            assert tools[ASK]["output_schema"]["required"] == ["approved", "action"]
        subscribes = [f for f in frames if f["type"] == "subscribe"]
        wants_subscribe = {"events", "guard", "prompt"} & set(capabilities)
        assert len(subscribes) == (1 if wants_subscribe else 0)
        if wants_subscribe:
            expected_events = (
                ["session_start", "turn_start", "tool_call", "turn_end", "assistant_message"]
                if "events" in capabilities
                else []
            )
            assert subscribes[0].get("events", []) == expected_events
            intercept = ["tool_call"] * ("guard" in capabilities) + ["before_agent_start"] * (
                "prompt" in capabilities
            )
            assert sorted(subscribes[0].get("intercept", [])) == sorted(intercept)
        assert proc.shutdown() == 0


def test_command_prompts_with_its_arguments_and_shows_usage_without(ext):
    reply = ext.command(NAME, "  why is the sky blue?  ")
    assert reply["type"] == "command_response"
    assert reply["action"] == "prompt"
    assert "why is the sky blue?" in reply["prompt"]
    usage = ext.command(NAME, "   ")
    assert usage["action"] == "display"
    assert usage["display"].startswith(f"Usage: /{NAME}")
    unknown = ext.command("no-such-command", "x")
    assert unknown.get("error")


def test_tool_echoes_valid_arguments(ext):
    reply = ext.tool(TOOL, {"text": 'héllo 😀 "q" \\ $(x)'})
    assert {"is_error": False, **reply} == {
        "type": "tool_result",
        "id": reply["id"],
        "content": [{"type": "text", "text": 'héllo 😀 "q" \\ $(x)'}],
        "is_error": False,
    }
    upper = ext.tool(TOOL, {"text": "abc", "uppercase": True, "extra": 1})
    assert upper["content"][0]["text"] == "ABC" and is_error(upper) is False


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        ({}, '"text" is required'),
        ({"text": ""}, '"text" must not be blank'),
        ({"text": 42}, '"text" must be a string'),
        ({"text": "x", "uppercase": "yes"}, '"uppercase" must be true or false'),
        ([1, 2], "the arguments must be an object"),
        ("text", "the arguments must be an object"),
        (None, "the arguments must be an object"),
    ],
    ids=["empty", "blank-text", "number-text", "string-flag", "array", "string", "null"],
)
def test_tool_refuses_bad_arguments_with_a_helpful_error(ext, args, hint):
    reply = ext.tool(TOOL, args)
    assert reply["is_error"] is True
    text = reply["content"][0]["text"]
    assert text.startswith("invalid arguments:") and hint in text


def test_unknown_tool_is_an_error_result(ext, language):
    reply = ext.tool("not_registered", {"text": "x"})
    assert reply["is_error"] is True
    assert reply["content"][0]["text"] == UNKNOWN_TOOL.get(language, "unknown tool: not_registered")


def test_events_are_appended_to_the_audit_log(ext, tmp_path):
    ext.send({"type": "event", "event": "turn_start", "step": 1})
    ext.send(
        {"type": "event", "event": "tool_call", "tool_name": "bash", "tool_args": {"command": "ls"}}
    )
    ext.tool(TOOL, {"text": "sync"})  # replies come after both events were read
    log = tmp_path / f"{NAME}-events.jsonl"
    deadline = time.monotonic() + 2
    while len(log.read_text().splitlines() if log.exists() else []) < 2:
        assert time.monotonic() < deadline, "audit log lines missing"
        time.sleep(0.01)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["event"] for line in lines] == ["turn_start", "tool_call"]
    assert lines[0]["step"] == 1 and lines[1]["tool_args"] == {"command": "ls"}
    assert all(line["received_at"][:2] == "20" for line in lines)
    assert "turn_start" in ext.stderr()


def test_guard_refuses_with_a_reason_naming_the_extension(ext):
    """Every verdict of guard-cases.json: tests/test_robustness.py."""
    reply = ext.intercept("bash", {"command": "ls\nsudo rm -rf /"})
    assert reply["type"] == "event_intercept_response"
    assert reply["block"] is True
    assert reply["reason"].startswith(f"refused by {NAME} (delete-outside-project): ")
    assert ". Instead, " in reply["reason"]
    assert allowed(ext.intercept("bash", {"command": "ls -la"}))


def test_stdout_carries_only_json_frames(ext):
    ext.command(NAME, "x")
    ext.tool(TOOL, {"text": "x"})
    ext.intercept("bash", {"command": "ls"})
    ext.send_raw(b"garbage\n")
    assert ext.shutdown() == 0
    for line in ext.raw_lines:
        frame = json.loads(line)
        assert isinstance(frame, dict) and isinstance(frame["type"], str)


def test_shutdown_acks_and_exits_zero(ext):
    ext.send({"type": "shutdown"})
    assert ext.read_frame()["type"] == "shutdown_ack"
    ext.close_stdin()
    assert ext.wait(2) == 0
    assert not ext.group_alive()


def test_end_of_input_exits_zero(ext):
    ext.close_stdin()
    assert ext.wait(2) == 0
    assert not ext.group_alive()


@pytest.mark.parametrize("size", [1024 * 1024, 3 * 1024 * 1024], ids=["1MiB", "3MiB"])
def test_large_frames_round_trip(ext, size):
    """A tool_call line of exactly `size` bytes, its newline included."""
    frame = {"type": "tool_call", "id": "big", "name": TOOL, "args": {"text": ""}}
    text = "x" * (size - len(json.dumps(frame).encode()) - 1)
    line = json.dumps({**frame, "args": {"text": text}}).encode() + b"\n"
    assert len(line) == size
    ext.send_raw(line)
    reply = ext.read_reply(timeout=30)
    assert reply["id"] == "big" and is_error(reply) is False
    assert reply["content"][0]["text"] == text
    assert ext.tool(TOOL, {"text": "after"})["content"][0]["text"] == "after"


def test_a_request_of_the_longest_line_zot_writes_is_read(ext):
    """An intercept line of 4 MiB - 1 bytes: its (short) answer comes back."""
    frame = {"type": "event_intercept", "id": "big", "event": "tool_call"}
    frame.update(tool_name="bash", tool_args={"command": ""})
    command = "x" * (MAX_LINE - 1 - len(json.dumps(frame).encode()) - 1)
    line = json.dumps({**frame, "tool_args": {"command": command}}).encode() + b"\n"
    assert len(line) == MAX_LINE - 1
    ext.send_raw(line)
    reply = ext.read_reply(timeout=30)
    assert reply["id"] == "big" and reply["block"] is True  # too long to read: refused
    assert ext.tool(TOOL, {"text": "after"})["content"][0]["text"] == "after"


@pytest.mark.parametrize("own_group", [True, False], ids=["own-group", "shared-group"])
@pytest.mark.parametrize("language", LANGUAGES)
def test_a_slow_tool_holds_up_neither_the_guard_nor_the_exit(
    projects, tmp_path, language, own_group
):
    """Requests run off the read loop; shutdown and end of input stop a tool."""
    project = projects.fresh_copy(tmp_path, language, CAPABILITIES)
    handler = project / HANDLER[language]
    source = handler.read_text()
    slow = source.replace(*slow_tool(VARIANTS[language].language, 3))
    assert slow != source
    handler.write_text(slow)
    build(project)
    with ExtensionProcess(project, data_dir=tmp_path, own_group=own_group) as ext:
        ext.handshake()
        ext.send({"type": "tool_call", "id": "slow", "name": TOOL, "args": {"text": "x"}})
        started = time.monotonic()
        ext.send(
            {
                "type": "event_intercept",
                "id": "guard",
                "event": "tool_call",
                "tool_name": "bash",
                "tool_args": {"command": "rm -rf /"},
            }
        )
        first = ext.read_reply(timeout=5)
        answered_after = time.monotonic() - started
        second = ext.read_reply(timeout=5)
        assert [first["id"], second["id"]] == ["guard", "slow"]
        assert first["block"] is True
        # well before the tool's 3 s: the guard did not wait for it (its first
        # decision includes reading the rules, in the shell jq compiling them:
        # 0.4 s idle, over 1 s on a busy machine)
        assert answered_after < 2.0
        # Slow tools that arrive together, in one write, run side by side, and
        # the guard behind them still does not wait.
        frames = [
            {"type": "tool_call", "id": f"slow-{i}", "name": TOOL, "args": {"text": "x"}}
            for i in range(3)
        ]
        frames.append(
            {
                "type": "event_intercept",
                "id": "guard2",
                "event": "tool_call",
                "tool_name": "bash",
                "tool_args": {"command": "ls"},
            }
        )
        started = time.monotonic()
        ext.send_raw("".join(json.dumps(frame) + "\n" for frame in frames).encode())
        reply = ext.read_reply(timeout=5)
        assert reply["id"] == "guard2" and allowed(reply)
        assert time.monotonic() - started < 1.0
        assert {ext.read_reply(timeout=8)["id"] for _ in range(3)} == {
            "slow-0",
            "slow-1",
            "slow-2",
        }
        assert time.monotonic() - started < 5.0  # one after the other would take 9 s
        # shutdown while a tool is in flight exits at once, no child left
        ext.send({"type": "tool_call", "id": "slow2", "name": TOOL, "args": {"text": "x"}})
        time.sleep(0.2)  # the tool is running
        assert ext.shutdown(timeout=2) == 0
        assert not ext.leftovers()
    with ExtensionProcess(project, data_dir=tmp_path, own_group=own_group) as ext:
        ext.handshake()
        ext.send({"type": "tool_call", "id": "slow3", "name": TOOL, "args": {"text": "x"}})
        time.sleep(0.2)
        ext.close_stdin()  # the end of input, without shutdown
        assert ext.wait(2) == 0
        assert not ext.leftovers()


# Where each language's tool starts its answer, and a crash on "boom" to put there.
CRASHING_TOOL = {
    "python": (
        '    return text.upper() if args.get("uppercase") else text',
        '    if text == "boom":\n        raise RuntimeError("boom")\n',
    ),
    "go": (
        "\tif in.Uppercase {\n\t\treturn ext.TextResult(strings.ToUpper(in.Text))",
        '\tif in.Text == "boom" {\n\t\tpanic("boom")\n\t}\n',
    ),
    "typescript": (
        "  return uppercase ? text.toUpperCase() : text;",
        '  if (text === "boom") throw new Error("boom");\n',
    ),
    "shell": ("\tprintf '%s' \"$1\"\n}", '\t[[ $1 != boom ]] || : "${no_such_variable:?boom}"\n'),
}


@pytest.mark.parametrize("language", [lang for lang in LANGUAGES if lang in CRASHING_TOOL])
def test_a_crashing_handler_is_answered_and_the_extension_lives_on(projects, tmp_path, language):
    project = projects.fresh_copy(tmp_path, language, CAPABILITIES)
    handler = project / HANDLER[language]
    source = handler.read_text()
    anchor, crash = CRASHING_TOOL[language]
    crashing = source.replace(anchor, crash + anchor)
    assert crashing != source
    handler.write_text(crashing)
    build(project)
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake()
        reply = ext.tool(TOOL, {"text": "boom"})
        assert reply["is_error"] is True
        assert reply["content"][0]["text"].startswith(f"{NAME} failed: ")
        assert "boom" in ext.stderr()
        assert ext.tool(TOOL, {"text": "fine"})["content"][0]["text"] == "fine"
        assert ext.shutdown() == 0


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ({"id": "x", "commands": ["docker"], "reason": "r", "instead": "i"}, "unknown field"),
        ({"id": "x", "reason": "r", "instead": "i"}, "would refuse every command"),
        ({"id": "x", "command": "docker", "reason": "r", "instead": "i"}, "a list of strings"),
        ({"id": "x", "command": ["@nope"], "reason": "r", "instead": "i"}, "names no list"),
        ({"id": "x", "command": ["docker"]}, 'needs "reason"'),
    ],
)
def test_the_smoke_test_finds_what_is_wrong_with_a_rule_of_yours(projects, tmp_path, rule, problem):
    """A typo in guard-policy.json must not go unnoticed: a rule without a
    known field to match would refuse every command."""
    project = projects.fresh_copy(tmp_path, "python", ["guard"])
    policy = json.loads((project / "guard-policy.json").read_text())
    policy["rules"].append(rule)
    (project / "guard-policy.json").write_text(json.dumps(policy))
    result = run(["./smoke-test", "--json", "--no-expect"], project)
    checks = json.loads(result.stdout)["checks"]
    failed = [c for c in checks if c["status"] == "fail" and c["check"] == "guard-policy.json"]
    assert failed and problem in failed[0]["detail"], checks
    assert result.returncode == 1


# Where each language's tool answers, and a result of 5 MiB to put there.
BIG_RESULT = {
    "python": '    if text == "big":\n        return "x" * (5 << 20)\n',
    "go": '\tif in.Text == "big" {\n\t\treturn ext.TextResult(strings.Repeat("x", 5<<20))\n\t}\n',
    "typescript": '  if (text === "big") return "x".repeat(5 << 20);\n',
    "shell": "\tif [[ $1 == big ]]; then\n\t\thead -c $((5 << 20)) /dev/zero | tr '\\0' x\n"
    "\t\treturn\n\tfi\n",
}


@pytest.mark.parametrize("language", [lang for lang in LANGUAGES if lang != "go-sdk"])
def test_an_answer_over_zots_line_limit_becomes_an_error(projects, tmp_path, language):
    """zot disconnects an extension that writes a line of 4 MiB or more; the
    SDK flavour cannot help it (the SDK writes the frame)."""
    project = projects.fresh_copy(tmp_path, language, ["commands", "tools"])
    handler = project / HANDLER[language]
    anchor, _ = slow_tool(VARIANTS[language].language, 0)
    source = handler.read_text()
    assert anchor in source
    handler.write_text(source.replace(anchor, BIG_RESULT[VARIANTS[language].language] + anchor))
    build(project)
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake()
        reply = ext.tool(TOOL, {"text": "big"}, timeout=30)
        assert reply["is_error"] is True
        text = reply["content"][0]["text"]
        assert "over zot's limit of 4 MiB for one line" in text, text[:200]
        assert max(len(line) for line in ext.raw_lines) < MAX_LINE
        assert ext.tool(TOOL, {"text": "after"})["content"][0]["text"] == "after"
        assert ext.shutdown() == 0
