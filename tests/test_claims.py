"""Each flavour promises only what it does: what its README and smoke.json
say of the picker's enter and the ask tool's note is what its extension
sends to a newer zot."""

from __future__ import annotations

import json
import time

import pytest
from conftest import LANGUAGES
from host import ExtensionProcess

PICK, ASK = "demo-ext-pick", "demo_ext_confirm"
CHOSEN = "Review the uncommitted changes for bugs."


def frames_for(ext: ExtensionProcess, seconds: float) -> list[dict]:
    """The frames the extension sends within `seconds`."""
    frames, deadline = [], time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            frames.append(ext.read_frame(timeout=left))
        except TimeoutError:
            break
    return frames


def sent(projects, language: str) -> set[str]:
    """The spontaneous frame types sent for the picker's enter and an answered ask."""
    project = projects.get(language, ["panel", "ask"])
    with ExtensionProcess(project) as ext:
        ext.handshake()
        panel = ext.command(PICK, "")["open_panel"]["id"]
        ext.send({"type": "panel_key", "panel_id": panel, "key": "down"})
        ext.send({"type": "panel_key", "panel_id": panel, "key": "enter"})
        frames = frames_for(ext, 1.0)
        ext.send({"type": "tool_call", "id": "ask", "name": ASK, "args": {"action": "x"}})
        frames += (more := frames_until_panel(ext))
        ask_panel = more[-1]["panel"]["id"]
        ext.send({"type": "panel_key", "panel_id": ask_panel, "key": "rune", "text": "y"})
        frames += frames_for(ext, 1.0)
        assert ext.shutdown() == 0
    assert any(f["type"] == "tool_result" and f["id"] == "ask" for f in frames), frames
    if any(f["type"] == "submit" for f in frames):
        assert {"type": "submit", "text": CHOSEN} in frames
    return {f["type"] for f in frames}


def frames_until_panel(ext: ExtensionProcess) -> list[dict]:
    frames = ext.read_until("open_panel")
    assert frames[-1]["panel"]["lines"][0] == "x"
    return frames


@pytest.mark.parametrize("language", LANGUAGES)
def test_readme_and_smoke_json_claim_what_the_extension_sends(projects, language):
    project = projects.get(language, ["panel", "ask"])
    frames = sent(projects, language)
    readme = (project / "README.md").read_text()
    smoke = json.loads((project / "smoke.json").read_text())
    pick = next(case for case in smoke["commands"] if case["keys"] == ["down", "enter"])
    ask = next(case for case in smoke["tools"] if case.get("keys") == ["enter"])

    submits = "submit" in frames
    assert ("`submit`s the chosen item" in readme) == submits
    assert ("enter to send the chosen one to the model" in readme) == submits
    assert ("submit" in pick["expect"]) == submits
    if not submits:  # then the chosen item is shown in a note
        assert "notify" in frames and pick["expect"]["notify"] == CHOSEN
        assert "shows the chosen item in a `notify` note" in readme

    clears = "clear_notes" in frames
    assert ("`clear_notes`" in readme) == clears
    # a "waiting" note is only promised where it can be cleared again
    assert ("notify" in ask["expect"]) == clears
