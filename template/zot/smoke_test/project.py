"""The project folder a case runs in (zot's cwd): laid out from a case's
"project", "files", "git" and "changes", and taken back (a snapshot) when
--interactive saves what was tried."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess

from .protocol import q

# A generated file: {"size": BYTES} of numbered lines, or of "repeat" again and
# again. Bigger is surely a mistake.
MAX_GENERATED = 64 * 1024 * 1024
# A snapshot kept in smoke.json itself, at most; a bigger one becomes a folder
# of fixtures. Bigger than the last two, the project is not saved.
INLINE_FILES, INLINE_BYTES = 20, 16 * 1024
MAX_SNAPSHOT_FILES, MAX_SNAPSHOT_BYTES = 2000, 16 * 1024 * 1024
# Who commits a "git": true fixture, and when: the same commit every time.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "smoke-test",
    "GIT_AUTHOR_EMAIL": "smoke-test@localhost",
    "GIT_COMMITTER_NAME": "smoke-test",
    "GIT_COMMITTER_EMAIL": "smoke-test@localhost",
    "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}
FIXTURE_KEYS = ("project", "files", "git", "changes")


class FixtureError(Exception):
    """A case's project could not be laid out; the message says why."""


def has_fixture(case: dict) -> bool:
    """Does the case bring a project of its own?"""
    return any(case.get(key) for key in FIXTURE_KEYS)


def fixture_problem(case: dict, ext_dir: str) -> str:
    """What is wrong with a case's "project", "files", "git", "changes", or ""."""
    for key in ("files", "changes"):
        for name, content in case.get(key, {}).items():
            if not name or os.path.isabs(name) or ".." in name.split("/"):
                return f"{q(name)}: files are named by their path in the project"
            if content is None and key == "changes":
                continue
            problem = content_problem(content)
            if problem:
                return f"{key}: {q(name)}: {problem}"
    if case.get("changes") and not case.get("git"):
        return 'changes go with "git": true (they are what differs from the commit)'
    folder = case.get("project")
    if folder is not None:
        path = os.path.normpath(os.path.join(ext_dir, folder))
        if not folder or os.path.isabs(folder) or ".." in folder.split("/"):
            return f"project: {q(folder)}: name a folder of the extension's own"
        if not os.path.isdir(path):
            return f"project: no such folder: {folder}"
    return ""


def content_problem(content: object) -> str:
    """What is wrong with a file's content: a text, or {"size": N, "repeat": TEXT}."""
    if isinstance(content, str):
        return ""
    if not isinstance(content, dict):
        return 'must be a text, or {"size": BYTES} for generated content'
    unknown = sorted(set(content) - {"size", "repeat"})
    if unknown:
        return f"unknown key {q(unknown[0])} (a generated file has size and repeat)"
    size = content.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return "size must be a number of bytes"
    if size > MAX_GENERATED:
        return f"size is over {MAX_GENERATED // (1024 * 1024)} MiB"
    if not isinstance(content.get("repeat", "x"), str) or content.get("repeat") == "":
        return "repeat must be a text, not empty"
    return ""


def generated(content: dict) -> str:
    """A file of content["size"] bytes: numbered lines, or "repeat" repeated."""
    size, text = content["size"], content.get("repeat")
    if text is None:
        lines, total, number = [], 0, 1
        while total < size:
            lines.append(f"line {number}\n")
            total += len(lines[-1])
            number += 1
        return "".join(lines)[:size]
    data = text.encode("utf-8")
    whole = data * (size // len(data) + 1)
    return whole[:size].decode("utf-8", "ignore")


def write_files(folder: str, files: dict) -> None:
    """Write `files` (path in `folder` -> text, generated content, or None to
    remove it), making their folders."""
    for name, content in files.items():
        path = os.path.join(folder, name)
        if content is None:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            elif os.path.lexists(path):
                os.remove(path)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        text = content if isinstance(content, str) else generated(content)
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)


def lay_out(folder: str, case: dict, ext_dir: str) -> None:
    """Make `folder` (one of the smoke test's own) the case's project: emptied,
    then the "project" folder copied in, the "files" written, with "git" a
    repository of one commit, and then the "changes" made."""
    for entry in os.listdir(folder):
        path = os.path.join(folder, entry)
        is_dir = os.path.isdir(path) and not os.path.islink(path)
        shutil.rmtree(path) if is_dir else os.remove(path)
    if case.get("project"):
        source = os.path.join(ext_dir, case["project"])
        try:
            shutil.copytree(source, folder, symlinks=True, dirs_exist_ok=True)
        except (OSError, shutil.Error) as exc:
            raise FixtureError(f"cannot copy {case['project']}: {exc}") from exc
    write_files(folder, case.get("files", {}))
    if case.get("git"):
        commit_all(folder)
        write_files(folder, case.get("changes", {}))


