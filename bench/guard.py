#!/usr/bin/env python3
"""Score the guard on guard-cases.json next to cc-safety-net, and time one decision.

    python bench/guard.py                  everything, into docs/performance/guard.md
    python bench/guard.py --quick          few repetitions, without cc-safety-net
    python bench/guard.py --only python    some runtimes (repeatable, or a,b)
    python bench/guard.py --out FILE       write the page somewhere else

Every runtime (Python, shell with jq, Go, TypeScript with node and with tsx)
is rendered from this checkout with the guard only, built with its own
./build and started the way zot starts it (bench/driver.py); its hello is
answered with the cwd of guard-cases.json, and each case is sent as zot's
tool_call intercept. The same cases go through cc-safety-net's library
(`checkCommand({command, cwd})`), installed from npm at CC_SAFETY_NET into
.cache/cc-safety-net. Then one decision on a 4 KiB command is timed, in the
runtime's own process where the language allows it and as a round trip
through the running extension.

The page is written between the markers GENERATED_BEGIN and GENERATED_END;
the rest of it is kept as it is.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(HERE))

import run as benchmark  # bench/run.py: statistics, formatting, the machine
from driver import Extension, Timeout, command_line
from flavours import VARIANTS, render
from smoke_test import protocol

CASES = ROOT / "template" / "zot" / "guard" / "guard-cases.json"
GO_GUARD = "./zot/guard"  # the Go guard's package in a project
PAGE = ROOT / "docs" / "performance" / "guard.md"
GENERATED_BEGIN = "<!-- Written by bench/guard.py from here to the end marker: edit above. -->"
GENERATED_END = "<!-- End of what bench/guard.py writes. -->"

CC_SAFETY_NET = "2.4.5"  # the npm version compared with
CC_DIR = ROOT / ".cache" / "cc-safety-net"
CC_API = CC_DIR / "node_modules" / "cc-safety-net" / "dist" / "api.js"
NODE_SCRIPT = HERE / "guard_node.mjs"

RUNTIMES = ["python", "shell", "go", "typescript", "typescript-tsx"]
LABELS = {key: benchmark.LABELS[key] for key in RUNTIMES}
LABELS["python"] = "Python"
CC_KEY = "cc-safety-net"
# p50 of one decision (ms), in process and as a round trip: (comparison, limit)
TARGETS = {"shell": ("<", 20.0)} | {key: ("<=", 1.0) for key in RUNTIMES if key != "shell"}

# zot's answer to a refused call, as every runtime writes it
REFUSED = re.compile(r"refused by .*? \(([^()]+)\): ")
NO_RULE = "(no rule id)"  # a refusal whose rule is not in its reason
KIB4 = 4096
ANSWER_TIMEOUT = 5.0  # zot allows the call when the guard has not answered by then


@dataclass
class Plan:
    warmup: int  # decisions timed and thrown away first
    reps: int  # decisions timed, per command and way
    cc_reps: int  # the same for cc-safety-net, which takes milliseconds a decision
    min_reps: int  # round trips of a slow guard: as many as fit ROUND_TRIPS_BUDGET, this at least


FULL = Plan(100, 2000, 300, 300)
QUICK = Plan(3, 20, 20, 20)
ROUND_TRIPS_BUDGET = 30.0  # seconds of round trips per command


@dataclass
class Verdict:
    refused: bool
    rule: str | None  # the rule id given, if any
    note: str = ""  # no answer, a malformed answer
    reason: str = ""  # the reason given for a refusal


@dataclass
class Side:
    """One guard judged: a runtime of ours, or cc-safety-net."""

    key: str
    label: str
    project: Path | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    costs: list[dict] = field(default_factory=list)  # {how, name, samples (ms) | mean}
    timed: dict[str, str] = field(default_factory=dict)  # the timed commands' verdicts
    error: str = ""
    note: str = ""


def say(message: str) -> None:
    print(message, flush=True)


# --- the cases ----------------------------------------------------------------------


@dataclass
class Case:
    command: str
    refuse: bool
    rule: str | None  # the rule id the table expects, for a refused case


def load_cases(path: Path) -> tuple[str, list[Case]]:
    """guard-cases.json: its cwd and its cases, refused first.

    "refused" maps each command to the id of the rule that must refuse it (an
    older table lists the commands only); "allowed" lists commands.
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    refused = data.get("refused", {})
    if isinstance(refused, list):
        refused = dict.fromkeys(refused)
    cases = [Case(command, True, rule) for command, rule in refused.items()]
    cases += [Case(command, False, None) for command in data.get("allowed", [])]
    return data.get("cwd", "/home/user/project"), cases


