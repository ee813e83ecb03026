"""`copier update` keeps users' work: real git repositories, real copier."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import copier
import pytest
from conftest import FLAVOURS, ROOT, VARIANTS, build, differences, run, smoke

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    )
    return result.stdout.strip()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


def clone_template(tmp_path: Path) -> Path:
    """A clone of this repository with the working tree committed on top."""
    repo = tmp_path / "template"
    git(ROOT, "clone", "--quiet", "--no-hardlinks", str(ROOT), str(repo))
    files = git(ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    for name in filter(None, files.split("\0")):
        source = ROOT / name
        if source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
        elif not source.exists():
            (repo / name).unlink(missing_ok=True)
    git(repo, "add", "--all")
    if git(repo, "status", "--porcelain"):
        git(repo, "commit", "--quiet", "-m", "working tree")
    return repo


def release(repo: Path, tag: str) -> None:
    git(repo, "add", "--all")
    if git(repo, "status", "--porcelain"):
        git(repo, "commit", "--quiet", "-m", f"release {tag}")
    git(repo, "tag", tag)


def generate(template: Path, dst: Path, ref: str, **answers) -> Path:
    """Copy at `ref`, then commit the project as a user would."""
    answers.setdefault("name", "demo-ext")
    copier.run_copy(str(template), str(dst), data=answers, defaults=True, vcs_ref=ref, quiet=True)
    git(dst, "init", "--quiet")
    commit_all(dst, "generated")
    return dst


def edit_all(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))


def commit_all(project: Path, message: str) -> None:
    git(project, "add", "--all")
    git(project, "commit", "--quiet", "--allow-empty", "-m", message)


def update(project: Path, *args: str) -> subprocess.CompletedProcess:
    """The real `copier update` command line, as users run it."""
    copier_bin = shutil.which("copier", path=os.path.dirname(sys.executable)) or "copier"
    return run([copier_bin, "update", "--defaults", *args], project)


# --- user edits and template changes, per language ----------------------------


def user_edits_python(project: Path) -> None:
    """Typical edits: new logic, a second command and tool, more smoke cases.

    The new handlers go after the first command, so a capability added later
    (its code comes at the end) does not collide with them.
    """
    handler = project / "main.py"
    edit(handler, "Answer briefly and concretely:", "Answer in one sentence:")
    edit(
        handler,
        "\n\nTOOL_SCHEMA = {\n",
        "\n\n"
        '@ext.command("shout", "Shout TEXT")\n'
        "def shout(args: str) -> dict:\n"
        "    return display(args.upper())\n"
        "\n\n"
        'COUNT_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, '
        '"required": ["text"]}\n'
        "\n\n"
        '@ext.tool("count_words", "Count the words of a text.", COUNT_SCHEMA)\n'
        "def count_words(args: object) -> str:\n"
        '    if not isinstance(args, dict) or not isinstance(args.get("text"), str):\n'
        "        raise InvalidArguments('\"text\" must be a string')\n"
        '    return str(len(args["text"].split()))\n'
        "\n\n"
        "TOOL_SCHEMA = {\n",
    )
    # smoke.json is edited by hand: one more case at the end of two lists
    smoke_json = project / "smoke.json"
    edit(
        smoke_json,
        '"contains": "Usage: /demo-ext"}}\n',
        '"contains": "Usage: /demo-ext"}},\n'
        '    {"name": "shout", "args": "hey", "expect": {"equals": "HEY"}}\n',
    )
    edit(
        smoke_json,
        '"expect": {"is_error": true, "contains": "uppercase"}}\n',
        '"expect": {"is_error": true, "contains": "uppercase"}},\n'
        '    {"name": "count_words", "args": {"text": "one two three"}, "expect": {"text": "3"}}\n',
    )


def template_changes_python(repo: Path) -> None:
    """A release that changes template-owned files and one line near a user edit."""
    edit(repo / "template" / "smoke-test", "\n", "\n# smoke-test, release 2\n")
    edit(
        repo / "hooks" / "python",
        'echo "build: main.py is ready',
        'echo "build: main.py is ready, release 2',
    )
    edit(
        repo / "template" / "main.py.jinja",
        "Sends TEXT to the model.",
        "Sends TEXT to the model as a new prompt.",
    )


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> Path:
    """The template as two releases: v1.0.0 (this checkout) and v1.1.0."""
    repo = clone_template(tmp_path_factory.mktemp("releases"))
    release(repo, "v1.0.0")
    template_changes_python(repo)
    release(repo, "v1.1.0")
    return repo


@pytest.fixture
def edited_project(releases, tmp_path) -> Path:
    project = generate(releases, tmp_path / "ext", "v1.0.0", capabilities=["commands", "tools"])
    build(project)
    user_edits_python(project)
    smoke(project)
    commit_all(project, "my edits")
    return project


def test_update_keeps_user_edits_and_brings_template_changes(edited_project):
    project = edited_project
    result = update(project, "--vcs-ref", "v1.1.0")
    assert result.returncode == 0, result.stderr
    handler = (project / "main.py").read_text()
    # user edits survive
    assert "Answer in one sentence:" in handler
    assert '@ext.command("shout"' in handler and "def count_words" in handler
    assert "count_words" in (project / "smoke.json").read_text()
    # template changes arrive, in the handler and in template-owned files
    assert "Sends TEXT to the model as a new prompt." in handler
    assert "# smoke-test, release 2" in (project / "smoke-test").read_text()
    assert "release 2" in (project / "build").read_text()
    assert "<<<<<<<" not in handler
    assert "_commit: v1.1.0" in (project / ".copier-answers.yml").read_text()
    build(project)
    report = smoke(project)
    assert any("count_words" in c["check"] for c in report["checks"])
    assert os.access(project / "smoke-test", os.X_OK)


def test_overlapping_edits_come_back_as_reported_conflicts(edited_project):
    project = edited_project
    edit(project / "main.py", "Sends TEXT to the model.", "Sends TEXT to the model, my way.")
    commit_all(project, "my usage text")
    update(project, "--vcs-ref", "v1.1.0")
    handler = (project / "main.py").read_text()
    assert re.search(r"^<<<<<<< ", handler, re.MULTILINE), "no conflict markers"
    assert "my way" in handler and "as a new prompt" in handler
    # copier leaves the file unmerged, so git status reports the conflict
    assert "UU main.py" in git(project, "status", "--porcelain").splitlines()
    # files without an overlap still merged cleanly
    assert "# smoke-test, release 2" in (project / "smoke-test").read_text()
    assert '@ext.command("shout"' in handler


# Adding and removing capabilities: test_update_capabilities.py, every flavour.


def test_changing_the_language_is_refused_and_changes_nothing(edited_project):
    project = edited_project
    result = update(project, "-d", "language=shell")
    assert result.returncode != 0
    assert "cannot switch the language of a python project" in result.stderr
    assert git(project, "status", "--porcelain") == ""
    assert (project / "main.py").exists()


def release_points(repo: Path, *args: str) -> dict[str, str]:
    """scripts/release-points of a repository: {"vX.Y.Z": commit}, newest first."""
    result = run([str(repo / "scripts" / "release-points"), *args], repo)
    assert result.returncode == 0, result.stderr
    return dict(line.split() for line in result.stdout.splitlines())


def tag_releases(repo: Path) -> list[str]:
    """Tag the release points of a clone; newest first.

    A clone of the published repository may have no tags: the release points
    are found from the commits themselves.
    """
    return list(release_points(repo, "--tag"))


def previous_release(repo: Path) -> str:
    """The newest release before HEAD (HEAD itself may be a release commit)."""
    head = git(repo, "rev-parse", "HEAD")
    tags = [tag for tag in tag_releases(repo) if git(repo, "rev-list", "-n", "1", tag) != head]
    assert tags, "no release commit before HEAD in the history"
    return tags[0]


def test_previous_release_updates_to_this_checkout(tmp_path):
    """A project from the newest earlier release updates cleanly to now."""
    repo = clone_template(tmp_path)
    previous = previous_release(repo)
    project = generate(
        repo, tmp_path / "ext", previous, capabilities=["commands", "tools", "guard"]
    )
    result = update(project, "--vcs-ref", "HEAD")
    assert result.returncode == 0, result.stderr
    assert "<<<<<<<" not in (project / "main.py").read_text()
    build(project)
    smoke(project)


SMOKE_CASE = {"name": "demo_ext", "args": {"text": "mine"}}


def add_a_smoke_case_and_a_guard_rule(project: Path) -> dict:
    """A user's case in smoke.json and rule in guard-policy.json: the policy."""
    smoke_json = json.loads((project / "smoke.json").read_text())
    smoke_json["tools"].append(SMOKE_CASE)
    (project / "smoke.json").write_text(json.dumps(smoke_json, indent=2) + "\n")
    policy = json.loads((project / "guard-policy.json").read_text())
    own = {"id": "no-tf-destroy", "command": ["terraform"], "subcommand": ["destroy"]}
    own.update(reason="terraform destroy removes real infrastructure", instead="ask the user")
    policy["rules"] = [*policy.get("rules", []), own]
    (project / "guard-policy.json").write_text(json.dumps(policy, indent=2) + "\n")
    return policy


