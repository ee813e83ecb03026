"""The questions: defaults, validators and how free text is embedded."""

from __future__ import annotations

import json
from pathlib import Path

import copier
import pytest
import yaml
from conftest import ROOT, render
from test_update import clone_template, generate, previous_release, update


def refusal(tmp_path: Path, **answers) -> str:
    """The validator's message for answers that must be refused."""
    with pytest.raises(ValueError) as refused:
        render(tmp_path / "ext", **answers)
    assert not (tmp_path / "ext" / "extension.json").exists()
    return str(refused.value)


def test_defaults_render_a_python_extension_named_after_its_folder(tmp_path):
    copier.run_copy(str(ROOT), str(tmp_path / "My-Ext"), defaults=True, vcs_ref="HEAD", quiet=True)
    project = tmp_path / "My-Ext"
    manifest = json.loads((project / "extension.json").read_text())
    assert manifest["name"] == "my-ext"
    assert manifest["exec"] == "./main.py"
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["capabilities"] == ["commands", "tools"]
    assert answers["command_name"] == "my-ext" and answers["tool_name"] == "my_ext"
    assert answers["language"] == "python" and answers["version"] == "0.1.0"
    assert "tool_text_help" not in answers  # computed, never stored


def test_pytest_copie_renders_without_errors(copie):
    result = copie.copy(extra_answers={"name": "copie-ext", "language": "shell"})
    assert result.exit_code == 0, result.exception
    assert (result.project_dir / "main.sh").is_file()


@pytest.mark.parametrize(
    "name",
    ["My-Ext", "1ext", "-ext", "ext-", "ext--x", "ext_x", "ext.x", "", "é", "a" * 41],
)
def test_bad_names_are_refused_with_what_is_allowed(tmp_path, name):
    message = refusal(tmp_path, name=name)
    assert "lower-case letters, digits and single dashes" in message


@pytest.mark.parametrize("name", ["a", "x1", "a" * 40, "my-ext-2", "z9-9"])
def test_names_at_the_limits_are_accepted(tmp_path, name):
    render(tmp_path / "ext", name=name, capabilities=["tools"])
    manifest = json.loads((tmp_path / "ext" / "extension.json").read_text())
    assert manifest["name"] == name


@pytest.mark.parametrize("version", ["1", "1.0", "v1.0.0", "01.0.0", "1.0.0.0", "1.0.0-", "x"])
def test_bad_versions_are_refused(tmp_path, version):
    assert "not a semantic version" in refusal(tmp_path, version=version)


@pytest.mark.parametrize("version", ["0.0.1", "10.20.30", "1.0.0-beta.1", "1.0.0+build.7"])
def test_semantic_versions_are_accepted(tmp_path, version):
    render(tmp_path / "ext", version=version)


@pytest.mark.parametrize("command", ["help", "model", "reload-ext", "exit", "clear"])
def test_builtin_command_names_are_refused(tmp_path, command):
    message = refusal(tmp_path, command_name=command)
    assert f"/{command} is one of zot's built-in commands" in message
    assert "shadow" in message


@pytest.mark.parametrize("name", ["help", "clear", "bash", "read", "exit"])
def test_a_name_that_zot_uses_itself_gives_names_of_its_own(tmp_path, name):
    """The command and tool names default to the extension's name: where zot
    has one of its own, the default steps around it instead of failing."""
    project = render(tmp_path / "ext", name=name, capabilities=["commands", "tools"])
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["command_name"] == (f"{name}-ext" if name in ("help", "clear", "exit") else name)
    assert answers["tool_name"] == (f"{name}_ext" if name in ("bash", "read") else name)
    assert not {"builtin_commands", "builtin_tools"} & set(answers)  # computed, not kept


@pytest.mark.parametrize("tool", ["bash", "read", "write", "edit", "skill", "glob"])
def test_builtin_tool_names_are_refused(tmp_path, tool):
    message = refusal(tmp_path, tool_name=tool)
    assert "built-in tools" in message and "shadow" in message


@pytest.mark.parametrize("tool", ["has space", "a" * 65, "dot.name", ""])
def test_bad_tool_names_are_refused(tmp_path, tool):
    assert "letters, digits, '_' and '-'" in refusal(tmp_path, tool_name=tool)


def test_no_capability_is_refused(tmp_path):
    assert "at least one capability" in refusal(tmp_path, capabilities=[])


def test_no_event_is_refused(tmp_path):
    assert "at least one event" in refusal(tmp_path, capabilities=["events"], events=[])


@pytest.mark.parametrize(
    "description",
    ["two\nlines", "tab\there", "", "   ", "x" * 201],
    ids=["newline", "tab", "empty", "blank", "long"],
)
def test_bad_descriptions_are_refused(tmp_path, description):
    assert "description" in refusal(tmp_path, description=description)


