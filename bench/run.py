#!/usr/bin/env python3
"""Measure what users feel of each generated extension: start-up and per-call.

    python bench/run.py                  the full benchmark, into docs/performance/
    python bench/run.py --quick          fewer iterations (a smoke run)
    python bench/run.py --only python    one variant (repeatable, or a,b)
    python bench/run.py --out DIR        write results.md, startup.png, results.json there
    python bench/run.py --load 0,2       the loads to measure under (the default): nothing
                                         beside it, then two busy processes (bench/load.py)

Every language variant is rendered from this checkout with the capabilities
commands, tools, events and guard (--capabilities chooses others) and built
with its own ./build, then started
the way zot starts it (tests/conftest.py and tests/host.py say how). Reference
points: the TypeScript skeleton run by a global tsx and by `npx --yes tsx`
(the two ways zot's docs show), and a floor, the smallest possible extension
(bench/floor/main.go). The Go SDK flavour is measured when ZOT_SDK_DIR points
at a checkout of zot's source. Each variant's start is also measured beside
its language's floor (a program that does nothing in the same runtime; for
Go's standard library the SDK flavour) and beside the same language rendered
without the guard, one start of each in turn, with the ratios; Python also
without a bytecode cache. Each variant is also timed where the guard must
not be late: the first intercept right after `ready`, the stop right after
`ready`, and decisions with a guard-policy.json just under the guard's 1 MiB
limit (bench/policy.py writes it).

Everything is measured once for each load of --load: with N > 0, N busy
processes run beside the measuring (not the building) and are stopped by
their pids at the end of it, on an error or Ctrl-C too.

Uses the development dependencies only (copier, matplotlib) and runs offline
but for npm: `npm install -g` of tsx into a temporary prefix, and npx.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import policy as big_policy
from driver import Extension, Timeout, TreeSampler, command_line, encode, group_cpu
from flavours import VARIANTS, configure_go, render, slow_tool
from load import Load, raise_on_sigterm

# The capabilities measured by default: the four every zot serves, so that the
# figures compare with earlier results; --capabilities measures others.
CAPABILITIES = ["commands", "tools", "events", "guard"]
NAME = "demo-ext"
COMMAND = NAME  # command_name defaults to the name
TOOL = NAME.replace("-", "_")  # tool_name too
SDK_MODULE = "github.com/patriceckhart/zot"
SLOW_SECONDS = 2
INTERCEPT_LIMIT = 5.0  # zot allows a tool call whose intercept is not answered by then
GRACE = 2.0  # zot's wait for the exit after shutdown, then SIGTERM
WAIT = 10.0  # how long the benchmark waits for an answer or an exit (then: "timeout")
SDK_FLOOR = "the Go SDK flavour"
POLICY_BUDGET = 30.0  # seconds of decisions with the large policy, per start


# --- what is measured ---------------------------------------------------------


@dataclass
class Subject:
    key: str
    label: str
    kind: str  # "variant", "reference" or "floor"
    argv: list[str] = field(default_factory=list)
    cwd: Path | None = None
    slow: Path | None = None  # a copy whose tool takes SLOW_SECONDS
    slow_argv: list[str] = field(default_factory=list)
    policy: Path | None = None  # a copy with a guard-policy.json just under 1 MiB
    policy_argv: list[str] = field(default_factory=list)
    bare: Path | None = None  # the same language rendered without the guard
    bare_argv: list[str] = field(default_factory=list)
    # the language's floor: a program that does nothing (run to its exit), or
    # an extension (started to ready) when floor_cwd is set
    floor_label: str = ""
    floor_argv: list[str] = field(default_factory=list)
    floor_cwd: Path | None = None
    requests: bool = True  # answers commands and tools
    env: dict | None = None
    note: str = ""
    results: dict = field(default_factory=dict)
    error: str = ""  # it could not be measured (or not all of it)


VARIANT_KEYS = ["go", "go-sdk", "typescript", "typescript-tsx", "python", "shell"]
REFERENCE_KEYS = ["tsx-global", "npx", "tsx-cjs"]
LABELS = {
    "floor": "floor: minimal Go",
    "go": "Go (stdlib)",
    "go-sdk": "Go (zot SDK)",
    "typescript": "TypeScript (node)",
    "typescript-tsx": "TypeScript (tsx)",
    "python": "Python (./main.py)",
    "python-direct": "Python (interpreter direct)",
    "python-nocache": "Python (no bytecode cache)",
    "shell": "Shell + jq",
    "tsx-global": "ref: global `tsx zot/main.ts`",
    "npx": "ref: `npx --yes tsx zot/main.ts`",
    "tsx-cjs": "ref: tsx's CommonJS hook (`node -r tsx/cjs`)",
    "pipe": "floor: `cat` echo (per call)",
}
FAST = ["go", "go-sdk", "typescript", "typescript-tsx", "python", "python-direct"]
PYTHONS = ["python", "python-direct", "python-nocache"]
EVERY_VARIANT = VARIANT_KEYS + ["python-direct", "python-nocache"]

# (result key, subjects, comparison, limit, text). Subjects not named here are
# shown without a target.
TARGETS = [
    ("ready_p50", ["go", "go-sdk"], "<=", 15, "spawn→ready median ≤ 15 ms"),
    ("ready_p50", ["python", "python-direct"], "<=", 60, "spawn→ready median ≤ 60 ms"),
    ("ready_p50", ["shell"], "<=", 60, "spawn→ready median ≤ 60 ms"),
    ("ready_p50", ["typescript"], "<=", 120, "spawn→ready median ≤ 120 ms"),
    ("ready_p50", VARIANT_KEYS + ["python-direct"], "<", 250, "spawn→ready median < 250 ms"),
    ("ack_to_ready_p99", EVERY_VARIANT, "<", 5, "hello→ready p99 < 5 ms"),
    ("guard_ratio", EVERY_VARIANT, "<=", 1.3, "ready with the guard ≤ 1.3× without it"),
    ("floor_ratio", PYTHONS, "<=", 2.5, "ready ≤ 2.5× `python3 -c pass`"),
    ("floor_ratio", ["shell"], "<=", 4, "ready ≤ 4× `bash -c 'jq -n empty'`"),
    ("sdk_ratio", ["go"], "<=", 1.5, "ready ≤ 1.5× the Go SDK flavour"),
    ("guard_ratio_drift", EVERY_VARIANT, "<=", 1.5, "guard ratio ≤ 1.5× the idle one"),
    ("floor_ratio_drift", PYTHONS + ["shell"], "<=", 1.5, "floor ratio ≤ 1.5× the idle one"),
    ("sdk_ratio_drift", ["go"], "<=", 1.5, "ratio to the SDK ≤ 1.5× the idle one"),
    ("tool_p50", FAST, "<=", 1, "tool round trip p50 ≤ 1 ms"),
    ("tool_p50", ["shell"], "<=", 20, "tool round trip p50 ≤ 20 ms"),
    ("throughput", FAST, ">=", 5000, "pipelined ≥ 5,000 tool calls/s"),
    ("throughput", ["shell"], ">=", 2000, "pipelined ≥ 2,000 tool calls/s"),
    ("big_frame_ms", VARIANT_KEYS + ["python-direct"], "<", 1000, "3 MiB tool call < 1 s"),
    ("intercept_max", FAST + ["shell"], "<=", 50, "intercept during a 2 s tool ≤ 50 ms"),
    ("busy_shutdown_ms", VARIANT_KEYS, "<=", 100, "shutdown during a tool ≤ 100 ms"),
    ("busy_leftovers", VARIANT_KEYS, "<=", 0, "processes left after that shutdown: 0"),
    (
        "first_intercept_max",
        EVERY_VARIANT,
        "<",
        INTERCEPT_LIMIT * 1000,
        "first intercept after ready (worst) < 5 s, zot's limit",
    ),
    (
        "shutdown_max",
        VARIANT_KEYS + ["python-direct"],
        "<",
        200,
        "stop after ready (worst) < 200 ms",
    ),
    (
        "policy_first_max",
        EVERY_VARIANT,
        "<",
        INTERCEPT_LIMIT * 1000,
        "first decision with a 1 MiB policy, right after ready (worst) < 5 s, zot's limit",
    ),
    (
        "policy_max",
        EVERY_VARIANT,
        "<",
        500,
        "later decisions with a 1 MiB policy (worst) < 500 ms",
    ),
    ("rss_mib", ["go", "go-sdk", "python", "python-direct"], "<=", 30, "peak RSS ≤ 30 MiB"),
]


@dataclass
class Plan:
    starts: int
    warmup_starts: int
    calls: int
    warmup_calls: int
    pipelined: int
    pipelined_runs: int
    idle_seconds: float
    intercepts: int
    first_starts: int  # starts whose first intercept right after ready is timed
    policy_starts: int  # starts with the large policy
    policy_rounds: int  # per start: each probe command this many times


FULL = Plan(30, 2, 1000, 50, 5000, 3, 5.0, 20, 20, 3, 5)
QUICK = Plan(5, 1, 100, 10, 500, 1, 1.0, 5, 3, 1, 1)
BIG_FRAME = 3 * 1024 * 1024  # bytes of one tool_call line
BIG_FRAMES = 3  # how many, one after the other (the median is reported)


def say(message: str) -> None:
    print(message, flush=True)


# --- statistics ----------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def ms(seconds: float) -> float:
    return seconds * 1000


# --- building ------------------------------------------------------------------


def sh(cmd: list[str], cwd: Path | None = None, timeout: float = 900, env=None) -> str:
    result = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def render_variant(work: Path, key: str, without: str = "") -> Path:
    """Render and build a variant with CAPABILITIES (like tests/conftest.py),
    but for the capability `without`."""
    project = work / (f"{key}-without-{without}" if without else key)
    capabilities = [c for c in CAPABILITIES if c != without]
    if key == "go-sdk":
        render(project, language="go", go_sdk=True, capabilities=capabilities)
        sdk = Path(os.environ["ZOT_SDK_DIR"]).resolve()
        with (project / "go.mod").open("a") as go_mod:
            go_mod.write(f"\nreplace {SDK_MODULE} => {sdk}\n")
    else:
        variant = VARIANTS[key]
        render(
            project,
            language=variant.language,
            capabilities=capabilities,
            **dict(variant.answers),
        )
    sh(["./build"], project)
    return project


def copy_project(project: Path, dst: Path) -> Path:
    """A copy of a built project; node_modules hard-linked (npm rewrites only
    .package-lock.json in place), the rest copied, so that it can be edited."""

    def copy(src: str, to: str) -> None:
        if f"{os.sep}node_modules{os.sep}" in src and not src.endswith(".package-lock.json"):
            os.link(src, to)
        else:
            shutil.copy2(src, to)

    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(project, dst, symlinks=True, copy_function=copy)
    return dst


def slow_copy(project: Path, language: str) -> Path:
    """A copy of the project whose tool sleeps SLOW_SECONDS, built."""
    slow = copy_project(project, project.with_name(project.name + "-slow"))
    handler = {"python": "main.py", "shell": "main.sh", "go": "main.go"}.get(
        language, "src/extension.ts"
    )
    source = (slow / handler).read_text()
    old, new = slow_tool(language, SLOW_SECONDS)
    if old not in source:
        raise RuntimeError(f"cannot make the tool slow: {old!r} is not in {handler}")
    (slow / handler).write_text(source.replace(old, new, 1))
    sh(["./build"], slow)
    return slow


def policy_copy(project: Path) -> Path:
    """A copy of the project with the large guard-policy.json, built (Go builds
    the rules into its binary)."""
    copy = copy_project(project, project.with_name(project.name + "-policy"))
    data, _ = big_policy.policy()
    (copy / "guard-policy.json").write_text(big_policy.text(data))
    sh(["./build"], copy)
    return copy


def real_python() -> str | None:
    """The interpreter behind `python3` when `python3` is a script (pyenv's shim)."""
    found = shutil.which("python3")
    if not found:
        return None
    with open(found, "rb") as f:
        if f.read(2) != b"#!":
            return None  # already the interpreter
    return sh(["python3", "-c", "import sys; print(sys.executable)"]).strip()


def set_floor(subject: Subject, work: Path, floor: Subject) -> None:
    """The language's floor: how fast its runtime starts a program that does
    nothing (Go: the minimal Go extension; the standard library's flavour
    gets the SDK flavour when it is measured)."""
    if subject.key in ("go", "go-sdk"):
        subject.floor_label = "minimal Go extension"
        subject.floor_argv, subject.floor_cwd = floor.argv, floor.cwd
    elif subject.key == "python":
        subject.floor_label, subject.floor_argv = "python3 -c pass", ["python3", "-c", "pass"]
    elif subject.key == "shell":
        subject.floor_label = "bash -c 'jq -n empty'"
        subject.floor_argv = ["bash", "-c", "jq -n empty"]
    elif subject.key == "typescript":
        empty = work / "empty.mjs"
        empty.write_text("")
        subject.floor_label, subject.floor_argv = "node empty.mjs", ["node", str(empty)]
    elif subject.key == "typescript-tsx":
        empty = work / "empty.ts"
        empty.write_text("")
        tsx = subject.cwd / "node_modules" / ".bin" / "tsx"
        subject.floor_label, subject.floor_argv = "tsx empty.ts", [str(tsx), str(empty)]


def without_bytecode_cache(python: Subject, work: Path) -> Subject:
    """The Python variant started as from a folder Python cannot write: no
    __pycache__, none written (PYTHONDONTWRITEBYTECODE)."""
    interpreter = real_python() or shutil.which("python3") or "python3"

    def copy(project: Path) -> Path:
        dst = copy_project(project, project.with_name(project.name + "-nocache"))
        for cache in list(dst.rglob("__pycache__")):
            shutil.rmtree(cache)
        return dst

    argv = [interpreter, "main.py"]
    return Subject(
        "python-nocache",
        LABELS["python-nocache"],
        "variant",
        argv,
        copy(python.cwd),
        copy(python.slow) if python.slow else None,
        argv,
        policy=copy(python.policy) if python.policy else None,
        policy_argv=argv if python.policy else [],
        bare=copy(python.bare) if python.bare else None,
        bare_argv=argv if python.bare else [],
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        floor_label=f"{interpreter} -c pass",
        floor_argv=[interpreter, "-c", "pass"],
        note=f"{interpreter} main.py, no __pycache__, PYTHONDONTWRITEBYTECODE=1",
    )


def build_floor(work: Path) -> Path:
    binary = work / "floor" / "floor-ext"
    binary.parent.mkdir(parents=True, exist_ok=True)
    sh(["go", "build", "-o", str(binary), "."], ROOT / "bench" / "floor")
    (binary.parent / "extension.json").write_text(
        json.dumps({"name": "floor", "version": "0.0.0", "exec": "./floor-ext"}) + "\n"
    )
    return binary


def tsx_version() -> str:
    text = ROOT / "template" / "package.json.jinja"
    for line in text.read_text().splitlines():
        if '"tsx":' in line:
            return line.split('"')[3]
    return "latest"


def install_global_tsx(work: Path) -> Path:
    """`npm install -g tsx` into a temporary prefix; its bin/tsx."""
    prefix = work / "npm-global"
    sh(
        [
            "npm",
            "install",
            "-g",
            "--prefix",
            str(prefix),
            "--no-audit",
            "--no-fund",
            f"tsx@{tsx_version()}",
        ],
        work,
    )
    return prefix / "bin" / "tsx"


def source_only_copy(project: Path, dst: Path) -> Path:
    """The TypeScript project without node_modules: tsx must come from outside."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(project, dst, symlinks=True, ignore=shutil.ignore_patterns("node_modules"))
    return dst


# --- measuring -----------------------------------------------------------------


def measure_startup(subject: Subject, plan: Plan, data_dir: Path, log: Path) -> None:
    hello, ready, ack_to_ready, down, cpu = [], [], [], [], []
    starts = plan.starts
    for i in range(plan.warmup_starts + starts):
        with Extension(subject.argv, subject.cwd, log, env=subject.env) as ext:
            t_hello, t_ready = ext.handshake(data_dir)
            try:  # the stop right after ready
                t_down = ext.shutdown(WAIT)
            except Timeout:
                t_down = math.inf  # zot would have killed it after GRACE
            else:
                if ext.proc.returncode != 0:
                    raise RuntimeError(f"exit status {ext.proc.returncode} after shutdown")
            usage = ext.rusage  # the process and the children it waited for
        if i >= plan.warmup_starts:
            hello.append(ms(t_hello))
            ready.append(ms(t_ready))
            ack_to_ready.append(ms(t_ready - t_hello))
            down.append(ms(t_down))
            if usage:
                cpu.append(ms(usage.ru_utime + usage.ru_stime))
    subject.results.update(
        starts=starts,
        hello_p50=statistics.median(hello),
        hello_p95=percentile(hello, 95),
        ready_p50=statistics.median(ready),
        ready_p95=percentile(ready, 95),
        ready_min=min(ready),
        ack_to_ready_p50=statistics.median(ack_to_ready),
        ack_to_ready_p99=percentile(ack_to_ready, 99),
        shutdown_p50=statistics.median(down),
        shutdown_max=max(down),
        shutdown_past_grace=sum(t > ms(GRACE) for t in down),
        start_cpu_p50=statistics.median(cpu) if cpu else None,
    )


def intercept(i: int, command: str) -> dict:
    """zot's intercept of a bash tool call."""
    return {
        "type": "event_intercept",
        "id": f"guard{i}",
        "event": "tool_call",
        "tool_id": f"t{i}",
        "tool_name": "bash",
        "tool_args": {"command": command},
        "step": 1,
    }


def check_verdict(reply: dict, command: str, rule: str | None, where: str) -> None:
    """RuntimeError unless `command` was refused by `rule` (None: allowed)."""
    refused = bool(reply.get("block"))
    reason = str(reply.get("reason", ""))
    if refused != (rule is not None) or (rule and f"({rule})" not in reason):
        expected = f"refused by {rule}" if rule else "allowed"
        got = f"refused: {reason[:300]}" if refused else "allowed"
        raise RuntimeError(f"{where}: {command!r} was {got} (expected: {expected})")


FIRST_PROBES = [("rm -rf /", "delete-outside-project"), ("ls -la", None)]


def start_to_ready(argv: list[str], cwd: Path, data_dir: Path, log: Path, env=None) -> float:
    """One start, spawn to ready, then zot's shutdown; in ms."""
    with Extension(argv, cwd, log, env=env) as ext:
        _, t_ready = ext.handshake(data_dir)
        with contextlib.suppress(Timeout):
            ext.shutdown(GRACE)
    return ms(t_ready)


def run_to_exit(argv: list[str], env=None) -> float:
    """A program that does nothing, spawn to exit; in ms."""
    started = time.monotonic()
    subprocess.run(argv, check=True, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return ms(time.monotonic() - started)


def measure_floor_ratios(subject: Subject, plan: Plan, data_dir: Path, log: Path) -> None:
    """Start-up beside the language's floor and the same language rendered
    without the guard, one start of each in turn, so that the three see the
    same machine: the medians and their ratios."""
    guard, bare, floor = [], [], []
    for i in range(plan.warmup_starts + plan.starts):
        times = (
            start_to_ready(subject.argv, subject.cwd, data_dir, log, subject.env),
            start_to_ready(subject.bare_argv, subject.bare, data_dir, log, subject.env)
            if subject.bare
            else None,
            (
                start_to_ready(subject.floor_argv, subject.floor_cwd, data_dir, log)
                if subject.floor_cwd
                else run_to_exit(subject.floor_argv, subject.env)
            )
            if subject.floor_argv
            else None,
        )
        if i >= plan.warmup_starts:
            for values, value in zip((guard, bare, floor), times, strict=True):
                if value is not None:
                    values.append(value)
    r = subject.results
    r.update(start_guard_p50=statistics.median(guard))
    if bare:
        r.update(start_bare_p50=statistics.median(bare))
        r.update(guard_ratio=r["start_guard_p50"] / r["start_bare_p50"])
    if floor:
        r.update(start_floor_p50=statistics.median(floor))
        r.update(floor_ratio=r["start_guard_p50"] / r["start_floor_p50"])
        if subject.floor_label == SDK_FLOOR:
            r.update(sdk_ratio=r["floor_ratio"])


def measure_first_intercept(subject: Subject, plan: Plan, data_dir: Path, log: Path) -> None:
    """The first intercept right after ready, over fresh starts: sent as soon as
    ready is read, timed until its answer."""
    times = []
    for i in range(plan.first_starts):
        command, rule = FIRST_PROBES[i % len(FIRST_PROBES)]
        with Extension(subject.argv, subject.cwd, log, env=subject.env) as ext:
            ext.handshake(data_dir)
            try:
                times.append(ms(ext.round_trip(intercept(i, command), timeout=WAIT)))
            except Timeout:
                times.append(math.inf)
                continue
            check_verdict(ext.last_reply, command, rule, "first intercept after ready")
            with contextlib.suppress(Timeout):  # the stop is timed elsewhere
                ext.shutdown(GRACE)
    subject.results.update(
        first_intercept_p50=statistics.median(times),
        first_intercept_max=max(times),
        first_intercept_past_limit=sum(t > ms(INTERCEPT_LIMIT) for t in times),
    )


def measure_policy(subject: Subject, plan: Plan, data_dir: Path, log: Path) -> None:
    """Decisions with a guard-policy.json just under 1 MiB: the first right
    after ready, then each probe command policy_rounds times."""
    _, probes = big_policy.policy()
    ready, first, later = [], [], []
    n = 0
    for _ in range(plan.policy_starts):
        with Extension(subject.policy_argv, subject.policy, log, env=subject.env) as ext:
            ready.append(ms(ext.handshake(data_dir)[1]))
            began = time.monotonic()
            for r in range(plan.policy_rounds):
                for command, rule in probes:
                    n += 1
                    try:
                        elapsed = ms(ext.round_trip(intercept(n, command), timeout=WAIT))
                    except Timeout:
                        elapsed = math.inf
                    (first if r == 0 and command == probes[0][0] else later).append(elapsed)
                    if math.isinf(elapsed):
                        break
                    check_verdict(ext.last_reply, command, rule, "with the 1 MiB policy")
                else:
                    if time.monotonic() - began < POLICY_BUDGET:
                        continue
                break
            with contextlib.suppress(Timeout, OSError):
                ext.shutdown(GRACE)
    subject.results.update(
        policy_ready_p50=statistics.median(ready),
        policy_first_max=max(first),
        policy_p50=statistics.median(later) if later else None,
        policy_max=max(later) if later else max(first),
        policy_decisions=len(first + later),
    )


def latencies(ext: Extension, make, calls: int, warmup: int) -> list[float]:
    times = []
    for i in range(warmup + calls):
        elapsed = ext.round_trip(make(f"r{i}"))
        if i >= warmup:
            times.append(ms(elapsed))
    return times


def pipelined_rate(ext: Extension, n: int, runs: int, after_each=None) -> float:
    """Median calls/s over `runs` bursts of `n` tool calls sent without waiting."""
    rates = []
    for run in range(runs):
        frames = [
            encode(
                {"type": "tool_call", "id": f"p{run}-{i}", "name": TOOL, "args": {"text": "hello"}}
            )
            for i in range(n)
        ]
        rates.append(n / ext.pipelined(frames))
        if after_each:
            after_each()
    return statistics.median(rates)


def big_frame_ms(ext: Extension) -> float:
    """Round trips of a tool call line of BIG_FRAME bytes; the median, in ms.
    Its text, as zot writes it, has 2-byte characters across 4 KiB blocks."""
    frame = {"type": "tool_call", "id": "big", "name": TOOL, "args": {"text": ""}}
    blocks, rest = divmod(BIG_FRAME - len(encode(frame)), 4095)
    text = ("é" * 2047 + "x") * blocks + "x" * rest  # 4,095 bytes a block
    return statistics.median(
        ms(ext.round_trip({**frame, "args": {"text": text}})) for _ in range(BIG_FRAMES)
    )


def measure_session(subject: Subject, plan: Plan, data_dir: Path, log: Path) -> None:
    """One long-lived process: idle CPU, round trips, throughput, peak RSS."""
    r = subject.results
    with Extension(subject.argv, subject.cwd, log, env=subject.env) as ext:
        ext.handshake(data_dir)
        if subject.kind == "variant" and "guard" in CAPABILITIES:
            # the guard ready first: its start after ready is timed elsewhere
            ext.round_trip(intercept(0, "ls"), timeout=WAIT)
        tree = TreeSampler(ext.proc.pid)
        tree.sample()
        ticks0, ns0 = group_cpu(ext.proc.pid)
        time.sleep(plan.idle_seconds)
        ticks1, ns1 = group_cpu(ext.proc.pid)
        scale = 5.0 / plan.idle_seconds  # always reported per 5 s
        r.update(idle_cpu_ms=(ticks1 - ticks0) * scale, idle_cpu_sched_ms=(ns1 - ns0) * scale)
        tree.sample()
        if subject.requests:
            cmd = latencies(
                ext,
                lambda i: {"type": "command_invoked", "id": i, "name": COMMAND, "args": "hello"},
                plan.calls,
                plan.warmup_calls,
            )
            tool = latencies(
                ext,
                lambda i: {"type": "tool_call", "id": i, "name": TOOL, "args": {"text": "hello"}},
                plan.calls,
                plan.warmup_calls,
            )
            tree.sample()
            r.update(
                calls=plan.calls,
                command_p50=statistics.median(cmd),
                command_p99=percentile(cmd, 99),
                tool_p50=statistics.median(tool),
                tool_p99=percentile(tool, 99),
            )
            n = plan.pipelined
            throughput = pipelined_rate(ext, n, plan.pipelined_runs, after_each=tree.sample)
            r.update(pipelined_calls=n, throughput=throughput)
        tree.sample()
        r.update(
            rss_mib=tree.total_kib / 1024,
            processes=tree.processes,
        )
        if subject.requests:  # after the RSS: a 3 MiB line is not the usual load
            r.update(big_frame_ms=big_frame_ms(ext))
        ext.shutdown()


def measure_intercept(subject: Subject, plan: Plan, data_dir: Path, log: Path) -> None:
    """Intercepts answered while a tool that takes SLOW_SECONDS runs."""
    count = plan.intercepts
    times = []
    with Extension(subject.slow_argv, subject.slow, log, env=subject.env) as ext:
        ext.handshake(data_dir)
        # the guard ready first: the first intercept after ready is timed elsewhere
        ext.round_trip(intercept(0, "ls"), timeout=WAIT)
        started = time.monotonic()
        ext.send({"type": "tool_call", "id": "slow", "name": TOOL, "args": {"text": "x"}})
        time.sleep(0.05)  # the tool is running
        for i in range(count):
            frame = {
                "type": "event_intercept",
                "id": f"guard{i}",
                "event": "tool_call",
                "tool_id": "t1",
                "tool_name": "bash",
                "tool_args": {"command": "rm -rf /" if i % 2 == 0 else "ls -la"},
                "step": 1,
            }
            try:
                times.append(ms(ext.round_trip(frame)))
            except Timeout:
                times.append(math.inf)
        ext.reply("slow", timeout=SLOW_SECONDS + 10)
        tool_ms = ms(time.monotonic() - started)
        # zot's shutdown while a tool runs: how long until the exit, and what is left
        ext.send({"type": "tool_call", "id": "slow2", "name": TOOL, "args": {"text": "x"}})
        time.sleep(0.2)  # the tool is running
        busy_shutdown = ms(ext.shutdown())
        left = ext.process.leftovers(0.5)
    subject.results.update(
        intercept_p50=statistics.median(times),
        intercept_max=max(times),
        intercepts=count,
        slow_tool_ms=tool_ms,
        busy_shutdown_ms=busy_shutdown,
        busy_leftovers=len(left),
    )


def measure_runtime_floors(plan: Plan, python: str | None) -> list[dict]:
    """Start-up of the bare runtimes: spawn to exit of a program that does nothing."""
    commands = [("python3 -c pass", ["python3", "-c", "pass"])]
    if python:
        imports = "import functools, json, os, queue, re, sys, threading, time"
        commands += [
            (f"{python} -c pass", [python, "-c", "pass"]),
            (f"{python} -S -c pass", [python, "-S", "-c", "pass"]),
            (f"{python} -S -c '{imports}'", [python, "-S", "-c", imports]),
        ]
    commands += [
        ("node -e 0", ["node", "-e", "0"]),
        ("bash -c :", ["bash", "-c", ":"]),
        ("jq -n empty", ["jq", "-n", "empty"]),
    ]
    rows = []
    for label, argv in commands:
        if not shutil.which(argv[0]):
            continue
        times = []
        for i in range(plan.warmup_starts + plan.starts):
            started = time.monotonic()
            subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
            if i >= plan.warmup_starts:
                times.append(ms(time.monotonic() - started))
        rows.append({"label": label, "p50": statistics.median(times), "p95": percentile(times, 95)})
        say(f"  runtime floor  {label}: {rows[-1]['p50']:.1f} ms")
    return rows


def measure_pipe_floor(plan: Plan, work: Path, log: Path) -> Subject:
    """`cat` echoes each request: the round trip of the pipes and this driver."""
    subject = Subject("pipe", LABELS["pipe"], "floor", ["cat"], work)
    with Extension(["cat"], work, log) as ext:
        tool = latencies(
            ext,
            lambda i: {"type": "tool_call", "id": i, "name": TOOL, "args": {"text": "hello"}},
            plan.calls,
            plan.warmup_calls,
        )
        throughput = pipelined_rate(ext, plan.pipelined, plan.pipelined_runs)
        ext.proc.stdin.close()
    subject.results.update(
        tool_p50=statistics.median(tool),
        tool_p99=percentile(tool, 99),
        command_p50=statistics.median(tool),
        command_p99=percentile(tool, 99),
        throughput=throughput,
    )
    return subject


# --- the machine ------------------------------------------------------------------


def first_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "not found"


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f"{kib / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return {
        "date": datetime.date.today().isoformat(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": memory,
        "kernel": f"{platform.system()} {platform.release()}",
        "python": first_line(["python3", "--version"]),
        "node": first_line(["node", "--version"]),
        "npm": first_line(["npm", "--version"]),
        "tsx": tsx_version(),
        "go": first_line(["go", "env", "GOVERSION"]),
        "jq": first_line(["jq", "--version"]),
        "bash": "bash " + first_line(["bash", "-c", "echo $BASH_VERSION"]),
    }


# --- reporting ------------------------------------------------------------------


def fmt_ms(value: float | None) -> str:
    if value is None:
        return "—"
    if math.isinf(value):
        return "timeout"
    if value >= 100:
        return f"{value:.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def fmt_value(key: str, value) -> str:
    if value is None:
        return "—"
    if key.endswith(("_ratio", "_drift")):
        return f"{value:.2f}×"
    if key == "idle_cpu_ms":  # clock ticks: 10 ms steps
        return f"{value:.0f} ms"
    if key == "throughput":
        return f"{value:,.0f}/s"
    if key in ("busy_leftovers", "policy_decisions") or key.endswith(("_past_grace", "_limit")):
        return f"{value}"
    if key.startswith(("rss", "maxrss")):
        return f"{value:.1f} MiB"
    return fmt_ms(value)


def ratio(value, floor) -> str:
    if value is None or floor in (None, 0) or math.isinf(value):
        return ""
    return f" ({value / floor:.1f}×)"


def check(op: str | None, value, limit) -> str:
    if value is None:
        return "n/a"
    if op is None:
        return "reported"
    met = {"<=": value <= limit, "<": value < limit, ">=": value >= limit}[op]
    return "met" if met else "MISSED"


def target_rows(rounds: list[Round]) -> list[dict]:
    """One row per target and subject; per round: value, shown, status."""
    rows = []
    for key, names, op, limit, text in TARGETS:
        for name in names:
            found = [next((s for s in r.subjects if s.key == name), None) for r in rounds]
            if all(s is None for s in found):
                continue
            values = [s.results.get(key) if s else None for s in found]
            status = [
                "error" if s and s.error and v is None else check(op, v, limit)
                for s, v in zip(found, values, strict=True)
            ]
            rows.append(
                {
                    "subject": next(s.label for s in found if s),
                    "target": text,
                    "values": values,
                    "shown": [fmt_value(key, v) for v in values],
                    "status": status,
                }
            )
    return rows


COLUMNS = [
    ("hello_p50", "spawn→hello p50", "floor"),
    ("ready_p50", "spawn→ready p50", "floor"),
    ("ready_p95", "spawn→ready p95", "floor"),
    ("command_p50", "command p50", "pipe"),
    ("command_p99", "command p99", "pipe"),
    ("tool_p50", "tool p50", "pipe"),
    ("tool_p99", "tool p99", "pipe"),
    ("throughput", "pipelined tool calls", "pipe"),
    ("intercept_max", "intercept during 2 s tool (worst)", None),
    ("rss_mib", "peak RSS", "floor"),
    ("idle_cpu_ms", "idle CPU / 5 s", None),
]
# The guard's first answer, the stop, a large policy (printed on the console)
NEW_COLUMNS = [
    ("first_intercept_p50", "first intercept after ready p50", None),
    ("first_intercept_max", "first intercept after ready (worst)", None),
    ("shutdown_p50", "stop after ready p50", None),
    ("shutdown_max", "stop after ready (worst)", None),
    ("policy_first_max", "1 MiB policy: first decision (worst)", None),
    ("policy_p50", "1 MiB policy: decision p50", None),
    ("policy_max", "1 MiB policy: later decision (worst)", None),
]
# Figures shown for every load, side by side
LOAD_COLUMNS = [
    ("spawn→ready p50", ["ready_p50"]),
    ("tool p50", ["tool_p50"]),
    ("pipelined tool calls", ["throughput"]),
    ("intercept during 2 s tool (worst)", ["intercept_max"]),
    ("first intercept after ready: p50 / worst", ["first_intercept_p50", "first_intercept_max"]),
    ("stop after ready: p50 / worst", ["shutdown_p50", "shutdown_max"]),
    (
        "1 MiB policy: first decision (worst) / later p50 / later worst",
        ["policy_first_max", "policy_p50", "policy_max"],
    ),
]


def load_words(r: Round) -> str:
    if r.load == 0:
        return "nothing started beside it"
    share = f", each given {r.share:.0%} of a core" if r.share is not None else ""
    return f"{busy_processes(r.load)} beside it (`--load {r.load}`{share})"


def busy_processes(n: int) -> str:
    return f"{n} busy process" + ("es" if n != 1 else "")


def markdown(rounds: list[Round], info: dict, plan: Plan, quick: bool, policy: dict) -> str:
    subjects = rounds[0].subjects
    floors = {s.key: s for s in subjects if s.key in ("floor", "pipe")}
    loads = "; ".join(
        f"{load_words(r)}: load average (1, 5, 15 min) before {r.load_before}, after {r.load_after}"
        for r in rounds
    )
    lines = [
        f"Measured {info['date']} on {info['cpu']}, {info['cores']} cores"
        + (f", {info['memory']}" if info["memory"] else "")
        + f", {info['kernel']}; {info['python']}, Node.js {info['node']} (npm {info['npm']},"
        f" tsx {info['tsx']}), {info['go']}, {info['jq']}, {info['bash']}.",
        "",
        f"Each start-up figure is over {plan.starts} starts after "
        f"{plan.warmup_starts} discarded; each round trip over {plan.calls} calls after "
        f"{plan.warmup_calls} discarded; pipelined: {plan.pipelined:,} tool calls written at once, "
        f"median of {plan.pipelined_runs} runs; a {BIG_FRAME // 1024 // 1024} MiB tool call: "
        f"median of {BIG_FRAMES}; "
        f"idle CPU over {plan.idle_seconds:g} s, shown per 5 s; the first intercept after "
        f"ready over {plan.first_starts} starts; with a guard-policy.json of "
        f"{policy['bytes']:,} bytes ({policy['rules']:,} rules): {plan.policy_starts} starts, "
        f"{len(policy['probes'])} commands {plan.policy_rounds} times each. "
        f"Measured with {loads}."
        + (" **Quick run: fewer iterations, not for comparison.**" if quick else ""),
        (
            "In parentheses: the ratio to the floor (start-up, RSS: the minimal Go extension; "
            "round trips: `cat` echoing each request, whose pipelined rate is the ceiling)."
        ),
        "",
    ]
    if len(rounds) > 1:
        lines += [f"**With {load_words(rounds[0])}:**", ""]
    lines += [
        "| | " + " | ".join(title for _, title, _ in COLUMNS) + " |",
        "|---" * (len(COLUMNS) + 1) + "|",
    ]
    for s in subjects:
        if s.error and not s.results:
            lines.append(f"| {s.label} | " + " | ".join(["error"] * len(COLUMNS)) + " |")
            continue
        cells = []
        for key, _, floor_key in COLUMNS:
            value = s.results.get(key)
            text = fmt_value(key, value)
            if (
                value is not None
                and floor_key
                and key != "throughput"  # the pipe's own rate: no useful ratio
                and s.key not in ("floor", "pipe")
            ):
                floor = floors.get(floor_key)
                text += ratio(value, floor.results.get(key) if floor else None)
            cells.append(text)
        lines.append(f"| {s.label} | " + " | ".join(cells) + " |")

    titles = [title for title, _ in LOAD_COLUMNS]
    lines += ["", "**Each load** (the guard's figures only for the variants):", ""]
    lines += ["| | load | " + " | ".join(titles) + " |", "|---" * (len(titles) + 2) + "|"]
    for s in subjects:
        if s.key == "pipe":
            continue
        for r in rounds:
            mine = next((x for x in r.subjects if x.key == s.key), None)
            if mine is None:
                continue
            cells = [
                " / ".join(fmt_value(key, mine.results.get(key)) for key in keys)
                for _, keys in LOAD_COLUMNS
            ]
            past = mine.results.get("shutdown_past_grace")
            if past:
                cells[5] += f" ({past} past 2 s)"
            lines.append(f"| {s.label} | {r.title} | " + " | ".join(cells) + " |")

    lines += [
        "",
        (
            "**Start-up beside the floor**: spawn→ready medians, one start of each in turn"
            " (the variant, the same language rendered without the guard, and the language's"
            " floor: a program that does nothing, run to its exit, or an extension started to"
            " ready); the ratios of the variant to each, and under load to the idle ratio:"
        ),
        "",
    ]
    titles = ["load", "floor", "floor p50", "without guard p50", "with guard p50"]
    titles += ["÷ floor", "÷ without guard", "÷ floor vs idle", "÷ without guard vs idle"]
    lines += ["| | " + " | ".join(titles) + " |", "|---" * (len(titles) + 1) + "|"]
    for s in subjects:
        for r in rounds:
            mine = next((x for x in r.subjects if x.key == s.key), None)
            if mine is None or "start_guard_p50" not in mine.results:
                continue
            res = mine.results
            cells = [r.title, f"`{mine.floor_label}`" if mine.floor_label else "—"]
            cells += [fmt_ms(res.get(k)) for k in ("start_floor_p50", "start_bare_p50")]
            cells.append(fmt_ms(res.get("start_guard_p50")))
            cells += [
                fmt_value(k, res.get(k))
                for k in ("floor_ratio", "guard_ratio", "floor_ratio_drift", "guard_ratio_drift")
            ]
            lines.append(f"| {s.label} | " + " | ".join(cells) + " |")

    caps = ", ".join(CAPABILITIES)
    lines += ["", f"**Targets** (medians unless said otherwise; capabilities {caps}):", ""]
    lines += ["| variant | target | " + " | ".join(r.title for r in rounds) + " |"]
    lines += ["|---" * (len(rounds) + 2) + "|"]
    for row in target_rows(rounds):
        cells = [
            f"{shown} " + {"met": "✅", "MISSED": "❌"}.get(status, status)
            for shown, status in zip(row["shown"], row["status"], strict=True)
        ]
        lines.append(f"| {row['subject']} | {row['target']} | " + " | ".join(cells) + " |")
    runtime = rounds[0].runtime
    if runtime:
        lines += ["", "**Runtime floors**: spawn to exit of a program that does nothing:", ""]
        lines += ["| command | p50 | p95 |", "|---|---|---|"]
        for row in runtime:
            lines.append(f"| `{row['label']}` | {fmt_ms(row['p50'])} | {fmt_ms(row['p95'])} |")
    lines += ["", f"**Details** ({rounds[0].title}):", ""]
    lines += [
        (
            "| | CPU per start p50 | hello→ready p50 | hello→ready p99 "
            "| shutdown during a tool | left behind | 3 MiB tool call | processes "
            "| idle CPU / 5 s (schedstat) | 1 MiB policy: spawn→ready p50 "
            "| 1 MiB policy: first decision (worst) | notes |"
        ),
        "|---" * 12 + "|",
    ]
    for s in subjects:
        if s.key == "pipe":
            continue
        r = s.results
        notes = s.error.splitlines()[0] if s.error else s.note
        lines.append(
            f"| {s.label} | {fmt_ms(r.get('start_cpu_p50'))} "
            f"| {fmt_ms(r.get('ack_to_ready_p50'))} | {fmt_ms(r.get('ack_to_ready_p99'))} "
            f"| {fmt_ms(r.get('busy_shutdown_ms'))} "
            f"| {r.get('busy_leftovers', '—')} | {fmt_ms(r.get('big_frame_ms'))} "
            f"| {r.get('processes', '—')} | {fmt_ms(r.get('idle_cpu_sched_ms'))} "
            f"| {fmt_ms(r.get('policy_ready_p50'))} | {fmt_ms(r.get('policy_first_max'))} "
            f"| {notes} |"
        )
    return "\n".join(lines) + "\n"


def chart(subjects: list[Subject], path: Path) -> None:
    """Two panels: spawn→ready (median, p95) and the tool round trip (p50, p99)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    started = [s for s in subjects if "ready_p50" in s.results]
    called = [s for s in subjects if "tool_p50" in s.results]
    fig, (top, bottom) = plt.subplots(
        2,
        1,
        figsize=(9, 2.6 + 0.42 * (len(started) + len(called))),
        gridspec_kw={"height_ratios": [max(1, len(started)), max(1, len(called))]},
    )
    colors = {"variant": "#3b7dd8", "reference": "#b0b0b0", "floor": "#5fb35f"}

    def panel(ax, rows, middle: str, tail: str, line: float, line_text: str) -> None:
        ys = list(range(len(rows)))
        mids = [s.results[middle] for s in rows]
        tails = [s.results[tail] for s in rows]
        ax.barh(ys, mids, color=[colors[s.kind] for s in rows])
        ax.plot(tails, ys, "|", color="black", markersize=12)

        def short(value: float) -> str:
            return (
                f"{value:.0f}" if value >= 10 else f"{value:.1f}" if value >= 1 else f"{value:.2f}"
            )

        tail_name = tail.rsplit("_", 1)[1]
        for y, mid, end in zip(ys, mids, tails, strict=True):
            text = f"{short(mid)} ms ({tail_name} {short(end)})"
            ax.text(max(mid, end) * 1.2, y, text, va="center", fontsize=8)
        ax.axvline(line, color="#d62728", linestyle="--", linewidth=1)
        ax.text(line * 1.05, len(rows) - 0.35, line_text, color="#d62728", fontsize=8)
        ax.set_yticks(ys, [s.label.replace("`", "") for s in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        low = min(mids) / 2
        ax.set_xlim(low, max(max(tails), line) * 10)

    if started:
        panel(top, started, "ready_p50", "ready_p95", 250, "zot's 250 ms watchdog")
        top.set_xlabel("ms, log scale: median (bar), p95 (|)")
        top.set_title(f"Start-up: spawn to ready, {', '.join(CAPABILITIES)}", fontsize=10)
        top.legend(
            handles=[Patch(color=c, label=k) for k, c in colors.items()],
            loc="upper right",
            fontsize=8,
        )
    if called:
        panel(bottom, called, "tool_p50", "tool_p99", 1, "1 ms")
        bottom.set_xlabel("ms, log scale: p50 (bar), p99 (|)")
        bottom.set_title("Tool call round trip, one call at a time", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- main -----------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations, for a smoke run")
    parser.add_argument(
        "--only",
        action="append",
        metavar="VARIANT",
        help=f"measure only these (repeatable or comma-separated): "
        f"{', '.join(VARIANT_KEYS + REFERENCE_KEYS)}; the floors are always measured",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "docs" / "performance",
        help="where results.md, startup.png and results.json go (default: docs/performance)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the rendered projects")
    parser.add_argument(
        "--load",
        default="0,2",
        metavar="N[,N...]",
        help="measure everything once per load: N busy processes beside the benchmark"
        " (default: 0,2, nothing and then two)",
    )
    parser.add_argument(
        "--capabilities",
        metavar="LIST",
        help=f"comma-separated capabilities to render (default: {','.join(CAPABILITIES)};"
        " commands and tools are always among them)",
    )
    args = parser.parse_args(argv)
    if args.capabilities:
        chosen = [c for c in args.capabilities.split(",") if c]
        CAPABILITIES[:] = list(dict.fromkeys(["commands", "tools", *chosen]))
    only = {name for value in args.only or [] for name in value.split(",") if name}
    unknown = only - set(VARIANT_KEYS + REFERENCE_KEYS)
    if unknown:
        parser.error(
            f"unknown variant {', '.join(sorted(unknown))}: "
            f"choose from {', '.join(VARIANT_KEYS + REFERENCE_KEYS)}"
        )
    args.only = only or set(VARIANT_KEYS + REFERENCE_KEYS)
    loads = [n.strip() for n in args.load.split(",") if n.strip()]
    if not loads or not all(n.isdigit() for n in loads):
        parser.error(f"--load takes counts of busy processes, such as 0,2 (not {args.load!r})")
    args.load = [int(n) for n in loads]
    return args


def setup_environment() -> None:
    settings = Path(tempfile.gettempdir()) / "zot-ext-template-copier-settings.yml"
    settings.write_text("{}\n")
    os.environ["COPIER_SETTINGS_PATH"] = str(settings)
    os.environ.setdefault("npm_config_prefer_offline", "true")
    os.environ.setdefault("npm_config_update_notifier", "false")
    os.environ.setdefault("npm_config_fund", "false")
    os.environ.setdefault("npm_config_audit", "false")
    configure_go()


def prepare(args: argparse.Namespace, work: Path) -> list[Subject]:
    """Render, build and describe everything to measure, floor first."""
    subjects = []
    floor = Subject("floor", LABELS["floor"], "floor", requests=False)
    try:
        binary = build_floor(work)
        floor.argv, floor.cwd = [str(binary)], binary.parent
        floor.note = "bench/floor/main.go: hello, ready, exit"
    except Exception as err:  # noqa: BLE001
        floor.error = str(err)
    subjects.append(floor)

    keys = [k for k in VARIANT_KEYS if k in args.only]
    if "go-sdk" in keys and not os.environ.get("ZOT_SDK_DIR"):
        keys.remove("go-sdk")
        say("go-sdk: skipped (set ZOT_SDK_DIR to a checkout of zot's source)")
    wants_tsx = bool(set(REFERENCE_KEYS) & args.only)
    if wants_tsx and "typescript-tsx" not in keys:
        keys.append("typescript-tsx")  # the references run its source
    projects = {}
    for key in keys:
        say(f"rendering and building {key}")
        subject = Subject(key, LABELS[key], "variant")
        language = "go" if key == "go-sdk" else VARIANTS[key].language
        try:
            project = projects[key] = render_variant(work, key)
            subject.argv, subject.cwd = command_line(project), project
            subject.slow = slow_copy(project, language)
            subject.slow_argv = command_line(subject.slow)
            if "guard" in CAPABILITIES:
                subject.policy = policy_copy(project)
                subject.policy_argv = command_line(subject.policy)
            if "guard" in CAPABILITIES:
                subject.bare = render_variant(work, key, without="guard")
                subject.bare_argv = command_line(subject.bare)
            manifest = json.loads((project / "extension.json").read_text())
            subject.note = "exec: " + " ".join([manifest["exec"], *manifest.get("args", [])])
            set_floor(subject, work, floor)
        except Exception as err:  # noqa: BLE001
            subject.error = str(err)
        if key in args.only:
            subjects.append(subject)
        if key == "python" and not subject.error:
            subjects.append(without_bytecode_cache(subject, work))
            python = real_python()
            if python:
                direct = Subject(
                    "python-direct",
                    LABELS["python-direct"],
                    "variant",
                    [python, "main.py"],
                    project,
                    subject.slow,
                    [python, "main.py"],
                    policy=subject.policy,
                    policy_argv=[python, "main.py"] if subject.policy else [],
                    bare=subject.bare,
                    bare_argv=[python, "main.py"] if subject.bare else [],
                    floor_label=f"{python} -c pass",
                    floor_argv=[python, "-c", "pass"],
                    note=f"{python} main.py, without the python3 shim",
                )
                subjects.insert(-1, direct)
                subject.note += " (python3 is a shim script here)"
    variants = {s.key: s for s in subjects}
    go, sdk = variants.get("go"), variants.get("go-sdk")
    if go and sdk and not sdk.error:  # the standard library against zot's SDK
        go.floor_label, go.floor_argv, go.floor_cwd = SDK_FLOOR, sdk.argv, sdk.cwd
    tsx_project = projects.get("typescript-tsx")
    if wants_tsx and tsx_project:
        bare = source_only_copy(tsx_project, work / "ts-source")
        if "tsx-global" in args.only:
            subject = Subject("tsx-global", LABELS["tsx-global"], "reference")
            try:
                say("installing tsx globally into a temporary prefix")
                tsx = install_global_tsx(work)
                subject.argv, subject.cwd = [str(tsx), "zot/main.ts"], bare
                subject.slow = source_only_copy(
                    tsx_project.with_name("typescript-tsx-slow"), work / "ts-source-slow"
                )
                subject.slow_argv = subject.argv
                subject.note = "npm install -g tsx; the project without node_modules"
            except Exception as err:  # noqa: BLE001
                subject.error = str(err)
            subjects.append(subject)
        if "npx" in args.only:
            env = {k: v for k, v in os.environ.items() if k != "npm_config_prefer_offline"}
            npx = shutil.which("npx") or "npx"
            subjects.append(
                Subject(
                    "npx",
                    LABELS["npx"],
                    "reference",
                    [npx, "--yes", "tsx", "zot/main.ts"],
                    bare,
                    requests=True,
                    env=env,
                    note="npx's cache warm; the project without node_modules",
                )
            )
        if "tsx-cjs" in args.only:
            require = ["node", "--require", "tsx/cjs", "-e", "require('./zot/main.ts')"]
            subjects.append(
                Subject(
                    "tsx-cjs",
                    LABELS["tsx-cjs"],
                    "reference",
                    require,
                    tsx_project,
                    tsx_project.with_name("typescript-tsx-slow"),
                    require,
                    note="the ES module source compiled to CommonJS on the main thread "
                    "(no top-level await, no import.meta)",
                )
            )
    return subjects


@dataclass
class Round:
    """Everything measured under one load."""

    load: int  # busy processes beside the measuring
    subjects: list[Subject]
    runtime: list[dict] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    share: float | None = None  # of a core, each busy process got (mean)
    load_before: str = ""
    load_after: str = ""

    @property
    def title(self) -> str:
        return "no load" if self.load == 0 else f"--load {self.load}"


def measure_round(subjects: list[Subject], plan: Plan, work: Path, log: Path) -> list[Subject]:
    """Measure every subject once (fresh copies: each round has its own results)."""
    data_dir = work / "data"
    measured = []
    for template in subjects:
        subject = dataclasses.replace(template, results={})
        if not subject.error:
            say(f"measuring {subject.key}")
            try:
                measure_startup(subject, plan, data_dir, log)
                measure_session(subject, plan, data_dir, log)
                if subject.slow:
                    measure_intercept(subject, plan, data_dir, log)
                if subject.kind == "variant":
                    measure_floor_ratios(subject, plan, data_dir, log)
                if subject.kind == "variant" and "guard" in CAPABILITIES:
                    measure_first_intercept(subject, plan, data_dir, log)
                    if subject.policy:
                        measure_policy(subject, plan, data_dir, log)
            except Exception as err:  # noqa: BLE001
                subject.error = f"{type(err).__name__}: {err}"
                traceback.print_exc()
        if subject.error:
            say(f"  {subject.key}: ERROR {subject.error.splitlines()[0]}")
        measured.append(subject)
    say("measuring the per-call floor (cat)")
    measured.insert(1, measure_pipe_floor(plan, work, log))
    return measured


def run(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_environment()
    raise_on_sigterm()  # so that a SIGTERM stops the busy processes too
    plan = QUICK if args.quick else FULL
    work = Path(tempfile.mkdtemp(prefix="zot-bench-"))
    (work / "data").mkdir()
    log = work / "extensions-stderr.log"
    say(f"work folder: {work}")
    load_before = load_average()
    busy = float(load_before.split()[0]) if load_before != "unknown" else 0.0
    if busy > 0.5 * (os.cpu_count() or 1):
        say(f"warning: the machine is busy (load average {load_before}): the figures will be high")
    try:
        subjects = prepare(args, work)
        rounds = []
        for n in args.load:
            this = Round(n, [], load_before=load_average())
            with Load(n) as load:
                if n:
                    say(f"load: {busy_processes(n)} beside the benchmark (pids {load.pids})")
                    this.pids = load.pids
                this.subjects = measure_round(subjects, plan, work, log)
                if not rounds:
                    say("measuring the runtime floors")
                    python = real_python() if {"python"} & args.only else None
                    this.runtime = measure_runtime_floors(plan, python)
                this.load_after = load_average()
            this.share = load.share()
            if n:
                say(f"load: stopped; each busy process got {this.share:.0%} of a core")
            rounds.append(this)
        drifts(rounds)
        failed = any(s.error and s.kind != "reference" for r in rounds for s in r.subjects)
        info = machine()
        write_results(args, rounds, info, plan)
        for this in rounds:
            say(f"\n{this.title}:")
            for s in this.subjects:
                r = s.results
                if s.error:
                    continue
                figures = ", ".join(
                    f"{title} {fmt_value(key, r[key])}"
                    for key, title, _ in COLUMNS + NEW_COLUMNS
                    if key in r
                )
                say(f"{s.label}: {figures}")
        say("")
        for row in target_rows(rounds):
            for this, status, shown in zip(rounds, row["status"], row["shown"], strict=True):
                if status == "n/a":
                    continue
                where = f" ({this.title})" if this.load else ""
                say(f"{status:>8}  {row['subject']}: {row['target']}: measured {shown}{where}")
        say(
            f"\nwrote {args.out / 'results.md'}, {args.out / 'startup.png'}, "
            f"{args.out / 'results.json'}"
        )
    finally:
        if args.keep:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


def drifts(rounds: list[Round]) -> None:
    """Under each load: the ratios to the floor and to the start without the
    guard, each divided by the same ratio with nothing beside it."""
    idle = {s.key: s.results for s in rounds[0].subjects}
    for r in rounds[1:]:
        for s in r.subjects:
            for key in ("floor_ratio", "guard_ratio", "sdk_ratio"):
                mine, base = s.results.get(key), idle.get(s.key, {}).get(key)
                if mine is not None and base:
                    s.results[f"{key}_drift"] = mine / base


def write_results(args: argparse.Namespace, rounds: list[Round], info: dict, plan: Plan) -> None:
    data, probes = big_policy.policy()
    size = len(big_policy.text(data).encode())
    policy = {"bytes": size, "rules": len(data["rules"]), "probes": probes}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text(markdown(rounds, info, plan, args.quick, policy))
    chart(rounds[0].subjects, args.out / "startup.png")
    report = {
        "machine": info,
        "quick": args.quick,
        "plan": plan.__dict__,
        "policy": policy,
        "rounds": [
            {
                "load": r.load,
                "pids": r.pids,
                "share": r.share,
                "load_before": r.load_before,
                "load_after": r.load_after,
                "subjects": [
                    {
                        "key": s.key,
                        "label": s.label,
                        "kind": s.kind,
                        "argv": s.argv,
                        "results": s.results,
                        "error": s.error,
                        "note": s.note,
                    }
                    for s in r.subjects
                ],
                "runtime_floors": r.runtime,
            }
            for r in rounds
        ],
    }
    (args.out / "results.json").write_text(json.dumps(finite(report), indent=2) + "\n")


def finite(value):
    """JSON has no infinity: a figure that timed out is written "timeout"."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    if isinstance(value, float) and math.isinf(value):
        return "timeout"
    return value if isinstance(value, str | int | float | bool | None) else str(value)


if __name__ == "__main__":
    try:
        sys.exit(run())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
