"""What only the TypeScript flavour has: npm, tsc, esbuild, tsx, its guard port."""

from __future__ import annotations

import json
import re
import shutil
import time

import pytest
from conftest import CAPABILITIES, VARIANTS, render, run
from host import ExtensionProcess

TYPESCRIPT = [variant for variant in VARIANTS if VARIANTS[variant].language == "typescript"]


def test_guard_patterns_are_the_python_ones(projects):
    """src/extension.ts keeps guard.py's regex strings (a backtick escaped)."""
    python = projects.get("python", ["guard"])
    script = "import json, runpy; print(json.dumps(runpy.run_path('guard.py')['DANGEROUS']))"
    result = run(["python3", "-c", script], python)
    assert result.returncode == 0, result.stderr
    expected = [pattern for pattern, _, _ in json.loads(result.stdout)]

    typescript = projects.get("typescript", ["guard"])
    script = (
        'const { DANGEROUS } = await import("./src/extension.ts");'
        "console.log(JSON.stringify(DANGEROUS.map((d) => d.pattern)));"
    )
    result = run(["node", "--import", "tsx", "--input-type=module", "-e", script], typescript)
    assert result.returncode == 0, result.stderr
    ported = [pattern.replace("\\`", "`") for pattern in json.loads(result.stdout)]
    assert ported == expected


def test_build_keeps_the_lockfile_and_skips_what_did_not_change(projects, tmp_path):
    project = projects.fresh_copy(tmp_path, "typescript", CAPABILITIES)
    rendered = render(tmp_path / "rendered", language="typescript", capabilities=["tools"])
    # npm install found package-lock.json in sync with package.json
    assert (project / "package-lock.json").read_text() == (
        rendered / "package-lock.json"
    ).read_text()

    bundle = project / "dist" / "index.js"
    built = bundle.stat().st_mtime_ns
    result = run(["./build"], project)
    assert result.returncode == 0, result.stderr
    assert "added" not in result.stdout  # no npm install
    assert bundle.stat().st_mtime_ns == built  # no new bundle

    handler = project / "src" / "extension.ts"
    handler.write_text(handler.read_text().replace("Return it in upper case.", "Shout it."))
    result = run(["./build"], project)
    assert result.returncode == 0, result.stderr
    assert "Shout it." in bundle.read_text()


@pytest.mark.parametrize("variant", TYPESCRIPT)
def test_type_errors_fail_the_build(projects, tmp_path, variant):
    project = projects.fresh_copy(tmp_path, variant, CAPABILITIES)
    handler = project / "src" / "extension.ts"
    source = handler.read_text()
    handler.write_text(source + '\nexport const broken: number = "text";\n')
    result = run(["./build"], project)
    assert result.returncode != 0
    assert "TS2322" in result.stdout + result.stderr
    handler.write_text(source)
    assert run(["./build"], project).returncode == 0


@pytest.mark.parametrize("variant", TYPESCRIPT)
def test_unit_tests_catch_a_broken_handler(projects, tmp_path, variant):
    project = projects.fresh_copy(tmp_path, variant, CAPABILITIES)
    handler = project / "src" / "extension.ts"
    source = handler.read_text()
    broken = source.replace('"uppercase" must be true or false', "bad uppercase")
    assert broken != source
    handler.write_text(broken)
    result = run(["npm", "test"], project)
    assert result.returncode != 0
    assert re.search(r"fail [1-9]", result.stdout), result.stdout


def test_the_bundle_runs_without_node_modules(projects, tmp_path):
    """zot runs dist/index.js with node; nothing in node_modules is needed."""
    project = projects.fresh_copy(tmp_path, "typescript", CAPABILITIES)
    shutil.rmtree(project / "node_modules")
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake()
        assert ext.tool("demo_ext", {"text": "hi"})["content"][0]["text"] == "hi"
        assert ext.shutdown() == 0


@pytest.mark.parametrize("variant", TYPESCRIPT)
def test_ready_comes_at_once_after_hello_ack(projects, variant, record_property):
    """Registrations follow hello_ack at once, inside zot's 250 ms watchdog."""
    project = projects.get(variant, CAPABILITIES)
    with ExtensionProcess(project) as ext:
        ext.read_frame(timeout=20)  # hello, after node (and tsx) started
        hello_ms = (time.monotonic() - ext.started) * 1000
        ext.send({"type": "hello_ack", "protocol_version": 1, "data_dir": str(project)})
        acked = time.monotonic()
        ext.read_until("ready")
        ready_ms = (time.monotonic() - acked) * 1000
        assert ext.shutdown() == 0
    record_property("start_to_hello_ms", round(hello_ms))
    record_property("hello_ack_to_ready_ms", round(ready_ms, 1))
    assert ready_ms < 250


def test_failing_handlers_are_answered_and_not_fatal(projects, tmp_path):
    project = projects.fresh_copy(tmp_path, "typescript", CAPABILITIES)
    handler = project / "src" / "extension.ts"
    source = handler.read_text()
    # (a line of the skeleton, what to insert before it)
    for line, insert in [
        ("  const text = args.trim();", 'if (args === "boom") throw new Error("boom");'),
        (
            "  return uppercase ? text.toUpperCase() : text;",
            'void Promise.reject(new Error("lost")); if (text === "bang") throw new Error("bang");',
        ),
        (
            '  if (typeof line !== "string") {',
            'if (line === "explode") throw new Error("kaboom");',
        ),
    ]:
        assert line in source, line
        source = source.replace(line, f"  {insert}\n{line}")
    handler.write_text(source)
    assert run(["./build"], project).returncode == 0
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake()
        assert ext.command("demo-ext", "boom")["error"] == "demo-ext failed: boom"
        reply = ext.tool("demo_ext", {"text": "bang"})
        assert reply["is_error"] is True
        assert reply["content"][0]["text"] == "demo-ext failed: bang"
        reply = ext.intercept("bash", {"command": "explode"})
        assert reply["block"] is True and "kaboom" in reply["reason"]
        assert ext.tool("demo_ext", {"text": "fine"})["content"][0]["text"] == "fine"
        assert "unhandled: lost" in ext.stderr()
        assert ext.shutdown() == 0
