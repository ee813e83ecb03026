"""The docs' screenshots come from real runs: the script that makes them works."""

from __future__ import annotations

import sys

from conftest import ROOT, run
from PIL import Image


def test_screenshots_script_captures_prompts_and_smoke_test(tmp_path):
    result = run([sys.executable, str(ROOT / "scripts" / "screenshots"), str(tmp_path)], ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ["copier-prompts.png", "smoke-test.png", "try.png"]:
        with Image.open(tmp_path / name) as image:
            assert image.width > 800 and image.height > 200, name
