"""The newer protocol features, driven directly in every language: the system
prompt and its 1 MiB limit, cancellation, panels zot does not know about, and
what an older zot (no capabilities in hello_ack) gets instead."""

from __future__ import annotations

import json
import time

import pytest
from conftest import HANDLER, LANGUAGES, VARIANTS, build, slow_tool
from host import ExtensionProcess

NAME, TOOL = "demo-ext", "demo_ext"
PICK, ASK = "demo-ext-pick", "demo_ext_confirm"
LIMIT = 1024 * 1024  # zot's limit for a system prompt, in bytes of UTF-8
HEADING = "\n\n## Project conventions (CONVENTIONS.md)\n\n"
FEATURES = ["commands", "tools", "panel", "ask", "prompt"]


@pytest.fixture(params=LANGUAGES)
def language(request) -> str:
    return request.param


def before_agent_start(ext: ExtensionProcess, system_prompt: str, cwd: str | None) -> dict:
    frame = {"type": "event_intercept", "event": "before_agent_start"}
    frame.update(system_prompt=system_prompt, session_id="s1", agent_run_id="r1")
    if cwd is not None:
        frame["cwd"] = cwd
    return ext.request(frame)


def test_prompt_adds_the_conventions_file_and_stays_within_zots_limit(projects, language, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    with ExtensionProcess(projects.get(language, FEATURES), data_dir=tmp_path) as ext:
        ext.handshake()
        # no such file: the prompt is kept
        reply = before_agent_start(ext, "Base.", str(project))
        assert "system_prompt" not in reply and not reply.get("block")

        (project / "CONVENTIONS.md").write_text("Use tabs.\n", encoding="utf-8")
        reply = before_agent_start(ext, "Base.", str(project))
        assert reply["system_prompt"] == "Base." + HEADING + "Use tabs.\n"

        # two-byte characters past the limit: cut at a character boundary
        (project / "CONVENTIONS.md").write_text("é" * LIMIT, encoding="utf-8")
        reply = before_agent_start(ext, "Base.", str(project))
        prompt = reply["system_prompt"]
        size = len(prompt.encode("utf-8"))
        assert LIMIT - 2 < size <= LIMIT, size
        assert prompt.startswith("Base." + HEADING + "éé") and set(prompt[-10:]) == {"é"}

        # a prompt at the limit already: kept as it is
        reply = before_agent_start(ext, "x" * LIMIT, str(project))
        assert "system_prompt" not in reply and not reply.get("block")

        # white space only: nothing to add
        (project / "CONVENTIONS.md").write_text(" \n\t\n", encoding="utf-8")
        assert "system_prompt" not in before_agent_start(ext, "Base.", str(project))
        assert ext.shutdown() == 0


def test_prompt_reads_hello_acks_project_when_the_frame_names_none(projects, language, tmp_path):
    with ExtensionProcess(projects.get(language, FEATURES), data_dir=tmp_path) as ext:
        (ext.ext_dir.parent / "CONVENTIONS.md").write_text("Say please.", encoding="utf-8")
        try:
            ext.handshake()  # hello_ack's cwd is the folder above the extension
            reply = before_agent_start(ext, "Base.", None)
            assert reply["system_prompt"] == "Base." + HEADING + "Say please."
        finally:
            (ext.ext_dir.parent / "CONVENTIONS.md").unlink()
        assert ext.shutdown() == 0


def test_a_cancelled_call_gets_no_result_and_the_tool_keeps_working(projects, language, tmp_path):
    # events as well: Go's main.go then imports time, which the wait needs
    project = projects.fresh_copy(tmp_path, language, ["tools", "events"])
    handler = project / HANDLER[language]
    anchor, slow = slow_tool(VARIANTS[language].language, 3)
    source = handler.read_text()
    assert anchor in source
    # only the call with text "slow" waits
    handler.write_text(source.replace(anchor, slow_when(language, slow, anchor), 1))
    build(project)
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        hello, _ = ext.handshake()
        assert "tool_cancel" in hello["capabilities"]
        ext.send({"type": "tool_call", "id": "slow-1", "name": TOOL, "args": {"text": "slow"}})
        time.sleep(0.3)
        ext.send({"type": "tool_cancel", "id": "slow-1"})
        ext.send({"type": "tool_cancel", "id": "no-such-call"})  # ignored
        reply = ext.tool(TOOL, {"text": "fast"})
        assert reply["content"][0]["text"] == "fast"
        with pytest.raises(TimeoutError):
            late = ext.read_frame(timeout=4.0)
            pytest.fail(f"a cancelled call was answered: {late}")
        assert ext.shutdown() == 0


def test_frames_for_panels_it_does_not_know_write_nothing(projects, language, tmp_path):
    with ExtensionProcess(projects.get(language, FEATURES), data_dir=tmp_path) as ext:
        ext.handshake()
        ext.send({"type": "panel_key", "panel_id": "pick-99", "key": "enter"})
        ext.send({"type": "panel_key", "panel_id": "nobody", "key": "rune", "text": "y"})
        ext.send({"type": "panel_close", "panel_id": "nobody"})
        ext.send({"type": "panel_resize", "panel_id": "nobody", "width": 80, "height": 24})
        reply = ext.command(NAME, "hello")  # the next frame is the answer
        assert reply["action"] == "prompt"
        assert ext.shutdown() == 0


def test_an_older_zot_gets_no_newer_frames(projects, language, tmp_path):
    """zot 0.1.62 sends no capabilities: no spontaneous panel, no submit."""
    with ExtensionProcess(projects.get(language, FEATURES), data_dir=tmp_path) as ext:
        hello = ext.read_frame()
        ack = {"type": "hello_ack", "protocol_version": 1, "zot_version": "0.1.62"}
        ack.update(cwd=str(tmp_path), extension_dir=str(ext.ext_dir), data_dir=str(tmp_path))
        ext.send(ack)
        ext.read_until("ready")
        assert hello["name"] == NAME
        reply = ext.tool(ASK, {"action": "delete the build folder"})
        assert reply["is_error"] is True
        assert reply["content"][0]["text"] == (
            "this zot cannot ask the user from a tool (it needs a newer zot): "
            "ask in the chat instead"
        )
        opened = ext.command(PICK, "")
        panel = opened["open_panel"]["id"]
        ext.send({"type": "panel_key", "panel_id": panel, "key": "enter"})
        frames = [ext.read_frame(), ext.read_frame()]
        assert frames[0] == {"type": "panel_close", "panel_id": panel}
        assert frames[1]["type"] == "notify" and frames[1]["level"] == "info"
        assert "Explain how this project is organised." in frames[1]["message"]
        assert ext.shutdown() == 0
        written = b"".join(ext.raw_lines)
        types = {json.loads(line)["type"] for line in written.splitlines()}
        assert not types & {"submit", "open_panel"}, types


def slow_when(variant: str, slow: str, anchor: str) -> str:
    """The slow tool's wait, only for the text "slow"."""
    wait = slow[: -len(anchor)]
    language = VARIANTS[variant].language
    condition = {
        "python": '    if text == "slow":\n',
        "go": '\tif in.Text == "slow" {\n',
        "typescript": '  if (text === "slow") {\n',
        "shell": "\tif [[ $1 == slow ]]; then\n",
    }[language]
    close = {"python": "", "go": "\t}\n", "typescript": "  }\n", "shell": "\tfi\n"}[language]
    indented = "".join(
        ("    " if language == "python" else "\t" if language in ("go", "shell") else "  ")
        + line
        + "\n"
        for line in wait.splitlines()
    )
    return condition + indented + close + anchor
