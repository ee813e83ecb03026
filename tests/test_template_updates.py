"""A project is told when the template moves on: the CI workflow's template
job, the opt-in update workflow that opens a pull request, and
scripts/check-projects over many projects. Real git repositories, the real
copier; only GitHub (gh, the runner) is played by the test."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, build, run, smoke
from test_ci_workflow import actionlint  # noqa: F401 - the fixture
from test_docs import scripted_copies
from test_update import (
    clone_template,
    commit_all,
    edit,
    generate,
    git,
    release,
    template_changes_python,
    update,
)

BIN = os.path.dirname(sys.executable)  # copier, shellcheck
# What each release's CHANGELOG.md section says, to tell them apart
OLD_LINE = "- Release 99.0.0 of the test: already in the project."
NEW_LINE = "- Release 99.1.0 of the test: the command's usage says where TEXT goes."


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> Path:
    """The template as two releases newer than any real one: v99.0.0 (this
    checkout) and v99.1.0 (a change to the handler), each with its section
    of CHANGELOG.md, as a maintainer would write it."""
    repo = clone_template(tmp_path_factory.mktemp("template"))
    changelog = repo / "CHANGELOG.md"
    edit(
        changelog,
        "## [Unreleased]\n",
        f"## [Unreleased]\n\n## [99.0.0] - 2099-01-01\n\n{OLD_LINE}\n",
    )
    release(repo, "v99.0.0")
    template_changes_python(repo)
    edit(
        changelog,
        "## [Unreleased]\n",
        f"## [Unreleased]\n\n## [99.1.0] - 2099-02-01\n\n{NEW_LINE}\n",
    )
    release(repo, "v99.1.0")
    return repo


def job(project: Path, workflow: str, name: str) -> dict:
    jobs = yaml.safe_load((project / ".github" / "workflows" / workflow).read_text())["jobs"]
    return jobs[name]


def run_job(project: Path, spec: dict, tmp_path: Path, **env: str) -> tuple[int, str, str]:
    """The job's `run` steps, in order, as GitHub's runner runs them (bash
    -eo pipefail, GITHUB_ACTIONS, a step summary file): (status, output,
    summary). The step that installs copier is not run: the suite's copier
    is the version it pins."""
    summary = tmp_path / "summary.md"
    summary.unlink(missing_ok=True)
    environment = {
        **os.environ,
        **{key: str(value) for key, value in spec.get("env", {}).items()},
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
        # a fresh runner: no git identity
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        **env,
    }
    output = ""
    for step in spec["steps"]:
        if "run" not in step:
            assert step["uses"].startswith("actions/checkout@"), step
            continue
        if step["run"].startswith("pipx install copier=="):
            assert step["run"] == f"pipx install copier=={version('copier')}"
            continue
        command = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]]
        result = run(command, project, env=environment)
        output += result.stdout + result.stderr
        if result.returncode != 0:
            return result.returncode, output, ""
    return 0, output, summary.read_text() if summary.exists() else ""


def test_the_template_job_reports_a_newer_release_with_what_changed(releases, tmp_path):
    project = generate(releases, tmp_path / "ext", "v99.0.0", capabilities=["commands", "tools"])
    spec = job(project, "ci.yml", "template")
    assert spec["env"] == {"TEMPLATE_BEHIND": "warn"}  # the default: a warning
    assert (
        "pull_request" in yaml.safe_load((project / ".github/workflows/ci.yml").read_text())[True]
    )

    status, output, summary = run_job(project, spec, tmp_path)
    assert status == 0, output
    assert "A newer release of the template is out: 99.1.0 (this project: 99.0.0)." in output
    assert "::warning title=Template 99.1.0 is out::" in output
    # the changelog lines after the project's release, and only those
    assert NEW_LINE in output and "## [99.1.0] - 2099-02-01" in output
    assert OLD_LINE not in output and "## [0." not in output
    assert NEW_LINE in summary and OLD_LINE not in summary

    status, output, _ = run_job(project, spec, tmp_path, TEMPLATE_BEHIND="fail")
    assert status == 1, output
    assert "::error title=Template 99.1.0 is out::" in output and NEW_LINE in output

    status, output, _ = run_job(project, spec, tmp_path, TEMPLATE_BEHIND="yes")
    assert status == 2 and "TEMPLATE_BEHIND must be warn or fail, not 'yes'" in output

    # the same project at the newest release: nothing to report
    result = update(project, "--vcs-ref", "v99.1.0")
    assert result.returncode == 0, result.stderr
    commit_all(project, "update to 99.1.0")
    for behind in ("warn", "fail"):
        status, output, summary = run_job(project, spec, tmp_path, TEMPLATE_BEHIND=behind)
        assert status == 0, output
        assert output.strip() == "This project is at the newest release of the template (99.1.0)."
        assert summary == ""


def test_the_template_job_warns_when_it_cannot_check(releases, tmp_path):
    """A template address CI cannot reach fails the job only when asked to."""
    project = generate(releases, tmp_path / "ext", "v99.0.0", capabilities=["commands"])
    answers = project / ".copier-answers.yml"
    answers.write_text(answers.read_text().replace(str(releases), str(tmp_path / "gone")))
    commit_all(project, "the template moved")
    spec = job(project, "ci.yml", "template")
    status, output, _ = run_job(project, spec, tmp_path)
    assert status == 0, output
    assert "::warning title=Template release not checked::" in output
    status, output, _ = run_job(project, spec, tmp_path, TEMPLATE_BEHIND="fail")
    assert status == 1 and "Template release not checked" in output


@pytest.fixture
def github(tmp_path) -> tuple[Path, Path]:
    """A stand-in for gh, which records how it was called (and the pull
    request's body); (its folder, its log)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "gh.log"
    gh = bin_dir / "gh"
    gh.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$@\" >>'{log}'\n"
        'while [ $# -gt 1 ]; do [ "$1" = --body-file ] && cat "$2" >>' + f"'{log}'; shift; done\n"
    )
    gh.chmod(0o755)
    return bin_dir, log


