"""The Go flavour that uses zot's Go SDK (go_sdk=true).

The SDK is a Go module download and this suite runs offline, so every
capability combination is rendered and checked with gofmt only (go vet needs
the module). With ZOT_SDK_DIR pointing at a checkout of zot's source
(github.com/patriceckhart/zot, whose dependencies are in the Go module cache,
e.g. after `go mod download` there), each combination is also built against
it through a replace directive, and must pass `go test` and its smoke test.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from conftest import CAPABILITIES, COMBINATIONS, NO_PROCESS, ROOT, build, combo_id, render, run
from test_go import GO_PROTOCOL
from test_layout import ALL_LIMIT, DEFAULT_LIMIT

SDK_MODULE = "github.com/patriceckhart/zot"
SDK_DIR = os.environ.get("ZOT_SDK_DIR", "")
NEEDS_SDK = pytest.mark.skipif(
    not SDK_DIR,
    reason="set ZOT_SDK_DIR to a checkout of zot's source (github.com/patriceckhart/zot, "
    "dependencies in the Go module cache) to build and smoke-test the Go SDK flavour",
)


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
    guard = ["guard.go"] if "guard" in capabilities else []
    assert sorted(p.name for p in project.glob("*.go")) == [*guard, "main.go", "main_test.go"]
    go_mod = (project / "go.mod").read_text()
    assert go_mod == "module example.com/demo-ext\n\ngo 1.25.0\n"  # no pinned zot version
    main = (project / "main.go").read_text()
    assert f'"{SDK_MODULE}/packages/agent/ext"' in main
    assert "extension = ext.New(extName, extVersion)" in main
    # one SDK call per handler, no adapter between them
    calls = {
        "commands": "extension.Command(command, commandHelp, runCommand)",
        "tools": "extension.ToolWithOptions(tool, toolDescription, toolSchema, ext.ToolOptions{}, runTool)",
        "events": "extension.On(event, recordEvent)",
        "guard": "extension.InterceptToolCall(guard)",
        "panel": "extension.Command(panelCommand, panelHelp, openPicker)",
        "ask": "extension.ToolWithOptions(askTool, askDescription, askSchema,",
        "prompt": "extension.InterceptBeforeAgentStart(addConventions)",
    }
    for capability, call in calls.items():
        assert (call in main) == (capability in capabilities), capability
    manifest = json.loads((project / "extension.json").read_text())
    assert manifest["exec"] == "./start"
    assert (project / "build").read_bytes() == (ROOT / "hooks" / "go").read_bytes()
    result = run([shutil.which("gofmt") or "gofmt", "-l", "-d", "."], project)
    assert result.returncode == 0 and not result.stdout, result.stdout + result.stderr
    shellcheck = shutil.which("shellcheck", path=os.path.dirname(sys.executable)) or "shellcheck"
    result = run([shellcheck, "-s", "sh", "build"], project)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("capabilities", "limit"),
    [(["commands", "tools"], DEFAULT_LIMIT), (CAPABILITIES, ALL_LIMIT)],
    ids=["default", "all"],
)
def test_sdk_flavours_main_go_is_small_and_holds_no_protocol(sdk_projects, capabilities, limit):
    main = (sdk_projects[combo_id(capabilities)] / "main.go").read_text()
    assert main.count("\n") <= limit
    assert not GO_PROTOCOL.search(main), GO_PROTOCOL.search(main)


@NEEDS_SDK
@pytest.mark.parametrize("capabilities", COMBINATIONS, ids=combo_id)
def test_sdk_flavour_builds_tests_and_passes_its_smoke_test(sdk_projects, tmp_path, capabilities):
    project = tmp_path / "ext"
    shutil.copytree(sdk_projects[combo_id(capabilities)], project)
    sdk = Path(SDK_DIR).resolve()
    with (project / "go.mod").open("a") as go_mod:
        go_mod.write(f"\nreplace {SDK_MODULE} => {sdk}\n")
    build(project)
    result = run(["go", "test", "-count=1", "./..."], project)
    assert result.returncode == 0, result.stdout + result.stderr
    result = run(["./smoke-test", "--json"], project)
    report = json.loads(result.stdout)
    failed = [c for c in report["checks"] if c["status"] == "fail"]
    assert result.returncode == 0 and report["passed"], (failed, result.stderr)


# The part of the SDK's API that main.go and main_test.go use, as zot's
# current SDK declares it, with no behaviour: offline, it lets the suite
# type-check, vet and unit-test the SDK flavour (the real build needs the
# download, see test_sdk_flavour_builds_tests_and_passes_its_smoke_test).
SDK_STAND_IN = """\
package ext