# Per flavour: the handler and a text in it that 0.3.0 and now share.
FROM_0_3_0 = {
    "python": ("main.py", "Answer briefly and concretely:"),
    "shell": ("main.sh", "Answer briefly and concretely:"),
    # (each line of the standard-library flavour's that named the runtime's
    # calls has ext. in front since 0.7.0: an edit there is a conflict)
    "go": ("main.go", "Return it in upper case."),
    "go-sdk": ("main.go", "Answer briefly and concretely:"),
    # (tsx shares node's files but start: the 0.2.0 and 0.9.0 tests take it)
    "typescript": ("src/extension.ts", "Answer briefly and concretely:"),
}


@pytest.mark.parametrize("flavour", FROM_0_3_0)
def test_a_0_3_0_project_updates_into_the_zot_folder(tmp_path, flavour):
    """The smoke test moves into zot/; the user's handler, tests, smoke.json
    and policy survive, with no conflict but smoke.json's, once."""
    handler, text = FROM_0_3_0[flavour]
    repo = clone_template(tmp_path)
    assert "v0.3.0" in tag_releases(repo)
    capabilities = ["commands", "tools", "events", "guard", "panel", "ask", "prompt"]
    answers = {**FLAVOURS[flavour], "capabilities": capabilities}
    project = generate(repo, tmp_path / "ext", "v0.3.0", **answers)
    assert not (project / "zot").exists()
    edit(project / handler, text, "Answer in one sentence:")
    policy = add_a_smoke_case_and_a_guard_rule(project)
    commit_all(project, "my edits")

    update_past_the_moved_cases(project, "--vcs-ref", "HEAD")
    assert "Answer in one sentence:" in (project / handler).read_text()
    assert SMOKE_CASE in json.loads((project / "smoke.json").read_text())["tools"]
    assert json.loads((project / "guard-policy.json").read_text()) == policy
    assert (project / "zot" / "smoke_test" / "cli.py").is_file()
    assert len((project / "smoke-test").read_text().splitlines()) <= 15
    # the unit tests expect the template's prompt: the user's to adapt
    for name in ("test_main.py", "test_main.sh", "main_test.go", "src/extension.test.ts"):
        if (project / name).is_file():
            edit_all(project / name, text, "Answer in one sentence:")
    build(project)
    result = run(list(VARIANTS[flavour].unit_tests), project)
    assert result.returncode == 0, result.stdout + result.stderr
    smoke(project)


