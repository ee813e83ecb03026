"""A user's first real picker: /review lists the files `git status` shows in
zot's project folder, enter sends one to the model; an events handler keeps an
audit log. The user changes only the picker's items(); smoke.json checks it in
a git repository the case brings, --interactive tries it in a repository of
the user's (--project), and what `save` keeps replays."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import build, render, run

CAPABILITIES = ["panel", "events", "prompt"]
EVENTS = ["session_start", "turn_end", "session_end", "tool_result"]

# items() as the user writes it: the files git lists as changed.
ITEMS = {
    "python": (
        "def items(cwd: str) -> list[str]:",
        '''def items(cwd: str) -> list[str]:
    """The files git lists as changed in zot's project folder."""
    git = subprocess.check_output(["git", "status", "--porcelain"], cwd=cwd, text=True)
    return [line[3:] for line in git.splitlines()]
''',
        "picker.py",
        "import subprocess\n",
    ),
    "typescript": (
        "export function items(cwd: string): string[] {",
        """export function items(cwd: string): string[] {
  const git = execFileSync("git", ["status", "--porcelain"], { cwd });
  return git.toString().split("\\n").filter(Boolean).map((l) => l.slice(3));
}
""",
        "src/picker.ts",
        'import { execFileSync } from "node:child_process";\n',
    ),
}
# The case the user adds: a repository of two files, one changed, one removed,
# one new; the second of them is sent.
CASE = {
    "name": "review",
    "git": True,
    "files": {"a.py": "x = 1\n", "b.py": "y = 2\n"},
    "changes": {"a.py": "x = 2\n", "b.py": None, "c.py": "new\n"},
    "keys": ["down", "enter"],
    "expect": {"submit": "b.py", "closed": True},
}


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


def user_project(tmp_path: Path, language: str) -> Path:
    project = render(
        tmp_path / "review",
        language=language,
        capabilities=CAPABILITIES,
        panel_command="review",
        events=EVENTS,
        ci=False,
    )
    start, function, name, imports = ITEMS[language]
    path = project / name
    source = path.read_text()
    at = source.index(start)
    if language == "python":  # up to the two blank lines after it
        end = source.index("\n\n\n", at) + 1
    else:  # up to its closing brace
        end = source.index("\n}\n", at) + 3
    source = source[:at] + function + source[end:]
    first = source.index("\nimport ") + 1 if language == "python" else 0
    path.write_text(source[:first] + imports + source[first:])
    build(project)
    return project


@pytest.mark.parametrize("language", ["python", "typescript"])
def test_review_picks_from_a_git_repository_the_case_brings_and_saved_cases_replay(
    tmp_path, language
):
    project = user_project(tmp_path, language)
    smoke_json = json.loads((project / "smoke.json").read_text())
    # the template's cases of the picker are the user's to replace
    smoke_json["commands"] = [c for c in smoke_json["commands"] if c["name"] != "review"]
    smoke_json["commands"].append(CASE)
    smoke_json["events"] = [
        {
            "event": "session_end",
            "expect": {"data_files": {"demo-ext-events.jsonl": "session_end"}},
        },
        {"event": "tool_result", "fields": {"result": {"content": [], "is_error": True}}},
    ]
    (project / "smoke.json").write_text(json.dumps(smoke_json, indent=1))
    report = json.loads(run(["./smoke-test", "--json"], project).stdout)
    checks = {c["check"]: c for c in report["checks"]}
    failed = [c for c in report["checks"] if c["status"] == "fail"]
    assert not failed, failed
    case = next(c for c in checks if c.startswith('smoke.json: command /review "" keys down'))
    assert checks[case]["status"] == "pass"
    # the built-in check runs in an empty folder, not a repository: it says so
    panel = checks["panel of /review (a key, a resize, esc)"]
    assert panel["status"] == "skip" and "answered an error" in panel["detail"], panel
    assert checks[next(c for c in checks if "event session_end" in c)]["status"] == "pass"

    old = json.loads(run(["./smoke-test", "--json", "--old-host"], project).stdout)
    old_checks = {c["check"]: c for c in old["checks"]}
    assert old_checks["events session_end, tool_result"]["detail"] == "zot 0.1.62 never sends them"
    assert "events session_start, turn_end" in old_checks
    # zot 0.1.62 takes no submit: the skeleton's note shows the text instead
    assert old_checks[case]["status"] == "pass", old_checks[case]

    # the same by hand, in a repository of the user's
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "one.md").write_text("one\n")
    (repo / "two.md").write_text("two\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "start")
    (repo / "two.md").write_text("changed\n")
    (repo / "three.md").write_text("new\n")
    saved = tmp_path / "saved.json"
    typed = f"/review\ndown\nenter\nprompt Be brief.\nevent turn_end\nsave {saved}\nquit\n"
    tried = run(["./smoke-test", "--interactive", "--project", str(repo)], project, input=typed)
    assert tried.returncode == 0, tried.stdout + tried.stderr
    assert f"project:  {repo} (yours)" in tried.stdout
    assert 'submit → zot sends it to the model: "three.md"' in tried.stdout, tried.stdout
    assert (repo / "two.md").read_text() == "changed\n"  # the user's folder as it was
    cases = json.loads(saved.read_text())
    command = cases["commands"][0]
    assert command["git"] is True and command["files"] == {"one.md": "one\n", "two.md": "two\n"}
    assert command["changes"] == {"two.md": "changed\n", "three.md": "new\n"}
    assert command["expect"]["submit"] == "three.md"
    assert cases["intercepts"][0]["system_prompt"] == "Be brief."
    assert cases["events"][0]["event"] == "turn_end"
    replay = json.loads(run(["./smoke-test", "--json", "--expect", str(saved)], project).stdout)
    replayed = [c for c in replay["checks"] if c["check"].startswith("smoke.json")]
    assert len(replayed) == 3 and all(c["status"] == "pass" for c in replayed), replayed