# --- the 4 KiB commands ---------------------------------------------------------------


def realistic_command(cwd: str) -> str:
    """Commands an agent chains before a commit, and a long commit message: 4 KiB."""
    steps = [
        f"cd {cwd}",
        "git status --short",
        "git diff --stat HEAD~1 -- src/ tests/",
        "npm run lint -- --max-warnings=0 2>&1 | tail -n 40",
        'python3 -m pytest -x -q tests/test_parser.py -k "not slow" | tee test.log',
        "grep -rn 'TODO\\|FIXME' src/ | head -n 20",
        "go vet ./... && go test -count=1 ./internal/...",
        'find src -name "*.ts" -newer package.json | xargs wc -l | sort -n | tail -5',
        "jq -r .version package.json",
        "rm -rf ./dist ./coverage",
        "mkdir -p build/out && cp -r assets build/out/",
        "git add -A",
    ]
    chain = " && ".join(steps[:4]) + "; " + " && ".join(steps[4:8]) + "; " + " && ".join(steps[8:])
    lines = [
        "parser: read quoted words after redirections",
        "",
        "Redirections took the next token only, so a quoted file name",
        "with a blank in it was cut in two. The word reader now runs after",
        "the operator as it does everywhere else.",
        "",
    ]
    topics = ["parser", "checker", "rules", "docs", "tests", "cli", "cache", "config"]
    i = 0
    head = f'{chain} && git commit -m "'
    body = "\n".join(lines)
    while len(head) + len(body) + 1 < KIB4:
        topic = topics[i % len(topics)]
        body += f"\n- {topic}: handle case {i + 1} the way the shell does (see #{100 + i})"
        i += 1
    body = body[: KIB4 - len(head) - 1].rstrip("\\")
    command = head + body + '"'
    return command + " " * (KIB4 - len(command))


def dense_command() -> str:
    """About 200 short simple commands in 4 KiB; the last echo's text fills it up.

    Cut at 4 KiB, the command would end in an open quote, which a guard may
    refuse unread.
    """
    step = 'rm -rf ./build/x{n} && echo "step {n} done{fill}" | tee -a log.txt; '
    parts: list[str] = []
    n = 1
    while sum(map(len, parts)) + len(step.format(n=n, fill="")) <= KIB4:
        parts.append(step.format(n=n, fill=""))
        n += 1
    fill = "." * (KIB4 - sum(map(len, parts)))
    parts[-1] = step.format(n=n - 1, fill=fill)
    return "".join(parts)


# --- running a guard ------------------------------------------------------------------


def intercept(request_id: str, command: str) -> dict:
    """zot's intercept of a bash tool call."""
    return {
        "type": "event_intercept",
        "id": request_id,
        "event": "tool_call",
        "tool_id": "toolu_bench",
        "tool_name": "bash",
        "tool_args": {"command": command},
        "step": 1,
    }


def start(project: Path, cwd: str, work: Path, log: Path) -> Extension:
    """The extension, started and past its hello, with `cwd` as the user's project."""
    ext = Extension(command_line(project), project, log)
    try:
        hello = ext.read_frame(timeout=30)
        assert hello.get("type") == "hello", hello
        ack = protocol.hello_ack(cwd, str(project), str(work / "data"))
        ext.send({**ack, "zot_version": "bench"})
        ext.read_until("ready", timeout=5)
    except BaseException:
        ext.close()
        raise
    return ext


def verdict_of(reply: dict) -> Verdict:
    problems, block, reason = protocol.check_intercept_response(reply)
    if problems:
        return Verdict(False, None, "; ".join(problems))  # zot drops it: allowed
    if not block:
        return Verdict(False, None)
    found = REFUSED.match(reason)
    return Verdict(True, found.group(1) if found else None, reason=reason)


