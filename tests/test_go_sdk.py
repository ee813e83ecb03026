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
