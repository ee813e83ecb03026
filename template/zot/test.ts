// npm test's second half: the template's own tests (zot/**/*.test.ts), one
// line per file when its tests pass, each failure in full when one does not.
// It belongs to the template.
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { run } from "node:test";
import { fileURLToPath } from "node:url";
import { inspect } from "node:util";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const files = readdirSync(HERE, { recursive: true, encoding: "utf8" })
  .filter((name) => name.endsWith(".test.ts"))
  .map((name) => join(HERE, name))
  .sort();

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
process.exitCode = failures.length ? 1 : 0;
