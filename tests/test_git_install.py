"""`zot ext install GIT-URL` clones with depth 1 and runs nothing.

Every flavour must start from such a clone as it is: rendered, built the
way its author builds it, committed, cloned into a fresh folder, then
started the way zot starts it (the smoke test) without ./build.
"""

from __future__ import annotations

import pytest
from conftest import CAPABILITIES, LANGUAGES, smoke
from test_update import commit_all, git


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_shallow_clone_starts_without_a_build(projects, tmp_path, language):
    project = projects.fresh_copy(tmp_path, language, CAPABILITIES)  # built by its author
    git(project, "init", "--quiet")
    commit_all(project, "my extension")
    clone = tmp_path / "installed" / "demo-ext"
    git(tmp_path, "clone", "--quiet", "--depth", "1", f"file://{project}", str(clone))
    # The first start may build (Go) or install tsx (TypeScript with tsx).
    smoke(clone, "--hello-timeout", "300", timeout=400)
