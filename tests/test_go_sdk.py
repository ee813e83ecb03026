"""The Go flavour that uses zot's Go SDK (go_sdk=true).

Every project of the matrix is built, unit-tested and smoke-tested like the
other flavours (tests/test_matrix.py, variant "go-sdk"), against the SDK the
run names in its header: a checkout of zot's source (ZOT_SDK_DIR) or the
stand-in in tests/go_sdk. This file checks what only this flavour has: its
files and calls, and what the SDK does and cannot do on the wire.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import (
    CAPABILITIES,
    COMBINATIONS,
    NO_PROCESS,
    ROOT,
    SDK_CAPABILITIES,
    SDK_MODULE,
    combo_id,
    render,
)
from host import ExtensionProcess
from test_go import GO_PROTOCOL
from test_layout import ALL_LIMIT, DEFAULT_LIMIT


@pytest.fixture(scope="module")
def sdk_projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One SDK-flavour project per capability combination, rendered once."""
    base = tmp_path_factory.mktemp("go-sdk")
    return {
        combo_id(caps): render(base / combo_id(caps), language="go", go_sdk=True, capabilities=caps)
        for caps in [*COMBINATIONS, ["commands", "tools"]]
    }


@pytest.mark.parametrize("capabilities", COMBINATIONS, ids=combo_id)
def test_sdk_flavour_renders_lint_clean_code_on_the_sdk(sdk_projects, capabilities):
    project = sdk_projects[combo_id(capabilities)]
    if capabilities == NO_PROCESS:
        assert not [*project.glob("*.go"), *project.glob("go.*"), *project.glob("build")]
        return
    own = {"panel": "picker", "ask": "ask", "events": "audit", "prompt": "conventions"}
    files = [f"{own[c]}{end}" for c in capabilities if c in own for end in (".go", "_test.go")]
    assert sorted(p.name for p in project.glob("*.go")) == sorted(
        ["main.go", "main_test.go", *files]
    )
    packages = {p.parent.name for p in project.glob("zot/*/*.go")}
    guard = {"guard"} if "guard" in capabilities else set()
    host = {"host"} if {"panel", "ask"} & set(capabilities) else set()
    schema = {"schema"} if {"tools", "ask"} & set(capabilities) else set()
    assert packages == {"exttest", "processes", *guard, *host, *schema}  # not ext: the SDK's
    go_mod = (project / "go.mod").read_text()
    assert go_mod == "module example.com/demo-ext\n\ngo 1.25.0\n"  # no pinned zot version
    main = (project / "main.go").read_text()
    assert f'"{SDK_MODULE}/packages/agent/ext"' in main
    assert "extension = ext.New(extName, extVersion)" in main
    # one SDK call per handler, no adapter between them: in main.go, or in
    # the file of its capability
    calls = {
        "commands": ("main.go", "extension.Command(command, commandHelp, runCommand)"),
        "tools": (
            "main.go",
            (
                "extension.ToolWithOptions(tool, toolDescription, toolSchema, ext.ToolOptions{},\n"
                "\t\tschema.Checked(toolSchema, ext.TextErrorResult, runTool))"
            ),
        ),
        "events": ("audit.go", "extension.On(event, recordEvent)"),
        "guard": ("main.go", "extension.InterceptToolCall(guardToolCall)"),
        "panel": ("picker.go", "extension.Command(panelCommand, panelHelp, openPicker)"),
        "ask": ("ask.go", "extension.ToolWithOptions(askTool, askDescription, askSchema,"),
        "prompt": ("conventions.go", "extension.InterceptBeforeAgentStart(addConventions)"),
    }
    for capability, (name, call) in calls.items():
        source = (project / name).read_text() if (project / name).exists() else ""
        assert (call in source) == (capability in capabilities), capability
        if name != "main.go":
            assert (project / name).exists() == (capability in capabilities), name
            assert f'"{SDK_MODULE}/packages/agent/ext"' in source or not source
    manifest = json.loads((project / "extension.json").read_text())
    assert manifest["exec"] == "./start"
    assert (project / "build").read_bytes() == (ROOT / "hooks" / "go").read_bytes()