def extension_verdicts(ext: Extension, commands: list[str], prefix: str) -> list[Verdict]:
    """One intercept after the other; ids start with `prefix` (a late answer stays apart)."""
    out = []
    for i, command in enumerate(commands):
        request_id = f"{prefix}{i}"
        ext.send(intercept(request_id, command))
        try:
            out.append(verdict_of(ext.reply(request_id, timeout=ANSWER_TIMEOUT)))
        except Timeout:
            out.append(Verdict(False, None, f"no answer within {ANSWER_TIMEOUT:g} s"))
    return out


def timed_verdicts(timed: dict, verdicts: list[Verdict]) -> dict[str, str]:
    """What a guard decided on each timed command (a refusal could end a check early)."""
    return {
        name: f"refused ({v.rule or '?'})" if v.refused else "allowed"
        for name, v in zip(timed, verdicts, strict=True)
    }


def round_trips(ext: Extension, command: str, plan: Plan) -> list[float]:
    """Round trips of one intercept, in ms: plan.reps, or fewer when they are slow."""
    warmup = [ext.round_trip(intercept(f"w{i}", command)) for i in range(plan.warmup)]
    reps = plan.reps
    if warmup:
        reps = max(plan.min_reps, min(reps, int(ROUND_TRIPS_BUDGET / statistics.mean(warmup))))
    return [benchmark.ms(ext.round_trip(intercept(f"t{i}", command))) for i in range(reps)]


def node_job(job: dict, env: dict | None = None) -> dict:
    """Run bench/guard_node.mjs on one job (see there)."""
    result = subprocess.run(
        ["node", str(NODE_SCRIPT)],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"node {NODE_SCRIPT.name} failed:\n{result.stderr}")
    return json.loads(result.stdout)


def python_timings(project: Path, commands: dict, cwd: str, plan: Plan) -> dict:
    """The rendered zot/guard/guard.py imported here: check(command, cwd), in ms."""
    path = project / "zot" / "guard" / "guard.py"
    if not path.exists():  # a project of a release before 0.8.0
        path = project / "guard.py"
    spec = importlib.util.spec_from_file_location(f"guard_{id(project)}", path)
    guard = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(guard)
    check = getattr(guard, "check", None) or (
        lambda c, d: guard.check_tool_call("bash", {"command": c}, d)
    )
    out = {}
    for name, command in commands.items():
        samples = []
        for i in range(plan.warmup + plan.reps):
            started = time.perf_counter_ns()
            check(command, cwd)
            elapsed = time.perf_counter_ns() - started
            if i >= plan.warmup:
                samples.append(elapsed / 1e6)
        out[name] = samples
    return out


def ts_guard_module(project: Path) -> Path:
    """dist/guard.js, or the guard's source bundled beside it when ./build makes one bundle."""
    built = project / "dist" / "guard.js"
    if built.exists():
        return built
    bundle = project / "dist" / "guard.bench.mjs"
    esbuild = project / "node_modules" / ".bin" / "esbuild"
    benchmark.sh(
        [
            str(esbuild),
            "zot/guard/guard.ts" if (project / "zot/guard/guard.ts").exists() else "src/guard.ts",
            "--bundle",
            "--platform=node",
            "--format=esm",
            f"--outfile={bundle}",
            "--log-level=warning",
        ],
        project,
    )
    return bundle


GO_BENCH = re.compile(r"^Benchmark(\S*?)(?:-\d+)?\s+\d+\s+(.*)$")


def go_timings(project: Path, plan: Plan) -> dict:
    """`go test -bench Guard4KiB` in the project: {name: {unit: value}}, or {} without one."""
    out = benchmark.sh(
        [
            "go",
            "test",
            "-run",
            "^$",
            "-bench",
            "Guard4KiB",
            "-benchtime",
            f"{plan.reps}x",
            GO_GUARD,
        ],
        project,
    )
    found = {}
    for line in out.splitlines():
        match = GO_BENCH.match(line.strip())
        if not match:
            continue
        fields = match.group(2).split()
        found[match.group(1)] = {
            unit: float(value) for value, unit in zip(fields[::2], fields[1::2], strict=False)
        }
    return found


def go_name(bench_name: str) -> str:
    """Which of our commands a sub-benchmark (Guard4KiB/dense, Guard4KiB/script) stands for."""
    return "dense" if "dense" in bench_name.lower() else "realistic"


