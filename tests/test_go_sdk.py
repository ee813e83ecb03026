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
from conftest import COMBINATIONS, build, combo_id, render, run

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
        for caps in COMBINATIONS
    }


@pytest.mark.parametrize("capabilities", COMBINATIONS, ids=combo_id)
def test_sdk_flavour_renders_lint_clean_code_on_the_sdk(sdk_projects, capabilities):
    project = sdk_projects[combo_id(capabilities)]
    assert sorted(p.name for p in project.glob("*.go")) == ["main.go", "main_test.go"]
    go_mod = (project / "go.mod").read_text()
    assert go_mod == "module example.com/demo-ext\n\ngo 1.25\n"  # no pinned zot version
    main = (project / "main.go").read_text()
    assert f'"{SDK_MODULE}/packages/agent/ext"' in main
    # each capability is handed to the SDK call made for it
    calls = {
        "commands": "zot.Command(c.name, c.description, c.run)",
        "tools": "zot.Tool(t.name, t.description, t.schema, ",
        "events": "zot.On(event, ",
        "guard": "zot.InterceptToolCall(",
    }
    for capability, call in calls.items():
        assert (call in main) == (capability in capabilities), capability
    assert ("zot.OnHello(" in main) == ("events" in capabilities)  # data_dir
    manifest = json.loads((project / "extension.json").read_text())
    assert manifest["exec"] == "./demo-ext"
    result = run([shutil.which("gofmt") or "gofmt", "-l", "-d", "."], project)
    assert result.returncode == 0 and not result.stdout, result.stdout + result.stderr
    shellcheck = shutil.which("shellcheck", path=os.path.dirname(sys.executable)) or "shellcheck"
    result = run([shellcheck, "-s", "sh", "build"], project)
    assert result.returncode == 0, result.stdout + result.stderr


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
