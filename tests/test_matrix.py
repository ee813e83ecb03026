"""Every language x every capability combination: render, build, lint, smoke."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys

import pytest
from conftest import (
    CAPABILITIES,
    COMBINATIONS,
    FLAVOURS,
    HANDLER,
    LANGUAGES,
    NO_PROCESS,
    VARIANTS,
    combo_id,
    render,
    run,
    smoke,
)

BIN = os.path.dirname(sys.executable)  # ruff, shellcheck, shfmt live here
# ruff's default rules plus pycodestyle warnings, isort, bugbear, pyupgrade.
RUFF_RULES = ["--target-version", "py39", "--extend-select", "W,I,B,UP"]

MATRIX = [
    pytest.param(language, caps, id=f"{language}-{combo_id(caps)}")
    for language in LANGUAGES
    for caps in COMBINATIONS
]
# The projects that start a process (a skills-only one has nothing to build).
PROCESS_MATRIX = [param for param in MATRIX if param.values[1] != NO_PROCESS]


def tool(name: str) -> str:
    return shutil.which(name, path=BIN) or shutil.which(name) or name


@pytest.mark.parametrize(("language", "capabilities"), PROCESS_MATRIX)
def test_renders_builds_and_passes_its_smoke_test(projects, language, capabilities):
    project = projects.get(language, capabilities)

    variant = VARIANTS[language]
    manifest = json.loads((project / "extension.json").read_text())
    skills = {"skills": ["skills/demo-ext"]} if "skills" in capabilities else {}
    assert manifest == {
        "name": "demo-ext",
        "version": "0.1.0",
        "exec": variant.exec,
        "args": list(variant.args),
        "language": variant.language,
        "description": "A zot extension",
        **skills,
        "enabled": True,
    }
    for executable in (*variant.executables, "build", "smoke-test"):
        assert os.access(project / executable, os.X_OK), executable
    others = set(HANDLER.values()) - {HANDLER[language]}
    assert not [name for name in others if (project / name).exists()]
    json.loads((project / "smoke.json").read_text())

    result = run(["./smoke-test", "--json"], project)
    report = json.loads(result.stdout)
    failed = [c for c in report["checks"] if c["status"] == "fail"]
    assert result.returncode == 0 and report["passed"], (failed, result.stderr)
    assert report["counts"]["fail"] == 0
    assert report["ready_ms"] is not None


@pytest.mark.parametrize("language", LANGUAGES)
def test_smoke_test_passes_against_an_older_host(projects, language):
    """As zot 0.1.62 answers: no capabilities in hello_ack, so no tool_cancel,
    no panels opened by tools, no submit, no before_agent_start."""
    project = projects.get(language, [c for c in CAPABILITIES if c not in NO_PROCESS])
    report = smoke(project, "--old-host")
    checks = {c["check"]: c for c in report["checks"]}
    older = [c for c in checks if "0.1.62" in c]
    assert older, checks  # the ask tool answers at once, the prompt is skipped
    assert all(checks[c]["status"] in ("pass", "skip") for c in older), older


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_skills_only_project_runs_no_process(tmp_path, language):
    project = render(tmp_path / "skills", capabilities=["skills"], **FLAVOURS[language])
    assert sorted(p.name for p in project.iterdir() if p.name != ".github") == [
        ".copier-answers.yml",
        ".gitattributes",
        ".gitignore",
        "README.md",
        "extension.json",
        "skills",
        "smoke-test",
        "zot",
    ]
    manifest = json.loads((project / "extension.json").read_text())
    assert manifest == {
        "name": "demo-ext",
        "version": "0.1.0",
        "description": "A zot extension",
        "skills": ["skills/demo-ext"],
        "enabled": True,
    }
    skill = (project / "skills" / "demo-ext" / "SKILL.md").read_text()
    when = "A zot extension. Use when the user asks for this or names the demo-ext skill."
    assert skill.startswith(f'---\nname: demo-ext\ndescription: "{when}"\n---\n')
    report = smoke(project)
    statuses = {c["check"]: c["status"] for c in report["checks"]}
    assert statuses == {
        'skill "skills/demo-ext"': "pass",
        "extension.json without exec": "pass",
    }
    # a skill without a description is refused
    (project / "skills" / "demo-ext" / "SKILL.md").write_text("---\nname: x\n---\n\nBody.\n")
    result = run(["./smoke-test", "--json"], project)
    assert result.returncode == 1, result.stdout
    assert "needs a description" in result.stdout


@pytest.mark.parametrize("language", LANGUAGES)
def test_smoke_test_passes_in_a_shared_process_group(projects, language):
    """As zot 0.1.62 starts it: in the host's process group, not one of its own."""
    project = projects.get(language, CAPABILITIES)
    report = smoke(project, "--shared-group")
    assert any(c["check"] == "no child processes left" for c in report["checks"])