# --- cc-safety-net --------------------------------------------------------------------


def install_cc_safety_net() -> None:
    """cc-safety-net at CC_SAFETY_NET into .cache/cc-safety-net, unless it is there."""
    installed = CC_API.parent.parent / "package.json"
    if installed.exists() and json.loads(installed.read_text())["version"] == CC_SAFETY_NET:
        return
    CC_DIR.mkdir(parents=True, exist_ok=True)
    manifest = CC_DIR / "package.json"
    if not manifest.exists():
        manifest.write_text('{"private": true}\n')
    say(f"installing cc-safety-net@{CC_SAFETY_NET} into {CC_DIR}")
    benchmark.sh(
        [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--save-exact",
            f"cc-safety-net@{CC_SAFETY_NET}",
        ],
        CC_DIR,
    )


class World:
    """Real folders for cc-safety-net, which needs its cwd to exist.

    The table's cwd (/home/user/project) becomes WORLD/home/user/project, its
    parent the home folder (HOME), and the commands say so. WORLD is in
    .cache, out of the temp folders (where cc-safety-net allows deletes).
    """

    def __init__(self, cwd: str) -> None:
        self.root = CC_DIR / "world"
        self.home_as_written = os.path.dirname(cwd.rstrip("/")) or "/"
        self.home = str(self.root) + self.home_as_written
        self.cwd = str(self.root) + cwd
        Path(self.cwd).mkdir(parents=True, exist_ok=True)
        self.pattern = re.compile(re.escape(self.home_as_written) + r"(?=/|$|[^A-Za-z0-9_.-])")

    def command(self, command: str) -> str:
        return self.pattern.sub(lambda _: self.home, command)

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if "SAFETY_NET" not in k}
        env.update(HOME=self.home, CC_SAFETY_NET_HOME=str(self.root / "state"))
        return env


def cc_side(cases: list[Case], cwd: str, timed: dict, plan: Plan) -> Side:
    side = Side(CC_KEY, f"cc-safety-net {CC_SAFETY_NET}")
    try:
        install_cc_safety_net()
        world = World(cwd)
        job = {
            "module": str(CC_API),
            "api": "cc-safety-net",
            "cwd": world.cwd,
            "verdicts": [
                world.command(c) for c in [case.command for case in cases] + list(timed.values())
            ],
            "timing": {
                "commands": {name: world.command(c) for name, c in timed.items()},
                "warmup": plan.warmup,
                "reps": plan.cc_reps,
            },
        }
        answer = node_job(job, world.env())
        verdicts = [
            Verdict(
                bool(v["refused"]),
                v["rule"],
                v["reason"] if v["refused"] is None else "",
                v["reason"],
            )
            for v in answer["verdicts"]
        ]
        side.verdicts = verdicts[: len(cases)]
        side.timed = timed_verdicts(timed, verdicts[len(cases) :])
        for name, samples in answer["timing"].items():
            side.costs.append(
                {"how": "in process", "name": name, "samples": [s / 1e6 for s in samples]}
            )
        there = os.path.relpath(world.cwd, ROOT)
        side.note = f"checkCommand({{command, cwd}}) in Node, with `{cwd}` as `{there}`"
    except Exception as err:  # noqa: BLE001
        side.error = f"{type(err).__name__}: {err}"
        traceback.print_exc()
    return side


# --- our runtimes ---------------------------------------------------------------------


def build_runtime(key: str, work: Path) -> Path:
    variant = VARIANTS[key]
    project = work / key
    render(project, language=variant.language, capabilities=["guard"], **dict(variant.answers))
    benchmark.sh(["./build"], project)
    return project


