"""A team's guard policy: files guard-policy.json names in "include", merged
between the template's rules and the project's own, in every flavour. A
broken include fails closed like a broken rules file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import LANGUAGES, build, run
from host import ExtensionProcess
from robustness import refusals
from test_guard_fail_closed import TOO_LARGE, refuses_every_command_and_warns_once

NAME = "demo-ext"
TEAM = "team-policy/guard-policy.json"
TEAM_POLICY = {
    "about": "Our team's guard policy.",
    "off": ["chmod-wide-open"],  # a template rule the team switches off
    "rules": [
        {
            "id": "team-no-publish",
            "command": ["npm"],
            "subcommand": ["publish"],
            "reason": "publishing is done by the release job",
            "instead": "ask the user to tag a release",
        }
    ],
    "lists": {"power": ["teamoff"]},  # replaces the template's list
}


def write_policy(project: Path, **changes) -> None:
    policy = json.loads((project / "guard-policy.json").read_text())
    policy.update(changes)
    (project / "guard-policy.json").write_text(json.dumps(policy, indent=2))


def with_team(project: Path, language: str, team: dict = TEAM_POLICY, **own) -> None:
    """The team's file in a folder of the project, included by its policy."""
    (project / TEAM).parent.mkdir(exist_ok=True)
    (project / TEAM).write_text(json.dumps(team))
    write_policy(project, include=[TEAM], **own)
    if language.startswith("go") or language == "typescript":
        build(project)  # Go builds guard-policy.json in


def verdicts(project: Path, tmp_path: Path, commands: list[str]) -> dict:
    """Each command's rule ("" when allowed), as the running extension says."""
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake()
        rules = refusals(ext, commands)
        assert ext.shutdown() == 0
    return {command: rule or "" for command, rule in zip(commands, rules, strict=True)}


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_team_policy_adds_rules_the_projects_own_off_switches_off_again(
    projects, tmp_path, language
):
    project = projects.fresh_copy(tmp_path, language, ["guard"])
    commands = ["npm publish", "npm install", "teamoff", "reboot", "chmod -R 777 x", "ls"]
    before = verdicts(project, tmp_path, commands)
    assert before == {
        "npm publish": "",
        "npm install": "",
        "teamoff": "",
        "reboot": "power-off",
        "chmod -R 777 x": "chmod-wide-open",
        "ls": "",
    }

    with_team(project, language)
    assert verdicts(project, tmp_path, commands) == {
        "npm publish": "team-no-publish",  # the team's rule
        "npm install": "",
        "teamoff": "power-off",  # the template's rule, with the team's list
        "reboot": "",
        "chmod -R 777 x": "",  # switched off by the team
        "ls": "",
    }
    # The smoke test accepts the files, and says where a verdict comes from.
    report = json.loads(run(["./smoke-test", "--json", "--no-expect"], project).stdout)
    assert report["passed"], [c for c in report["checks"] if c["status"] == "fail"]
    assert any(c["check"] == TEAM and c["status"] == "pass" for c in report["checks"])
    result = run(["./smoke-test", "--guard", "npm publish", "--guard", "teamoff"], project)
    assert f"rule: team-no-publish\n         from: {TEAM}\n" in result.stdout, result.stdout
    assert "rule: power-off\n         from: zot/guard/guard-rules.json\n" in result.stdout

    with_team(project, language, off=["team-no-publish"])  # the project's own off
    after = verdicts(project, tmp_path, ["npm publish", "teamoff"])
    assert after == {"npm publish": "", "teamoff": "power-off"}


# What is wrong, the file the guard names, and how to make it so.
BROKEN = {
    "missing": (TEAM, lambda p: None),
    "including": (TEAM, lambda p: (p / TEAM).write_text('{"include": ["more.json"]}')),
    "over 1 MiB": (TEAM, lambda p: (p / TEAM).write_text(TOO_LARGE)),
    "climbing out": ("guard-policy.json", lambda p: write_policy(p, include=["../x.json"])),
    "absolute": ("guard-policy.json", lambda p: write_policy(p, include=[str(p / TEAM)])),
}


