// npm test: your tests (src/**/*.test.ts) as node's test runner shows them,
// then the template's own (zot/**/*.test.ts), one line per file when its
// tests pass, each failure in full when one does not. The files are listed
// here, not by a shell pattern, so it runs the same from any shell (Windows'
// cmd.exe expands no *). It belongs to the template.
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { run } from "node:test";
import { spec } from "node:test/reporters";
import { pipeline } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import { inspect } from "node:util";

/** The test files under a folder, sorted; none when it does not exist. */
function testFiles(folder: string): string[] {
  let names: string[];
  try {
    names = readdirSync(folder, { recursive: true, encoding: "utf8" });
  } catch {
    return [];
  }
  return names
    .filter((name) => name.endsWith(".test.ts"))
    .map((name) => join(folder, name))
    .sort();
}

const HERE = fileURLToPath(new URL(".", import.meta.url));
let failed = false;

const yours = testFiles(join(HERE, "..", "src"));
if (yours.length) {
  const runner = run({ files: yours });
  runner.on("test:fail", () => (failed = true));
  await pipeline(runner.compose(new spec()), process.stdout, { end: false });
}

const files = testFiles(HERE);
const passed = new Map<string, number>();
const failures: string[] = [];
for await (const event of run({ files })) {
  if (event.type !== "test:pass" && event.type !== "test:fail") continue;
  const file = relative(process.cwd(), event.data.file ?? "");
  if (event.type === "test:pass") {
    if (event.data.nesting === 0) passed.set(file, (passed.get(file) ?? 0) + 1);
  } else {
    const { error } = event.data.details;
    const cause = (error as { cause?: unknown }).cause ?? error; // the assertion
    const text = inspect(cause, { depth: 4 });
    failures.push(`FAIL  ${file}: ${event.data.name}\n${text}\n`);
  }
}
for (const [file, count] of passed) {
  if (!failures.some((failure) => failure.startsWith(`FAIL  ${file}:`))) {
    console.log(`ok    ${file}: ${count} tests`);
  }
}
for (const failure of failures) console.log(failure);
process.exitCode = failed || failures.length ? 1 : 0;