def git(folder: str, *args: str) -> str:
    """Run git in `folder` without the user's configuration; its stdout."""
    env = {**os.environ, **GIT_ENV, "HOME": folder, "XDG_CONFIG_HOME": folder}
    command = ["git", "-c", "init.defaultBranch=main", "-c", "core.hooksPath=/dev/null"]
    command += ["-c", "commit.gpgsign=false", "-C", folder, *args]
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        raise FixtureError(
            'git is not installed: "git": true needs it (https://git-scm.com)'
        ) from None
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise FixtureError(f"git {args[0]}: {why}")
    return done.stdout


def commit_all(folder: str) -> None:
    """Make `folder` a git repository whose one commit holds what is in it."""
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "--allow-empty", "-m", "The smoke test's fixture")


# --- taking a project back: --interactive's save ----------------------------------


class Snapshot:
    """What a project folder holds, as a case brings it back: its files (at the
    last commit for a git repository) and the changes made since."""

    def __init__(self, files: dict, git: bool, changes: dict, skipped: list) -> None:
        self.files, self.git, self.changes = files, git, changes
        self.skipped = skipped  # files that are not UTF-8 text, left out

    def fields(self, ext_dir: str) -> dict:
        """The case's fields that lay this project out again; a big one is
        written to a folder of fixtures in the extension, named by its content."""
        fields: dict = {}
        size = sum(len(text) for text in self.files.values())
        if len(self.files) <= INLINE_FILES and size <= INLINE_BYTES:
            if self.files:
                fields["files"] = self.files
        else:
            digest = hashlib.sha256(
                json.dumps(self.files, sort_keys=True).encode("utf-8")
            ).hexdigest()[:10]
            # testdata: a folder that build tools and test runners leave alone
            folder = f"testdata/project-{digest}"
            if not os.path.isdir(os.path.join(ext_dir, folder)):
                write_files(os.path.join(ext_dir, folder), self.files)
            fields["project"] = folder
        if self.git:
            fields["git"] = True
            if self.changes:
                fields["changes"] = self.changes
        return fields


def snapshot(folder: str) -> Snapshot:
    """Take the project in `folder` back; FixtureError when it is too big."""
    if os.path.isdir(os.path.join(folder, ".git")):
        try:
            return git_snapshot(folder)
        except FixtureError:
            pass  # not a repository git can read: its files as they are
    files, skipped = {}, []
    for name in walk(folder):
        text = read_text(os.path.join(folder, name))
        if text is None:
            skipped.append(name)
        else:
            files[name] = text
    return Snapshot(files, False, {}, skipped)


def walk(folder: str) -> list[str]:
    """The files under `folder` (not .git), by their path in it; FixtureError
    past the limits of a snapshot."""
    names, size = [], 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            path = os.path.join(root, name)
            names.append(os.path.relpath(path, folder).replace(os.sep, "/"))
            size += os.path.getsize(path) if os.path.isfile(path) else 0
            too_big(len(names), size)
    return names


def too_big(count: int, size: int) -> None:
    if count > MAX_SNAPSHOT_FILES or size > MAX_SNAPSHOT_BYTES:
        raise FixtureError(
            f"over {MAX_SNAPSHOT_FILES} files or {MAX_SNAPSHOT_BYTES // 2**20} MiB"
        )


def read_text(path: str) -> str | None:
    """A file's text, or None when it is not UTF-8 text (or not a file)."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return None
    return None if "\0" in text else text


def git_snapshot(folder: str) -> Snapshot:
    """A git repository: its files at HEAD, and the changes of the work tree
    (changed and new files with their text, removed ones as null)."""
    changes, skipped = {}, []
    status = git(folder, "status", "--porcelain", "-z", "--untracked-files=all")
    entries = iter(status.split("\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        code, name = entry[:2], entry[3:]
        if "R" in code or "C" in code:  # renamed: the old name follows
            changes[next(entries, "")] = None
        text = read_text(os.path.join(folder, name))
        if text is None and os.path.lexists(os.path.join(folder, name)):
            skipped.append(name)
        else:
            changes[name] = text
    changes.pop("", None)
    try:
        tracked = git(folder, "ls-tree", "-r", "-z", "--name-only", "HEAD")
    except FixtureError:
        tracked = ""  # no commit yet
    files, size = {}, 0
    for name in filter(None, tracked.split("\0")):
        if name in changes or name in skipped:  # as it was committed
            try:
                text = git(folder, "show", f"HEAD:{name}")
            except (FixtureError, UnicodeDecodeError):
                text = None
        else:  # the work tree holds what was committed
            text = read_text(os.path.join(folder, name))
        if text is None or "\0" in text:
            skipped.append(name)
            continue
        files[name] = text
        size += len(text)
        too_big(len(files), size)
    return Snapshot(files, True, changes, skipped)