@pytest.mark.parametrize(
    ("language", "capabilities"),
    [param for param in PROCESS_MATRIX if VARIANTS[param.values[0]].unit_tests],
)
def test_own_unit_tests_pass(projects, language, capabilities):
    project = projects.get(language, capabilities)
    result = run(list(VARIANTS[language].unit_tests), project)
    assert result.returncode == 0, result.stdout + result.stderr
    if VARIANTS[language].language == "go":
        assert result.stdout.startswith("ok "), result.stdout
    elif language == "python":
        # unittest reports on stderr: "Ran N tests" ... "OK"
        assert re.search(r"Ran [1-9][0-9]* tests?", result.stderr), result.stderr
        assert result.stderr.rstrip().endswith("OK"), result.stderr
    elif language == "shell":
        assert re.match(r"ok    ", result.stdout), result.stdout
        # the user's checks, then a line of the template's own tests (the guard's)
        assert "FAIL" not in result.stdout and "\nall passed\n" in result.stdout
        assert ("\nok    zot/guard: " in result.stdout) == ("guard" in capabilities)
    else:
        # node's test runner closes with "# pass N" / "# fail 0" (or "ℹ pass N")
        assert re.search(r"pass [1-9]", result.stdout), result.stdout
        assert re.search(r"fail 0$", result.stdout, re.MULTILINE), result.stdout
        # then one line per file of the template's own tests
        assert "\nok    zot/runtime.test.ts: " in result.stdout, result.stdout


@pytest.mark.parametrize(("language", "capabilities"), PROCESS_MATRIX)
def test_generated_code_is_formatted_and_lint_clean(projects, language, capabilities):
    project = projects.get(language, capabilities)
    if language == "python":
        checks = [
            [tool("ruff"), "format", "--check", "--diff", "."],
            [tool("ruff"), "check", "--no-cache", *RUFF_RULES, "."],
        ]
    elif VARIANTS[language].language == "go":
        checks = [
            [tool("gofmt"), "-l", "-d", "."],  # prints the files it would change
            [tool("go"), "vet", "./..."],
        ]
    elif VARIANTS[language].language == "typescript":
        # ./build ran tsc under "strict"; prettier checks the formatting
        assert json.loads((project / "tsconfig.json").read_text())["compilerOptions"]["strict"]
        checks = [["npm", "run", "--silent", "format:check"], [tool("shfmt"), "-d", "build"]]
    else:
        scripts = sorted(path.name for path in project.glob("*.sh"))
        checks = [
            [tool("shellcheck"), "-x", *scripts],
            [tool("shfmt"), "-d", *scripts],
        ]
    starts = ["start"] if (project / "start").exists() else []
    checks.append([tool("shellcheck"), "-s", "sh", "build", *starts])
    for check in checks:
        result = run(check, project)
        assert result.returncode == 0, f"{check}:\n{result.stdout}{result.stderr}"
        if check[0].endswith("gofmt"):
            assert not result.stdout, f"not gofmt-clean:\n{result.stdout}"
