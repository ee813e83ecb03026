"""A project is told when the template moves on: the CI workflow's template
job, the opt-in update workflow that opens a pull request, and
scripts/check-projects over many projects. Real git repositories, the real
copier; only GitHub (gh, the runner) is played by the test."""

from __future__ import annotations

import json
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
from test_guard_team import TEAM_POLICY
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
    summary). The steps that set up Python and install copier are not run:
    the suite's copier is the version .github/requirements.txt pins."""
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
            assert step["uses"].split("@")[0] in ("actions/checkout", "actions/setup-python"), step
            continue
        if step["run"].startswith("pip install -r .github/requirements.txt"):
            pins = (project / ".github" / "requirements.txt").read_text().split()
            assert f"copier=={version('copier')}" in pins
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


# --- a team's guard policy, named at copy time ---------------------------------

# git refuses file:// submodules unless told (CVE-2022-39253); a real team's
# policy is an https or ssh URL
FILE_SUBMODULES = {
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "protocol.file.allow",
    "GIT_CONFIG_VALUE_0": "always",
}


def policy_repository(folder: Path) -> Path:
    """A team's policy in a repository of its own: a rule switched off, one
    of its own, and its cases."""
    folder.mkdir()
    policy = {"about": "The team's guard policy.", "off": ["git-branch-force-delete"]}
    policy["rules"] = TEAM_POLICY["rules"]  # team-no-publish
    cases = {"refused": {"npm publish": "team-no-publish"}, "allowed": ["npm pack"]}
    (folder / "guard-policy.json").write_text(json.dumps(policy, indent=2) + "\n")
    (folder / "guard-cases.json").write_text(json.dumps(cases, indent=2) + "\n")
    git(folder, "init", "--quiet")
    commit_all(folder, "the team's policy")
    return folder


def smoke_checks(project: Path) -> dict[str, tuple[str, str]]:
    result = run(["./smoke-test", "--json"], project)
    return {c["check"]: (c["status"], c["detail"]) for c in json.loads(result.stdout)["checks"]}


def test_a_team_policy_named_at_copy_comes_from_its_submodule_and_is_told_when_behind(
    releases, tmp_path
):
    url = policy_repository(tmp_path / "zot-guard-policy").as_uri()
    project = generate(
        releases, tmp_path / "ext", "v99.0.0", capabilities=["guard"], team_policy=url
    )
    assert json.loads((project / "guard-policy.json").read_text())["include"] == [
        "team-policy/guard-policy.json"
    ]
    readme = (project / "README.md").read_text()
    assert f"({url})" in readme and "git submodule update --remote team-policy" in readme
    dependabot = yaml.safe_load((project / ".github" / "dependabot.yml").read_text())
    assert [u["package-ecosystem"] for u in dependabot["updates"]] == [
        "github-actions",
        "pip",
        "gitsubmodule",
    ]
    template_job = job(project, "ci.yml", "template")
    assert template_job["steps"][0]["with"] == {"submodules": True}

    # before the submodule: the smoke test says how to add it
    checks = smoke_checks(project)
    assert checks["team-policy/guard-policy.json"] == (
        "fail",
        "missing: the guard refuses every bash command"
        + f" (your team's policy: git submodule add {url} team-policy)",
    )

    # the command after copy adds it; the team's off and cases hold
    environment = {**os.environ, **FILE_SUBMODULES}
    added = run(
        ["git", "submodule", "add", "--quiet", url, "team-policy"], project, env=environment
    )
    assert added.returncode == 0, added.stderr
    commit_all(project, "the team's policy")
    checks = smoke_checks(project)
    assert [name for name, (status, _) in checks.items() if status == "fail"] == []
    assert checks["guard-cases.json"] == (
        "skip",
        "6 commands of rules switched off: git-branch-force-delete (6)",
    )
    assert checks["team-policy/guard-cases.json: 1 commands refused"][0] == "pass"
    assert (project / ".gitmodules").is_file()  # what Dependabot's gitsubmodule reads

    # the template job: up to date with the policy, then the team moves on
    status, output, _ = run_job(project, template_job, tmp_path, **FILE_SUBMODULES)
    assert status == 0 and "team-policy" not in output, output
    team = Path(url.removeprefix("file://"))
    edit(team / "guard-policy.json", '"npm"', '"npm", "pnpm"')
    commit_all(team, "pnpm publish too")
    status, output, summary = run_job(project, template_job, tmp_path, **FILE_SUBMODULES)
    assert status == 0, output
    assert "The remote of team-policy has commits this project has not taken:" in output
    assert re.search(r"^  [0-9a-f]{7,} pnpm publish too$", output, re.MULTILINE), output
    assert (
        "::warning title=team-policy is behind::take them:"
        " git submodule update --remote team-policy, then commit"
    ) in output
    assert "`git submodule update --remote team-policy`" in summary
    status, output, _ = run_job(
        project, template_job, tmp_path, TEMPLATE_BEHIND="fail", **FILE_SUBMODULES
    )
    assert status == 1, output

    # taken as the README says: nothing to report
    taken = run(["git", "submodule", "update", "--remote", "team-policy"], project, env=environment)
    assert taken.returncode == 0, taken.stderr
    commit_all(project, "the team's newer policy")
    status, output, _ = run_job(project, template_job, tmp_path, **FILE_SUBMODULES)
    assert status == 0 and "team-policy" not in output, output
    # a clone without the submodule: said, not skipped
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", str(project), str(clone))
    status, output, _ = run_job(clone, template_job, tmp_path, **FILE_SUBMODULES)
    assert (
        "::warning title=team-policy not checked::it is not checked out:"
        " git submodule update --init team-policy"
    ) in output


