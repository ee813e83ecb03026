"""The documentation site builds without warnings (broken links fail)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CAPABILITIES, FLAVOURS, ROOT, render, run


def test_docs_build_strict(tmp_path):
    mkdocs = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = run(mkdocs, ROOT, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "index.html").is_file()


def rendered_files(tmp_path) -> set[str]:
    """Every file any flavour renders, all capabilities."""
    files = set()
    for name, answers in FLAVOURS.items():
        project = render(tmp_path / name, capabilities=CAPABILITIES, **answers)
        files |= {str(path.relative_to(project)) for path in project.rglob("*") if path.is_file()}
    return files


def folders(name: str) -> list[str]:
    """The folders a file is in: skills/x/SKILL.md -> skills/x, skills."""
    parents = []
    while name := os.path.dirname(name):
        parents.append(name)
    return parents


def test_updating_names_the_owner_of_every_generated_file(tmp_path):
    """docs/updating.md's table: every file (or its folder) has a row."""
    table = (ROOT / "docs" / "updating.md").read_text()
    table = "\n".join(line for line in table.splitlines() if line.startswith("|"))
    missing = [
        name
        for name in sorted(rendered_files(tmp_path))
        if f"`{name}`" not in table and not any(f"`{folder}/`" in table for folder in folders(name))
    ]
    assert not missing, f"docs/updating.md does not say who owns {missing}"


def scripted_copies(path: Path) -> list[str]:
    """The `copier copy --defaults ...` command lines of a page's sh blocks."""
    text = path.read_text().replace("\\\n", " ")
    return [
        " ".join(line.split())
        for block in re.findall(r"```sh\n(.*?)```", text, re.DOTALL)
        for line in block.splitlines()
        if line.startswith("copier copy --defaults")
    ]


@pytest.mark.parametrize("page", ["README.md", "docs/index.md", "docs/questions.md"])
def test_the_scripted_copies_of_the_docs_work_without_a_terminal(tmp_path, page):
    """As written, with the placeholder address pointing at this checkout."""
    commands = scripted_copies(ROOT / page)
    assert commands, f"{page} shows no copier copy --defaults"
    answers = re.search(r"```yaml\n# answers.yml\n(.*?)```", (ROOT / page).read_text(), re.DOTALL)
    copier_bin = shutil.which("copier", path=os.path.dirname(sys.executable)) or "copier"
    for number, command in enumerate(commands):
        cwd = tmp_path / str(number)  # each example on its own
        cwd.mkdir()
        if answers:
            (cwd / "answers.yml").write_text(answers.group(1))
        argv = shlex.split(command.replace("gh:org/zot-ext-template", str(ROOT)))
        argv[:2] = [copier_bin, "copy", "--vcs-ref", "HEAD", "--quiet"]
        result = subprocess.run(
            argv,
            check=False,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, f"{command}\n{result.stderr}"
        assert (cwd / argv[-1] / "extension.json").is_file(), command
