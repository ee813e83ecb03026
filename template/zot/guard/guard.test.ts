// The guard's own tests (npm test runs them after yours): the template's
// rules give every verdict of guard-cases.json. Your guard-policy.json is
// left out, so a rule you switch off there fails nothing here; ./smoke-test
// checks the extension with it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import {
  check,
  checkToolCall,
  MAX_COMMAND,
  refusalMessage,
  templatePolicy,
} from "./guard.js";

const CASES_FILE = new URL("guard-cases.json", import.meta.url);
const CASES = JSON.parse(readFileSync(CASES_FILE, "utf8")) as {
  cwd: string; // the project folder the cases assume
  refused: Record<string, string>; // command -> the id of the rule refusing it
  allowed: string[];
};

test("the template's rules give the verdicts of guard-cases.json", () => {
  const rules = templatePolicy();
  const wrong: string[] = [];
  for (const [command, rule] of Object.entries(CASES.refused)) {
    const got = check(command, CASES.cwd, rules)?.rule;
    if (got !== rule)
      wrong.push(`${JSON.stringify(command)}: ${got}, not ${rule}`);
  }
  for (const command of CASES.allowed) {
    const got = check(command, CASES.cwd, rules)?.rule;
    if (got) wrong.push(`${JSON.stringify(command)}: ${got}, not allowed`);
  }
  assert.deepEqual(wrong, []);
});

test("the guard refuses a command too long to check", () => {
  // Characters are counted, not UTF-16 units: each of these is two.
  const command = "😀".repeat(MAX_COMMAND);
  assert.equal(check(command, CASES.cwd, templatePolicy()), undefined);
  assert.equal(check(command + "x", CASES.cwd)?.rule, "too-long");
});

test("a refusal names the extension, the rule and what to do instead", () => {
  const refusal = { rule: "r", reason: "it is bad", instead: "ask" };
  const message = "refused by demo (r): it is bad. Instead, ask.";
  assert.equal(refusalMessage("demo", refusal), message);
});

test("the guard judges bash command lines only", () => {
  const command = "x".repeat(MAX_COMMAND + 1); // refused whatever the rules
  assert.notEqual(checkToolCall("bash", { command }, CASES.cwd), undefined);
  assert.equal(checkToolCall("edit", { path: command }, CASES.cwd), undefined);
  assert.equal(checkToolCall("bash", { command: [command] }), undefined);
  assert.equal(checkToolCall("bash", {}), undefined);
  assert.equal(checkToolCall("bash", null), undefined);
});
