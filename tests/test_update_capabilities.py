"""Changing capabilities with `copier update --defaults -d capabilities=[...]`,
as docs/updating.md says, in every flavour: real git repositories, the real
copier command line, stdin not a terminal.

A user edits the handler in place, adds a command of their own where
README.md says, a test of it at the end of the tests and cases at the end of
smoke.json's lists. Adding events, guard, panel, ask and prompt merges
smoke.json and the in-place edit; the code and tests the user added at the
end meet the capabilities' there, the conflicts the page's table names for
each language. Removing them again, after an edit of the guard's code and a
case after the guard's, adds those two. ./build lists exactly these files
(before it needs any toolchain) and fails; resolved as the page says, the
project is what it was before the adding.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import FLAVOURS, HANDLER, ROOT, build, render, run, smoke
from test_update import (
    GIT_ENV,
    clone_template,
    commit_all,
    conflicted,
    edit,
    generate,
    git,
    release,
    take_the_templates_side,
    update,
)

BASE = ["commands", "tools"]
ADDED = ["events", "guard", "panel", "ask", "prompt"]
# The user's cases, appended to smoke.json's lists by hand (or by
# ./smoke-test --interactive's save, which writes them the same way).
SHOUT_CASE = {"name": "shout", "args": "hey", "expect": {"equals": "HEY"}}
TOOL_CASE = {"name": "demo_ext", "args": {"text": "mine"}, "expect": {"text": "mine"}}
# ... and one after the guard's cases, which removing the guard meets.
INTERCEPT_CASE = {"tool_name": "bash", "tool_args": {"command": "git push -f"}}
PROMPT_EDIT = ("Answer briefly and concretely:", "Answer in one sentence:")


@dataclass(frozen=True)
class Edits:
    """What a user adds to a project of one language."""

    own: str  # a command of their own, as README.md shows it
    own_before: str | None  # where README.md puts it: before this text, or at the end
    tests: str  # the handler's tests
    test: str  # a test of the user's command
    test_before: str | None  # before this text, or at the end
    guard: tuple[str, str]  # a line of the guard's code in the handler, and the user's version
    modules: str  # the file of a capability of its own, {} its name
    registration: str  # how the handler registers that file, {} its name


PYTHON_MAIN = '\n\nif __name__ == "__main__":'  # "above its last lines"
GO_SHOUT = """\textension.Command("shout", "Say TEXT in capitals", func(args string) ext.Response {
\t\treturn ext.Display(strings.ToUpper(strings.TrimSpace(args)))
\t})
"""
GO_SHOUT_TEST = """
func TestShout(t *testing.T) {
\tif reply := zot.Command(t, "shout", "hey"); reply.Display != "HEY" {
\t\tt.Errorf("/shout hey answered %+v", reply)
\t}
}
"""
EDITS = {
    "python": Edits(
        own='\n\n@ext.command("shout", "Say TEXT in capitals")\ndef shout(args: str) -> dict:\n'
        "    return display(args.strip().upper())\n",
        own_before=PYTHON_MAIN,
        tests="test_main.py",
        test="\n    def test_shout(self):\n"
        '        self.assertEqual(self.zot.command("shout", "hey").display, "HEY")\n',
        test_before=PYTHON_MAIN,  # a method at the end of the class
        guard=(
            "    message = refusal.message(NAME)\n",
            '    message = "No. " + refusal.message(NAME)\n',
        ),
        modules="{}.py",
        registration="{}.register(ext)",
    ),
    "shell": Edits(
        own="\nshout() {\n\tprintf 'display\\n%s' \"${1^^}\"\n}\n\n"
        "ext_command shout 'Say TEXT in capitals' shout\n",
        own_before="\n# Sourced (as test_main.sh does)",  # "above the last lines"
        tests="test_main.sh",
        test="\ncheck shout $'display\\nHEY' \"$(shout hey)\"\n",
        test_before="\nif ((failures)); then",
        guard=("\t[[ -n $3 ]] || return 0\n", "\t[[ -n $3 ]] || return 0 # allowed\n"),
        modules="{}.sh",
        registration='source "${{BASH_SOURCE[0]%main.sh}}{}.sh"',
    ),
    **{
        flavour: Edits(
            own=GO_SHOUT,
            own_before="}\n\nfunc main() {",  # "at the end of init"
            tests="main_test.go",
            test=GO_SHOUT_TEST,
            test_before=None,
            guard=(
                "\treason = refusal.Message(extName)\n",
                '\treason = "No. " + refusal.Message(extName)\n',
            ),
            modules="{}.go",
            registration="register{}()",
        )
        for flavour in ("go", "go-sdk")
    },
    "typescript": Edits(
        own='\next.command("shout", "Say TEXT in capitals", (args) => ({\n'
        '  action: "display",\n  display: args.trim().toUpperCase(),\n}));\n',
        own_before=None,  # "at the end of src/extension.ts"
        tests="src/extension.test.ts",
        test='\ntest("shout shouts", async () => {\n'
        '  assert.equal((await zot.command("shout", "hey")).display, "HEY");\n});\n',
        test_before=None,
        guard=(
            "  const message = refusalMessage(NAME, refusal);\n",
            '  const message = "No. " + refusalMessage(NAME, refusal);\n',
        ),
        modules="src/{}.ts",
        registration="{}.register(ext);",
    ),
}
MODULES = {"ask": "ask", "events": "audit", "prompt": "conventions", "panel": "picker"}
# Only Python and shell are built here, and only Python's smoke test runs
# (shell's takes twice as long): a toolchain build of Go or TypeScript costs
# more than it tells (the merged text is checked instead).
CHEAP = ["python", "shell"]


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """This checkout as the releases v1.0.0 and v1.1.0 (a line of smoke-test apart)."""
    repo = clone_template(tmp_path_factory.mktemp("template"))
    release(repo, "v1.0.0")
    edit(repo / "template" / "smoke-test", "\n", "\n# release 1.1.0\n")
    release(repo, "v1.1.0")
    return repo


def insert(path: Path, before: str | None, text: str) -> None:
    """`text` before the last `before` in the file, or at its end."""
    source = path.read_text()
    if before is None:
        path.write_text(source + text)
        return
    assert before in source, f"{before!r} not in {path.name}"
    at = source.rindex(before)
    path.write_text(source[:at] + text + source[at:])


def append_case(project: Path, section: str, case: dict) -> None:
    """A case at the end of a list of smoke.json, one line, edited as text."""
    path = project / "smoke.json"
    source = path.read_text()
    line = json.dumps(case, ensure_ascii=False)
    match = re.search(rf'\n  "{section}": \[(\]|.*?\n  \])', source, re.DOTALL)
    assert match, f"no {section} list in smoke.json"
    if match[1] == "]":
        new = f"[\n    {line}\n  ]"
    else:
        new = match[0][match[0].index("[") : -len("\n  ]")] + f",\n    {line}\n  ]"
    path.write_text(source[: match.start(1) - 1] + new + source[match.end(1) :])
    assert json.loads(path.read_text())[section][-1] == case


def build_lists_conflicts(project: Path) -> list[str]:
    """./build's verdict on a project with conflicts: fails, names the files."""
    result = run(["./build"], project)
    assert result.returncode == 1, result.stdout + result.stderr
    header = "build: conflict markers from copier update in:\n"
    assert header in result.stderr, result.stderr
    listed = []
    for line in result.stderr.split(header, 1)[1].splitlines():
        if not line.startswith("  ") or " " in line.strip():
            break
        listed.append(line.strip())
    assert "git add the files and build again" in result.stderr, result.stderr
    return listed