# Since 0.10.0 a capability beyond commands, tools and the guard has a module
# of its own beside the handler (but in shell, with its own tests). Per flavour: the handler,
# a text the user edits in it, the modules that arrive with their tests, what
# leaves the handler.
FROM_0_9_0 = {
    "python": (
        "main.py",
        "Answer briefly and concretely:",
        ["ask.py", "audit.py", "conventions.py", "picker.py", "test_picker.py"],
        ["class Picker", "class Approval", "def record_event", "def add_conventions"],
    ),
    "shell": (
        "main.sh",
        "Answer briefly and concretely:",
        ["ask.sh", "audit.sh", "conventions.sh", "picker.sh"],
        ["run_pick()", "run_ask()", "record_event()", "add_conventions()"],
    ),
    **{
        flavour: (
            "src/extension.ts",
            "Answer briefly and concretely:",
            ["src/ask.ts", "src/audit.ts", "src/conventions.ts", "src/picker.ts"],
            ["function openPicker", "function askUser", "function recordEvent", "function cut"],
        )
        for flavour in ("typescript", "typescript-tsx")
    },
    **{
        flavour: (
            "main.go",
            "Answer briefly and concretely:",
            ["ask.go", "audit.go", "conventions.go", "picker.go", "picker_test.go"],
            ["func openPicker", "func runAsk", "func recordEvent", "func addConventions"],
        )
        for flavour in ("go", "go-sdk")
    },
}


