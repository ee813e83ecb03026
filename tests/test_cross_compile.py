"""Every Go flavour builds for Windows and macOS, not only for the Linux the
suite runs on: zot ships windows/amd64 and darwin/arm64 builds, and the
process helper (zot/processes) has code of its own for each.

The projects are the suite's shared ones (built for Linux already); here they
are compiled again with GOOS and GOARCH set, and go vet checks every package
with its tests, so each _test.go file compiles for the target too. Nothing is
run: there is no Windows or macOS here.
"""

from __future__ import annotations

import os

import pytest
from conftest import CAPABILITIES, combo_id, run

TARGETS = ["windows/amd64", "darwin/arm64"]
DEFAULT = ["commands", "tools"]  # copier.yml's default capabilities


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("capabilities", [DEFAULT, CAPABILITIES], ids=combo_id)
@pytest.mark.parametrize("variant", ["go", "go-sdk"])
def test_the_go_flavours_build_and_vet_for_windows_and_macos(
    projects, tmp_path, variant, capabilities, target
):
    project = projects.get(variant, capabilities)
    goos, goarch = target.split("/")
    env = {**os.environ, "GOOS": goos, "GOARCH": goarch, "CGO_ENABLED": "0"}
    # A cold build cache compiles the standard library for the target first.
    for command in (["go", "build", "-o", str(tmp_path), "./..."], ["go", "vet", "./..."]):
        result = run(command, project, timeout=600, env=env)
        assert result.returncode == 0, (
            f"GOOS={goos} GOARCH={goarch} {' '.join(command)} failed in {variant} "
            f"({combo_id(capabilities)}):\n{result.stdout}{result.stderr}"
        )