def checkout(origin: Path, dst: Path, branch: str = "main") -> Path:
    """What actions/checkout gives a job: a fresh clone of the repository."""
    git(origin.parent, "clone", "--quiet", "--branch", branch, str(origin), str(dst))
    return dst


@pytest.mark.parametrize("mine", [False, True], ids=["clean", "conflict"])
def test_the_update_workflow_opens_one_pull_request_per_release(releases, tmp_path, github, mine):
    bin_dir, gh_log = github
    project = generate(
        releases, tmp_path / "ext", "v99.0.0", capabilities=["commands", "tools"], update_pr=True
    )
    if mine:  # the lines the template changes in 99.1.0
        edit(project / "main.py", "Sends TEXT to the model.", "Sends TEXT to the model, my way.")
        commit_all(project, "my usage text")
    git(project, "branch", "-M", "main")
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", str(origin))
    git(project, "push", "--quiet", str(origin), "main")
    spec = job(project, "template-update.yml", "update")
    assert "secrets.TEMPLATE_UPDATE_TOKEN" in spec["env"]["GH_TOKEN"]
    path = f"{bin_dir}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}"

    first = checkout(origin, tmp_path / "run1")
    status, output, _ = run_job(first, spec, tmp_path, PATH=path, GH_TOKEN="token")
    assert status == 0, output
    call = gh_log.read_text()
    title = "Update from the template: 99.0.0 to 99.1.0" + (", with conflicts" if mine else "")
    args = ["pr", "create", "--base", "main", "--head", "template-update/99.1.0"]
    assert call.startswith("\n".join([*args, "--title", title, "--body-file", ""]))
    assert NEW_LINE in call and OLD_LINE not in call
    assert ("- `main.py`" in call) == mine and ("Conflicts" in call) == mine

    # the branch is pushed with the update, committed; main is untouched
    pushed = checkout(origin, tmp_path / "pushed", "template-update/99.1.0")
    assert "_commit: v99.1.0" in (pushed / ".copier-answers.yml").read_text()
    handler = (pushed / "main.py").read_text()
    assert ("<<<<<<< before updating" in handler) == mine
    assert "as a new prompt" in handler
    assert git(pushed, "status", "--porcelain") == ""
    assert git(pushed, "log", "-1", "--format=%an %s") == f"github-actions[bot] {title}"
    assert "_commit: v99.0.0" in git(origin, "show", "main:.copier-answers.yml")

    # CI on the pull request: the template job shows each conflict
    status, output, _ = run_job(pushed, job(pushed, "ci.yml", "template"), tmp_path)
    assert (status == 1) == mine, output
    if mine:
        line = handler.splitlines().index("<<<<<<< before updating") + 1
        assert f"::error file=main.py,line={line},title=Conflict from copier update::" in output

    # a week later: proposed already, no second pull request
    gh_log.unlink()
    status, output, _ = run_job(checkout(origin, tmp_path / "run2"), spec, tmp_path, PATH=path)
    assert status == 0 and "proposed already" in output, output
    assert not gh_log.exists()


def test_the_update_workflow_does_nothing_at_the_newest_release(releases, tmp_path, github):
    bin_dir, gh_log = github
    project = generate(
        releases, tmp_path / "ext", "v99.1.0", capabilities=["tools"], update_pr=True
    )
    path = f"{bin_dir}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}"
    spec = job(project, "template-update.yml", "update")
    status, output, _ = run_job(project, spec, tmp_path, PATH=path)
    assert status == 0, output
    assert "newest release of the template (99.1.0)" in output
    assert not gh_log.exists()
    assert "template-update" not in git(project, "branch", "--all")