@pytest.mark.parametrize("flavour", FROM_0_9_0)
def test_a_0_9_0_project_updates_into_capability_modules(tmp_path, flavour):
    """The capabilities' code leaves the handler for modules of their own; the
    user's edits, smoke cases and guard rules survive, with no conflict but
    smoke.json's, once."""
    handler, text, arrive, leave = FROM_0_9_0[flavour]
    repo = clone_template(tmp_path)
    assert "v0.9.0" in tag_releases(repo)
    capabilities = ["commands", "tools", "events", "guard", "panel", "ask", "prompt"]
    answers = {**FLAVOURS[flavour], "capabilities": capabilities}
    project = generate(repo, tmp_path / "ext", "v0.9.0", **answers)
    assert all(word in (project / handler).read_text() for word in leave)
    edit(project / handler, text, "Answer in one sentence:")
    policy = add_a_smoke_case_and_a_guard_rule(project)
    commit_all(project, "my edits")

    update_past_the_moved_cases(project, "--vcs-ref", "HEAD")
    source = (project / handler).read_text()
    assert "Answer in one sentence:" in source
    assert not [word for word in leave if word in source]
    assert all((project / name).is_file() for name in arrive)
    assert SMOKE_CASE in json.loads((project / "smoke.json").read_text())["tools"]
    assert json.loads((project / "guard-policy.json").read_text()) == policy
    build(project)
    for name in ("test_main.py", "test_main.sh", "main_test.go", "src/extension.test.ts"):
        if (project / name).is_file():  # the template's prompt, in the user's tests
            edit_all(project / name, text, "Answer in one sentence:")
    result = run(list(VARIANTS[flavour].unit_tests), project)
    assert result.returncode == 0, result.stdout + result.stderr
    smoke(project)


# 0.2.0 kept the protocol (Python, shell) or the registrations and the guard
# (Go, TypeScript) in the handler file. Per flavour: answers, the handler,
# a line of the new layout, what leaves the handler, the template's files
# that arrive, the unit tests.
CAPABILITIES_0_2_0 = ["commands", "tools", "events", "guard"]  # all that 0.2.0 offered
FROM_0_2_0 = {
    "python": (
        {"language": "python"},
        "main.py",
        "@ext.tool(",
        ["def _worker", "DANGEROUS"],
        ["zot/runtime.py", "zot/guard/guard.py", "guard-policy.json", "test_main.py"],
        ["python3", "-m", "unittest"],
    ),
    "shell": (
        {"language": "shell"},
        "main.sh",
        "ext_intercept_tool_call guard",
        ["READER", "DANGEROUS"],
        [
            "zot/runtime.sh",
            "zot/jq/reader.jq",
            "zot/guard/guard.jq",
            "zot/guard/guard-rules.json",
            "test_main.sh",
        ],
        ["./test_main.sh"],
    ),
    "go": (
        {"language": "go", "go_sdk": False},
        "main.go",
        "schema.Checked(toolSchema, ext.TextErrorResult, runTool)",
        ["var tools = ", "dangerous"],
        ["zot/ext/ext.go", "zot/guard/guard.go", "start"],
        ["go", "test", "-count=1", "./..."],
    ),
    "go-sdk": (  # built against the suite's SDK (conftest.use_sdk)
        {"language": "go", "go_sdk": True},
        "main.go",
        "schema.Checked(toolSchema, ext.TextErrorResult, runTool)",
        ["eventFields", "dangerous"],
        ["zot/guard/guard.go", "start"],
        ["go", "test", "-count=1", "./..."],
    ),
    "typescript": (
        {"language": "typescript", "ts_runner": "node"},
        "src/extension.ts",
        "ext.tool(TOOL, TOOL_DESCRIPTION, TOOL_SCHEMA, runTool);",
        ["DANGEROUS", "export const extension"],
        ["zot/guard/guard.ts", "zot/guard/guard.test.ts"],
        ["npm", "test"],
    ),
    "typescript-tsx": (
        {"language": "typescript", "ts_runner": "tsx"},
        "src/extension.ts",
        "ext.tool(TOOL, TOOL_DESCRIPTION, TOOL_SCHEMA, runTool);",
        ["DANGEROUS", "export const extension"],
        ["zot/guard/guard.ts", "zot/guard/guard.test.ts", "zot/start.mjs"],
        ["npm", "test"],
    ),
}


