"""Go-specific checks: the layout, the guard, updates from earlier releases."""

from __future__ import annotations

import importlib.util
import json
import re
import time

import pytest
from conftest import CAPABILITIES, build, combo_id, render, run
from host import ExtensionProcess
from test_update import edit


def python_guard(projects) -> list[list[str]]:
    """(pattern, what, instead) of the rendered Python skeleton's guard."""
    project = projects.get("python", ["guard"])
    spec = importlib.util.spec_from_file_location("python_guard", project / "guard.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [list(entry) for entry in module.DANGEROUS]


DUMP_TEST = """package main

import (
\t"encoding/json"
\t"fmt"
\t"testing"
)

func TestDumpGuard(t *testing.T) {
\tvar out [][]string
\tfor _, d := range dangerous {
\t\tout = append(out, []string{d.pattern.String(), d.what, d.instead})
\t}
\tline, _ := json.Marshal(out)
\tfmt.Printf("GUARD %s\\n", line)
}
"""


def test_go_guard_has_the_python_guards_patterns_and_texts(projects, tmp_path):
    project = projects.fresh_copy(tmp_path, "go", ["guard"])
    (project / "dump_test.go").write_text(DUMP_TEST)
    result = run(["go", "test", "-count=1", "-run", "TestDumpGuard", "-v", "."], project)
    assert result.returncode == 0, result.stdout + result.stderr
    dumped = next(line for line in result.stdout.splitlines() if line.startswith("GUARD "))
    assert json.loads(dumped.removeprefix("GUARD ")) == python_guard(projects)


SDK_MODULE = "github.com/patriceckhart/zot"

# What only the protocol does in Go: reading stdin, writing stdout, framing,
# the handshake and registration frames, the writer's lock.
GO_PROTOCOL = re.compile(
    r"os\.Std(in|out)|bufio\.|sync\.|Mutex|ReadSlice|json\.NewEncoder"
    r'|"type": *"(hello|hello_ack|ready|subscribe|register_command|register_tool|shutdown_ack)"'
)


def test_main_go_holds_no_protocol_and_the_runtime_is_the_templates_file(tmp_path):
    """protocol.go is the same in every project; guard.go comes with guard."""
    one = render(tmp_path / "one", language="go", capabilities=["tools"])
    two = render(tmp_path / "two", language="go", capabilities=CAPABILITIES, name="other")
    assert (one / "protocol.go").read_text() == (two / "protocol.go").read_text()
    assert GO_PROTOCOL.search((one / "protocol.go").read_text())
    assert not (one / "guard.go").exists() and (two / "guard.go").is_file()
    three = render(tmp_path / "three", language="go", go_sdk=True, capabilities=["guard"])
    assert (two / "guard.go").read_text() == (three / "guard.go").read_text()
    for project in (one, two):
        main = (project / "main.go").read_text()
        assert not GO_PROTOCOL.search(main), GO_PROTOCOL.search(main)
        assert "regexp" not in main and "dangerous" not in main


@pytest.mark.parametrize(
    "capabilities", [["commands", "tools"], ["commands", "tools", "guard"]], ids=combo_id
)
def test_both_flavours_main_go_differ_only_in_what_speaks_the_protocol(tmp_path, capabilities):
    """Switching go_sdk merges cleanly: the handlers are the same lines."""
    sdk = render(tmp_path / "sdk", language="go", go_sdk=True, capabilities=capabilities)
    std = render(tmp_path / "std", language="go", go_sdk=False, capabilities=capabilities)

    def body(project):
        text = (project / "main.go").read_text().split("\npackage main\n", 1)[1]
        text = text.replace(f'\n\t"{SDK_MODULE}/packages/agent/ext"\n', "")
        return text.replace("ext.", "").replace("\n\n)", "\n)")

    assert body(sdk) == body(std)


@pytest.mark.parametrize("own_group", [True, False], ids=["own-group", "shared-group"])
@pytest.mark.parametrize("ending", ["shutdown", "end-of-input"])
def test_exits_within_100_ms_with_a_tool_running(projects, tmp_path, own_group, ending):
    """zot 0.1.62 starts extensions in its own process group: no reliance on it."""
    project = projects.fresh_copy(tmp_path, "go", CAPABILITIES)
    edit(
        project / "main.go",
        "\tif uppercase {\n",
        "\ttime.Sleep(10 * time.Second)\n\tif uppercase {\n",
    )
    build(project)
    with ExtensionProcess(project, data_dir=tmp_path, own_group=own_group) as ext:
        ext.handshake()
        ext.send({"type": "tool_call", "id": "slow", "name": "demo_ext", "args": {"text": "x"}})
        time.sleep(0.2)  # the tool is running
        if ending == "shutdown":
            ext.send({"type": "shutdown"})
        started = time.monotonic()
        ext.close_stdin()
        assert ext.wait(2) == 0
        assert time.monotonic() - started < 0.1
        assert not ext.leftovers()


def test_a_replace_to_a_local_checkout_of_zot_builds_without_go_sum(projects, tmp_path):
    """go.mod's go line matches zot's own (1.25.0): no "updates to go.mod needed".

    A local module at zot's path stands in for a checkout (the suite cannot
    download zot); the project imports a package of it, requires it and
    replaces it by the folder, with no go.sum, as docs/troubleshooting.md says.
    """
    checkout = tmp_path / "zot"
    (checkout / "packages" / "probe").mkdir(parents=True)
    (checkout / "go.mod").write_text("module github.com/patriceckhart/zot\n\ngo 1.25.0\n")
    (checkout / "packages" / "probe" / "probe.go").write_text(
        'package probe\n\n// Name is read by the project.\nconst Name = "zot"\n'
    )
    project = projects.fresh_copy(tmp_path, "go", ["commands"])
    (project / "probe.go").write_text(
        'package main\n\nimport "github.com/patriceckhart/zot/packages/probe"\n\n'
        "var _ = probe.Name\n"
    )
    with (project / "go.mod").open("a") as go_mod:
        go_mod.write(
            "\nrequire github.com/patriceckhart/zot v0.0.0\n"
            f"\nreplace github.com/patriceckhart/zot => {checkout}\n"
        )
    (project / "demo-ext").unlink()
    result = run(["./build"], project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (project / "go.sum").exists()