def test_the_update_workflow_is_opt_in_and_lint_clean(tmp_path, actionlint):  # noqa: F811
    from conftest import render

    plain = render(tmp_path / "plain")
    assert not (plain / ".github" / "workflows" / "template-update.yml").exists()
    assert (plain / ".github" / "template-update").is_file()
    project = render(tmp_path / "ext", update_pr=True)
    workflows = sorted((project / ".github" / "workflows").iterdir())
    assert [w.name for w in workflows] == ["ci.yml", "template-update.yml"]
    result = run([*actionlint, *map(str, workflows)], project)
    assert result.returncode == 0, result.stdout + result.stderr
    script = ".github/template-update"
    assert os.access(project / script, os.X_OK)
    for check in (["shellcheck", "-s", "sh", script], ["shfmt", "-d", script]):
        tool = shutil.which(check[0], path=BIN) or shutil.which(check[0]) or check[0]
        result = run([tool, *check[1:]], project)
        assert result.returncode == 0, result.stdout + result.stderr
    # no workflow without CI, whatever the answer
    assert not (render(tmp_path / "no-ci", ci=False, update_pr=True) / ".github").exists()


# --- scripts/check-projects ------------------------------------------------


def table(output: str) -> dict[str, list[str]]:
    """The printed table, by project: [template, newest, status]."""
    lines = output.splitlines()
    assert re.match(r"project +template +newest +status$", lines[0]), output
    return {
        cells[0]: cells[1:] for cells in (re.split(r"  +", line, maxsplit=3) for line in lines[1:])
    }


def test_check_projects_reports_and_updates_three_projects(releases, tmp_path):
    behind = generate(releases, tmp_path / "behind", "v99.0.0", capabilities=["commands"])
    current = generate(releases, tmp_path / "current", "v99.1.0", language="shell")
    edited = generate(releases, tmp_path / "edited", "v99.0.0", capabilities=["commands"])
    edit(edited / "main.py", "Sends TEXT to the model.", "Sends TEXT to the model, my way.")
    commit_all(edited, "my usage text")
    script = str(ROOT / "scripts" / "check-projects")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    # a repository by its URL, the others by folder; the list on stdin
    listed = f"# our extensions\nbehind\ncurrent\n\nfile://{edited}\n"
    result = run([script], tmp_path, env=env, input=listed)
    assert result.returncode == 0, result.stdout + result.stderr
    assert table(result.stdout) == {
        "behind": ["99.0.0", "99.1.0", "behind"],
        "current": ["99.1.0", "99.1.0", "up to date"],
        f"file://{edited}": ["99.0.0", "99.1.0", "behind"],
    }
    assert "_commit: v99.0.0" in (behind / ".copier-answers.yml").read_text()  # only checked

    clones = tmp_path / "clones"
    args = ["--update", "--vcs-ref", "v99.1.0", "--into", str(clones)]
    result = run([script, *args, "behind", "current", f"file://{edited}"], tmp_path, env=env)
    assert result.returncode == 1, result.stdout + result.stderr  # a conflict to resolve
    rows = table(result.stdout)
    assert rows["behind"] == ["99.0.0", "99.1.0", "updated to v99.1.0"]
    assert rows["current"] == ["99.1.0", "99.1.0", "up to date"]
    assert rows[f"file://{edited}"] == [
        "99.0.0",
        "99.1.0",
        f"updated to v99.1.0, conflicts: main.py (in {clones}/edited)",
    ]
    assert "as a new prompt" in (behind / "main.py").read_text()
    assert "M .copier-answers.yml" in git(behind, "status", "--porcelain")  # not committed
    assert "UU main.py" in git(clones / "edited", "status", "--porcelain").splitlines()
    assert git(current, "status", "--porcelain") == ""

    result = run([script, "nowhere"], tmp_path, env=env)
    assert result.returncode == 1
    assert table(result.stdout)["nowhere"][:2] == ["-", "-"]
    assert "error: " in table(result.stdout)["nowhere"][2]


# --- docs/team.md --------------------------------------------------------------


def test_the_team_answers_file_of_the_docs_renders_a_project(tmp_path):
    """As written, with the placeholder address pointing at this checkout."""
    page = ROOT / "docs" / "team.md"
    answers = re.search(r"```yaml\n(# team-answers\.yml\b.*?)```", page.read_text(), re.DOTALL)
    assert answers, "no team-answers.yml in docs/team.md"
    (tmp_path / "team-answers.yml").write_text(answers[1])
    team = yaml.safe_load(answers[1])
    commands = [c for c in scripted_copies(page) if "--data-file team-answers.yml" in c]
    assert commands, "docs/team.md shows no scripted copy with the team answers"
    copier_bin = shutil.which("copier", path=BIN) or "copier"
    for command in commands:
        argv = shlex.split(command.replace("gh:org/zot-ext-template", str(ROOT)))
        argv[:2] = [copier_bin, "copy", "--vcs-ref", "HEAD", "--quiet"]
        for extra in ([], ["-d", "capabilities=[guard]"]):  # -d wins over the file
            dst = tmp_path / f"{argv[-1]}{len(extra)}"
            result = run([*argv[:-1], *extra, str(dst)], tmp_path, stdin=subprocess.DEVNULL)
            assert result.returncode == 0, f"{command}\n{result.stderr}"
            recorded = yaml.safe_load((dst / ".copier-answers.yml").read_text())
            expected = {**team, "capabilities": ["guard"]} if extra else team
            assert {key: recorded[key] for key in team} == expected
            assert (dst / ".github" / "workflows" / "template-update.yml").is_file()
        build(dst)
        smoke(dst)