@pytest.mark.parametrize("flavour", FROM_0_2_0)
def test_a_0_2_0_project_updates_into_the_runtime_layout(tmp_path, flavour):
    """Edits to handler lines the template kept survive; the machinery leaves
    the handler file for the template's own files, without a conflict."""
    answers, handler, registration, gone, arrive, unit_tests = FROM_0_2_0[flavour]
    repo = clone_template(tmp_path)
    assert "v0.2.0" in tag_releases(repo)
    project = generate(repo, tmp_path / "ext", "v0.2.0", capabilities=CAPABILITIES_0_2_0, **answers)
    edits = [("The text to echo back.", "The text to repeat.")]
    # 0.2.0's Python prompt line is not the same line now, nor since 0.7.0 the
    # one of Go's standard-library flavour (ext.Prompt)
    if flavour not in ("python", "go"):
        edits.append(("Answer briefly and concretely:", "Answer in one sentence:"))
    for old, new in edits:
        edit(project / handler, old, new)
    commit_all(project, "my edits")
    result = update(project, "--vcs-ref", "HEAD")
    assert result.returncode == 0, result.stderr
    source = (project / handler).read_text()
    assert not conflicted(project) and "UU" not in git(project, "status", "--porcelain")
    assert all(new in source for _, new in edits)
    assert registration in source
    assert not [text for text in gone if text in source]
    assert not [name for name in arrive if not (project / name).is_file()]
    if unit_tests is None:
        return
    # The unit tests expect the template's prompt: the user's to adapt.
    for name in ("test_main.sh", "main_test.go", "src/extension.test.ts"):
        if (project / name).is_file():
            edit_all(project / name, *edits[-1])
    build(project)
    result = run(unit_tests, project)
    assert result.returncode == 0, result.stdout + result.stderr
    smoke(project)


# What a Go project of 0.6.1 held at its root that is the template's: the
# runtime (without the SDK), its tests, the process helper, the guard's
# engine and data. The update moves them under zot/.
GO_ROOT_0_6_1 = [
    "protocol.go", "protocol_test.go", "processes.go", "guard.go", "guard-rules.json",
    "guard-cases.json",
]  # fmt: skip
SHOUT = 'func shout(text string) string { return strings.ToUpper(text) + "!" }\n'
SHOUT_TEST = (
    'func TestShout(t *testing.T) {\n\tif shout("a") != "A!" {\n\t\tt.Error(shout("a"))\n\t}\n}\n'
)


@pytest.mark.parametrize("flavour", ["go", "go-sdk"])
def test_a_0_6_1_go_project_updates_into_the_zot_layout(tmp_path, flavour):
    """The template's files leave the root for zot/; the user's handler,
    tests, smoke.json and guard rule survive, with no conflict but
    smoke.json's, once."""
    repo = clone_template(tmp_path)
    assert "v0.6.1" in tag_releases(repo)
    capabilities = ["commands", "tools", "events", "guard", "panel", "ask", "prompt"]
    answers = {**FLAVOURS[flavour], "capabilities": capabilities}
    project = generate(repo, tmp_path / "ext", "v0.6.1", **answers)
    edit(project / "main.go", "Return it in upper case.", "Shout it.")
    # after the command (not at the end, where the capabilities' code leaves
    # since 0.10.0: an addition there meets that removal as a conflict)
    after = '"Answer briefly and concretely:\\n\\n" + text)\n}\n'
    edit(project / "main.go", after, after + "\n// shout is mine.\n" + SHOUT)
    before = "\nfunc TestToolSchemaIsAJSONObjectSchema("
    edit(project / "main_test.go", before, "\n" + SHOUT_TEST + before)
    policy = add_a_smoke_case_and_a_guard_rule(project)
    commit_all(project, "my edits")

    update_past_the_moved_cases(project, "--vcs-ref", "HEAD")
    assert not [name for name in GO_ROOT_0_6_1 if (project / name).exists()]
    assert (project / "zot/guard/guard-rules.json").is_file()
    assert (project / "zot/ext/ext.go").is_file() == (flavour == "go")
    main = (project / "main.go").read_text()
    assert "Shout it." in main and SHOUT in main and "func init() {" in main
    assert SHOUT_TEST in (project / "main_test.go").read_text()
    kept_the_smoke_case_and_guard_rule(project, policy, ["go", "test", "-count=1", "./..."])


