"""The command line: ./smoke-test's options, the run and its exit status."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import traceback

from .console import Console
from .process import WINDOWS, Process, check_skills, command_line, load_manifest
from .protocol import StartError
from .report import Report
from .session import Session
from .watch import watch

# --- command line ---------------------------------------------------------------

DESCRIPTION = """Start this zot extension exactly the way zot does and pipe a whole
session through it: handshake, registrations, every command and tool (with the
panels they open, as zot's terminal drives them), every subscribed event, the
intercepts, the guard and guard-cases.json, junk input, the cases in
smoke.json and shutdown.
Prints one PASS/FAIL/WARN/SKIP line per check and a summary."""
EPILOG = """exit status: 0 when no check failed (warnings are fine), 1 when a check
failed, 2 when the extension could not be started (extension.json or its exec),
3 on an internal error of the smoke test."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--dir", help="the extension's folder (default: this one)")
    parser.add_argument("--json", action="store_true", help="print one JSON report")
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also show notifications, notes and the extension's stderr",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help="cap every wait for an answer at S seconds (default: zot's own:"
        " 30 s for commands, 60 s for tools, 5 s for intercepts, 3 s for hello)",
    )
    parser.add_argument(
        "--hello-timeout",
        type=float,
        metavar="S",
        help="wait up to S seconds for hello (default: 3; zot itself waits as long"
        " as it takes, e.g. while a first start after a git clone builds)",
    )
    parser.add_argument(
        "--project",
        metavar="DIR",
        help="run the session in DIR, zot's project folder (cwd), used as it is:"
        " smoke.json cases that bring their own project are skipped (default: an"
        " empty temporary folder, laid out anew for each case)",
    )
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        help="the data_dir to send in hello_ack (default: a temporary folder)",
    )
    parser.add_argument(
        "--shared-group",
        action="store_true",
        help="start it in the smoke test's process group, as zot 0.1.62 and older"
        " do (default: a group of its own, as newer zot does)",
    )
    parser.add_argument(
        "-i",
        "--interactive",
        action="store_true",
        help="try it by hand instead: type /COMMAND ARGS, call tools, ask the guard,"
        " send events, drive panels with the keys; `help` inside says more",
    )
    parser.add_argument(
        "--watch",
        action="store_true",
        help="run ./build and the smoke test again whenever a file of the project"
        " changes, until ctrl-c",
    )
    parser.add_argument(
        "--old-host",
        action="store_true",
        help="answer hello like zot 0.1.62 and older: no tool_cancel, no panels"
        " opened by tools, no prompts submitted by panels, no before_agent_start",
    )
    parser.add_argument(
        "--guard",
        action="append",
        metavar="COMMAND",
        help="only ask the guard about a bash command (repeatable): prints allowed or"
        " refused with the rule and its reason; exits 1 when one is refused",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--expect",
        metavar="FILE",
        help="the cases to check (default: smoke.json beside extension.json)",
    )
    group.add_argument(
        "--no-expect", action="store_true", help="skip smoke.json and guard-cases.json"
    )
    opts = parser.parse_args(argv)
    for name in ("timeout", "hello_timeout"):
        if getattr(opts, name) is not None and getattr(opts, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if opts.data_dir and os.path.isfile(opts.data_dir):
        parser.error(f"--data-dir: not a directory: {opts.data_dir}")
    if opts.project and not os.path.isdir(opts.project):
        parser.error(f"--project: not a directory: {opts.project}")
    if opts.interactive and (opts.json or opts.guard):
        parser.error("--interactive is for a person: no --json or --guard with it")
    if opts.watch and (opts.interactive or opts.guard):
        parser.error(
            "--watch reruns the smoke test: no --interactive or --guard with it"
        )
    if opts.expect and not os.path.isfile(opts.expect):
        parser.error(f"--expect: no such file: {opts.expect}")
    return opts


def default_project() -> str:
    """The project this package is in: PROJECT/zot/smoke_test."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(opts: argparse.Namespace, report: Report) -> int:
    opts.ext_dir = os.path.abspath(opts.dir or default_project())
    manifest = load_manifest(opts.ext_dir)
    report.extension = manifest["name"]
    argv = command_line(opts.ext_dir) if "exec" in manifest else []
    if not report.as_json and not report.quiet:
        version = manifest.get("version") or "(no version)"
        print(f"smoke-test: {manifest['name']} {version} in {opts.ext_dir}")
    if manifest.get("enabled") is False:
        report.warn("extension.json", "enabled is false: zot skips it (tested anyway)")
    if not opts.guard:
        check_skills(opts.ext_dir, manifest, report)
    if not argv:
        if opts.guard:
            raise StartError("extension.json has no exec: there is no guard to ask")
        why = "zot loads what the folder ships and starts no process"
        report.ok(
            "extension.json without exec", f"{why} (zot 0.1.62 needs exec: it skips it)"
        )
        report.started = False
        return report.finish()
    workdir = tempfile.mkdtemp(prefix="zot-smoke-")
    try:
        opts.user_project = bool(opts.project)
        opts.project_dir = os.path.abspath(
            opts.project or os.path.join(workdir, "project")
        )
        os.makedirs(opts.project_dir, exist_ok=True)
        temporary = "" if opts.data_dir else " (temporary; --data-dir keeps one)"
        opts.data_dir = os.path.abspath(opts.data_dir or os.path.join(workdir, "data"))
        os.makedirs(opts.data_dir, exist_ok=True)
        report.note(f"exec: {' '.join(argv)}")
        report.note(f"data_dir: {opts.data_dir}{temporary}")
        if not (report.as_json or opts.guard or opts.interactive):  # -i: its intro
            yours = "" if opts.project else " (temporary; --project DIR uses yours)"
            print(f"project folder (zot's cwd): {opts.project_dir}{yours}")
        process = Process(argv, opts.ext_dir, own_group=not opts.shared_group)
        try:
            session = Session(opts, report, manifest, process)
            if opts.interactive:
                return Console(session, report).run()
            session.run()
        finally:
            report.stderr_tail = process.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return report.finish()


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    sys.stdout.reconfigure(errors="replace")  # "—" and "…" on any terminal
    if WINDOWS and not sys.stdout.isatty():  # a pipe, a CI log: not the ANSI code page
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    if opts.watch:
        args = [
            arg for arg in (sys.argv[1:] if argv is None else argv) if arg != "--watch"
        ]
        project = os.path.abspath(opts.dir or default_project())
        try:
            name = load_manifest(project)["name"]
        except StartError as exc:
            print(f"smoke-test: {exc}", file=sys.stderr)
            return 2
        return watch(project, name, args)
    try:
        return smoke_test(opts)
    except BrokenPipeError:  # our own stdout went away, e.g. piped into head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def smoke_test(opts: argparse.Namespace) -> int:
    """Run the smoke test; turn what can go wrong into an exit status."""
    report = Report(opts.json, opts.verbose, quiet=bool(opts.guard or opts.interactive))
    try:
        return run(opts, report)
    except StartError as exc:
        if opts.json:
            report.fail("start", str(exc))
            report.finish()
        else:
            print(f"smoke-test: cannot start the extension: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        raise
    except Exception as exc:  # noqa: BLE001 - any bug of ours: exit status 3
        print(f"smoke-test: internal error: {exc!r}", file=sys.stderr)
        if opts.verbose:
            traceback.print_exc()
        return 3


if __name__ == "__main__":
    sys.exit(main())