# What the page says meets the capabilities' code when events, guard, panel,
# ask and prompt come: what the user added at the end of the handler (where
# README.md puts it) and at the end of its tests, where those capabilities'
# code and tests go too. (Go's test a user appends to main_test.go merges
# after the guard's; shell's main.sh keeps a blank line between the
# registrations and what the user adds above its last lines.)
MEET_ON_ADDING = {
    "python": ["main.py", "test_main.py"],
    "shell": ["test_main.sh"],
    "go": ["main.go"],
    "go-sdk": ["main.go"],
    "typescript": ["src/extension.test.ts", "src/extension.ts"],
}
# ... and when they go, also what the user changed of the guard's code and
# a case after the guard's in smoke.json.
MEET_ON_REMOVING = {
    flavour: sorted({*files, HANDLER[flavour], "smoke.json"})
    for flavour, files in MEET_ON_ADDING.items()
}


def in_conflict(project: Path) -> list[str]:
    """The files copier left in conflict, by their markers and by git, which
    must agree; no .rej files."""
    marked = sorted(conflicted(project))
    status = git(project, "status", "--porcelain").splitlines()
    assert sorted(line[3:] for line in status if line.startswith("UU")) == marked, status
    assert not list(project.rglob("*.rej"))
    return marked


@pytest.mark.parametrize("flavour", list(MEET_ON_ADDING))
def test_adding_and_removing_capabilities_merges_as_the_page_says(template, tmp_path, flavour):
    edits = EDITS[flavour]
    language = FLAVOURS[flavour]["language"]
    handler = HANDLER[flavour]
    tests, test = edits.tests, edits.test
    # (the newest release, which the page's copier update goes to)
    project = generate(template, tmp_path / "ext", "v1.1.0", capabilities=BASE, **FLAVOURS[flavour])
    edit(project / handler, *PROMPT_EDIT)
    insert(project / handler, edits.own_before, edits.own)
    insert(project / tests, edits.test_before, test)
    append_case(project, "commands", SHOUT_CASE)
    append_case(project, "tools", TOOL_CASE)
    commit_all(project, "my command, its test and cases")
    mine = git(project, "rev-parse", "HEAD")

    # Adding: the capabilities' files, registrations, tests and cases arrive,
    # the user's edits stay; conflicts only where the page says, which
    # ./build lists (before it needs a toolchain). Resolved as the page
    # says, with both sides: the template's, then the user's code again
    # where it was (a block's edges can cut a function in two: "keep both
    # blocks" alone would lose a closing line).
    result = update(project, "-d", f"capabilities=[{', '.join(BASE + ADDED)}]")
    assert result.returncode == 0, result.stdout + result.stderr
    assert in_conflict(project) == sorted(MEET_ON_ADDING[flavour])
    assert build_lists_conflicts(project) == sorted(MEET_ON_ADDING[flavour])
    mine_in = {handler: (edits.own_before, edits.own), tests: (edits.test_before, test)}
    for path in MEET_ON_ADDING[flavour]:
        take_the_templates_side(project / path)
        insert(project / path, *mine_in[path])
    source = (project / handler).read_text()
    assert PROMPT_EDIT[1] in source and edits.own.strip() in source
    for capability, module in MODULES.items():
        assert (project / edits.modules.format(module)).is_file(), capability
        name = module.capitalize() if language == "go" else module
        assert edits.registration.format(name) in source, capability
    assert (project / "zot" / "guard").is_dir()
    assert test.strip() in (project / tests).read_text()
    cases = json.loads((project / "smoke.json").read_text())
    assert cases["commands"][-1] == SHOUT_CASE and cases["tools"][-1] == TOOL_CASE
    assert any(case["name"] == "demo-ext-pick" for case in cases["commands"])  # panel
    assert any(case["name"] == "demo_ext_confirm" for case in cases["tools"])  # ask
    assert len(cases["intercepts"]) > 10 and cases["events"]  # guard and prompt, events
    if language in CHEAP:
        build(project)
    if language == "python":
        report = smoke(project)
        assert any(c["check"].startswith("smoke.json: command /shout") for c in report["checks"])
        assert any(c["check"].startswith("smoke.json: intercept bash") for c in report["checks"])
    commit_all(project, "the capabilities")

    # Removing, after an edit of the guard's code and a case after the
    # guard's: those meet the guard's removal too.
    edit(project / handler, *edits.guard)
    append_case(project, "intercepts", INTERCEPT_CASE)
    commit_all(project, "my guard edit and case")
    result = update(project, "-d", f"capabilities=[{', '.join(BASE)}]")
    assert result.returncode == 0, result.stdout + result.stderr
    assert in_conflict(project) == MEET_ON_REMOVING[flavour]
    assert build_lists_conflicts(project) == MEET_ON_REMOVING[flavour]
    for module in MODULES.values():
        assert not (project / edits.modules.format(module)).exists(), module
    assert not (project / "zot" / "guard").exists()
    # Resolved as the page says: the user's lines without the removed
    # capabilities' (here: the guard's edit and case go with the guard).
    take_the_templates_side(project / "smoke.json")
    for path in MEET_ON_REMOVING[flavour]:
        if path != "smoke.json":  # the user's lines, as before the capabilities
            git(project, "checkout", mine, "--", path)
    # The project is what it was before the capabilities came (and ran with
    # them: nothing more to build or run).
    git(project, "add", "--all")
    assert git(project, "diff", "--cached", "--stat", mine) == ""