# Per language: what a project of 0.6.1 held at its root that is the
# template's, the handler and its test file, a function of the user's and its
# test, where each goes (before a line 0.6.1 and now share), the unit tests.
FROM_0_6_1 = {
    "python": (
        ["zot_runtime.py", "guard.py", "guard-rules.json", "guard-cases.json"],
        ("main.py", 'def shout(text: str) -> str:\n    return text.upper() + "!"\n\n\n'),
        '\nif __name__ == "__main__":',
        (
            "test_main.py",
            (
                "\n\nclass ShoutTest(unittest.TestCase):\n"
                "    def test_shout(self):\n"
                '        self.assertEqual(main.shout("a"), "A!")\n'
            ),
        ),
        None,  # at the end
        ["python3", "-m", "unittest"],
    ),
    "shell": (
        ["zot_runtime.sh", "jq/guard.jq", "guard-rules.json", "guard-cases.json"],
        ("main.sh", "shout() {\n\tprintf '%s!' \"${1^^}\"\n}\n\n"),
        "# Sourced (as test_main.sh does), this file only defines the handlers.",
        ("test_main.sh", 'check "shout shouts" A! "$(shout a)"\n\n'),
        "if ((failures)); then",
        ["./test_main.sh"],
    ),
    "typescript": (
        ["src/protocol.ts", "src/protocol.test.ts", "src/index.ts", "src/guard.ts"],
        (
            "src/extension.ts",
            'export const shout = (text: string) => text.toUpperCase() + "!";\n\n',
        ),
        # (not at the end, where the capabilities' code leaves since 0.10.0)
        "// --- The tool the model calls",
        (  # with what the file imports both before and after (ext)
            "src/extension.test.ts",
            '\ntest("my name", () => {\n  assert.equal(ext.name, "demo-ext");\n});\n',
        ),
        None,
        ["npm", "test"],
    ),
}


@pytest.mark.parametrize("flavour", FROM_0_6_1)
def test_a_0_6_1_project_updates_into_the_zot_layout(tmp_path, flavour):
    """The runtime and the guard leave the root for zot/; the user's handler,
    tests, smoke.json and guard rule survive, with no conflict but
    smoke.json's, once."""
    gone, (handler, function), before, (tests, test), test_before, unit_tests = FROM_0_6_1[flavour]
    language, _, runner = flavour.partition("-")
    answers = {"language": language, **({"ts_runner": runner} if runner else {})}
    repo = clone_template(tmp_path)
    assert "v0.6.1" in tag_releases(repo)
    capabilities = ["commands", "tools", "events", "guard", "panel", "ask", "prompt"]
    project = generate(repo, tmp_path / "ext", "v0.6.1", capabilities=capabilities, **answers)
    edit(project / handler, "Return it in upper case.", "Shout it.")
    if before is None:
        with (project / handler).open("a") as file:
            file.write("\n" + function)
    else:
        edit(project / handler, before, function + before)
    if test_before is None:
        with (project / tests).open("a") as file:
            file.write(test)
    else:
        edit(project / tests, test_before, test + test_before)
    policy = add_a_smoke_case_and_a_guard_rule(project)
    commit_all(project, "my edits")

    update_past_the_moved_cases(project, "--vcs-ref", "HEAD")
    assert not [name for name in gone if (project / name).exists()]
    assert (project / "zot/guard/guard-rules.json").is_file()
    source = (project / handler).read_text()
    assert "Shout it." in source and function in source
    assert test in (project / tests).read_text()
    kept_the_smoke_case_and_guard_rule(project, policy, unit_tests)