def test_a_project_without_a_team_policy_has_no_submodule_to_keep_current(tmp_path):
    from conftest import render

    project = render(tmp_path / "ext", language="python", capabilities=["guard"])
    assert "include" not in json.loads((project / "guard-policy.json").read_text())
    dependabot = yaml.safe_load((project / ".github" / "dependabot.yml").read_text())
    ecosystems = {u["package-ecosystem"]: u["directory"] for u in dependabot["updates"]}
    assert ecosystems == {"github-actions": "/", "pip": "/.github"}
    assert "team-policy" not in (project / "README.md").read_text()


def test_a_template_given_as_a_relative_path_is_recorded_as_an_absolute_one(releases, tmp_path):
    copier_bin = shutil.which("copier", path=BIN) or "copier"
    relative = os.path.relpath(releases, tmp_path)
    result = run(
        [
            copier_bin,
            "copy",
            "--defaults",
            "--vcs-ref",
            "v99.0.0",
            "-d",
            "capabilities=[tools]",
            relative,
            "ext",
        ],
        tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    assert (
        f"The template was given as a relative path ({relative}): .copier-answers.yml\n"
        f"records it as {releases}, where copier update will look for it."
    ) in result.stderr
    project = tmp_path / "ext"
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["_src_path"] == str(releases)
    git(project, "init", "--quiet")
    commit_all(project, "generated")
    checked = run([copier_bin, "check-update", "--output-format", "json", "."], project)
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["latest_version"] == "99.1.0"


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


def test_the_team_defaults_of_the_docs_serve_every_language(tmp_path):
    """docs/team.md's settings file and its scripted copies, as written, with
    the placeholder addresses pointing at this checkout and at a policy
    repository of the test's."""
    page = (ROOT / "docs" / "team.md").read_text()
    found = re.search(r"```yaml\n(# team-defaults\.yml\b.*?)```", page, re.DOTALL)
    assert found, "no team-defaults.yml in docs/team.md"
    settings = found[1]
    placeholder = yaml.safe_load(settings)["defaults"]["team_policy"]
    url = policy_repository(tmp_path / "zot-guard-policy").as_uri()
    (tmp_path / "team-defaults.yml").write_text(settings.replace(placeholder, url))
    prefix = "COPIER_SETTINGS_PATH=team-defaults.yml copier copy --defaults "
    text = page.replace("\\\n", " ")
    commands = [
        " ".join(line.split())
        for block in re.findall(r"```sh\n(.*?)```", text, re.DOTALL)
        for line in block.splitlines()
        if line.startswith(prefix)
    ]
    assert len(commands) >= 2, "docs/team.md shows no scripted copies with the team's defaults"
    copier_bin = shutil.which("copier", path=BIN) or "copier"
    environment = {**os.environ, **FILE_SUBMODULES, "COPIER_SETTINGS_PATH": "team-defaults.yml"}
    languages = set()
    for command in commands:
        argv = shlex.split(command.removeprefix("COPIER_SETTINGS_PATH=team-defaults.yml "))
        argv = [arg.replace("gh:org/zot-ext-template", str(ROOT)) for arg in argv]
        argv[:2] = [copier_bin, "copy", "--vcs-ref", "HEAD", "--quiet"]
        result = run(argv, tmp_path, env=environment, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, f"{command}\n{result.stderr}"
        project = tmp_path / argv[-1]
        recorded = yaml.safe_load((project / ".copier-answers.yml").read_text())
        languages.add(recorded["language"])
        assert recorded["capabilities"] == ["commands", "tools", "guard"]
        assert recorded["team_policy"] == url and recorded["update_pr"] is True
        if recorded["language"] == "go":  # the pattern, with the project's name
            assert recorded["go_module"] == f"github.com/acme/{recorded['name']}"
            assert (
                f"module github.com/acme/{recorded['name']}\n" in (project / "go.mod").read_text()
            )
        else:  # a question not asked leaves its default unused
            assert "go_module" not in recorded
        git(project, "init", "--quiet")
        added = run(
            ["git", "submodule", "add", "--quiet", url, "team-policy"], project, env=environment
        )
        assert added.returncode == 0, added.stderr
        build(project)
        smoke(project)
    assert languages == {"go", "python", "typescript"}
