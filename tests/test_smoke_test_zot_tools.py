"""The smoke test plays zot's side of call_tool: zot's refusals in its order,
smoke.json's "zot_tools" answers, the checks of the newer tool options and
intercept answers, and what zot 0.1.62 does with all of them.

The extension here is a script of a few lines that speaks the protocol by
hand, so that each of zot's rules can be broken on purpose.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pexpect
import pytest
from conftest import ROOT, run

# A tool per way of calling zot's tools; "how" is the extension's own flag.
EXTENSION = r"""#!/usr/bin/env python3
import json, sys

def send(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()

CAPS = ["tools", "tool_cancel"] + (["call_tool"] if "--no-opt-in" not in sys.argv else [])
send({"type": "hello", "name": "calls", "version": "1.0.0", "capabilities": CAPS})
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
TOOLS = {
    "first_line": {},
    "deferred_one": {"deferred": True, "namespace": "files", "exposure": "deferred"},
}
if "--misbehave" in sys.argv:  # calls without parent_id, or with a wrong one
    TOOLS.update(no_parent={}, wrong_parent={})
EXTRA = json.loads(sys.argv[-1]) if sys.argv[-1].startswith("{") else {}
calls, waiting, old = 0, {}, False
for line in sys.stdin:
    try:
        frame = json.loads(line)
    except ValueError:
        continue
    kind = frame.get("type")
    if kind == "hello_ack":
        old = "capabilities" not in frame
        for name, options in TOOLS.items():
            send({"type": "register_tool", "name": name, "description": name,
                  "schema": SCHEMA, **options, **EXTRA.get(name, {})})
        send({"type": "subscribe", "events": [], "intercept": ["turn_start", "assistant_message"]})
        send({"type": "ready"})
    elif kind == "tool_call" and (frame["name"] == "deferred_one" or not frame["args"]):
        text = "ok" if frame["args"] else "path is required"
        send({"type": "tool_result", "id": frame["id"], "content": [{"type": "text", "text": text}],
              "is_error": not frame["args"], "activate_tools": ["first_line"]})
    elif kind == "tool_call":
        if old:
            text = "cannot call read: this zot is too old to run its tools for extensions (update zot)"
            send({"type": "tool_result", "id": frame["id"], "content": [{"type": "text", "text": text}], "is_error": True})
            continue
        calls += 1
        call = {"type": "call_tool", "id": f"call-{calls}", "name": "read",
                "args": {"path": frame["args"].get("path", "")}}
        if frame["name"] == "first_line":
            call["parent_id"] = frame["id"]
        elif frame["name"] == "wrong_parent":
            call["parent_id"] = "no-such-call"
        waiting[call["id"]] = frame["id"]
        send(call)
    elif kind == "tool_result":
        text = "".join(b.get("text", "") for b in frame["content"])
        result = {"type": "tool_result", "id": waiting.pop(frame["id"]),
                  "content": [{"type": "text", "text": text.split("\n")[0]}],
                  "is_error": frame.get("is_error", False)}
        if frame.get("truncated"):
            result["content"].append({"type": "text", "text": "[cut]"})
        send(result)
    elif kind == "event_intercept":
        reply = {"type": "event_intercept_response", "id": frame["id"]}
        if frame["event"] == "assistant_message":
            reply["replace_text"] = frame["text"].upper()
        send(reply)
    elif kind == "shutdown":
        break
"""


def project(tmp_path: Path, smoke: dict, *args: str) -> Path:
    folder = tmp_path / "ext"
    folder.mkdir()
    shutil.copy(ROOT / "template" / "smoke-test", folder / "smoke-test")
    shutil.copytree(ROOT / "template" / "zot" / "smoke_test", folder / "zot" / "smoke_test")
    (folder / "main.py").write_text(EXTENSION)
    (folder / "main.py").chmod(0o755)
    manifest = {"name": "calls", "version": "1.0.0", "exec": "./main.py", "args": list(args)}
    (folder / "extension.json").write_text(json.dumps(manifest))
    (folder / "smoke.json").write_text(json.dumps(smoke))
    return folder


def report(folder: Path, *args: str) -> list[dict]:
    result = run(["./smoke-test", "--json", *args], folder)
    return json.loads(result.stdout)["checks"]


def checks(folder: Path, *args: str) -> dict:
    return {check["check"]: check for check in report(folder, *args)}


SMOKE = {
    "zot_tools": {"read": "line one\nline two\n"},
    "tools": [
        {
            "name": "first_line",
            "args": {"path": "README.md"},
            "expect": {"text": "line one", "calls": ["read"]},
        },
        {
            "name": "first_line",
            "args": {"path": "gone.md"},
            "zot_tools": {"read": {"text": "no such file", "is_error": True}},
            "expect": {"is_error": True, "text": "no such file"},
        },
        {
            "name": "first_line",
            "args": {"path": "big.md"},
            "zot_tools": {"read": "x" * (300 * 1024)},
            "expect": {"contains": "[cut]"},
        },
    ],
    "intercepts": [
        {"event": "assistant_message", "text": "hi", "expect": {"replace_text": "HI"}},
        {"event": "turn_start", "step": 2, "expect": {"block": False}},
    ],
}


def test_zot_tools_answer_the_calls_and_zots_refusals_come_in_its_order(tmp_path):
    got = checks(project(tmp_path, SMOKE))
    status = {label.split(" →")[0]: check["status"] for label, check in got.items()}
    # smoke.json's answers, per case over the top ones, cut at 256 KiB as zot does
    assert status['smoke.json: tool first_line {"path": "README.md"}'] == "pass"
    assert status['smoke.json: tool first_line {"path": "gone.md"}'] == "pass"
    assert status['smoke.json: tool first_line {"path": "big.md"}'] == "pass"
    assert status['smoke.json: intercept assistant_message "hi"'] == "pass", got
    assert status["smoke.json: intercept turn_start step 2"] == "pass", got
    # the options of a deferred tool in a namespace are well formed
    assert status["register_tool deferred_one"] == "pass"
    assert not [c for c in got.values() if c["status"] == "fail"], got


def test_a_call_without_its_parent_or_with_a_wrong_one_is_refused_as_zot_does(tmp_path):
    lines = report(project(tmp_path, SMOKE, "--misbehave"))
    got = {check["check"]: check for check in lines}
    refusals = {c["detail"] for c in lines if c["check"].startswith("call_tool read")}
    assert refusals == {
        "zot refuses it: parent_id is required while an extension tool is active",
        "zot refuses it: unknown or expired parent tool call",
    }
    # and the handler got zot's refusal as its result
    no_parent = got['tool no_parent {"path": "smoke test"}']
    assert no_parent["status"] == "fail" and "parent_id is required" in no_parent["detail"]


def test_a_tool_with_no_answer_is_told_what_to_add(tmp_path):
    smoke = {"tools": [{"name": "first_line", "args": {"path": "a"}, "expect": {"is_error": True}}]}
    got = checks(project(tmp_path, smoke))
    warned = [c["detail"] for c in got.values() if c["status"] == "warn"]
    assert any('add "zot_tools": {"read": "its answer"} to smoke.json' in w for w in warned), warned


def test_an_extension_that_did_not_opt_in_is_refused(tmp_path):
    got = checks(project(tmp_path, SMOKE, "--no-opt-in"))
    details = [c["detail"] for c in got.values() if c["check"].startswith("call_tool read")]
    assert details and all(
        d == "zot refuses it: extension did not opt in to call_tool" for d in details
    )


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"exposure": "hidden"}, "exposure must be one of direct, codemode, deferred, model-only"),
        ({"replay": "always"}, "replay must be one of never, safe, idempotent, reconcile"),
        ({"deferred": "yes"}, "deferred must be true or false"),
        ({"namespace": 7}, "namespace must be a string"),
    ],
)
def test_tool_options_zot_refuses_fail_at_registration(tmp_path, options, problem):
    got = checks(project(tmp_path, SMOKE, json.dumps({"deferred_one": options})))
    assert got["register_tool deferred_one"]["status"] == "fail"
    assert problem in got["register_tool deferred_one"]["detail"]


def test_on_zot_0_1_62_cases_that_run_zots_tools_only_need_an_answer(tmp_path):
    got = checks(project(tmp_path, SMOKE), "--old-host")
    assert not [c for c in got.values() if c["status"] == "fail"], got
    fallback = got['tool first_line {"path": "smoke test"}']
    assert "answered that zot is too old" in fallback["detail"], fallback
    old = [label for label in got if label.endswith("runs no tools for extensions → answered")]
    assert len(old) == 3, list(got)
    assert "call_tool" not in {label.split(" ")[0] for label in got}


def test_smoke_json_answers_are_checked(tmp_path):
    smoke = {"zot_tools": {"read": {"text": "x", "is_eror": True}}}
    got = checks(project(tmp_path, smoke))
    assert got["smoke.json"]["status"] == "fail"
    assert 'zot_tools: "read": unknown key "is_eror"' in got["smoke.json"]["detail"]


def test_interactive_asks_for_an_answer_smoke_json_lacks_and_saves_it(tmp_path):
    folder = project(tmp_path, {"tools": []})
    child = pexpect.spawn(
        str(folder / "smoke-test"),
        ["--interactive"],
        cwd=str(folder),
        env={**os.environ, "TERM": "xterm", "NO_COLOR": "1"},
        dimensions=(50, 160),
        encoding="utf-8",
        timeout=20,
    )
    try:
        child.expect("zot> ")
        child.send('tool first_line {"path": "notes.md"}\r')
        child.expect('call_tool read {"path": "notes.md"}: zot runs it')
        child.expect("read answers> ")
        child.send('{"text": "x", "is_eror": true}\r')  # a typo: asked again
        child.expect('unknown key "is_eror"')
        child.expect("read answers> ")
        child.send("# Notes\r")
        child.expect("# Notes")
        child.expect("zot> ")
        child.send('tool first_line {"path": "other.md"}\r')  # the answer is kept
        child.expect("zot> ")
        child.send("save\r")
        child.expect("saved 2 cases")
        child.send("quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    saved = json.loads((folder / "smoke.json").read_text())
    assert saved["zot_tools"] == {"read": "# Notes"}
    assert [case["expect"]["text"] for case in saved["tools"]] == ["# Notes", "# Notes"]
    replayed = checks(folder)[
        'smoke.json: tool first_line {"path": "other.md"} → is_error false, text "# Notes"'
    ]
    assert replayed["status"] == "pass", replayed


def test_on_zot_0_1_62_a_case_whose_result_says_zot_is_too_old_passes(tmp_path):
    smoke = {
        "zot_tools": {"read": "line one\n"},
        "tools": [{"name": "first_line", "args": {"path": "a.md"}, "expect": {"text": "line one"}}],
    }
    folder = project(tmp_path, smoke)
    assert (
        checks(folder)['smoke.json: tool first_line {"path": "a.md"} → text "line one"']["status"]
        == "pass"
    )
    old = checks(folder, "--old-host")[
        'smoke.json: tool first_line {"path": "a.md"} → text "line one"'
    ]
    assert old["status"] == "pass" and old["detail"].startswith("answered that zot is too old"), old
