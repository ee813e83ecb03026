"""A generated project points only at what its user has.

Every flavour is rendered with every capability (rendering only, no build)
and each text file is searched for references that make no sense to the
user: the template's own notes and tests, files the project does not have,
and other languages' files or tools in a project written in one language.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import CAPABILITIES, FLAVOURS, render

# Never in a generated project: files it does not have, notes for whoever
# works on the template, the template's own test suite.
EVERYWHERE = [
    r"HOST\.md",
    r"shared/zot",
    r"template maintainers?",
    r"maintainers? of the template",
    r"the suite",
    r"\bpytest\b",
    r"\btests/",
    r"_copier_conf",
    r"which gofmt reformats",
    r"\bother languages?\b",
    # Where the template's code was before it moved to zot/.
    r"\bsrc/(guard|protocol|index)(\.test)?\.ts\b",
    r"\bzot_runtime\.(py|sh)\b",
    # Lists of languages ("Go, Python, JavaScript and jq"): a project has one.
    r"\b(Python|Go|JavaScript|TypeScript|jq)(,| and| or) (Python|Go|JavaScript|TypeScript|jq)\b",
]

# What belongs to one language only: named in a project of another language,
# it points at something the user does not have.
OWN = {
    "python": [
        r"\bmain\.py\b",
        r"\bzot/runtime\.py\b",
        r"\bzot/testing\.py\b",
        r"\btest_main\.py\b",
        r"\bguard\.py\b",
        r"python3 -m unittest",
    ],
    "shell": [r"\bmain\.sh\b", r"\bjq\b"],
    "go": [
        r"\bmain\.go\b",
        r"\bmain_test\.go\b",
        r"\bprotocol\.go\b",
        r"\bprotocol_test\.go\b",
        r"\bguard\.go\b",
        r"\bgo\.mod\b",
        r"\bgo test\b",
        r"\bgo vet\b",
        r"\bgofmt\b",
    ],
    "typescript": [
        r"\bextension\.ts\b",
        r"\bextension\.test\.ts\b",
        r"\bprotocol\.ts\b",
        r"\bguard\.ts\b",
        r"\bguard\.test\.ts\b",
        r"\bindex\.ts\b",
        r"\bpackage\.json\b",
        r"\bnpm test\b",
        r"\bprettier\b",
        r"\bJavaScript\b",
        r"\bTypeScript\b",
    ],
}

# The frames README.md's Protocol section lists, by capability.
FRAMES = {
    None: ["hello", "hello_ack", "ready", "shutdown", "shutdown_ack"],
    "commands": ["register_command", "command_invoked", "command_response"],
    "tools": ["register_tool", "tool_call", "tool_result", "tool_cancel"],
    "events": ["subscribe", "event"],
    "guard": ["subscribe", "event_intercept", "event_intercept_response"],
    "panel": ["register_command", "command_invoked", "command_response", "open_panel"],
    "ask": ["register_tool", "tool_call", "tool_result", "tool_cancel", "open_panel"],
    "prompt": ["subscribe", "event_intercept", "event_intercept_response"],
    "skills": [],  # no frames: zot reads the skill from the folder
}
FRAMES["panel"] += ["panel_key", "panel_render", "panel_close", "submit"]
FRAMES["ask"] += ["panel_key", "panel_render", "panel_close", "notify", "clear_notes"]
# zot's Go SDK sends neither (tests/test_claims.py checks what each sends).
CANNOT_SEND = {"go-sdk": {"submit", "clear_notes"}}

SKIP_NAMES = {"package-lock.json"}
SKIP_DIRS = {"node_modules", ".git", "dist"}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("self-contained")
    return {
        key: render(base / key, capabilities=CAPABILITIES, ci=True, **answers)
        for key, answers in FLAVOURS.items()
    }


def text_files(project: Path) -> dict[str, str]:
    """Every text file of a project, by relative path, minus the skipped."""
    files = {}
    for path in sorted(project.rglob("*")):
        relative = path.relative_to(project)
        if not path.is_file() or path.name in SKIP_NAMES:
            continue
        if SKIP_DIRS.intersection(relative.parts[:-1]):
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue  # a binary
        try:
            text = data.decode()
        except UnicodeDecodeError:
            continue
        if path.name == "guard-cases.json":
            # The cases are sample bash commands (npm test, jq, python3 ...),
            # not references: only the note is prose.
            text = json.loads(text)["about"]
        files[relative.as_posix()] = text
    return files


def offences(files: dict[str, str], patterns: list[str]) -> list[str]:
    found = []
    for name, text in files.items():
        for number, line in enumerate(text.splitlines(), 1):
            for pattern in patterns:
                if re.search(pattern, line):
                    found.append(f"{name}:{number}: {pattern!r} in {line.strip()!r}")
    return found


@pytest.mark.parametrize("key", list(FLAVOURS))
def test_no_reference_to_what_the_user_does_not_have(rendered, key):
    language = FLAVOURS[key]["language"]
    files = text_files(rendered[key])
    assert "extension.json" in files and "README.md" in files
    foreign = [p for other, own in OWN.items() if other != language for p in own]
    found = offences(files, EVERYWHERE + foreign)
    assert not found, "references the project cannot follow:\n" + "\n".join(found)


@pytest.mark.parametrize("key", list(FLAVOURS))
def test_readme_documents_the_frames(rendered, key):
    """Files send the user to README.md for the protocol: it must be there."""
    readme = (rendered[key] / "README.md").read_text()
    match = re.search(r"^## Protocol\n(.*?)(?=^## |\Z)", readme, re.MULTILINE | re.DOTALL)
    assert match, "README.md has no Protocol section"
    section = match.group(1)
    for capability in [None, *CAPABILITIES]:
        for frame in FRAMES[capability]:
            sent = frame not in CANNOT_SEND.get(key, set())
            assert (f"`{frame}`" in section) == sent, f"the Protocol section and {frame}"


@pytest.mark.parametrize(
    "capability", [c for c in CAPABILITIES if c not in ("events", "guard", "skills")]
)
def test_protocol_section_lists_only_the_chosen_capabilities(tmp_path, capability):
    project = render(tmp_path / "p", language="python", capabilities=[capability])
    readme = (project / "README.md").read_text()
    section = readme.split("## Protocol", 1)[1].split("\n## ", 1)[0]
    others = {c: f for c, f in FRAMES.items() if c not in (None, capability)}
    for frames in others.values():
        for frame in frames:
            if frame not in FRAMES[capability]:
                assert f"`{frame}`" not in section, f"{frame} listed without its capability"