def page_block(heading: str | None) -> list[str]:
    """The command lines of the first sh block of docs/updating.md under a
    heading (None: the page's first)."""
    page = (ROOT / "docs" / "updating.md").read_text()
    section = page[page.index(f"\n## {heading}\n") :] if heading else page
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)[1]
    return [line.split("  #")[0].strip() for line in block.replace("\\\n", " ").splitlines()]


def run_as_written(project: Path, lines: list[str]) -> None:
    """Each line in a shell, stdin not a terminal; copier is the suite's."""
    copier_dir = os.path.dirname(shutil.which("copier", path=os.path.dirname(sys.executable)))
    env = {**os.environ, **GIT_ENV, "PATH": f"{copier_dir}{os.pathsep}{os.environ['PATH']}"}
    for line in lines:
        result = subprocess.run(
            line,
            shell=True,
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, f"{line}\n{result.stdout}{result.stderr}"


def test_the_pages_commands_run_as_written_without_a_terminal(template, tmp_path):
    """The update recipe and the change of capabilities, line by line."""
    project = generate(template, tmp_path / "ext", "v1.0.0", capabilities=BASE)
    run_as_written(project, page_block(None))
    assert "_commit: v1.1.0" in (project / ".copier-answers.yml").read_text()
    lines = page_block("Changing answers")
    assert any(line.startswith("copier update --defaults -d 'capabilities=[") for line in lines)
    run_as_written(project, lines)
    assert (project / "zot" / "guard").is_dir() and git(project, "status", "--porcelain") == ""


@pytest.mark.parametrize("flavour", ["python", "shell", "go", "typescript"])
def test_build_lists_markers_and_rej_files_before_it_needs_a_toolchain(tmp_path, flavour):
    """Right after copier update: the files with conflict markers and the
    FILE.rej of `copier update --conflict rej`, then a failure; nothing is
    built (no node_modules, no binary), so no toolchain is needed for it."""
    project = render(tmp_path / "ext", capabilities=BASE, **FLAVOURS[flavour])
    handler = project / HANDLER[flavour]
    handler.write_text(handler.read_text() + "<<<<<<< before updating\nmine\n=======\n")
    (project / "smoke.json.rej").write_text("@@ -1 +1 @@\n-{\n+{\n")
    result = run(["./build"], project)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith(
        f"build: conflict markers from copier update in:\n  {HANDLER[flavour]}\n"
    ), result.stderr
    assert "build: changes copier update could not apply, in:\n  smoke.json.rej\n" in result.stderr
    assert result.stdout == "" and not (project / "node_modules").exists()
    assert not (project / "demo-ext").exists()
