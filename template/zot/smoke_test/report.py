"""The report: one PASS/FAIL/WARN/SKIP line per check, or JSON at the end."""

from __future__ import annotations

import json
import os
import sys

from .protocol import STDERR_LINES

# --- reporting ------------------------------------------------------------------

# The terminal colour of each kind of line.
COLOURS = {"pass": "32", "fail": "31", "warn": "33", "skip": "36", "note": "2"}


class Report:
    """Collects the checks; prints each at once, or all as JSON at the end."""

    def __init__(self, as_json: bool, verbose: bool, quiet: bool = False) -> None:
        self.as_json, self.verbose = as_json, verbose
        self.quiet = quiet  # --guard: print failures only, and the verdicts
        self.verdicts: list[dict] = []
        tty = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        self.colour = tty and not as_json
        self.checks: list[dict] = []
        self.extension: str | None = None
        self.ready_ms: int | None = None  # from the start
        self.ready_after_ack_ms: int | None = None  # what zot's watchdog counts
        self.stderr_tail = ""
        self.started = True  # False when extension.json has no exec

    def paint(self, kind: str, text: str) -> str:
        return f"\033[{COLOURS[kind]}m{text}\033[0m" if self.colour else text

    def add(self, status: str, check: str, detail: str = "") -> None:
        self.checks.append({"status": status, "check": check, "detail": detail})
        if not self.as_json and (status == "fail" or not self.quiet):
            text = f"{check}: {detail}" if detail else check
            print(f"{self.paint(status, status.upper())}  {text}", flush=True)

    def ok(self, check: str, detail: str = "") -> None:
        self.add("pass", check, detail)

    def fail(self, check: str, detail: str = "") -> None:
        self.add("fail", check, detail)

    def warn(self, check: str, detail: str = "") -> None:
        self.add("warn", check, detail)

    def skip(self, check: str, detail: str = "") -> None:
        self.add("skip", check, detail)

    def verdict(self, check: str, problems: list[str], summary: str = "") -> None:
        """FAIL with the problems if there are any, else PASS with the summary."""
        self.add("fail" if problems else "pass", check, "; ".join(problems) or summary)

    def note(self, text: str) -> None:
        """Not a check: shown with --verbose only."""
        if self.verbose and not self.as_json:
            print(self.paint("note", f"      {text}"), flush=True)

    def finish(self) -> int:
        """Print the summary, or the JSON report; return the exit status."""
        counts = dict.fromkeys(("pass", "fail", "warn", "skip"), 0)
        for check in self.checks:
            counts[check["status"]] += 1
        failed = counts["fail"] > 0
        if self.quiet:  # --guard: 1 when a check failed or a command was refused
            failed = failed or any(v["refused"] for v in self.verdicts)
        if self.as_json:
            report = {"extension": self.extension, "passed": not failed}
            if self.quiet:
                report["guard"] = self.verdicts
            report.update(
                ready_ms=self.ready_ms, ready_after_ack_ms=self.ready_after_ack_ms
            )
            report.update(counts=counts, checks=self.checks)
            report["stderr_tail"] = self.stderr_tail
            print(json.dumps(report, indent=2))
            return int(failed)
        if self.quiet:
            if counts["fail"]:
                print(
                    f"\n{self.paint('fail', 'the smoke test could not ask the guard')}"
                )
            return int(failed)
        if self.stderr_tail and (failed or self.verbose):
            print(f"\nlast {STDERR_LINES} lines of the extension's stderr:")
            for line in self.stderr_tail.splitlines():
                print(f"  | {line}")
        parts = [f"{counts['pass']} passed", f"{counts['fail']} failed"]
        if counts["warn"] == 1:
            parts.append("1 warning")
        elif counts["warn"]:
            parts.append(f"{counts['warn']} warnings")
        if counts["skip"]:
            parts.append(f"{counts['skip']} skipped")
        ready = "no ready frame" if self.started else "no process to start"
        if self.ready_ms is not None:
            ready = f"started in {self.ready_ms} ms, ready"
            ready += f" {self.ready_after_ack_ms} ms after hello_ack"
        summary = f"smoke test of {self.extension}: {', '.join(parts)} — {ready}"
        print("\n" + self.paint("fail" if failed else "pass", summary))
        return int(failed)