def kept_the_smoke_case_and_guard_rule(project: Path, policy: dict, unit_tests: list) -> None:
    """After an update: the user's smoke case and guard rule (from
    add_a_smoke_case_and_a_guard_rule) are there, and the project builds,
    passes its unit tests and smoke test, and refuses by the user's rule."""
    assert SMOKE_CASE in json.loads((project / "smoke.json").read_text())["tools"]
    assert json.loads((project / "guard-policy.json").read_text()) == policy
    build(project)
    result = run(unit_tests, project)
    assert result.returncode == 0, result.stdout + result.stderr
    smoke(project)
    result = run(["./smoke-test", "--json", "--guard", "terraform destroy"], project)
    [verdict] = json.loads(result.stdout)["guard"]
    assert verdict["rule"] == "no-tf-destroy", verdict


def update_cleanly(project: Path, *args: str) -> subprocess.CompletedProcess:
    """`copier update` that ends well and leaves no file in conflict."""
    result = update(project, *args)
    assert result.returncode == 0, result.stdout + result.stderr
    status = git(project, "status", "--porcelain")
    assert not conflicted(project) and "UU" not in status, status
    return result


def update_past_the_moved_cases(project: Path, *args: str) -> None:
    """`copier update` to this checkout of a project with panel, ask and
    prompt from a release that had their cases last in smoke.json's lists
    (0.12.0 and before): now they come first, so that cases a user appends
    stay clear of them when copier update adds or removes one of them. A
    smoke.json the user edited there (as add_a_smoke_case_and_a_guard_rule
    does) is in conflict once, and nothing else; the changelog's way out:
    the template's smoke.json, with the user's cases added again."""
    result = update(project, *args)
    assert result.returncode == 0, result.stdout + result.stderr
    status = git(project, "status", "--porcelain")
    assert conflicted(project) == ["smoke.json"], status
    assert [line for line in status.splitlines() if line.startswith("UU")] == ["UU smoke.json"]
    take_the_templates_side(project / "smoke.json")
    cases = json.loads((project / "smoke.json").read_text())
    cases["tools"].append(SMOKE_CASE)
    (project / "smoke.json").write_text(json.dumps(cases, indent=2) + "\n")


def take_the_templates_side(path: Path) -> None:
    """Resolve each conflict copier left in a file with the template's side
    ("after updating")."""
    text = re.sub(
        r"^<<<<<<< before updating\n.*?^=======\n(.*?)^>>>>>>> after updating\n",
        r"\1",
        path.read_text(),
        flags=re.DOTALL | re.MULTILINE,
    )
    path.write_text(text)


def conflicted(project: Path) -> list[str]:
    """Files that copier left with conflict markers."""
    return [
        str(path.relative_to(project))
        for path in project.rglob("*")
        if path.is_file()
        and ".git" not in path.parts
        and re.search(rb"^<<<<<<< ", path.read_bytes(), re.MULTILINE)
    ]


@pytest.mark.parametrize("language", ["python", "shell"])  # the languages of every release
def test_every_release_renders_and_updates_to_this_checkout(tmp_path, language):
    """Without --trust or the network; the release points come from the history."""
    repo = clone_template(tmp_path)
    tags = tag_releases(repo)
    assert "v0.1.0" in tags and "v0.2.0" in tags
    answers = {"language": language, "capabilities": ["commands", "tools", "guard"]}
    fresh = generate(repo, tmp_path / "HEAD", "HEAD", **answers)
    build(fresh)
    smoke(fresh)
    for tag in tags:
        project = generate(repo, tmp_path / tag, tag, **answers)
        result = update(project, "--vcs-ref", "HEAD")
        assert result.returncode == 0, f"{tag}: {result.stderr}"
        assert not conflicted(project), tag
        # the same files as a project made now, which works: checked above;
        # one that differs (a file the user owns kept from its release) is
        # built and checked itself
        if [name for name in differences(project, fresh) if name != ".git"]:
            build(project)
            smoke(project)


