"""Hostile input against every generated variant (see tests/robustness.py)."""

from __future__ import annotations

import json
import time

import pytest
from conftest import (
    CAPABILITIES,
    GUARD_ALLOWED,
    GUARD_CWD,
    GUARD_REFUSED,
    LANGUAGES,
)
from flavours import uses_sdk
from host import ExtensionProcess
from robustness import TOOL, allowed, hostile_session, line, pipeline, refusals

MAX_COMMAND = 65536  # the guard refuses longer commands unread


@pytest.fixture(params=LANGUAGES)
def ext(request, projects, tmp_path):
    """A running extension with every capability, past its handshake."""
    with ExtensionProcess(projects.get(request.param, CAPABILITIES), data_dir=tmp_path) as proc:
        proc.handshake(cwd=GUARD_CWD)  # the project folder of the guard's cases
        yield proc


def test_hostile_lines_are_skipped_and_every_request_is_answered_once(ext, record_property):
    record_property("cases", hostile_session(ext))
    # the runtimes log the line; zot's Go SDK logs only the decoder's error
    sdk = uses_sdk(ext.ext_dir)
    assert ("malformed frame from host" if sdk else "not json") in ext.stderr()


def test_a_thousand_requests_in_flight_are_all_answered(ext, record_property):
    """Tool calls and intercepts interleaved, sent without waiting."""
    lines, expect, want = [], {}, {}
    for i in range(500):
        lines.append(
            line(
                {
                    "type": "tool_call",
                    "id": f"t{i}",
                    "name": TOOL,
                    "args": {"text": f"n{i}", "uppercase": i % 3 == 0},
                }
            )
        )
        expect[f"t{i}"], want[f"t{i}"] = "tool_result", f"N{i}" if i % 3 == 0 else f"n{i}"
        command = "rm -rf /" if i % 2 else f"ls {i}"
        lines.append(
            line(
                {
                    "type": "event_intercept",
                    "id": f"g{i}",
                    "event": "tool_call",
                    "tool_name": "bash",
                    "tool_args": {"command": command},
                }
            )
        )
        expect[f"g{i}"], want[f"g{i}"] = "event_intercept_response", bool(i % 2)
    started = time.monotonic()
    answers = pipeline(ext, lines, expect, timeout=120)
    record_property("seconds", round(time.monotonic() - started, 2))
    for rid, answer in answers.items():
        got = answer["content"][0]["text"] if rid[0] == "t" else answer.get("block", False)
        assert got == want[rid], (rid, answer)
    assert ext.shutdown() == 0


def test_guard_gives_every_verdict_of_the_shared_table(ext, record_property):
    """Each refused case by the rule the table names; each allowed case allowed."""
    commands = [*GUARD_REFUSED, *GUARD_ALLOWED]
    want = [*GUARD_REFUSED.values(), *[None] * len(GUARD_ALLOWED)]
    got = refusals(ext, commands)
    wrong = [(c, g, w) for c, g, w in zip(commands, got, want, strict=True) if g != w]
    assert not wrong, wrong
    record_property("cases", len(commands))


def test_guard_refuses_a_command_too_long_to_check(ext):
    at_limit = "echo " + "a" * (MAX_COMMAND - 5)
    over = at_limit + "a"
    reply = ext.intercept("bash", {"command": over})
    assert reply["block"] is True and "too long to check" in reply["reason"]
    assert allowed(ext.intercept("bash", {"command": at_limit}))
    # bash joins continued lines before the guard reads them
    assert ext.intercept("bash", {"command": "r\\\nm -r\\\nf /"})["block"] is True


