"""The generated README's worked example really works in every language.

"A second command and a second tool": the code block is put where the
README says, the smoke.json cases it shows are added, and the project is
built and smoke-tested.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import (
    HANDLER,
    LANGUAGES,
    ROOT,
    VARIANTS,
    build,
    register_in_go,
    render,
    smoke,
)

HEADING = "### A second command and a second tool"


def example(readme: str) -> tuple[str, dict]:
    """The code block under HEADING and the smoke.json cases after it."""
    section = readme[readme.index(HEADING) :]
    code, cases = re.findall(r"```[a-z]+\n(.*?)```", section, re.DOTALL)[:2]
    return code, json.loads("{" + cases + "}")


def put(language: str, source: str, code: str) -> str:
    """Where the README says the code goes: before the run (Python, shell),
    at the end of init (Go), or at the end (TypeScript)."""
    if language == "go":
        indented = "".join(f"\t{line}\n" if line else "\n" for line in code.splitlines())
        return register_in_go(source, indented)
    if language == "python":
        main = '\n\nif __name__ == "__main__":'
        assert main in source
        return source.replace(main, "\n\n" + code.rstrip("\n") + main)
    if language == "shell":
        run_block = "\n# Sourced (as test_main.sh does)"
        assert run_block in source
        return source.replace(run_block, "\n" + code.rstrip("\n") + "\n" + run_block)
    return source + "\n" + code


@pytest.mark.parametrize("variant", LANGUAGES)
def test_the_readme_example_of_a_second_command_and_tool_works(projects, tmp_path, variant):
    """With the fewest capabilities that show it: it imports nothing more."""
    project = projects.fresh_copy(tmp_path, variant, ["commands", "tools"])
    code, cases = example((project / "README.md").read_text())
    handler = project / HANDLER[variant]
    handler.write_text(put(VARIANTS[variant].language, handler.read_text(), code))
    smoke_json = json.loads((project / "smoke.json").read_text())
    for section, added in cases.items():
        smoke_json[section] += added
    (project / "smoke.json").write_text(json.dumps(smoke_json, indent=2))
    build(project)
    report = smoke(project)
    checked = " ".join(c["check"] for c in report["checks"])
    assert "shout" in checked and "split_words" in checked, checked


def test_every_language_has_the_example(tmp_path):
    for variant in VARIANTS:
        answers = dict(VARIANTS[variant].answers)
        language = VARIANTS[variant].language
        project = render(tmp_path / variant, language=language, **answers)
        assert HEADING in Path(project / "README.md").read_text(), variant


# The template's published documentation, where the README links to it.
DOCS = re.search(r"^site_url: (\S+)$", (ROOT / "mkdocs.yml").read_text(), re.MULTILINE)[1]


@pytest.mark.parametrize("variant", LANGUAGES)
def test_the_readme_fits_on_two_screens_and_links_to_real_pages(tmp_path, variant):
    answers = {"language": VARIANTS[variant].language, **dict(VARIANTS[variant].answers)}
    project = render(tmp_path / variant, capabilities=["commands", "tools", "guard"], **answers)
    readme = (project / "README.md").read_text()
    assert len(readme.splitlines()) <= 120
    pages = re.findall(re.escape(DOCS) + r"([^)\s]*)", readme)
    assert f"languages/{answers['language']}/" in pages, pages
    for page in pages:
        source = ROOT / "docs" / (page.rstrip("/") or "index")
        assert source.with_suffix(".md").is_file(), page


GUARD_EXAMPLE = "to refuse `npm publish`"


@pytest.mark.parametrize("variant", LANGUAGES)
def test_the_readme_example_of_a_guard_rule_works(projects, tmp_path, variant):
    """The rule goes into guard-policy.json and the case into smoke.json."""
    project = projects.fresh_copy(tmp_path, variant, ["guard"])
    section = (project / "README.md").read_text().split(GUARD_EXAMPLE, 1)[1]
    rule, case = (
        json.loads(block) for block in re.findall(r"```json\n(.*?)```", section, re.DOTALL)[:2]
    )
    policy = json.loads((project / "guard-policy.json").read_text())
    policy["rules"].append(rule)
    (project / "guard-policy.json").write_text(json.dumps(policy, indent=2))
    smoke_json = json.loads((project / "smoke.json").read_text())
    smoke_json["intercepts"].append(case)
    (project / "smoke.json").write_text(json.dumps(smoke_json, indent=2))
    build(project)
    report = smoke(project)
    assert any("npm publish" in c["check"] for c in report["checks"]), report["checks"]
