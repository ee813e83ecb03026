"""`./smoke-test --interactive` in a real terminal, keystroke by keystroke, for
every language: commands, tools with a template of their arguments, the guard,
events, the system prompt, panels driven with the keys, cancellation, raw
frames, history, saving to smoke.json and a clean shutdown."""

from __future__ import annotations

import json
import os

import pexpect
import pytest
from conftest import LANGUAGES, run

UP, DOWN, ENTER, CTRL_C = "\x1b[A", "\x1b[B", "\r", "\x03"
PROMPT = "zot> "
EVERYTHING = ["commands", "tools", "events", "guard", "panel", "ask", "prompt"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_capability_can_be_tried_by_hand(projects, language, tmp_path):
    project = projects.fresh_copy(tmp_path, language, EVERYTHING)
    child = pexpect.spawn(
        str(project / "smoke-test"),
        ["--interactive"],
        cwd=str(project),
        env={**os.environ, "TERM": "xterm", "NO_COLOR": "1"},
        dimensions=(50, 160),
        encoding="utf-8",
        timeout=20,
    )
    try:
        child.expect("ready in [0-9]+ ms")
        child.expect("commands: /demo-ext, /demo-ext-pick")
        child.expect("tools: +demo_ext, demo_ext_confirm")
        child.expect(PROMPT)

        # a command, as typed in zot; then again from the history
        child.send("/demo-ext why is the sky blue?" + ENTER)
        child.expect("prompt → zot sends it to the model:")
        child.expect("why is the sky blue\\?")
        child.expect(PROMPT)
        child.send(UP + ENTER)
        child.expect("why is the sky blue\\?")
        child.expect(PROMPT)

        # a tool: its schema, then a template of the arguments to edit
        child.send("tool demo_ext" + ENTER)
        child.expect("text \\(string, required\\): The text to echo back.")
        child.expect(PROMPT)
        child.expect('tool demo_ext {"text": "smoke test"}')  # offered on the line
        child.send(ENTER)
        child.expect("is_error false")
        child.expect("smoke test")
        child.expect(PROMPT)
        child.send('tool demo_ext {"text": 5}' + ENTER)
        child.expect("against its schema: text must be a string")
        child.expect(PROMPT)

        # the guard's verdict, rule and reason
        child.send("bash rm -rf /" + ENTER)
        child.expect("refused  rule: delete-outside-project")
        child.expect(PROMPT)
        child.send("bash ls -la" + ENTER)
        child.expect("allowed")
        child.expect(PROMPT)
        child.send('intercept tool_call {"tool_name": "bash", "tool_args": {"command": "reboot"}}')
        child.send(ENTER)
        child.expect('"block": true, "reason": "refused by demo-ext \\(power-off\\)')
        child.expect(PROMPT)

        # an event, and what the extension wrote (audit log, stderr)
        child.send("event turn_start" + ENTER)
        child.expect("demo-ext-events.jsonl \\+ [^\\r\\n]*turn_start")
        child.expect("stderr │ ")
        child.expect(PROMPT)

        # the system prompt: no CONVENTIONS.md in the project it gets
        child.send("prompt You are zot." + ENTER)
        child.expect("zot keeps the system prompt")
        child.expect(PROMPT)

        # the picker panel: a box, moved with the arrow keys, enter submits
        # (zot's Go SDK cannot: it shows the prompt in a note)
        child.send("/demo-ext-pick" + ENTER)
        child.expect("┌─ Pick a prompt")
        child.expect("› Explain how this project is organised.")
        child.expect("keys go to the panel")
        child.send(DOWN)
        child.expect("› Review the uncommitted changes for bugs.")
        child.send(ENTER)
        if language == "go-sdk":
            child.expect("note \\(info\\): Chosen: Review the uncommitted")
        else:
            child.expect("submit → zot sends it to the model: .Review the uncommitted")
        child.expect(PROMPT)

        # the ask tool: a panel, approved with a letter
        child.send('tool demo_ext_confirm {"action": "delete the build folder"}' + ENTER)
        if language != "go-sdk":  # the SDK could not clear the note afterwards
            child.expect("note \\(info\\): demo-ext is waiting for your answer")
        child.expect("┌─ Approve\\?")
        child.expect("keys go to the panel")
        child.send("y")
        child.expect("\\*\\*Approved\\*\\* by the user: delete the build folder")
        child.expect('structured_content: {[^\r\n]*"approved": true')
        child.expect(PROMPT)
        # and cancelled while it waits: no result
        child.send('tool demo_ext_confirm {"action": "drop the table"}' + ENTER)
        child.expect("┌─ Approve\\?")
        child.send(CTRL_C)
        child.expect("cancelled: zot sent tool_cancel")
        child.expect(PROMPT)

        # raw frames, both ways
        child.send("raw" + ENTER)
        child.expect("raw frames on")
        child.send("/demo-ext hi" + ENTER)
        child.expect('→ {"type": "command_invoked"')
        child.expect('← {"type": "command_response"')
        child.expect(PROMPT)
        child.send("raw" + ENTER)
        child.expect("raw frames off")

        child.send("help" + ENTER)
        child.expect("bash COMMAND")
        child.send("save" + ENTER)
        child.expect("saved [0-9]+ cases to [^\\r\\n]*smoke.json")
        child.send("quit" + ENTER)
        child.expect("shut down the way zot does")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before

    # what was tried is now checked by the smoke test
    saved = json.loads((project / "smoke.json").read_text())
    tools = [case for case in saved["tools"] if case["name"] == "demo_ext_confirm"]
    assert {"name": "demo_ext_confirm", "args": {"action": "delete the build folder"}} in [
        {k: case[k] for k in ("name", "args")} for case in tools
    ]
    assert any(case.get("cancel") for case in tools)
    refused = {"block": True, "reason_contains": "(delete-outside-project)"}
    bash = {"tool_name": "bash", "tool_args": {"command": "rm -rf /"}, "expect": refused}
    assert bash in saved["intercepts"]
    result = run(["./smoke-test", "--json"], project)
    report = json.loads(result.stdout)
    failed = [check for check in report["checks"] if check["status"] == "fail"]
    assert report["passed"], failed
