"""The smoke test's project folder for a case: laid out from "project", "files"
(generated content too), "git" and "changes", and taken back by --interactive's
save so that the case lays it out again."""

from __future__ import annotations

import subprocess

import pytest
from host import ROOT_OF_SMOKE_TEST  # noqa: F401 - puts the smoke test's package on the path
from smoke_test.cases import case_problem, with_defaults
from smoke_test.project import FixtureError, fixture_problem, generated, lay_out, snapshot


def git(folder, *args) -> str:
    done = subprocess.run(
        ["git", "-C", str(folder), *args], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def tree(folder) -> dict:
    return {
        str(path.relative_to(folder)): path.read_text()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(folder).parts
    }


def test_a_git_fixture_is_one_commit_and_the_changes_git_status_lists(tmp_path):
    (tmp_path / "ext" / "tests" / "fixtures" / "base").mkdir(parents=True)
    (tmp_path / "ext" / "tests" / "fixtures" / "base" / "README.md").write_text("# base\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "left-over.txt").write_text("from the case before")
    case = {
        "project": "tests/fixtures/base",
        "files": {"a.py": "x = 1\n", "src/b.py": "y = 2\n", "big.txt": {"size": 100_000}},
        "git": True,
        "changes": {"a.py": "x = 2\n", "new.md": "new\n", "src/b.py": None},
    }
    lay_out(str(project), case, str(tmp_path / "ext"))
    assert git(project, "log", "--format=%s").splitlines() == ["The smoke test's fixture"]
    committed = git(project, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert committed == ["README.md", "a.py", "big.txt", "src/b.py"]
    status = git(project, "status", "--porcelain").splitlines()
    assert sorted(status) == [" D src/b.py", " M a.py", "?? new.md"]
    assert not (project / "left-over.txt").exists()
    assert len((project / "big.txt").read_text()) == 100_000

    # what --interactive's save keeps lays the same project out again
    fields = snapshot(str(project)).fields(str(tmp_path / "ext"))
    assert fields["git"] is True
    assert fields["changes"] == {"a.py": "x = 2\n", "new.md": "new\n", "src/b.py": None}
    assert fields["project"].startswith("testdata/project-")  # 100 kB: a folder
    again = tmp_path / "again"
    again.mkdir()
    lay_out(str(again), fields, str(tmp_path / "ext"))
    assert tree(again) == tree(project)
    assert sorted(git(again, "status", "--porcelain").splitlines()) == sorted(status)


def test_a_small_project_is_saved_in_the_case_and_one_without_git_as_files(tmp_path):
    project = tmp_path / "project"
    (project / "notes").mkdir(parents=True)
    (project / "notes" / "a.txt").write_text("one\n\ntwo\n")
    (project / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0")
    taken = snapshot(str(project))
    assert taken.skipped == ["image.png"]
    assert taken.fields(str(tmp_path)) == {"files": {"notes/a.txt": "one\n\ntwo\n"}}
    git(project, "init", "-q")  # a repository without a commit: every file is a change
    fields = snapshot(str(project)).fields(str(tmp_path))
    assert fields == {"git": True, "changes": {"notes/a.txt": "one\n\ntwo\n"}}


def test_generated_content_has_the_size_asked_for():
    assert generated({"size": 20}) == "line 1\nline 2\nline 3"[:20]
    assert generated({"size": 7, "repeat": "ab"}) == "abababa"
    assert len(generated({"size": 1 << 20}).encode()) == 1 << 20


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ({"changes": {"a": "x"}}, 'changes go with "git": true'),
        ({"project": "../elsewhere"}, "name a folder of the extension's own"),
        ({"project": "tests/none"}, "no such folder: tests/none"),
        ({"files": {"a": {"size": -1}}}, "size must be a number of bytes"),
        ({"files": {"a": {"size": 1, "lines": 2}}}, 'unknown key "lines"'),
        ({"files": {"a": None}}, "must be a text"),
        ({"files": {"/etc/passwd": "x"}}, "files are named by their path in the project"),
    ],
)
def test_a_fixture_that_cannot_be_laid_out_says_why(tmp_path, case, problem):
    assert problem in fixture_problem(case, str(tmp_path))


def test_a_case_with_an_unknown_expect_key_names_the_known_ones(tmp_path):
    case = with_defaults("events", {"event": "session_end", "expect": {"notfy": "x"}})
    problem = case_problem("events", case, str(tmp_path))
    assert problem.startswith('unknown expect key "notfy"; events know notify, log, files')
    good = with_defaults("events", {"event": "session_end", "expect": {"notify": "x"}})
    assert case_problem("events", good, str(tmp_path)) == ""


def test_git_missing_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on it
    with pytest.raises(FixtureError, match="git is not installed"):
        lay_out(str(tmp_path), {"git": True}, str(tmp_path))
