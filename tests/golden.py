"""Golden snapshots of generated projects, kept in examples/ (one folder per
flavour and answers) and refreshed by scripts/examples; test_examples.py
fails when a render differs, so every change to generated projects shows up
in review as a diff of examples/.

A snapshot holds each file of the project that the template renders
(README.md, the handler, its tests, smoke.json, ...), and FILES.txt lists
every file of the project with its mode, marking the ones that are copies
of a template file (the runtime, the guard, the smoke test), whose changes
show up as diffs of template/ itself.
"""

from __future__ import annotations

import re
import shutil
import stat
import tempfile
from pathlib import Path

from flavours import FLAVOURS, ROOT, render

EXAMPLES = ROOT / "examples"
TEMPLATE = ROOT / "template"
ALL_CAPABILITIES = ["commands", "tools", "events", "guard", "panel", "ask", "prompt", "skills"]
# Each flavour with the questionnaire's defaults, and with every capability.
SNAPSHOTS = {
    f"{flavour}-{kind}": {
        **answers,
        **({"capabilities": ALL_CAPABILITIES} if kind == "all" else {}),
    }
    for flavour, answers in FLAVOURS.items()
    for kind in ("default", "all")
}
INDEX = "FILES.txt"
# What changes with every commit of the template, not with its output.
VOLATILE = re.compile(r"^(_commit|_src_path): .*$", re.MULTILINE)


def snapshot(name: str, out: Path) -> None:
    """Render snapshot NAME and write what it keeps into OUT (made anew)."""
    with tempfile.TemporaryDirectory() as work:
        project = render(Path(work) / "demo-ext", **SNAPSHOTS[name])
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        index = []
        for path in sorted(p for p in project.rglob("*") if p.is_file()):
            rel = path.relative_to(project).as_posix()
            mode = "755" if path.stat().st_mode & stat.S_IXUSR else "644"
            source = TEMPLATE / rel
            if source.is_file() and source.read_bytes() == path.read_bytes():
                index.append(f"{mode} {rel}  (= template/{rel})")
                continue
            index.append(f"{mode} {rel}")
            data = path.read_bytes()
            if rel == ".copier-answers.yml":
                data = VOLATILE.sub(r"\1: (of the render)", data.decode()).encode()
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        (out / INDEX).write_text("\n".join(index) + "\n")


def differences(expected: Path, actual: Path) -> list[str]:
    """The files that differ between two snapshot folders, or are in one only."""
    files = {
        p.relative_to(folder).as_posix()
        for folder in (expected, actual)
        for p in folder.rglob("*")
        if p.is_file()
    }
    return sorted(
        rel
        for rel in files
        if not (expected / rel).is_file()
        or not (actual / rel).is_file()
        or (expected / rel).read_bytes() != (actual / rel).read_bytes()
    )