# Commands at the length limit built to make a backtracking regex engine slow.
SLOW_COMMANDS = {
    "rm -r repeated": "rm " + "-r " * (MAX_COMMAND // 3 - 1),
    "rm -r rm -r": "rm -r " * (MAX_COMMAND // 6),
    "chmod -R repeated": "chmod " + "-R " * (MAX_COMMAND // 3 - 2),
    "one long word": "a" * MAX_COMMAND,
    "sudo -u repeated": "sudo -u " * (MAX_COMMAND // 16) + "rm " + "-r " * (MAX_COMMAND // 6 - 1),
    "fork bomb bodies": ";a(){ |" * (MAX_COMMAND // 7),
    "pipes after curl": "curl x " + "| x " * (MAX_COMMAND // 4 - 2),
    "separators": ";" * MAX_COMMAND,
    "newlines": "\n" * MAX_COMMAND,
    "long option": "rm -" + "r" * (MAX_COMMAND - 4),
    # and to make a shell parser recurse, loop or look back
    "nested substitutions": "$(" * (MAX_COMMAND // 2),
    "backticks": "`" * MAX_COMMAND,
    "open quotes": "'\"" * (MAX_COMMAND // 2),
    "subshells": "(" * MAX_COMMAND,
    "nested bash -c": "bash -c '" * (MAX_COMMAND // 9),
    "evals": "eval " * (MAX_COMMAND // 5),
    "here-documents": "cat <<A " * (MAX_COMMAND // 8 - 1) + "\n",
    "find -exec {} times paths": "find " + "a " * 15000 + "-exec rm " + "{} " * 5000 + ";",
    "cd into cd": "cd a; " * (MAX_COMMAND // 6),
    "one long pipeline": "curl x | " * (MAX_COMMAND // 9),
    "many sends": "nc x < y; " * (MAX_COMMAND // 10),
    "arrays": "a=(" * (MAX_COMMAND // 3),
    # and what xargs, parallel, env -S and $'...' take apart
    "ANSI-C escapes": "echo $'" + "\\x41" * ((MAX_COMMAND - 8) // 4) + "'",
    "ANSI-C backslashes": "echo $'" + "\\" * (MAX_COMMAND - 8) + "'",
    "env -S words": "env -S '" + "a " * ((MAX_COMMAND - 10) // 2) + "'",
    "env -S repeated": "env " + "-S " * (MAX_COMMAND // 3 - 2),
    "parallel values": "parallel echo {} ::: " + " ".join(map(str, range(11000))),
    "parallel {} times values": "parallel "
    + "{} " * 16000
    + "::: "
    + " ".join(map(str, range(64))),
    "xargs -I {} times": "xargs -I{} echo " + "{}" * ((MAX_COMMAND - 16) // 2),
    # and a path for the * patterns of the secret and device classes
    "a path of near misses": "cat " + "/." * (MAX_COMMAND // 2 - 3),
    "a long device name": "cp x /dev/sd" + "a" * (MAX_COMMAND - 13),
    # and programs run by interpreters: calls in calls, calls without an end,
    # a long argument, and a long program of many small pieces
    "python calls in calls": "python3 -c '" + "os.system(" * ((MAX_COMMAND - 20) // 10) + "'",
    "perl calls without parens": "perl -e '" + "system " * ((MAX_COMMAND - 20) // 7) + "'",
    "ruby calls and strings": "ruby -e '" + 'system "x",' * ((MAX_COMMAND - 20) // 12) + "'",
    "node calls in lists": "node -e '" + "execSync([" * ((MAX_COMMAND - 20) // 10) + "'",
    "a python here-document": "python3 <<'E'\n"
    + 'os.remove("$x"), ' * ((MAX_COMMAND - 20) // 18)
    + "\nE",
    "one long argument": "python3 -c 'os.system(" + '"a" + ' * ((MAX_COMMAND - 30) // 6) + "1)'",
    "a program of small pieces": "node -e '" + "a=a:" * ((MAX_COMMAND - 20) // 4) + "'",
}


def test_guard_decides_fast_on_commands_built_to_be_slow(ext, record_property):
    """zot allows a call after 5 s without a decision: a slow guard fails open."""
    timings = {}
    for label, command in SLOW_COMMANDS.items():
        assert len(command) <= MAX_COMMAND, label
        started = time.monotonic()
        ext.intercept("bash", {"command": command}, timeout=5)
        timings[label] = round(time.monotonic() - started, 3)
    record_property("seconds", json.dumps(timings))
    # The slowest, the shell flavour with jq 1.6, gives up after 2 s
    # (too-slow): 4 s leaves room below zot's 5 s on a busy machine.
    assert max(timings.values()) < 4, timings


@pytest.mark.parametrize("variant", LANGUAGES)
def test_a_lone_guard_survives_hostile_input(projects, variant):
    """Only the guard: tool calls and commands get their error answers."""
    with ExtensionProcess(projects.get(variant, ["guard"])) as ext:
        ext.handshake()
        expect = {"t": "tool_result", "c": "command_response", "g": "event_intercept_response"}
        answers = pipeline(
            ext,
            [
                b"junk\n",
                line({"type": "tool_call", "id": "t", "name": TOOL, "args": {"text": "x"}}),
                line({"type": "command_invoked", "id": "c", "name": "demo-ext", "args": "x"}),
                line(
                    {
                        "type": "event_intercept",
                        "id": "g",
                        "event": "tool_call",
                        "tool_name": "bash",
                        "tool_args": {"command": "sudo rm -rf /"},
                    }
                ),
            ],
            expect,
        )
        assert answers["t"]["is_error"] is True and answers["c"]["error"]
        assert answers["g"]["block"] is True
        assert ext.shutdown() == 0
