"""scripts/release refuses what would make a bad release, before testing."""

from __future__ import annotations

import os
import re

import pytest
from conftest import ROOT, run
from test_update import GIT_ENV, clone_template, release_points


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


def test_every_release_of_the_changelog_has_its_release_point_in_the_history():
    """A clone has no tags: the release commits themselves must be findable."""
    changelog = (ROOT / "CHANGELOG.md").read_text()
    released = {f"v{v}" for v in re.findall(r"^## \[([0-9.]+)\] - ", changelog, re.MULTILINE)}
    assert released and set(release_points(ROOT)) == released


def test_release_refuses_a_head_that_is_not_the_release_commit(tmp_path):
    clone = clone_template(tmp_path)  # this checkout, uncommitted changes included
    changelog = clone / "CHANGELOG.md"
    changelog.write_text(changelog.read_text() + "\n## [9.9.9] - 2026-12-31\n")
    env = {**os.environ, **GIT_ENV}
    run(["git", "commit", "--quiet", "-am", "Changelog for 9.9.9"], clone, env=env)
    result = run([str(clone / "scripts" / "release"), "9.9.9"], clone)
    assert result.returncode == 1
    assert "commit the changelog as 'Release 9.9.9: SUMMARY'" in result.stderr
