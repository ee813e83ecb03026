// Unit tests of src/guard.ts, with the commands of guard-cases.json: what the
// guard must refuse (and by which rule) and what it must allow (./smoke-test
// checks them too). Add yours to guard-cases.json when you add a rule.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { check, checkToolCall, MAX_COMMAND, refusalMessage } from "./guard.js";

const CASES_FILE = new URL("../zot/guard/guard-cases.json", import.meta.url);
const CASES = JSON.parse(readFileSync(CASES_FILE, "utf8")) as {
  cwd: string; // the project folder the cases assume
  refused: Record<string, string>; // command -> the id of the rule refusing it
  allowed: string[];
};

for (const [command, rule] of Object.entries(CASES.refused)) {
  test(`${rule} refuses ${JSON.stringify(command)}`, () => {
    assert.equal(check(command, CASES.cwd)?.rule, rule);
  });
}

for (const command of CASES.allowed) {
  test(`the guard allows ${JSON.stringify(command)}`, () => {
    assert.equal(check(command, CASES.cwd), undefined);
  });
}

test("the guard refuses a command too long to check", () => {
  // Characters are counted, not UTF-16 units: each of these is two.
  const command = "😀".repeat(MAX_COMMAND);
  assert.equal(check(command, CASES.cwd), undefined);
  assert.equal(check(command + "x", CASES.cwd)?.rule, "too-long");
});

test("a refusal names the extension, the rule and what to do instead", () => {
  const refusal = { rule: "r", reason: "it is bad", instead: "ask" };
  const message = "refused by demo (r): it is bad. Instead, ask.";
  assert.equal(refusalMessage("demo", refusal), message);
});

test("the guard judges bash command lines only", () => {
  const [command] = Object.keys(CASES.refused);
  assert.notEqual(checkToolCall("bash", { command }, CASES.cwd), undefined);
  assert.equal(checkToolCall("edit", { path: command }, CASES.cwd), undefined);
  assert.equal(checkToolCall("bash", { command: [command] }), undefined);
  assert.equal(checkToolCall("bash", {}), undefined);
  assert.equal(checkToolCall("bash", null), undefined);
});