import (
	"context"
	"encoding/json"
)

type HostInfo struct {
	ProtocolVersion                                         int
	ZotVersion, Provider, Model, CWD, ExtensionDir, DataDir string
}

type Response struct{ Action, Prompt, Insert, Display, Error string }

type ToolContent struct{ Type, Text, MimeType, Data string }

type ToolResult struct {
	Content           []ToolContent
	IsError           bool
	StructuredContent json.RawMessage
}

type ToolOptions struct {
	OutputSchema json.RawMessage
	Interactive  bool
}

type Event struct {
	Name, Stop, Error, ToolID, ToolName, Text string
	Step                                      int
	ToolArgs                                  json.RawMessage
}

type BeforeAgentStartEvent struct{ SystemPrompt, SessionID, AgentRunID, CWD, Provider, Model string }

type Extension struct{ host HostInfo }

type toolFunc = func(context.Context, json.RawMessage) ToolResult

func New(name, version string) *Extension                                      { return &Extension{} }
func (e *Extension) Command(name, desc string, run func(string) Response)      {}
func (e *Extension) Tool(name, desc string, schema json.RawMessage, run func(json.RawMessage) ToolResult) {
}
func (e *Extension) ToolWithOptions(name, desc string, schema json.RawMessage, o ToolOptions, run toolFunc) {
}
func (e *Extension) InteractiveTool(name, desc string, schema json.RawMessage, run toolFunc)    {}
func (e *Extension) On(event string, handle func(Event))                                      {}
func (e *Extension) InterceptToolCall(guard func(string, json.RawMessage) (bool, string))     {}
func (e *Extension) InterceptBeforeAgentStart(handle func(BeforeAgentStartEvent) *string)     {}
func (e *Extension) OnPanelKey(panelID string, onKey func(key, text string), onClose func())  {}
func (e *Extension) OpenPanel(id, title string, lines []string, footer string)                 {}
func (e *Extension) RenderPanel(panelID, title string, lines []string, footer string)         {}
func (e *Extension) ClosePanel(panelID string)                                                 {}
func (e *Extension) Notify(level, message string)                                              {}
func (e *Extension) Logf(format string, args ...any)                                           {}
func (e *Extension) Host() HostInfo                                                            { return e.host }
func (e *Extension) Run() error                                                                { return nil }
func OpenPanel(id, title string, lines []string, footer string) Response                      { return Response{} }
func Prompt(text string) Response                  { return Response{Action: "prompt", Prompt: text} }
func Display(text string) Response                 { return Response{Action: "display", Display: text} }
func text(s string) []ToolContent                  { return []ToolContent{{Type: "text", Text: s}} }
func TextResult(s string) ToolResult               { return ToolResult{Content: text(s)} }
func TextErrorResult(s string) ToolResult          { return ToolResult{Content: text(s), IsError: true} }
func MarkdownResult(s string) ToolResult           { return ToolResult{Content: text(s)} }
"""


@pytest.mark.parametrize("capabilities", [c for c in COMBINATIONS if c != NO_PROCESS], ids=combo_id)
def test_sdk_flavour_vets_and_passes_its_unit_tests_on_the_sdks_api(
    sdk_projects, tmp_path, capabilities
):
    stand_in = tmp_path / "zot"
    (stand_in / "packages" / "agent" / "ext").mkdir(parents=True)
    (stand_in / "go.mod").write_text(f"module {SDK_MODULE}\n\ngo 1.25.0\n")
    (stand_in / "packages" / "agent" / "ext" / "ext.go").write_text(SDK_STAND_IN)
    project = tmp_path / "ext"
    shutil.copytree(sdk_projects[combo_id(capabilities)], project)
    with (project / "go.mod").open("a") as go_mod:
        go_mod.write(f"\nrequire {SDK_MODULE} v0.0.0\n\nreplace {SDK_MODULE} => {stand_in}\n")
    for check in (["go", "vet", "./..."], ["go", "test", "-count=1", "./..."]):
        result = run(check, project)
        assert result.returncode == 0, result.stdout + result.stderr