def test_follow_up_questions_are_only_asked_when_relevant(tmp_path):
    render(tmp_path / "ext", capabilities=["guard"])
    answers = yaml.safe_load((tmp_path / "ext" / ".copier-answers.yml").read_text())
    follow_ups = {"command_name", "tool_name", "tool_description", "events"}
    follow_ups |= {"panel_command", "ask_tool", "skill_name", "skill_description"}
    assert not follow_ups & set(answers)


def test_the_new_capabilities_name_their_command_tool_and_skill(tmp_path):
    caps = ["commands", "tools", "panel", "ask", "skills"]
    project = render(tmp_path / "ext", name="a" * 40, capabilities=caps)
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["panel_command"] == "a" * 35 + "-pick"  # at most 40 characters
    assert answers["ask_tool"] == "a" * 40 + "_confirm"
    assert answers["skill_name"] == "a" * 40
    assert (project / "skills" / ("a" * 40) / "SKILL.md").is_file()
    project = render(tmp_path / "two", capabilities=["panel", "ask", "skills"], name="x")
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert (answers["panel_command"], answers["ask_tool"]) == ("x-pick", "x_confirm")


def front_matter_description(project: Path, skill: str) -> str:
    """The skill's description as a YAML reader of its front matter sees it."""
    text = (project / "skills" / skill / "SKILL.md").read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---\n")[1])["description"]


def test_the_skill_says_when_to_use_it(tmp_path):
    """By default the extension's description, then when to load the skill."""
    project = render(tmp_path / "ext", capabilities=["skills"], description="Draft notes  ")
    when = "Draft notes. Use when the user asks for this or names the demo-ext skill."
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["skill_description"] == when
    assert front_matter_description(project, "demo-ext") == when
    body = (project / "skills" / "demo-ext" / "SKILL.md").read_text()
    assert f"## When to use it\n\n{when}\n\n## Steps" in body
    project = render(tmp_path / "two", capabilities=["skills"], description="Shout!")
    assert front_matter_description(project, "demo-ext").startswith("Shout! Use when")
    # one's own, with what YAML and the template treat specially, kept verbatim
    own = 'Use when the user asks for "release notes": \\ {{ 7 * 7 }} # é'
    project = render(tmp_path / "own", capabilities=["skills"], skill_description=own)
    assert front_matter_description(project, "demo-ext") == own
    assert f"\n{own}\n" in (project / "skills" / "demo-ext" / "SKILL.md").read_text()


@pytest.mark.parametrize(
    ("description", "reason"),
    [
        ("", "must not be empty"),
        ("  ", "must not be empty"),
        ("two\nlines", "one line"),
        ("a\ufeffb", "U+FEFF"),
        ("x" * 1025, "at most 1024"),
    ],
    ids=["empty", "blank", "newline", "bom", "long"],
)
def test_bad_skill_descriptions_are_refused(tmp_path, description, reason):
    answers = {"capabilities": ["skills"], "skill_description": description}
    assert reason in refusal(tmp_path, **answers)


def test_a_skill_description_at_the_limit_is_accepted(tmp_path):
    project = render(tmp_path / "ext", capabilities=["skills"], skill_description="x" * 1024)
    assert front_matter_description(project, "demo-ext") == "x" * 1024


def copy_message(tmp_path: Path, capsys, **answers) -> str:
    """What copier prints after the copy (_message_after_copy)."""
    answers.setdefault("name", "demo-ext")
    capsys.readouterr()
    copier.run_copy(str(ROOT), str(tmp_path / "ext"), data=answers, defaults=True, vcs_ref="HEAD")
    return capsys.readouterr().err.partition("is ready in")[2]


OLD_HOST_NOTE = "zot 0.1.62 and older never send"


def test_the_message_names_the_chosen_events_zot_0_1_62_never_sends(tmp_path, capsys):
    events = ["session_start", "session_end", "tool_call", "tool_result"]
    message = copy_message(tmp_path, capsys, capabilities=["events"], events=events)
    note = [line for line in message.splitlines() if OLD_HOST_NOTE in line]
    assert note == [
        "Note: zot 0.1.62 and older never send session_end, tool_result; newer zot does."
    ]


@pytest.mark.parametrize(
    "capabilities", [["events"], ["commands", "tools"]], ids=["default-events", "no-events"]
)
def test_the_message_has_no_note_when_every_event_reaches_zot_0_1_62(
    tmp_path, capsys, capabilities
):
    message = copy_message(tmp_path, capsys, capabilities=capabilities)
    assert "Next steps:" in message and OLD_HOST_NOTE not in message