def our_side(key: str, cases: list[Case], cwd: str, timed: dict, plan: Plan, work: Path) -> Side:
    side = Side(key, LABELS[key])
    log = work / "extensions-stderr.log"
    try:
        say(f"rendering and building {key}")
        project = side.project = build_runtime(key, work)
        say(f"judging {len(cases)} cases with {key}")
        with start(project, cwd, work, log) as ext:
            side.verdicts = extension_verdicts(ext, [case.command for case in cases], "case")
            side.timed = timed_verdicts(
                timed, extension_verdicts(ext, list(timed.values()), "timed")
            )
            say(f"timing {key}")
            for name, command in timed.items():
                side.costs.append(
                    {"how": "round trip", "name": name, "samples": round_trips(ext, command, plan)}
                )
            ext.shutdown()
    except Exception as err:  # noqa: BLE001
        side.error = f"{type(err).__name__}: {err}".strip()
        traceback.print_exc()
        return side
    try:
        side.costs += in_process(key, project, timed, cwd, plan)
    except Exception as err:  # noqa: BLE001
        side.note = f"in process: {type(err).__name__}: {str(err).strip().splitlines()[0]}"
        traceback.print_exc()
    return side


def in_process(key: str, project: Path, timed: dict, cwd: str, plan: Plan) -> list[dict]:
    """One decision in the runtime's own process, where the language allows it."""
    if key == "python":
        found = python_timings(project, timed, cwd, plan)
        return [{"how": "in process", "name": n, "samples": s} for n, s in found.items()]
    if key == "typescript":
        job = {
            "module": str(ts_guard_module(project)),
            "api": "ours",
            "cwd": cwd,
            "timing": {"commands": timed, "warmup": plan.warmup, "reps": plan.reps},
        }
        answer = node_job(job)
        return [
            {"how": "in process", "name": n, "samples": [ns / 1e6 for ns in s]}
            for n, s in answer["timing"].items()
        ]
    if key == "go":
        rows = []
        for bench_name, units in go_timings(project, plan).items():
            name = go_name(bench_name)
            if "ns/op" in units:
                how = "in process (`go test -bench`, its own commands)"
                mean = units["ns/op"] / 1e6
                rows.append({"how": how, "name": name, "mean": mean, "n": plan.reps})
        return rows
    return []  # shell: the round trip only; tsx runs the same code as node


# --- scores -----------------------------------------------------------------------------


def score(side: Side, cases: list[Case]) -> dict:
    refused = [(c, v) for c, v in zip(cases, side.verdicts, strict=True) if c.refuse]
    allowed = [(c, v) for c, v in zip(cases, side.verdicts, strict=True) if not c.refuse]
    missed: dict[str, list] = {}
    other_rule: list = []
    false_alarms: dict[str, list] = {}
    for case, verdict in refused:
        if not verdict.refused:
            missed.setdefault(case.rule or NO_RULE, []).append((case, verdict))
        elif side.key != CC_KEY and case.rule and verdict.rule != case.rule:
            other_rule.append((case, verdict))
    for case, verdict in allowed:
        if verdict.refused:
            false_alarms.setdefault(verdict.rule or NO_RULE, []).append((case, verdict))
    refused_ok = sum(v.refused for _, v in refused)
    allowed_ok = sum(not v.refused for _, v in allowed)
    return {
        "refused": (refused_ok, len(refused)),
        "allowed": (allowed_ok, len(allowed)),
        "total": (refused_ok + allowed_ok, len(cases)),
        "missed": missed,
        "other_rule": other_rule,
        "false_alarms": false_alarms,
        "notes": sorted({v.note for v in side.verdicts if v.note}),
    }


def fraction(pair: tuple[int, int]) -> str:
    done, total = pair
    return f"{done}/{total} ({100 * done / total:.1f}%)" if total else "—"


def cost_rows(side: Side) -> list[dict]:
    """{how, name, p50, p99, n} for each timing of a side."""
    rows = []
    for cost in side.costs:
        row = {
            "how": cost["how"],
            "name": cost["name"],
            "p50": cost.get("p50"),
            "p99": cost.get("p99"),
        }
        if "samples" in cost:
            samples = cost["samples"]
            row.update(p50=statistics.median(samples), p99=benchmark.percentile(samples, 99))
            row["n"] = len(samples)
        if "mean" in cost:
            row["mean"] = row["p50"] = cost["mean"]  # what the target is judged on
            row["n"] = cost["n"]
        rows.append(row)
    return rows


def fmt_ms(value: float | None) -> str:
    """Milliseconds, with microseconds shown below one."""
    if value is not None and value < 1:
        return f"{value:.3f} ms"
    return benchmark.fmt_ms(value)