@pytest.mark.parametrize("broken", BROKEN)
@pytest.mark.parametrize("language", LANGUAGES)
def test_a_broken_include_refuses_every_command_naming_the_file(
    projects, tmp_path, language, broken
):
    project = projects.fresh_copy(tmp_path, language, ["guard"])
    name, breaks = BROKEN[broken]
    (project / TEAM).parent.mkdir()
    (project / TEAM).write_text(json.dumps(TEAM_POLICY))
    write_policy(project, include=[TEAM])
    breaks(project)
    if broken == "missing":
        (project / TEAM).unlink()
    if language.startswith("go") or language == "typescript":
        build(project)
    if broken in ("climbing out", "absolute"):  # a real file, never read
        (project.parent / "x.json").write_text(json.dumps(TEAM_POLICY))

    warning = refuses_every_command_and_warns_once(project, tmp_path, name)
    detail = {
        "missing": "is missing",
        "including": '"include" of its own',
        "over 1 MiB": f"is {len(TOO_LARGE)} bytes, over the guard's limit of 1 MiB",
        "climbing out": "outside the extension's folder",
        "absolute": "outside the extension's folder",
    }[broken]
    assert detail in warning, warning


def test_the_team_policy_of_the_docs_works_as_they_say(projects, tmp_path):
    """docs/team.md's team file and project policy, and its --guard output."""
    page = (Path(__file__).parent.parent / "docs" / "team.md").read_text()
    section = page.split("## A team guard policy")[1].split("\n## ")[0]
    blocks = [b.split("```")[0] for b in section.split("```json\n")[1:]]
    team, own = json.loads(blocks[0]), json.loads(blocks[1])
    project = projects.fresh_copy(tmp_path, "python", ["guard"])
    (project / "team-policy").mkdir()
    (project / "team-policy" / "guard-policy.json").write_text(json.dumps(team))
    (project / "guard-policy.json").write_text(json.dumps(own))
    assert verdicts(
        project,
        tmp_path,
        ["docker push acme/api", "terraform apply", "git branch -D x", "acme-upload ~/.ssh/id_rsa"],
    ) == {
        "docker push acme/api": "team-no-docker-push",
        "terraform apply": "",  # the project's own off
        "git branch -D x": "",  # the team's off
        "acme-upload ~/.ssh/id_rsa": "secret-sent-out",  # the team's network list
    }
    shown = section.split("```console\n$ ./smoke-test --guard 'docker push acme/api'\n")[1]
    result = run(["./smoke-test", "--guard", "docker push acme/api"], project)
    assert result.stdout == shown.split("```")[0], result.stdout


def test_the_smoke_test_fails_on_a_rule_id_two_files_use(projects, tmp_path):
    project = projects.fresh_copy(tmp_path, "python", ["guard"])
    team = {**TEAM_POLICY, "rules": [{**TEAM_POLICY["rules"][0], "id": "power-off"}]}
    with_team(project, "python", team)
    checks = json.loads(run(["./smoke-test", "--json", "--no-expect"], project).stdout)["checks"]
    failed = [c for c in checks if c["status"] == "fail"]
    assert [c["check"] for c in failed] == [TEAM], failed
    assert "a second rule with this id (also in zot/guard/guard-rules.json)" in failed[0]["detail"]