def test_the_events_help_says_which_events_zot_0_1_62_sends():
    question = yaml.safe_load((ROOT / "copier.yml").read_text())["events"]
    first_five = ["session_start", "turn_start", "tool_call", "turn_end", "assistant_message"]
    assert question["choices"][:5] == first_five == question["default"]
    assert "zot 0.1.62 sends only the first five" in question["help"]


def test_the_message_of_a_skills_only_project_names_what_it_has(tmp_path, capsys):
    message = copy_message(tmp_path, capsys, capabilities=["skills"], skill_name="notes")
    assert "./smoke-test" in message and "Edit skills/notes/SKILL.md" in message
    assert not {"./build", "unittest", "main.py"} & set(message.split())


def test_a_skills_project_of_the_previous_release_updates_with_the_defaults(tmp_path):
    """The new question takes its default; the skill says when to use it."""
    repo = clone_template(tmp_path)
    project = generate(repo, tmp_path / "ext", previous_release(repo), capabilities=["skills"])
    result = update(project, "--vcs-ref", "HEAD")
    assert result.returncode == 0, result.stderr
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    when = "A zot extension. Use when the user asks for this or names the demo-ext skill."
    assert answers["skill_description"] == when
    assert front_matter_description(project, "demo-ext") == when
    assert "<<<<<<<" not in (project / "skills" / "demo-ext" / "SKILL.md").read_text()


def test_the_typescript_runner_is_asked_for_typescript_only(tmp_path):
    render(tmp_path / "py", language="python")
    answers = yaml.safe_load((tmp_path / "py" / ".copier-answers.yml").read_text())
    assert "ts_runner" not in answers
    render(tmp_path / "ts", language="typescript")
    answers = yaml.safe_load((tmp_path / "ts" / ".copier-answers.yml").read_text())
    assert answers["ts_runner"] == "node"
    manifest = json.loads((tmp_path / "ts" / "extension.json").read_text())
    assert (manifest["exec"], manifest["args"]) == ("node", ["dist/index.js"])
    render(tmp_path / "tsx", language="typescript", ts_runner="tsx")
    manifest = json.loads((tmp_path / "tsx" / "extension.json").read_text())
    assert (manifest["exec"], manifest["args"]) == ("node", ["zot/start.mjs"])
    assert 'await import("./main.ts")' in (tmp_path / "tsx" / "zot" / "start.mjs").read_text()
    assert (
        not (tmp_path / "tsx" / "start").exists()
        and not (tmp_path / "ts" / "zot" / "start.mjs").exists()
    )
    assert not (tmp_path / "tsx" / "dist").exists()


def test_choices_help_and_no_trust_needed():
    config = yaml.safe_load((ROOT / "copier.yml").read_text())
    questions = {k: v for k, v in config.items() if not k.startswith("_")}
    for name, question in questions.items():
        if question.get("when") is not False:
            assert question.get("help"), f"{name} has no help text"
    assert not {"_tasks", "_migrations", "_jinja_extensions"} & set(config)
    assert config["_subdirectory"] == "template"


def test_go_asks_for_a_module_path_and_the_sdk_choice(tmp_path):
    copier.run_copy(
        str(ROOT),
        str(tmp_path / "my-ext"),
        data={"language": "go"},
        defaults=True,
        vcs_ref="HEAD",
        quiet=True,
    )
    project = tmp_path / "my-ext"
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["go_module"] == "example.com/my-ext"
    assert answers["go_sdk"] is True  # zot's Go SDK unless asked otherwise
    assert (project / "go.mod").read_text().startswith("module example.com/my-ext\n")
    assert "github.com/patriceckhart/zot/packages/agent/ext" in (project / "main.go").read_text()
    assert not (project / "zot/ext").exists()
    manifest = json.loads((project / "extension.json").read_text())
    assert manifest["exec"] == "./start" and manifest["language"] == "go"
    assert "exec ./my-ext" in (project / "start").read_text()
    assert "/my-ext\n" in (project / ".gitignore").read_text()


def test_go_questions_are_only_asked_for_go(tmp_path):
    render(tmp_path / "ext", language="python")
    answers = yaml.safe_load((tmp_path / "ext" / ".copier-answers.yml").read_text())
    assert not {"go_module", "go_sdk"} & set(answers)


@pytest.mark.parametrize(
    "module",
    ["example.com/my-ext", "github.com/you/my-ext", "go.example.org/a_b~c/d.e", "x.io/m/v2"],
)
def test_go_module_paths_are_accepted(tmp_path, module):
    render(tmp_path / "ext", language="go", go_module=module)
    assert (tmp_path / "ext" / "go.mod").read_text().startswith(f"module {module}\n")


