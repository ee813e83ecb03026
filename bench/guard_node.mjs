// Verdicts and timings of a guard that runs in Node, for bench/guard.py.
//
// Reads one JSON job on stdin:
//   {"module": PATH, "api": "ours" | "cc-safety-net", "cwd": DIR,
//    "verdicts": [COMMAND, ...],
//    "timing": {"commands": {NAME: COMMAND}, "warmup": N, "reps": N}}
// and writes {"verdicts": [{"refused", "rule", "reason"}], "timing": {NAME: [ns, ...]}}.
// "ours" is a generated project's dist/guard.js; "cc-safety-net" the
// package's api.js, whose checkCommand({command, cwd}) answers
// {kind: "allow"} or {kind: "deny", reason, ruleId?}.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const job = JSON.parse(readFileSync(0, "utf8"));
const mod = await import(pathToFileURL(job.module).href);

/** One decision: {refused, rule, reason}. */
function decide(command) {
  if (job.api === "cc-safety-net") {
    const result = mod.checkCommand({ command, cwd: job.cwd });
    return result.kind === "deny"
      ? { refused: true, rule: result.ruleId ?? null, reason: result.reason }
      : { refused: false, rule: null, reason: "" };
  }
  // The generated guard: check(command, cwd), or the older checkToolCall.
  const found = typeof mod.check === "function"
    ? mod.check(command, job.cwd)
    : mod.checkToolCall("bash", { command }, job.cwd);
  if (!found) return { refused: false, rule: null, reason: "" };
  return { refused: true, rule: found.rule ?? null, reason: found.reason ?? found.what ?? "" };
}

const out = { verdicts: [], timing: {} };
for (const command of job.verdicts ?? []) {
  try {
    out.verdicts.push(decide(command));
  } catch (err) {
    out.verdicts.push({ refused: null, rule: null, reason: `error: ${err.message}` });
  }
}
const timing = job.timing ?? { commands: {} };
for (const [name, command] of Object.entries(timing.commands)) {
  const samples = [];
  for (let i = 0; i < timing.warmup + timing.reps; i++) {
    const started = process.hrtime.bigint();
    decide(command);
    const elapsed = process.hrtime.bigint() - started;
    if (i >= timing.warmup) samples.push(Number(elapsed));
  }
  out.timing[name] = samples;
}
process.stdout.write(JSON.stringify(out) + "\n");