def test_a_go_sdk_project_can_switch_to_the_dependency_free_flavour(releases, tmp_path):
    """What ./build advises when zot's SDK cannot be fetched."""
    project = generate(
        releases,
        tmp_path / "ext",
        "v1.0.0",
        language="go",
        go_sdk=True,
        capabilities=["commands", "tools"],
    )
    edit(project / "main.go", "Return it in upper case.", "Shout it.")
    commit_all(project, "my edits")
    result = update(project, "-d", "go_sdk=false")
    assert result.returncode == 0, result.stderr
    handler = (project / "main.go").read_text()
    assert "packages/agent/ext" not in handler and "<<<<<<<" not in handler
    assert "Shout it." in handler  # the user's edit survives
    assert (project / "zot/ext/ext.go").is_file() and not (project / "zot/host/sdk.go").exists()
    build(project)
    smoke(project)


POLICY_RULE = {
    "id": "no-docker-prune",
    "command": ["docker"],
    "subcommand": ["system"],
    "arg": ["prune"],
    "reason": "docker system prune deletes every stopped container and unused image",
    "instead": "remove what you made by name",
}


@pytest.mark.parametrize("language", ["python", "shell", "go"])
def test_your_guard_policy_and_the_templates_new_rules_both_apply_after_update(tmp_path, language):
    """guard-policy.json is the user's: an update changes guard-rules.json only."""
    repo = clone_template(tmp_path)
    project = generate(repo, tmp_path / "ext", "HEAD", language=language, capabilities=["guard"])
    policy = json.loads((project / "guard-policy.json").read_text())
    policy["off"] = ["git-stash-drop"]
    policy["rules"] = [POLICY_RULE]
    (project / "guard-policy.json").write_text(json.dumps(policy, indent=2) + "\n")
    commit_all(project, "our guard policy")
    # The template gains a rule and changes the wording of another.
    rules_file = repo / "template" / "zot" / "guard" / "guard-rules.json"
    rules = json.loads(rules_file.read_text())
    rules["rules"].append(
        {
            "id": "no-terraform-destroy",
            "command": ["terraform"],
            "subcommand": ["destroy"],
            "reason": "terraform destroy removes real infrastructure",
            "instead": "ask the user",
        }
    )
    rules["rules"][0]["instead"] += " (new wording)"
    rules_file.write_text(json.dumps(rules, indent=2) + "\n")
    git(repo, "commit", "--quiet", "-am", "Release 99.0.0: a new guard rule")
    update_cleanly(project, "--vcs-ref", "HEAD")
    assert json.loads((project / "guard-policy.json").read_text()) == policy
    assert "(new wording)" in (project / "zot/guard/guard-rules.json").read_text()
    build(project)
    verdicts = {
        "docker system prune -af": "no-docker-prune",  # the user's rule
        "terraform destroy -auto-approve": "no-terraform-destroy",  # the template's new one
        "git stash drop": None,  # switched off by the user
        "git reset --hard": "git-reset-hard",  # still on
    }
    for command, rule in verdicts.items():
        result = run(["./smoke-test", "--json", "--guard", command], project)
        [verdict] = json.loads(result.stdout)["guard"]
        assert (verdict["refused"], verdict["rule"]) == (rule is not None, rule or ""), verdict


def test_the_readme_update_recipe_runs_as_written_on_a_fresh_project(tmp_path):
    """Straight after copier copy (no git repository yet), the README's
    commands take a newer release as written, without a terminal (they say
    --defaults)."""
    repo = clone_template(tmp_path)
    project = tmp_path / "ext"
    copier.run_copy(str(repo), str(project), data={"name": "demo-ext"}, defaults=True)
    edit(project / "main.py", "Answer briefly and concretely:", "Answer in one sentence:")
    template_changes_python(repo)
    release(repo, "v99.0.0")
    readme = (project / "README.md").read_text()
    section = readme[readme.index("## Update from the template") :]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)[1]
    env = {**os.environ, **GIT_ENV}
    for line in block.splitlines():
        command = line.split("  #")[0].strip()
        command = command.replace("copier ", f"{os.path.dirname(sys.executable)}/copier ")
        result = subprocess.run(
            command, shell=True, cwd=project, env=env, capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, f"{line}\n{result.stdout}{result.stderr}"
    assert "_commit: v99.0.0" in (project / ".copier-answers.yml").read_text()
    assert "Answer in one sentence:" in (project / "main.py").read_text()