def target(key: str, value: float | None) -> str:
    if key not in TARGETS or value is None:
        return ""
    op, limit = TARGETS[key]
    met = value <= limit if op == "<=" else value < limit
    return f"{'✅' if met else '❌'} {op.replace('<=', '≤')} {limit:g} ms"


# --- the page -----------------------------------------------------------------------------


def shown(command: str, width: int = 140) -> str:
    """A command as a Markdown code span, on one line, cut if long."""
    text = "".join(visible(ch) for ch in command)
    if len(text) > width:
        text = text[:width] + f"… ({len(command):,} characters)"
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or text.strip() != text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def visible(ch: str) -> str:
    """A character as the page shows it: newlines, tabs and odd blanks made visible."""
    if ch == "\n":
        return "⏎"
    if ch == "\t":
        return "⇥"
    if ch != " " and (not ch.isprintable() or unicodedata.category(ch) == "Zs"):
        return f"\\u{ord(ch):04x}"
    return ch


def misses_markdown(side: Side, result: dict) -> list[str]:
    lines = []
    if side.error:
        return [f"Failed: `{side.error.splitlines()[0]}`", ""]
    if not (result["missed"] or result["false_alarms"] or result["other_rule"]):
        return ["No misses.", ""]
    if result["missed"]:
        lines += ["Refused cases it allows, by the rule of the table that refuses them:", ""]
        for rule, items in sorted(result["missed"].items()):
            lines.append(
                f"- `{rule}` ({len(items)}): " + ", ".join(shown(c.command) for c, _ in items)
            )
        lines.append("")
    if result["false_alarms"]:
        lines += ["Allowed cases it refuses (false alarms), by the rule that refused them:", ""]
        for rule, items in sorted(result["false_alarms"].items()):
            lines.append(
                f"- `{rule}` ({len(items)}): " + ", ".join(shown(c.command) for c, _ in items)
            )
            if rule == NO_RULE:
                lines[-1] += f"; the first answer: {shown(items[0][1].reason)}"
        lines.append("")
    if result["other_rule"]:
        lines += ["Refused, but by another rule than the table's (table → given):", ""]
        for case, verdict in result["other_rule"]:
            lines.append(f"- {shown(case.command)}: `{case.rule}` → `{verdict.rule or '?'}`")
        lines.append("")
    if result["notes"]:
        lines += ["Answers it got wrong in form: " + "; ".join(result["notes"]), ""]
    return lines


