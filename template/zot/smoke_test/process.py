"""Starting the extension the way zot does: the manifest, exec, the process."""

from __future__ import annotations

import json
import ntpath
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from . import windows
from .protocol import MARK, MAX_LINE, STDERR_LINES, StartError, q
from .report import Report

# --- starting the extension like zot --------------------------------------------


def load_manifest(ext_dir: str) -> dict:
    """Read extension.json; StartError wherever zot could not start from it."""
    path = os.path.join(ext_dir, "extension.json")
    if not os.path.isdir(ext_dir):
        raise StartError(f"{ext_dir} is not a directory")
    try:
        with open(path, encoding="utf-8") as fh:
            manifest = json.load(fh)
    except FileNotFoundError:
        raise StartError(f"no extension.json in {ext_dir} (try --dir)") from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise StartError(f"{path}: invalid JSON at {where}: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StartError(f"cannot read {path}: {exc}") from None
    if not isinstance(manifest, dict):
        raise StartError(f"{path} must hold a JSON object")
    # Without exec zot runs no process: the folder only brings skills (or a theme).
    required = (
        ("name", "exec")
        if "exec" in manifest or not shipped(ext_dir, manifest)
        else ("name",)
    )
    for key in required:
        if not isinstance(manifest.get(key), str) or not manifest[key].strip():
            raise StartError(f"{path}: {key} is required (a non-empty string)")
    for key in ("version", "description", "language"):
        if not isinstance(manifest.get(key, ""), str):
            raise StartError(f"{path}: {key} must be a string")
    args = manifest.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise StartError(f"{path}: args must be a list of strings")
    if not isinstance(manifest.get("enabled", True), bool):
        raise StartError(f"{path}: enabled must be true or false")
    return manifest


def shipped(ext_dir: str, manifest: dict) -> bool:
    """Whether the folder brings skills or a theme, which need no process."""
    skills = manifest.get("skills")
    return bool(skills) or os.path.isfile(os.path.join(ext_dir, "theme.json"))


def skill_problems(ext_dir: str, entry: object) -> tuple[list[str], str]:
    """What is wrong with one entry of the manifest's skills, and its name."""
    if not isinstance(entry, str) or not entry.strip():
        return [f"{q(entry)} is not a path"], ""
    path = os.path.normpath(os.path.join(ext_dir, entry))
    if os.path.isabs(entry) or not path.startswith(ext_dir + os.sep):
        return ["must be a path inside the extension's folder"], ""
    if os.path.isdir(path):
        path = os.path.join(path, "SKILL.md")
    if not os.path.isfile(path):
        return [f"{os.path.relpath(path, ext_dir)} does not exist"], ""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        return [f"cannot read it: {exc}"], ""
    match = re.match(r"---\r?\n(.*?)\r?\n---\r?\n", text, re.DOTALL)
    if not match:
        return ["needs a front matter block between --- lines"], ""
    fields = dict(
        re.findall(r"^([A-Za-z-]+):[ \t]*(.*?)[ \t]*$", match[1], re.MULTILINE)
    )
    name = fields.get("name", "").strip("'\"") or os.path.basename(
        os.path.dirname(path)
    )
    problems = []
    if not fields.get("description", "").strip("'\" "):
        problems.append("the front matter needs a description (the model reads it)")
    if not text[match.end() :].strip():
        problems.append("the skill has no body below the front matter")
    return problems, name


WINDOWS = os.name == "nt"

# What Go's os/exec, which zot starts extensions with, tries after a name
# without an extension on Windows when PATHEXT is not set; Windows itself
# starts programs (.exe, .com) and batch files, not scripts with a #! line.
PATHEXT = ".COM;.EXE;.BAT;.CMD"
WINDOWS_STARTS = (".exe", ".com", ".bat", ".cmd")


def resolve_exec(ext_dir: str, exe: str, windows: bool = WINDOWS) -> str:
    """Find the program like zot: absolute, beside the manifest, or on PATH."""
    if windows:
        return resolve_exec_windows(ext_dir, exe)
    if os.path.isabs(exe):
        path = exe
    elif exe.startswith(("./", "../")) or exe in (".", "..") or os.sep in exe:
        path = os.path.normpath(os.path.join(ext_dir, exe))
    elif shutil.which(exe):
        return shutil.which(exe)
    elif os.path.exists(os.path.join(ext_dir, exe)):
        hint = f'zot looks bare names up on PATH, so write "./{exe}" in extension.json'
        raise StartError(f'exec "{exe}" is not on PATH: {hint}')
    else:
        raise StartError(f'exec "{exe}" is not on PATH: install {exe} or fix PATH')
    if not os.path.exists(path):
        beside = os.path.dirname(path) == ext_dir
        if beside and os.path.exists(os.path.join(ext_dir, "build")):
            raise StartError(f"exec {path} does not exist: run ./build first")
        raise StartError(f"exec {path} does not exist (build it, or fix exec)")
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise StartError(f"exec {path} is not executable: chmod +x {path}")
    return path


def resolve_exec_windows(ext_dir: str, exe: str) -> str:
    """Find the program like zot for Windows. zot joins exec to the folder
    when it holds a backslash; "./x" it passes on as it is, and Go's os/exec
    finds it in the folder all the same. There, and on PATH for a bare name,
    Go adds the first PATHEXT extension that exists (./start finds
    start.exe)."""
    extensions = [e for e in os.environ.get("PATHEXT", PATHEXT).split(";") if e]
    if ntpath.isabs(exe):
        folders = [""]
    elif "/" in exe or "\\" in exe:
        folders = [ext_dir]
    else:
        folders = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    script = ""  # what Windows finds but cannot start
    for folder in folders:
        base = os.path.normpath(os.path.join(folder, exe.replace("\\", os.sep)))
        found = with_extension(base, extensions)
        if found and found.lower().endswith(WINDOWS_STARTS):
            return found
        if found:  # Go stops at a name with an extension: x.py
            script = found
            break
        if not script and os.path.isfile(base):  # ./start: Go looks on
            script = base
    if script:
        raise StartError(
            f"exec {script} is a script: Windows starts programs (.exe)"
            " and batch files (.bat, .cmd) only"
        )
    if folders == [ext_dir] and os.path.exists(os.path.join(ext_dir, "build")):
        raise StartError(f'exec "{exe}" finds no program: run ./build first')
    raise StartError(f'exec "{exe}" finds no program (with {";".join(extensions)})')


def with_extension(base: str, extensions: list[str]) -> str | None:
    """What Go's os/exec finds for base on Windows: base itself when it has
    an extension and exists, else base with the first extension that exists."""
    if os.path.splitext(base)[1] and os.path.isfile(base):
        return base
    for extension in extensions:
        for name in (base + extension.lower(), base + extension):
            if os.path.isfile(name):
                return name
    return None


def command_line(ext_dir: str) -> list[str]:
    """The program and arguments zot would start from the folder's manifest."""
    manifest = load_manifest(ext_dir)
    args = manifest.get("args", [])
    argv = [resolve_exec(ext_dir, manifest["exec"]), *args]
    if os.path.exists(os.path.join(ext_dir, "build")):
        check_built(ext_dir, args)
        check_fresh(ext_dir, manifest["name"], args)
    return argv


def check_built(ext_dir: str, args: list[str]) -> None:
    """StartError when an argument names what ./build makes and it is missing.

    A script argument (dist/index.js) must exist; a module that node loads
    before it (--import tsx/esm) must be installed in node_modules.
    """
    for before, arg in zip(["", *args], args):
        if before in ("--import", "--require", "-r") and not arg.startswith((".", "/")):
            package = "/".join(arg.split("/")[: 2 if arg.startswith("@") else 1])
            if not os.path.isdir(os.path.join(ext_dir, "node_modules", package)):
                raise StartError(f"{package} is not in node_modules: run ./build first")
        elif (
            arg.endswith((".js", ".mjs", ".cjs", ".ts", ".py", ".sh"))
            and not os.path.isabs(arg)
            and not os.path.exists(os.path.join(ext_dir, arg))
        ):
            raise StartError(f"{arg} does not exist: run ./build first")


def check_fresh(ext_dir: str, name: str, args: list[str]) -> None:
    """StartError when a source is newer than what ./build made from it: a
    bundle in dist/ that exec runs (from src/), or a binary named after the
    extension or start.exe (from the sources beside it and the guard's rules)."""
    built: list[tuple[str, list[str]]] = []
    for arg in args:
        if arg.startswith("dist/") and os.path.isdir(os.path.join(ext_dir, "src")):
            names = sorted(os.listdir(os.path.join(ext_dir, "src")))
            sources = [f"src/{n}" for n in names if n.endswith(".ts")]
            built.append((arg, [s for s in sources if not s.endswith(".test.ts")]))
    for binary in (name, "start.exe"):  # start.exe: ./build's on Windows
        if not os.path.isfile(os.path.join(ext_dir, binary)):
            continue
        sources = ["zot/guard/guard-rules.json"]
        for folder, dirs, files in os.walk(ext_dir):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            sources += [
                os.path.relpath(os.path.join(folder, n), ext_dir)
                for n in sorted(files)
                if n.endswith((".go", ".mod")) and "_test." not in n
            ]
        built.append((binary, sources))
    for target, sources in built:
        path = os.path.join(ext_dir, target)
        if not os.path.exists(path):
            continue  # ./start builds it
        changed = {
            source: os.path.getmtime(os.path.join(ext_dir, source))
            for source in sources
            if os.path.exists(os.path.join(ext_dir, source))
        }
        made = os.path.getmtime(path)
        newer = sorted(
            (s for s in changed if changed[s] > made), key=changed.__getitem__
        )
        # A git checkout writes its files in any order: a source as committed
        # is not an edit (the committed build is checked where it is made).
        edited = [s for s in newer if not committed_as_is(ext_dir, s)]
        if edited:
            raise StartError(f"{edited[-1]} is newer than {target}: run ./build first")


def committed_as_is(folder: str, name: str) -> bool:
    """Whether git tracks file `name` of `folder`, unchanged since the last commit."""
    try:
        for check in (["ls-files", "--error-unmatch"], ["diff", "--quiet", "HEAD"]):
            command = ["git", "-C", folder, *check, "--", name]
            done = subprocess.run(command, check=False, capture_output=True, timeout=10)
            if done.returncode != 0:
                return False
    except (OSError, subprocess.SubprocessError):
        return False  # no git: the times decide
    return True


def check_skills(ext_dir: str, manifest: dict, report: Report) -> None:
    """The skills the manifest lists: each a SKILL.md with a description."""
    skills = manifest.get("skills")
    if skills is None:
        return
    if not isinstance(skills, list) or not skills:
        report.fail(
            "extension.json skills", "must be a list of folders or SKILL.md files"
        )
        return
    for entry in skills:
        problems, name = skill_problems(ext_dir, entry)
        report.verdict(f"skill {q(entry)}", problems, f"{name}: front matter and body")


class Process:
    """The running extension: pipes, a stdout reader thread, a stderr file.

    Newer zot starts each extension in a process group of its own; zot 0.1.62
    and older leave it in zot's (own_group=False). Either way, the processes
    that belong to it are found: by the group, or by a mark in their
    environment, which every child inherits.
    """

    def __init__(
        self,
        argv: list[str],
        cwd: str,
        own_group: bool = True,
        env: dict | None = None,
        reader: bool = True,
    ) -> None:
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self.own_group = own_group
        env = dict(os.environ if env is None else env)
        env[MARK] = f"{os.getpid()}-{id(self)}-{time.monotonic_ns()}"
        self.mark = f"{MARK}={env[MARK]}".encode()  # as /proc/PID/environ has it
        self.started = time.monotonic()
        # Windows: what is below the extension was created after this (a
        # second early, for the clocks' steps)
        self.born = windows.filetime(time.time() - 1)
        try:
            self.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                start_new_session=own_group,
                env=env,
            )
        except OSError as exc:
            hint = " (a script needs a #! line)" if exc.errno == 8 else ""
            raise StartError(f"cannot start {argv[0]}: {exc.strerror}{hint}") from None
        # (arrival time, line); the line is None at the end, its size if too long
        self.lines: queue.Queue = queue.Queue()
        self.tap = None  # a function that sees every stdout line as it came
        if reader:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        """The reader thread: queue every stdout line with its arrival time."""
        out = self.proc.stdout
        try:
            while True:
                line = out.readline(MAX_LINE)
                moment = time.monotonic()
                if not line:
                    break
                if self.tap:
                    self.tap(line)
                if len(line) == MAX_LINE and not line.endswith(b"\n"):
                    size = len(line)
                    while line and not line.endswith(b"\n"):  # skip the rest
                        line = out.readline(1 << 20)
                        size += len(line)
                    self.lines.put((moment, size))
                    continue
                # zot's line scanner drops the "\n" and a "\r" before it
                self.lines.put((moment, line.rstrip(b"\n").removesuffix(b"\r")))
        except (OSError, ValueError):
            pass
        self.lines.put((time.monotonic(), None))

    def wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill_all(self) -> None:
        """SIGKILL the extension and every process that belongs to it."""
        if WINDOWS:
            tree = self._tree()  # before the program ends: found by parent
            self.proc.kill()
            for found in tree:
                windows.terminate(found.pid, found.created)
        elif self.own_group:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        else:
            for pid in [self.proc.pid, *(pid for pid, _ in self._members())]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        self.wait(5)

    def members(self) -> list[str]:
        """Live processes that belong to the extension, as "PID (NAME)"."""
        if WINDOWS:
            alive = [] if self.proc.poll() is not None else [f"{self.proc.pid}"]
            return alive + [f"{f.pid} ({f.name})" for f in self._tree()]
        if not os.path.isdir("/proc/self"):  # no /proc (macOS): ask the kernel
            try:
                if self.own_group:
                    os.killpg(self.proc.pid, 0)
                elif self.proc.poll() is not None:
                    return []  # its children cannot be seen without /proc
            except ProcessLookupError:
                return []
            except OSError:
                pass  # not allowed to signal it, but it exists
            return [f"process group {self.proc.pid}"]
        return [f"{pid} ({name})" for pid, name in self._members()]

    def _members(self) -> list[tuple[int, str]]:
        """From /proc, which also lets zombies (exited, not yet reaped) be skipped."""
        if not os.path.isdir("/proc/self"):
            return []
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                    head, _, tail = fh.read().rpartition(")")
                state, _, group = tail.split()[:3]
                if state == "Z":
                    continue
                if self.own_group:
                    ours = group == str(self.proc.pid)
                else:
                    with open(f"/proc/{pid}/environ", "rb") as fh:
                        ours = self.mark in fh.read().split(b"\0")
            except (OSError, UnicodeDecodeError, ValueError):
                continue
            if ours:
                found.append((int(pid), head.partition("(")[2]))
        return found

    def processes(self) -> dict[tuple[int, str], tuple[str, str | None]] | None:
        """Live processes of the extension (itself included), each by its pid and
        start time (a pid reused later is another process): its command line
        and its ZOT_EXT_RUN (None when it has none). Found by the mark in their
        environment, which a program that left the process group (setsid)
        still carries, or by the extension's group. None without /proc. On
        Windows, the processes below the extension by program name, none
        marked (Windows shows no other process's environment)."""
        if WINDOWS:
            return {(f.pid, str(f.created)): (f.name, None) for f in self._tree()}
        if not os.path.isdir("/proc/self"):
            return None
        found = {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                    head, _, tail = fh.read().rpartition(")")
                fields = tail.split()
                if fields[0] == "Z":
                    continue
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    env = fh.read().split(b"\0")
                if self.mark not in env and not (
                    self.own_group and fields[2] == str(self.proc.pid)
                ):
                    continue
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    argv = fh.read().rstrip(b"\0").split(b"\0")
            except (OSError, UnicodeDecodeError, ValueError, IndexError):
                continue
            run = [
                v for k, _, v in (e.partition(b"=") for e in env) if k == b"ZOT_EXT_RUN"
            ]
            command = b" ".join(argv).decode("utf-8", "replace")
            found[(int(pid), fields[19])] = (
                command or head.partition("(")[2],
                run[0].decode("utf-8", "replace") if run else None,
            )
        return found

    def kill(self, key: tuple[int, str]) -> None:
        """SIGKILL one process of processes(), unless its pid is another's now."""
        pid, started = key
        if WINDOWS:
            windows.terminate(pid, int(started))
            return
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                if fh.read().rpartition(")")[2].split()[19] == started:
                    os.kill(pid, signal.SIGKILL)
        except (OSError, IndexError):
            pass

    def _tree(self) -> list[windows.Found]:
        """Windows: the processes below the extension, found by parent."""
        if not WINDOWS:
            return []
        return windows.descendants(
            self.proc.pid, self.born, windows.snapshot(), windows.created
        )

    def leftovers(self, wait: float) -> list[str]:
        """members() once the extension's children had up to `wait` s to exit."""
        deadline = time.monotonic() + wait
        while (left := self.members()) and time.monotonic() < deadline:
            time.sleep(0.02)
        return left

    def stderr_size(self) -> int:
        """How much the extension has written to stderr so far."""
        return self.stderr.seek(0, os.SEEK_END)

    def stderr_since(self, offset: int) -> str:
        """What the extension wrote to stderr after the first `offset` bytes."""
        self.stderr.seek(offset)
        return self.stderr.read().decode("utf-8", "replace")

    def stderr_text(self, size: int) -> str:
        """The last `size` bytes of the extension's stderr."""
        self.stderr.seek(max(0, self.stderr.seek(0, os.SEEK_END) - size))
        return self.stderr.read().decode("utf-8", "replace")

    def close(self) -> str:
        """Kill whatever is left; return the tail of stderr."""
        if self.proc.poll() is None or self.members():
            self.kill_all()
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        tail = self.stderr_text(65536).splitlines()[-STDERR_LINES:]
        self.stderr.close()
        return "\n".join(tail)