def test_the_smoke_test_names_a_policy_key_the_guard_does_not_read(projects, tmp_path):
    project = projects.fresh_copy(tmp_path, "python", ["guard"])
    with_team(project, "python", {**TEAM_POLICY, "optoin values": {"kubectl": ["-n"]}})
    write_policy(project, ofF=["git-stash-drop"], wrappers={"firejail": {"argz": 1}})
    checks = json.loads(run(["./smoke-test", "--json", "--no-expect"], project).stdout)["checks"]
    failed = {c["check"]: c["detail"] for c in checks if c["status"] == "fail"}
    assert {"guard-policy.json", TEAM} <= set(failed), failed  # and the guard refuses all
    assert failed["guard-policy.json"].startswith('unknown key "ofF": the guard does not read it')
    assert failed["guard-policy.json"].endswith(
        '; "wrappers/firejail/argz": the guard does not read it'
    )
    assert failed[TEAM] == (
        'unknown key "optoin values": the guard does not read it (a policy has about,'
        " off, rules, lists, option values, classes, code, find, one dash or two,"
        " programs, shells, wrappers)"
    )
    # one line for the cases, which an unusable policy cannot judge
    checks = json.loads(run(["./smoke-test", "--json"], project).stdout)["checks"]
    cases = [c for c in checks if c["check"].startswith("guard-cases.json")]
    assert [(c["status"], c["check"]) for c in cases] == [("fail", "guard-cases.json")]
    assert cases[0]["detail"].startswith("not judged: refused by")


def test_the_cases_of_rules_switched_off_are_left_out_and_a_team_brings_its_own(projects, tmp_path):
    project = projects.fresh_copy(tmp_path, "python", ["guard"])
    team = {**TEAM_POLICY, "lists": {}}  # (a list replaced changes what a rule sees)
    with_team(project, "python", team, off=["git-branch-force-delete"])
    team_cases = {"refused": {"npm publish --tag next": "team-no-publish"}}
    team_cases["allowed"] = ["npm pack", "chmod -R 777 build"]  # the team's off
    (project / TEAM).with_name("guard-cases.json").write_text(json.dumps(team_cases))
    checks = json.loads(run(["./smoke-test", "--json"], project).stdout)["checks"]
    assert [c for c in checks if c["status"] == "fail"] == []
    by_check = {c["check"]: (c["status"], c["detail"]) for c in checks}
    # the team's off and the project's, each in one line; the rest judged
    assert by_check["guard-cases.json"] == (
        "skip",
        "16 commands of rules switched off: chmod-wide-open (10), git-branch-force-delete (6)",
    )
    assert by_check["guard-cases.json: 697 commands refused"][0] == "pass"
    cases = "team-policy/guard-cases.json"
    assert by_check[f"{cases}: 1 commands refused"][0] == "pass"
    assert by_check[f"{cases}: 2 commands allowed"][0] == "pass"

    # a case the team's rules get wrong fails, labelled with the team's file
    team_cases["allowed"].append("npm publish")
    (project / TEAM).with_name("guard-cases.json").write_text(json.dumps(team_cases))
    checks = json.loads(run(["./smoke-test", "--json"], project).stdout)["checks"]
    failed = [(c["check"], c["detail"]) for c in checks if c["status"] == "fail"]
    assert failed == [(f"{cases}: must allow", '"npm publish": refused')]


def test_a_team_policy_missing_from_a_submodule_names_the_command_that_fetches_it(
    projects, tmp_path
):
    project = projects.fresh_copy(tmp_path, "python", ["guard"])
    write_policy(project, include=[TEAM])
    (project / ".gitmodules").write_text(
        '[submodule "team-policy"]\n\tpath = team-policy\n\turl = https://example.com/p.git\n'
    )
    checks = json.loads(run(["./smoke-test", "--json", "--no-expect"], project).stdout)["checks"]
    failed = {c["check"]: c["detail"] for c in checks if c["status"] == "fail"}
    assert failed[TEAM] == (
        "missing: the guard refuses every bash command"
        " (it comes from a git submodule: git submodule update --init team-policy)"
    )
    # the guard's own reason says so too, in every language alike
    warning = refuses_every_command_and_warns_once(project, tmp_path, TEAM)
    assert "(from a submodule: git submodule update --init)" in warning
    # CI checks the submodules out with the project
    ci = (project / ".github/workflows/ci.yml").read_text()
    assert "submodules: true" in ci.split("run: ./build")[0]