def generated_markdown(
    sides: list[Side], cases: list[Case], cwd: str, timed: dict, plan: Plan, info: dict, quick: bool
) -> str:
    results = {s.key: score(s, cases) for s in sides if not s.error}
    refused = sum(c.refuse for c in cases)
    cc = next((s for s in sides if s.key == CC_KEY), None)
    lines = [
        f"Measured {info['date']} on {info['cpu']}, {info['cores']} cores, {info['kernel']}; "
        f"{info['python']}, Node.js {info['node']}, {info['go']}, {info['jq']}, {info['bash']}"
        + (f", cc-safety-net {CC_SAFETY_NET}" if cc else "")
        + f". Load average before: {info['load_before']}, after: {info['load_after']}."
        + (" **Quick run: few repetitions, not for comparison.**" if quick else ""),
        "",
        "## Scores",
        "",
        (
            f"guard-cases.json: {len(cases)} cases, {refused} to refuse and "
            f"{len(cases) - refused} to allow, each judged with the project in `{cwd}`."
        ),
        "",
        "| | refused cases refused | allowed cases allowed | correct |",
        "|---|---|---|---|",
    ]
    for side in sides:
        if side.error:
            lines.append(f"| {side.label} | error | error | error |")
            continue
        r = results[side.key]
        lines.append(
            f"| {side.label} | {fraction(r['refused'])} | {fraction(r['allowed'])} "
            f"| {fraction(r['total'])} |"
        )
    notes = [f"{s.label}: {s.note}." for s in sides if s.note]
    notes += [f"{s.label} failed: `{s.error.splitlines()[0]}`." for s in sides if s.error]
    if notes:
        lines += ["", *notes]
    lines += ["", "## Where each misses", ""]
    for side in sides:
        lines += [f"### {side.label}", ""]
        lines += misses_markdown(side, results.get(side.key, {}))
    lines += [
        "## Cost of one decision",
        "",
        (
            f"A 4 KiB command, timed over up to {plan.reps:,} decisions after {plan.warmup} "
            f"discarded; round trips that take longer than {ROUND_TRIPS_BUDGET:g} s in all "
            f"stop sooner, after {plan.min_reps:,} at least"
            + (f", and cc-safety-net over {plan.cc_reps:,}" if cc else "")
            + " (nearest-rank percentiles). *realistic*: commands an agent chains with `&&`, `;` "
            "and `|` before a commit with a long quoted message; *dense*: "
            f"{3 * dense_count(timed['dense'])} short simple commands "
            '(`rm -rf ./build/xN && echo "step N done" | tee -a log.txt;` over and over, the '
            "last text padded with dots to fill 4 KiB). "
            "Both are allowed (see below), so every command in them is checked. *In process*: "
            "the guard called directly: Python's guard.py imported into this benchmark's "
            "interpreter, TypeScript's zot/guard/guard.ts in Node (dist/guard.js, or bundled by the "
            "project's esbuild)"
            + (", cc-safety-net's checkCommand in Node" if cc else "")
            + "; Go runs the project's "
            "own `go test -bench Guard4KiB`, which gives the mean on its own commands of 4 KiB "
            "and more (a build script for *realistic*, the same dense one). *Round trip*: the "
            "intercept written to the running extension until its answer is read. Targets: "
            "p50 ≤ 1 ms for Go, Python and TypeScript, < 20 ms for shell."
        ),
        "",
        "| | how | decisions | realistic p50 | realistic p99 | dense p50 | dense p99 | target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for side in sides:
        if side.error:
            lines.append(f"| {side.label} | error | | | | | | |")
            continue
        by_how: dict[str, dict] = {}
        for row in cost_rows(side):
            by_how.setdefault(row["how"], {})[row["name"]] = row
        if not by_how:
            lines.append(f"| {side.label} | not measured | | | | | | |")
        for how, rows in by_how.items():
            cells = []
            for name in ("realistic", "dense"):
                row = rows.get(name, {})
                p50 = fmt_ms(row.get("p50")) + (" (mean)" if "mean" in row else "")
                cells += [p50, fmt_ms(row.get("p99"))]
            worst = max(
                (row["p50"] for row in rows.values() if row.get("p50") is not None), default=None
            )
            marks = target(side.key, worst)
            counts = sorted({f"{row['n']:,}" for row in rows.values() if "n" in row})
            decisions = " / ".join(counts) or "—"
            lines.append(
                f"| {side.label} | {how} | {decisions} | " + " | ".join(cells) + f" | {marks} |"
            )
    lines += ["", "Verdicts on the timed commands (both should be allowed):", ""]
    for side in sides:
        if side.timed:
            lines.append(f"- {side.label}: " + ", ".join(f"{n} {v}" for n, v in side.timed.items()))
    return "\n".join(lines) + "\n"


def dense_count(command: str) -> int:
    return command.count("rm -rf")


DEFAULT_HEAD = """# The guard: verdicts and cost

The [guard](../guard.md) reads every `bash` command the
model wants to run and refuses the dangerous ones before zot runs them.
`bench/guard.py` measures two things:

- **Verdicts.** The shared cases of `guard-cases.json` (commands to refuse,
  each with the id of the rule that must refuse it, and look-alikes to
  allow) go through every runtime the template generates, each a real
  running extension with the guard only, driven the way zot drives it:
  `hello_ack` gives the table's `cwd` as the project, and each case is a
  `tool_call` intercept. For comparison the same cases go through
  [cc-safety-net](https://www.npmjs.com/package/cc-safety-net), a guard
  for other coding agents, by its library's `checkCommand({command, cwd})`.
  Its rules are its own: where it differs from the table, the two policies
  differ, which is not always a mistake on its side.
- **Cost.** One decision on a 4 KiB command, in the runtime's own process
  where the language allows it, and as a round trip through the running
  extension (what zot waits for).

```sh
.venv/bin/python bench/guard.py                      # everything; rewrites the rest of this page
.venv/bin/python bench/guard.py --quick              # few repetitions, without cc-safety-net
.venv/bin/python bench/guard.py --only python,shell  # some runtimes (cc-safety-net is one)
```

cc-safety-net is installed from npm into `.cache/cc-safety-net`, at the
version `bench/guard.py` names. It needs its cwd to exist and allows
deletes in temp folders, so it gets a real folder out of them,
`.cache/cc-safety-net/world`, in place of the table's home folder: the
commands are rewritten to match, and `HOME` points there.

"""


def write_page(path: Path, generated: str) -> None:
    """The page with its generated part replaced (the rest is kept)."""
    text = path.read_text(encoding="utf-8") if path.exists() else DEFAULT_HEAD
    block = f"{GENERATED_BEGIN}\n\n{generated}\n{GENERATED_END}\n"
    if GENERATED_BEGIN in text and GENERATED_END in text:
        head, rest = text.split(GENERATED_BEGIN, 1)
        tail = rest.split(GENERATED_END, 1)[1].lstrip("\n")
        text = head + block + (("\n" + tail) if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# --- the console -----------------------------------------------------------------------------


def console(sides: list[Side], cases: list[Case]) -> None:
    say("")
    say(f"{'':28} {'refused':>20} {'allowed':>20} {'correct':>20}")
    for side in sides:
        if side.error:
            say(f"{side.label:28} ERROR {side.error.splitlines()[0]}")
            continue
        r = score(side, cases)
        say(
            f"{side.label:28} {fraction(r['refused']):>20} {fraction(r['allowed']):>20} "
            f"{fraction(r['total']):>20}"
        )
        for rule, items in sorted(r["missed"].items()):
            say(f"{'':4}misses {rule}: {len(items)}")
        for rule, items in sorted(r["false_alarms"].items()):
            say(f"{'':4}false alarms by {rule}: {len(items)}")
        if r["other_rule"]:
            say(f"{'':4}refused by another rule: {len(r['other_rule'])}")
    say("")
    say(f"{'':28} {'how':34} {'p50':>10} {'p99':>10}")
    for side in sides:
        for row in cost_rows(side):
            say(
                f"{side.label:28} {row['how'] + ' ' + row['name']:34} "
                f"{fmt_ms(row['p50']):>10} {fmt_ms(row['p99']):>10}  "
                f"{target(side.key, row['p50'])}"
            )


# --- main ----------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions, no cc-safety-net")
    choices = RUNTIMES + [CC_KEY]
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help=f"judge only these (repeatable or comma-separated): {', '.join(choices)}",
    )
    parser.add_argument("--cases", type=Path, default=CASES, help="the cases (guard-cases.json)")
    parser.add_argument("--out", type=Path, default=PAGE, help=f"the page (default: {PAGE})")
    parser.add_argument("--keep", action="store_true", help="keep the rendered projects")
    args = parser.parse_args(argv)
    only = {name for value in args.only or [] for name in value.split(",") if name}
    if only - set(choices):
        parser.error(f"unknown {', '.join(sorted(only - set(choices)))}: choose from {choices}")
    args.only = only or set(RUNTIMES) | ({CC_KEY} if not args.quick else set())
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    benchmark.setup_environment()
    plan = QUICK if args.quick else FULL
    cwd, cases = load_cases(args.cases)
    timed = {"realistic": realistic_command(cwd), "dense": dense_command()}
    assert all(len(c) == KIB4 for c in timed.values()), {k: len(c) for k, c in timed.items()}
    work = Path(tempfile.mkdtemp(prefix="zot-guard-bench-"))
    (work / "data").mkdir()
    say(f"work folder: {work}; {len(cases)} cases, cwd {cwd}")
    load_before = benchmark.load_average()
    sides: list[Side] = []
    try:
        for key in RUNTIMES:
            if key in args.only:
                sides.append(our_side(key, cases, cwd, timed, plan, work))
        if CC_KEY in args.only:
            say("judging the cases with cc-safety-net")
            sides.append(cc_side(cases, cwd, timed, plan))
        info = benchmark.machine()
        info.update(load_before=load_before, load_after=benchmark.load_average())
        write_page(args.out, generated_markdown(sides, cases, cwd, timed, plan, info, args.quick))
        console(sides, cases)
        say(f"\nwrote {args.out}")
    finally:
        if args.keep:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if any(side.error and side.key != CC_KEY for side in sides) else 0


if __name__ == "__main__":
    sys.exit(main())
