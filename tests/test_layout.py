"""The file a user edits holds handlers, not protocol: its size and contents."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
from conftest import CAPABILITIES, FLAVOURS, HANDLER, LANGUAGES, ROOT, VARIANTS, render

# Limits on the handler file's lines: default capabilities, then all eight.
DEFAULT_LIMIT, ALL_LIMIT = 90, 382
# What only the protocol does, in any of the languages: reading stdin,
# framing, the handshake and ready frames, worker threads, the writer lock.
PROTOCOL = re.compile(
    r"sys\.std(in|out)|process\.std(in|out)|os\.Std(in|out)|bufio\.|readline|\bread -r\b(?!.*<)"
    r"|json\.loads|threading|sync\.Mutex|_lock\b|\bqueue\b"
    r"|[\"']?[Tt]ype[\"']?: *[\"'](hello|hello_ack|ready|subscribe|register_command|register_tool)[\"']"
)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(
    ("capabilities", "limit"),
    [(["commands", "tools"], DEFAULT_LIMIT), (CAPABILITIES, ALL_LIMIT)],
    ids=["default", "all"],
)
def test_handler_file_is_small_and_holds_no_protocol(tmp_path, flavour, capabilities, limit):
    answers = FLAVOURS[flavour]
    project = render(tmp_path / "ext", capabilities=capabilities, **answers)
    handler = HANDLER.get(flavour, "main.go")
    source = (project / handler).read_text(encoding="utf-8")
    lines = source.count("\n")
    assert lines <= limit, f"{handler}: {lines} lines (at most {limit})"
    protocol = [line for line in source.splitlines() if PROTOCOL.search(line)]
    assert not protocol, protocol


def test_python_runtime_and_guard_are_the_templates_files(tmp_path):
    """zot/runtime.py is the same in every project; zot/guard/ comes with guard."""
    one = render(tmp_path / "one", language="python", capabilities=["tools"])
    two = render(tmp_path / "two", language="python", capabilities=CAPABILITIES, name="other")
    runtime = "zot/runtime.py"
    assert (one / runtime).read_text() == (two / runtime).read_text()
    assert not (one / "zot/guard").exists() and (two / "zot/guard/guard.py").is_file()
    assert PROTOCOL.search((one / runtime).read_text())


@pytest.mark.parametrize("variant", LANGUAGES)
def test_build_is_the_languages_hook_as_it_is(tmp_path, variant):
    """hooks/LANGUAGE is rendered as ./build byte for byte, executable."""
    language = VARIANTS[variant].language
    answers = dict(VARIANTS[variant].answers)
    project = render(tmp_path / "ext", language=language, capabilities=CAPABILITIES, **answers)
    hook = ROOT / "hooks" / language
    assert (project / "build").read_bytes() == hook.read_bytes()
    assert os.access(project / "build", os.X_OK)


def test_no_path_under_template_carries_a_condition():
    """template/ reads like the projects it makes: copier.yml's _exclude leaves
    out what a project's answers do not ask for."""
    template = ROOT / "template"
    conditional = [str(p.relative_to(template)) for p in template.rglob("*") if "{%" in p.name]
    assert not conditional, conditional


def test_one_go_skeleton_and_one_go_test_template_for_both_flavours():
    """Both Go flavours render template/main.go.jinja and main_test.go.jinja
    (and a capability's file and its test): no second copy of the handlers
    anywhere in the repository."""
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    go_templates = [name for name in tracked if name.endswith(".go.jinja")]
    mains = [name for name in go_templates if "func main()" in (ROOT / name).read_text()]
    tests = [name for name in go_templates if name.endswith("_test.go.jinja")]
    assert mains == ["template/main.go.jinja"]
    assert sorted(tests) == sorted(
        f"template/{n}_test.go.jinja" for n in [*CAPABILITY_FILES, "main"]
    )
    assert all(f"template/{n}.go.jinja" in go_templates for n in CAPABILITY_FILES)


CAPABILITY_FILES = ["ask", "audit", "conventions", "picker"]


# Template files read like the files they render: at most TAG_LIMIT `{%` tags
# each (a capability's code goes in a file of its own).
TAG_LIMIT = 25


def test_template_files_have_few_jinja_tags():
    template = ROOT / "template"
    counts = {
        path.relative_to(template).as_posix(): path.read_text(encoding="utf-8").count("{%")
        for path in template.rglob("*.jinja")
    }
    over = {name: count for name, count in counts.items() if count > TAG_LIMIT}
    assert not over, over
    assert len(counts) > 20  # the template's files were found
