"""The oldest copier copier.yml admits renders and updates like the newest.

`_min_copier_version` is a promise: an older copier says "this template
requires Copier version >= X" instead of failing half-way. The suite
installs exactly that version (into .cache/, once) and checks it.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import CAPABILITIES, ROOT, VARIANTS, differences, render
from test_update import clone_template, commit_all, git, previous_release

MINIMUM = yaml.safe_load((ROOT / "copier.yml").read_text())["_min_copier_version"]


# The release before the minimum: it fails on this template (ValueError:
# Invalid choice) where it is not stopped first.
TOO_OLD = "9.7.1"


def copier_of_version(version: str) -> str:
    """The copier command of a venv in .cache/ with exactly that version."""
    venv = ROOT / ".cache" / f"copier-{version}"
    copier_bin = venv / "bin" / "copier"
    lock = ROOT / ".cache" / f"copier-{version}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the xdist workers share the venv
        if not copier_bin.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            pip = [str(venv / "bin" / "pip"), "install", "-q", f"copier=={version}"]
            subprocess.run(pip, check=True)
    said = subprocess.run([str(copier_bin), "--version"], check=True, capture_output=True)
    assert said.stdout.decode().split()[-1] == version, said.stdout
    return str(copier_bin)


@pytest.fixture(scope="session")
def oldest_copier() -> str:
    return copier_of_version(MINIMUM)


def test_an_older_copier_is_told_the_version_it_needs(tmp_path):
    too_old = copier_of_version(TOO_OLD)
    result = subprocess.run(
        [too_old, "copy", "--defaults", "--vcs-ref=HEAD", str(ROOT), str(tmp_path / "ext")],
        check=False,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert f"requires Copier version >= {MINIMUM}" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def copier(copier_bin: str, *args: str, cwd: Path | None = None) -> None:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    result = subprocess.run(
        [copier_bin, *args], check=False, cwd=cwd, capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_oldest_copier_renders_what_the_newest_does(oldest_copier, tmp_path, variant):
    answers = {"language": VARIANTS[variant].language, **dict(VARIANTS[variant].answers)}
    newest = render(tmp_path / "newest" / "demo-ext", capabilities=CAPABILITIES, **answers)
    data = [arg for key, value in answers.items() for arg in ("-d", f"{key}={value}")]
    data += ["-d", f"capabilities=[{', '.join(CAPABILITIES)}]"]
    oldest = tmp_path / "oldest" / "demo-ext"
    copier(oldest_copier, "copy", "--quiet", "--defaults", "--vcs-ref=HEAD", *data,
           str(ROOT), str(oldest))  # fmt: skip
    answers_file = ".copier-answers.yml"
    assert differences(newest, oldest) in ([], [answers_file])

    def recorded(project: Path) -> dict:  # _commit may say "dirty" in one of them
        return {
            key: value
            for key, value in yaml.safe_load((project / answers_file).read_text()).items()
            if key != "_commit"
        }

    assert recorded(newest) == recorded(oldest)


def test_the_oldest_copier_updates_from_the_previous_release(oldest_copier, tmp_path):
    repo = clone_template(tmp_path)
    previous = previous_release(repo)
    project = tmp_path / "ext"
    copier(oldest_copier, "copy", "--quiet", "--defaults", f"--vcs-ref={previous}",
           "-d", "name=demo-ext", "-d", "capabilities=[commands, tools, guard]",
           str(repo), str(project))  # fmt: skip
    git(project, "init", "--quiet")
    commit_all(project, "generated")
    copier(oldest_copier, "update", "--quiet", "--defaults", "--vcs-ref=HEAD", cwd=project)
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["_commit"] != previous
    assert "<<<<<<<" not in (project / "main.py").read_text()
    assert (project / "zot" / "runtime.py").is_file()
