"""guard-policy.json is read whole, in every flavour: options that take a
value never hide the subcommand (guard-rules.json's "option values", which a
policy extends), and a key the guard does not read, or one of the wrong
type, makes the file unusable as any broken rules file is."""

from __future__ import annotations

import json

import pytest
from conftest import build
from test_guard_fail_closed import refuses_every_command_and_warns_once
from test_guard_team import TEAM, TEAM_POLICY, verdicts, write_policy

NAMESPACE_RULE = {
    "id": "no-namespace-delete",
    "command": ["kubectl"],
    "subcommand": ["delete"],
    "arg": ["namespace", "namespaces", "ns"],
    "reason": "deleting a namespace deletes everything in it",
    "instead": "ask the user to delete it",
}
# A tool of the user's whose --env takes a value no list of the template knows.
DROP_RULE = {
    "id": "no-drop",
    "command": ["mycli"],
    "subcommand": ["drop"],
    "reason": "drop deletes the table",
    "instead": "ask the user",
}
NAMESPACE_DELETES = [
    "kubectl delete ns staging",
    "kubectl --namespace=prod delete namespace staging",
    "kubectl -n prod delete ns staging",
    "kubectl --context prod -n prod delete namespaces staging",
]
HARMLESS = ["kubectl -n prod get ns", "kubectl --context prod describe namespace x"]
# One flavour per engine (go-sdk and tsx share theirs with go and typescript).
ENGINES = ["python", "typescript", "go", "shell"]


def rebuilt(project, language: str) -> None:
    if language.startswith("go") or language == "typescript":
        build(project)  # as the other policy tests: Go and node bundle what they run


@pytest.mark.parametrize("language", ENGINES)
def test_options_with_values_never_hide_the_subcommand(projects, tmp_path, language):
    project = projects.fresh_copy(tmp_path, language, ["guard"])
    write_policy(project, rules=[NAMESPACE_RULE, DROP_RULE])
    rebuilt(project, language)
    mine = ["mycli --env prod drop users", "mycli drop users"]
    got = verdicts(project, tmp_path, NAMESPACE_DELETES + HARMLESS + mine)
    assert [got[c] for c in NAMESPACE_DELETES] == ["no-namespace-delete"] * 4, got
    assert [got[c] for c in HARMLESS] == ["", ""], got
    # --env's value "prod" is read as the subcommand until the policy says
    assert [got[c] for c in mine] == ["", "no-drop"], got

    write_policy(project, **{"option values": {"mycli": ["--env"]}})
    rebuilt(project, language)
    got = verdicts(project, tmp_path, mine + ["mycli --env prod list"])
    assert list(got.values()) == ["no-drop", "no-drop", ""], got


# A policy that adds to each list of guard-rules.json, and commands each
# addition makes the guard refuse (allowed by the template's lists alone).
ADDITIONS = {
    "rules": [
        {"id": "no-destroy", "command": ["terraform"], "option": ["-destroy"]},
        {"id": "no-drop", "command": ["mytool"], "option": ["-drop"]},
        {"id": "no-danger", "command": ["danger-cmd"]},
    ],
    "wrappers": {"firejail": {"options with value": ["--profile"]}},
    "shells": ["tclsh"],
    "code": {"tclsh": ["-c"]},
    "one dash or two": ["mytool"],
    "classes": {"secret": ["*.pem"]},
    "find": {"widened by": ["-either"]},
    "programs": {"languages": {"python": {"runs": ["sh.run"]}}},
}
for rule in ADDITIONS["rules"]:
    rule.update(reason="it is not for the model", instead="ask the user")
ADDED = {
    "terraform apply --destroy": "no-destroy",
    "terraform -chdir infra apply -destroy=true": "no-destroy",
    "mytool --env prod --drop users": "no-drop",
    "firejail --profile strict danger-cmd": "no-danger",
    "tclsh -c 'rm -rf ~'": "delete-outside-project",
    "cat deploy.pem": "secret-read",
    "find . -name x -either -delete": "find-delete-outside-project",
    "python3 -c 'import sh; sh.run(\"rm -rf ~\")'": "delete-outside-project",
}


