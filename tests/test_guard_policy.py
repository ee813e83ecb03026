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