@pytest.mark.parametrize(
    ("module", "hint"),
    [
        ("my-ext", "needs a dot"),
        ("Example.com/x", "not a valid Go module path"),
        ("example.com//x", "not a valid Go module path"),
        ("example.com/x/", "not a valid Go module path"),
        ("/example.com", "not a valid Go module path"),
        ("example.com/.x", "not a valid Go module path"),
        ("example.com/x.", "not a valid Go module path"),
        ("example.com/a b", "not a valid Go module path"),
        ("example.com/é", "not a valid Go module path"),
        ("-x.com/y", "not a valid Go module path"),
        ("example.com/x/v1", "/v2 or higher"),
        ("", "not a valid Go module path"),
    ],
)
def test_bad_go_module_paths_are_refused(tmp_path, module, hint):
    message = refusal(tmp_path, language="go", go_module=module)
    assert hint in message and "example.com/" in message


@pytest.mark.parametrize(
    "answer", ["description", "tool_description"], ids=["description", "tool-description"]
)
def test_an_invisible_byte_order_mark_is_refused(tmp_path, answer):
    """Go rejects U+FEFF anywhere in a source file (the text lands in main.go)."""
    assert "U+FEFF" in refusal(tmp_path, **{answer: "a\ufeffb"})


# Bad answers for every validator, long ones included: questionary shows one
# line under the prompt, so the first line must say the whole reason.
BAD_ANSWERS = [
    {"name": "My-Ext"},
    {"name": "a" * 300},
    {"description": ""},
    {"description": "two\nlines"},
    {"description": "x" * 300},
    {"version": "v" + "1" * 200},
    {"language": "go", "go_module": "Example.com/" + "x" * 200},
    {"language": "go", "go_module": "my-ext-" + "x" * 60},
    {"language": "go", "go_module": "example.com/" + "x" * 60 + "/v1"},
    {"command_name": "Bad Name " + "x" * 100},
    {"command_name": "reload-ext"},
    {"tool_name": "dot.name" + "x" * 100},
    {"tool_name": "telegram_send_image"},
    {"tool_description": " "},
    {"tool_description": "tab\there"},
    {"tool_description": "x" * 1001},
    {"capabilities": []},
    {"capabilities": ["events"], "events": []},
    {"capabilities": ["panel"], "panel_command": "/pick"},
    {"capabilities": ["panel"], "panel_command": "skills"},
    {"capabilities": ["commands", "panel"], "command_name": "go", "panel_command": "go"},
    {"capabilities": ["ask"], "ask_tool": "has space"},
    {"capabilities": ["ask"], "ask_tool": "bash"},
    {"capabilities": ["tools", "ask"], "tool_name": "same", "ask_tool": "same"},
    {"capabilities": ["skills"], "skill_name": "Bad_Skill"},
    {"capabilities": ["skills"], "skill_name": "a" * 65},
    {"capabilities": ["skills"], "skill_description": " "},
    {"capabilities": ["skills"], "skill_description": "two\nlines"},
    {"capabilities": ["skills"], "skill_description": "x" * 1025},
]


@pytest.mark.parametrize("answers", BAD_ANSWERS, ids=lambda answers: "-".join(answers))
def test_every_refusal_says_its_reason_in_one_short_first_line(tmp_path, answers):
    message = refusal(tmp_path, **answers)
    reason = message.partition(": ")[2]  # after "Validation error for question 'x'"
    first = reason.splitlines()[0]
    assert len(first) <= 72, first
    assert first == first.strip() and first[0].islower() or first[0] in "/'", first


def test_a_tool_of_ones_own_is_described_as_such(tmp_path):
    """With a tool_description of one's own, nothing says the tool echoes."""
    description = "Get the current weather for a city."
    project = render(tmp_path / "ext", language="python", tool_description=description)
    readme = (project / "README.md").read_text()
    assert f'"{description}"' in readme
    assert "echo" not in (project / "main.py").read_text().lower()


def test_the_update_workflow_is_asked_for_only_with_ci_and_off_by_default(tmp_path):
    default = render(tmp_path / "default")
    answers = yaml.safe_load((default / ".copier-answers.yml").read_text())
    assert answers["ci"] is True and answers["update_pr"] is False
    workflows = default / ".github" / "workflows"
    assert sorted(p.name for p in workflows.iterdir()) == ["ci.yml"]
    chosen = render(tmp_path / "chosen", update_pr=True)
    assert (chosen / ".github" / "workflows" / "template-update.yml").is_file()
    without_ci = render(tmp_path / "no-ci", ci=False)
    assert "update_pr" not in yaml.safe_load((without_ci / ".copier-answers.yml").read_text())
