"""./smoke-test --watch: build and smoke-test again whenever a file of the
project changes, until ctrl-c."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

from .process import WINDOWS

# Not sources: what tools and builds write, and the template's machinery.
SKIPPED = {".git", "node_modules", "dist", "zot", "__pycache__", ".venv"}


def snapshot(project: str, skip: set[str]) -> dict[str, tuple[float, int]]:
    """Every file of the project that is a source, with its time of change
    and its size."""
    seen = {}
    for folder, subfolders, files in os.walk(project):
        subfolders[:] = [d for d in subfolders if d not in SKIPPED]
        for name in files:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, project)
            if relative not in skip:
                try:
                    stat = os.stat(path)
                    seen[relative] = (stat.st_mtime, stat.st_size)
                except OSError:
                    pass
    return seen


def changed(before: dict, after: dict) -> list[str]:
    return sorted(
        n for n in before.keys() | after.keys() if before.get(n) != after.get(n)
    )


def watch(project: str, binary: str, smoke_args: list[str]) -> int:
    """Run ./build (where there is one) and the smoke test, then again on each
    change; `binary`, what ./build makes, is not a source."""
    skip = {binary, "start.exe", ".copier-answers.yml"}
    smoke_test = [sys.executable, os.path.abspath(sys.argv[0]), *smoke_args]
    build = build_command(project)
    try:
        while True:
            if build:
                print("watch: ./build", flush=True)
                subprocess.run(build, cwd=project, check=False)
            subprocess.run(smoke_test, cwd=project, check=False)
            # the build's own writes are no change; an edit from now on is
            before = snapshot(project, skip)
            print("watch: waiting for a change (ctrl-c stops)", flush=True)
            while not (names := changed(before, snapshot(project, skip))):
                time.sleep(0.3)
            time.sleep(0.2)  # an editor may write in several steps
            print(f"\nwatch: {', '.join(names[:3])} changed", flush=True)
    except KeyboardInterrupt:
        return 0


def build_command(project: str) -> list[str] | None:
    """How to run ./build, None without one. ./build is a sh script: Windows
    runs it with Git's bash (the one on PATH in Git Bash), not WSL's."""
    if not os.path.exists(os.path.join(project, "build")):
        return None
    if not WINDOWS:
        return ["./build"]
    bash = shutil.which("bash")
    if bash and "system32" not in bash.lower():
        return [bash, "./build"]
    print(
        "watch: ./build needs Git Bash on Windows: run this from Git Bash", flush=True
    )
    return None