@pytest.mark.parametrize(
    ("capabilities", "limit"),
    [(["commands", "tools"], DEFAULT_LIMIT), (CAPABILITIES, ALL_LIMIT)],
    ids=["default", "all"],
)
def test_sdk_flavours_main_go_is_small_and_holds_no_protocol(sdk_projects, capabilities, limit):
    main = (sdk_projects[combo_id(capabilities)] / "main.go").read_text()
    assert main.count("\n") <= limit
    assert not GO_PROTOCOL.search(main), GO_PROTOCOL.search(main)


def test_hello_lists_what_the_sdk_lists_whatever_the_project_uses(projects):
    project = projects.get("go-sdk", ["commands"])
    with ExtensionProcess(project) as ext:
        hello, frames = ext.handshake()
        assert hello["capabilities"] == SDK_CAPABILITIES
        assert [f["type"] for f in frames] == ["register_command", "ready"]
        assert ext.shutdown() == 0


def test_the_picker_shows_the_chosen_prompt_in_a_note_and_submits_nothing(projects):
    """The SDK has no call that sends submit; a resize is logged, not fatal."""
    project = projects.get("go-sdk", ["panel"])
    with ExtensionProcess(project) as ext:
        ext.handshake()
        reply = ext.command("demo-ext-pick", "")
        panel = reply["open_panel"]["id"]
        ext.send({"type": "panel_resize", "panel_id": panel, "width": 80, "height": 24})
        ext.send({"type": "panel_key", "panel_id": panel, "key": "down"})
        assert ext.read_frame()["type"] == "panel_render"
        ext.send({"type": "panel_key", "panel_id": panel, "key": "enter"})
        frames = [ext.read_frame(), ext.read_frame()]
        assert frames[0] == {"type": "panel_close", "panel_id": panel}
        assert frames[1]["type"] == "notify"
        assert "Review the uncommitted changes for bugs." in frames[1]["message"]
        assert ext.shutdown() == 0
        assert 'unknown frame type "panel_resize"' in ext.stderr()


@pytest.mark.parametrize(
    ("version", "older"),
    [("0.1.62", True), ("0.1.40 (abc1234, 2026-04-01)", True), ("0.2.0", False), ("0.0.0", False)],
)
def test_the_ask_tool_tells_an_older_zot_by_its_version(projects, version, older):
    """zot 0.1.62 and older get an error at once and never an open_panel;
    a newer zot (or a build from source, 0.0.0) gets the panel."""
    project = projects.get("go-sdk", ["ask"])
    with ExtensionProcess(project) as ext:
        ext.handshake(zot_version=version)
        ext.send(
            {"type": "tool_call", "id": "c1", "name": "demo_ext_confirm", "args": {"action": "x"}}
        )
        frame = ext.read_frame()
        if older:
            assert frame["type"] == "tool_result" and frame["is_error"], frame
            assert "ask in the chat instead" in frame["content"][0]["text"]
        else:
            assert frame["type"] == "open_panel", frame
            ext.send({"type": "tool_cancel", "id": "c1"})
            assert ext.read_frame() == {"type": "panel_close", "panel_id": frame["panel"]["id"]}
        assert ext.shutdown() == 0
        assert not [line for line in ext.raw_lines if b"submit" in line or b"clear_notes" in line]


def test_a_line_over_4_mib_ends_the_sdks_read_loop(projects):
    """The SDK reads lines of up to 4 MiB (bufio.Scanner): a longer request is
    never answered, and Run returns its error (zot/ext answers it instead:
    test_go.py)."""
    project = projects.get("go-sdk", ["commands", "tools"])
    with ExtensionProcess(project) as ext:
        ext.handshake()
        big = {
            "type": "tool_call",
            "id": "big",
            "name": "demo_ext",
            "args": {"text": "x" * (4 << 20)},
        }
        ext.send(big)
        assert ext.wait(10) == 1
        assert "fatal: bufio.Scanner: token too long" in ext.stderr()
        assert not [line for line in ext.raw_lines if b'"big"' in line]
