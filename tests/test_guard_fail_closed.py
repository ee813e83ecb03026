"""A guard that cannot read its rules refuses every bash command and names
the file; it never allows silently, and it tells the user once at start-up.
In every flavour, for a rules file or a policy that is missing, not JSON, not
a JSON object, has an empty pattern, or is over the limit of 1 MiB."""

from __future__ import annotations

import json

import pytest
from conftest import LANGUAGES, build, run
from host import ExtensionProcess

NAME = "demo-ext"
# A policy of many ordinary rules, just over the guard's limit of 1 MiB.
RULES = (
    f'{{"id": "r{i}", "command": ["tool{i}"], "reason": "r", "instead": "i"}}' for i in range(14500)
)
TOO_LARGE = '{"rules": [' + ",".join(RULES) + "]}"
assert 1 << 20 < len(TOO_LARGE) < (1 << 20) + 10_000
BROKEN = {
    "rules missing": ("zot/guard/guard-rules.json", None),
    "policy missing": ("guard-policy.json", None),
    "rules not JSON": ("zot/guard/guard-rules.json", '{"rules": ['),
    "policy not an object": ("guard-policy.json", "[]"),
    "rules empty": ("zot/guard/guard-rules.json", ""),
    # an empty pattern: every engine would read it otherwise (all, some, none)
    "policy with an empty pattern": (
        "guard-policy.json",
        '{"rules": [{"id": "mine", "command": [""], "reason": "r", "instead": "i"}]}',
    ),
    "policy with an empty list entry": ("guard-policy.json", '{"lists": {"mine": ["x", ""]}}'),
    "policy over 1 MiB": ("guard-policy.json", TOO_LARGE),
}


@pytest.mark.parametrize("broken", BROKEN)
@pytest.mark.parametrize("language", LANGUAGES)
def test_a_guard_without_usable_rules_refuses_every_command_naming_the_file(
    projects, tmp_path, language, broken
):
    project = projects.fresh_copy(tmp_path, language, ["guard"])
    name, text = BROKEN[broken]
    if text is None:
        (project / name).unlink()
    else:
        (project / name).write_text(text)
    if language.startswith("go"):  # the template's rules are built into the binary
        result = run(["./build"], project)
        if text is None and name.endswith("guard-rules.json"):  # go:embed finds no file
            assert result.returncode != 0 and "guard-rules.json" in result.stderr, result.stderr
            return
        assert result.returncode == 0, result.stderr
    elif language == "typescript":
        build(project)

    warning = refuses_every_command_and_warns_once(project, tmp_path, name)
    if broken == "policy over 1 MiB":
        assert f"is {len(TOO_LARGE)} bytes, over the guard's limit of 1 MiB" in warning


def refuses_every_command_and_warns_once(project, tmp_path, name: str) -> str:
    """The guard refuses `rm -rf /` and `ls` alike naming rules file `name`,
    warns once at start-up (in zot's window and in the log), and
    ./smoke-test fails naming it: the warning is returned."""
    start = f"{NAME}: the guard cannot use its rules: {name} "
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        _, frames = ext.handshake()
        # The warning goes out once the extension has read its rules, on its
        # own time after ready (zot shows it whenever it comes).
        while not any(f.get("message", "").startswith(start) for f in frames):
            frames.append(ext.read_frame(timeout=10))
        for command in ("rm -rf /", "ls"):
            reply = ext.intercept("bash", {"command": command})
            assert reply.get("block") is True, (command, reply)
            reason = reply["reason"]
            assert reason.startswith(f"refused by {NAME} (unreadable-rules): {name} "), reason
            assert "so the guard refuses every command. Instead, " in reason, reason
        # the guard judges bash command lines only: other tools run
        assert not ext.intercept("read", {"path": "/etc/hosts"}).get("block")
        assert ext.shutdown() == 0
        frames += ext.spontaneous + drain(ext)
        log = ext.stderr()

    warnings = [f for f in frames if f.get("message", "").startswith(start)]
    assert [f["type"] for f in warnings] == ["notify"], frames
    assert warnings[0]["level"] == "warn"
    warning = warnings[0]["message"]
    assert "so the guard refuses every command. Instead, " in warning, warning
    assert log.count(warning) == 1, log

    report = json.loads(run(["./smoke-test", "--json"], project).stdout)
    failed = [c for c in report["checks"] if c["status"] == "fail"]
    assert not report["passed"] and any(name in c["check"] for c in failed), failed
    return warning


def drain(ext: ExtensionProcess) -> list[dict]:
    """The frames the extension wrote before it exited."""
    frames = []
    while True:
        try:
            frames.append(ext.read_frame(timeout=2))
        except EOFError:
            return frames
