"""scripts/release refuses what would make a bad release, before testing."""

from __future__ import annotations

import pytest
from conftest import ROOT, run


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "usage: scripts/release X.Y.Z"),
        (["v1.0.0"], "is not X.Y.Z"),
        (["1.0"], "is not X.Y.Z"),
        (["01.2.3"], "is not X.Y.Z"),
        (["99.0.0"], "CHANGELOG.md has no '## [99.0.0] - YYYY-MM-DD' section"),
    ],
)
def test_release_refuses_bad_versions_and_missing_changelog(args, message):
    result = run([str(ROOT / "scripts" / "release"), *args], ROOT)
    assert result.returncode == 1
    assert message in result.stderr


def test_changelog_has_a_section_for_every_release_tag():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    tags = run(["git", "tag", "--list", "v*"], ROOT).stdout.split()
    for tag in tags:
        assert f"## [{tag[1:]}] - " in changelog, f"{tag} is not in CHANGELOG.md"