@pytest.mark.parametrize("language", ENGINES)
def test_a_policy_adds_to_every_list_of_the_template(projects, tmp_path, language):
    project = projects.fresh_copy(tmp_path, language, ["guard"])
    write_policy(project, rules=ADDITIONS["rules"])
    rebuilt(project, language)
    commands = [*ADDED, "terraform apply", "mytool --env prod list"]
    alone = verdicts(project, tmp_path, commands)
    # the rules of the policy alone: terraform's options take one dash or two
    # in the template's lists, mytool's do not yet, firejail hides its
    # command, and the other lists are the template's
    terraform = {c: r for c, r in ADDED.items() if c.startswith("terraform")}
    assert alone == {**dict.fromkeys(commands, ""), **terraform}
    write_policy(project, **ADDITIONS)
    rebuilt(project, language)
    got = verdicts(project, tmp_path, commands)
    assert got == {**ADDED, "terraform apply": "", "mytool --env prod list": ""}


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("optoin values", {}, 'has a key the guard does not read: "optoin values"'),
        ("off", "git-stash-drop", 'has an "off" that is not a list of rule ids'),
        ("rules", {"id": "x"}, 'has "rules" that is not a list of rules'),
        ("lists", {"power": "off"}, 'has "lists" that is not an object of lists of names'),
        (
            "option values",
            {"mycli": "--env"},
            'has "option values" that is not an object of lists of options',
        ),
        (
            "wrappers",
            {"firejail": {"options with values": ["--profile"]}},
            'has a key the guard does not read: "wrappers/firejail/options with values"',
        ),
        (
            "wrappers",
            {"nohup": {"args": -1}},
            'has "wrappers/nohup/args" that is not a whole number from 0 to 100',
        ),
        ("classes", {"prod": ["/srv/*"]}, 'has a key the guard does not read: "classes/prod"'),
        ("shells", "tclsh", 'has "shells" that is not a list of names'),
    ],
)
@pytest.mark.parametrize("language", ENGINES)
def test_a_key_it_does_not_read_or_of_the_wrong_type_refuses_every_command(
    projects, tmp_path, language, key, value, problem
):
    project = projects.fresh_copy(tmp_path, language, ["guard"])
    write_policy(project, **{key: value})
    rebuilt(project, language)
    warning = refuses_every_command_and_warns_once(project, tmp_path, "guard-policy.json")
    assert f"guard-policy.json {problem}, so the guard refuses every command" in warning


@pytest.mark.parametrize("language", ["python", "shell"])
def test_an_included_file_is_read_whole_too(projects, tmp_path, language):
    project = projects.fresh_copy(tmp_path, language, ["guard"])
    (project / TEAM).parent.mkdir()
    (project / TEAM).write_text(json.dumps({**TEAM_POLICY, "rulez": []}))
    write_policy(project, include=[TEAM])
    warning = refuses_every_command_and_warns_once(project, tmp_path, TEAM)
    assert f'{TEAM} has a key the guard does not read: "rulez"' in warning


@pytest.mark.parametrize("language", ENGINES)
def test_every_engine_asks_the_same_fix_of_a_broken_include(projects, tmp_path, language):
    project = projects.fresh_copy(tmp_path, language, ["guard"])
    fixes = {
        "team-policy/guard-policy.json": 'fix guard-policy.json ("include":'
        ' ["team-policy/guard-policy.json"])',
        ("../team/guard-policy.json",): "name a file inside the extension's folder",
    }
    for include, fix in fixes.items():
        write_policy(project, include=include if isinstance(include, str) else list(include))
        rebuilt(project, language)
        warning = refuses_every_command_and_warns_once(project, tmp_path, "guard-policy.json")
        assert f"Instead, {fix}" in warning
