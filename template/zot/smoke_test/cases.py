"""smoke.json's cases and their checks, and the guard's data files."""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING

from .project import FIXTURE_KEYS, fixture_problem
from .protocol import (
    OLD_EVENTS,
    SYSTEM_PROMPT,
    answer_problem,
    event_frame,
    q,
    short,
)
from .report import Report

if TYPE_CHECKING:  # the session imports this module
    from .session import Session

# --- smoke.json -----------------------------------------------------------------

# Per section: the key each case needs, and the expect keys with their types.
CASE_KEY = {"commands": "name", "tools": "name", "intercepts": "event"}
CASE_KEY["events"] = "event"
# What any case may leave behind: a note, a line of the extension's log
# (stderr), files in the project or in zot's data folder.
EFFECT_EXPECT = {"notify": str, "log": str, "files": dict, "data_files": dict}
PANEL_EXPECT = {"title": str, "line": str, "closed": bool}
PANEL_EXPECT["calls"] = list  # the names of zot's tools it ran, in order
EXPECT_TYPES = {
    "commands": {"action": str, "contains": str, "equals": str, "error": bool},
    "tools": {
        "is_error": bool,
        "text": str,
        "contains": str,
        "structured_content": dict,
    },
    "intercepts": {"block": bool, "reason_contains": str, "system_prompt": str},
    "events": {},
}
EXPECT_TYPES["commands"].update(PANEL_EXPECT, submit=str)
EXPECT_TYPES["tools"].update(PANEL_EXPECT, markdown=bool)
EXPECT_TYPES["intercepts"].update(system_prompt_contains=str, keeps_prompt=bool)
EXPECT_TYPES["intercepts"].update(modified_args=dict, replace_text=str)
for _expect in EXPECT_TYPES.values():
    _expect.update(EFFECT_EXPECT)
FIELD_TYPES = {"name": str, "event": str, "tool_name": str, "tool_args": dict}
FIELD_TYPES.update(text=str, step=int, fields=dict, expect=dict, keys=list)
FIELD_TYPES.update(cancel=bool, files=dict, system_prompt=str, zot_tools=dict)
FIELD_TYPES.update(project=str, git=bool, changes=dict)  # the case's project
FIELD_TYPES["after_ms"] = int  # when zot cancels a call at the latest
CANCEL_AFTER_MS = 300  # a case's after_ms when it has none
TYPE_NAMES = {str: "a string", bool: "a boolean", int: "an integer", dict: "an object"}
TYPE_NAMES[list] = "a list of strings"

# The template's guard files, in the extension's folder.
RULES_FILE = "zot/guard/guard-rules.json"
CASES_FILE = "zot/guard/guard-cases.json"


def load_smoke_json(path: str, ext_dir: str, report: Report) -> dict | None:
    """Read smoke.json, with defaults filled in. A case that is not right is a
    FAIL line of its own and left out; None when the file cannot be read."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        report.fail("smoke.json", f"invalid JSON at {where}: {exc.msg}")
        return None
    except (OSError, UnicodeDecodeError) as exc:
        report.fail("smoke.json", f"cannot read {path}: {exc}")
        return None
    if not isinstance(data, dict):
        report.fail("smoke.json", "must hold a JSON object")
        return None
    for key in sorted(set(data) - set(CASE_KEY) - {"about", "zot_tools"}):
        report.warn("smoke.json", f"unknown key {q(key)} ignored")
    cases: dict = {}
    answers = data.get("zot_tools", {})
    problem = answers_problem(answers)
    if problem:
        report.fail("smoke.json", f"zot_tools: {problem}")
        answers = {}
    for section, needed in CASE_KEY.items():
        entries = data.get(section, [])
        if not isinstance(entries, list):
            report.fail("smoke.json", f"{section} must be a list")
            entries = []
        cases[section] = []
        for i, entry in enumerate(entries):
            case = with_defaults(section, entry) if isinstance(entry, dict) else None
            problem = case_problem(section, case, ext_dir)
            if problem:  # this case fails; the others run
                key = entry.get(needed) if isinstance(entry, dict) else None
                name = f" {key}" if isinstance(key, str) else ""
                report.fail(f"smoke.json: {section}[{i}]{name}", problem)
            else:
                cases[section].append(case)
    return {**cases, "zot_tools": answers}


def answers_problem(answers: object) -> str:
    """What is wrong with a "zot_tools" object (tool name -> its answer), or ""."""
    if not isinstance(answers, dict):
        return "must map tool names to their answers"
    for name, answer in answers.items():
        problem = answer_problem(answer)
        if problem:
            return f"{q(name)}: {problem}"
    return ""


def zot_tools_of(path: str) -> dict:
    """smoke.json's "zot_tools" at `path`, or {} (read quietly: the phase
    smoke.json reports its problems)."""
    try:
        with open(path, encoding="utf-8") as fh:
            answers = json.load(fh).get("zot_tools", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return {} if answers_problem(answers) else answers


def load_guard_cases(
    path: str, report: Report, label: str = "guard-cases.json"
) -> dict:
    """Read guard-cases.json (a team's too, reported as `label`): commands to
    refuse (with the rule that must refuse each) and commands to allow,
    judged with "cwd" as the project folder."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        report.fail(label, f"invalid JSON at {where}: {exc.msg}")
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        report.fail(label, f"cannot read {path}: {exc}")
        return {}
    if not isinstance(data, dict):
        report.fail(label, "must hold a JSON object")
        return {}
    for key in sorted(set(data) - {"about", "cwd", "refused", "allowed"}):
        report.warn(label, f"unknown key {q(key)} ignored")
    cases: dict = {"cwd": data.get("cwd", "")}
    if not isinstance(cases["cwd"], str):
        report.fail(label, "cwd must be a string")
        return {}
    refused = data.get("refused", {})
    if isinstance(refused, list):  # commands only, no rule named
        refused = dict.fromkeys(refused, "")
    if isinstance(refused, dict) and all(isinstance(r, str) for r in refused.values()):
        cases["refused"] = list(refused.items())
    else:
        report.fail(label, "refused must map commands to rule ids")
    allowed = data.get("allowed", [])
    if isinstance(allowed, list) and all(isinstance(c, str) for c in allowed):
        cases["allowed"] = [(command, "") for command in allowed]
    else:
        report.fail(label, "allowed must be a list of strings")
    return cases


# The fields of a guard rule, with their types; see the guard's documentation.
RULE_FIELDS = {"id": str, "reason": str, "instead": str, "command": list}
RULE_FIELDS.update(
    {"subcommand": list, "option": list, "not option": list, "skip": int}
)
RULE_FIELDS.update({"arg": list, "exec": list, "targets": str, "default target": str})
RULE_FIELDS.update({"target": list, "redirect": list, "input": list, "piped to": list})
RULE_FIELDS.update({"runs output of": list, "fork bomb": bool, "min args": int})
RULE_FIELDS.update({"code from input": bool})
# The guard's limit on the size of a rules file.
MAX_RULES_BYTES = 1024 * 1024
MATCHING = set(RULE_FIELDS) - {"id", "reason", "instead", "targets", "default target"}


def read_rules(path: str) -> tuple[dict | None, str]:
    """A guard rules file as a JSON object, or None and why it is not one."""
    try:
        with open(path, encoding="utf-8") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_RULES_BYTES:  # the guard refuses it unread
                return None, f"is {size} bytes, over the guard's limit of 1 MiB"
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"cannot read it: {exc}"
    if not isinstance(data, dict):
        return None, "must hold a JSON object"
    return data, ""


def included_paths(policy: dict) -> tuple[list[str], list[str]]:
    """The files guard-policy.json includes, and what is wrong with its include."""
    paths = [] if policy.get("include") is None else policy["include"]
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        return [], ['"include" must be a list of file paths']
    outside = [p for p in paths if p.startswith("/") or ".." in p.split("/")]
    problems = [
        f"includes {q(p)}, outside the extension's folder (name a file in it)"
        for p in outside
    ]
    return [p for p in paths if p not in outside], problems


def guard_files(ext_dir: str) -> list[tuple[str, dict | None, str]]:
    """The guard's rules files in the order it merges them, each read once:
    guard-rules.json, the files guard-policy.json includes, guard-policy.json,
    as (name, data, why data is None) (see read_rules)."""
    own = read_rules(os.path.join(ext_dir, "guard-policy.json"))
    names = [RULES_FILE, *included_paths(own[0] or {})[0]]
    files = [(name, *read_rules(os.path.join(ext_dir, name))) for name in names]
    return [*files, ("guard-policy.json", *own)]


def rule_files(files: list[tuple[str, dict | None, str]]) -> dict[str, str]:
    """The file each rule the guard asks about comes from, by rule id."""
    rule_file: dict[str, str] = {}
    off: set = set()
    layers = [(name, data) for name, data, _ in files if data is not None]
    for name, data in reversed(layers):  # a file's off holds for those before
        off.update(i for i in as_list(data.get("off")) if isinstance(i, str))
        for rule in as_list(data.get("rules")):
            rule_id = rule.get("id") if isinstance(rule, dict) else None
            if isinstance(rule_id, str) and rule_id not in off:
                rule_file[rule_id] = name  # the first file's rule is asked first
    return rule_file


def submodule_of(folder: str, name: str) -> str:
    """The path of the git submodule of the project in `folder` that file
    `name` lies in, as .gitmodules names it; "" when it lies in none."""
    try:
        with open(os.path.join(folder, ".gitmodules"), encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return ""
    for path in re.findall(r"^\s*path\s*=\s*(.+?)\s*$", text, re.MULTILINE):
        if name.startswith(path.rstrip("/") + "/"):
            return path
    return ""


def team_policy_url(folder: str) -> str:
    """The git URL of the team policy the project was made with (its
    .copier-answers.yml's team_policy, the submodule team-policy/); "" when
    it names none."""
    try:
        with open(os.path.join(folder, ".copier-answers.yml"), encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return ""
    found = re.search(r"^team_policy:[ \t]*(\S.*?)[ \t]*$", text, re.MULTILINE)
    return found[1].strip("'\"") if found else ""


def as_list(value: object) -> list:
    return value if isinstance(value, list) else []


def rules_problems(
    data: dict | None,
    problem: str = "",
    known_lists: set | None = None,
    earlier: dict | None = None,
) -> list[str]:
    """What is wrong with a guard rules file (guard-rules.json, guard-policy.json,
    a file it includes), as read_rules read it; `known_lists` are the list names
    of the other files, `earlier` the ids of the rules of the files before, with
    their file."""
    if data is None:
        return [problem]
    problems = []
    lists = data.get("lists", {})
    if not isinstance(lists, dict) or not all(
        isinstance(v, list) and all(isinstance(n, str) for n in v)
        for v in lists.values()
    ):
        return ["lists must be an object of lists of names"]
    lists = {**dict.fromkeys(known_lists or ()), **lists}
    earlier = earlier or {}
    problems += [
        f"list {q(key)} has an empty pattern"
        for key, value in lists.items()
        if isinstance(value, list) and "" in value
    ]
    if not isinstance(data.get("off", []), list):
        problems.append("off must be a list of rule ids")
    values = data.get("option values", {})
    if not isinstance(values, dict) or not all(
        isinstance(v, list) and all(isinstance(o, str) for o in v)
        for v in values.values()
    ):
        problems.append('"option values" must map commands to lists of options')
    rules = data.get("rules", [])
    if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
        return [*problems, "rules must be a list of objects"]
    seen = set()
    for number, rule in enumerate(rules, 1):
        rule_id = rule.get("id")
        name = f"rule {q(rule_id) if isinstance(rule_id, str) else number}"
        for field in ("id", "reason", "instead"):
            if not isinstance(rule.get(field), str) or not rule.get(field):
                problems.append(f"{name}: needs {q(field)}, a text")
        if rule_id in seen:
            problems.append(f"{name}: a second rule with this id")
        elif rule_id in earlier:
            problems.append(
                f"{name}: a second rule with this id (also in {earlier[rule_id]})"
            )
        seen.add(rule_id)
        for field, value in rule.items():
            kind = RULE_FIELDS.get(field)
            if kind is None:
                problems.append(
                    f"{name}: unknown field {q(field)} (a typo would refuse too much)"
                )
            elif (
                not isinstance(value, kind)
                or kind is list
                and not all(isinstance(item, str) for item in value)
            ):
                problems.append(
                    f"{name}: {q(field)} must be {TYPE_NAMES.get(kind, 'a list of texts')}"
                )
            elif kind is list and "" in value:
                problems.append(f"{name}: {q(field)} has an empty pattern")
            elif kind is list:
                unknown = [i for i in value if i.startswith("@") and i[1:] not in lists]
                problems += [
                    f"{name}: {q(field)} names no list {q(i)}" for i in unknown
                ]
        if not MATCHING & set(rule):
            problems.append(
                f"{name}: has nothing to match, so it would refuse every command"
            )
    return problems


# What a policy adds to guard-rules.json besides rules and lists: objects
# merged name by name, lists extended; the form of a new name where one may
# be given (a new interpreter's code options, a new wrapper).
POLICY_ADDS = ("classes", "code", "find", "one dash or two", "programs", "shells")
POLICY_ADDS += ("wrappers",)
NEW_ENTRIES: dict = {"code": []}
NEW_ENTRIES["wrappers"] = {"options with value": [], "bare options": [], "args": 0}
NEW_ENTRIES["wrappers"].update({"assignments": False, "adds args": False})
FORM_NAMES = {list: "a list of names", bool: "true or false", str: "a text"}
FORM_NAMES.update({dict: "an object", int: "a whole number from 0 to 100"})


def policy_form_problems(data: dict, template: dict) -> list[str]:
    """What a policy adds to guard-rules.json (`template`) that the guard
    cannot read: a name it does not know, or a value of another kind."""
    problems: list[str] = []

    def walk(form: object, value: object, where: str, entry: object = None) -> None:
        kind = next(
            k for k in (bool, int, float, list, str, dict) if isinstance(form, k)
        )
        fits = {
            list: lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v),
            bool: lambda v: isinstance(v, bool),
            str: lambda v: isinstance(v, str),
            dict: lambda v: isinstance(v, dict),
        }.get(kind, is_count)
        if not fits(value):
            name = FORM_NAMES.get(kind, FORM_NAMES[int])
            problems.append(f"{q(where)} must be {name}")
            return
        if not isinstance(form, dict) or not isinstance(value, dict):
            return
        for key in sorted(value):
            known = form.get(key)
            if isinstance(entry, dict) and isinstance(known, dict):
                known = {**entry, **known}
            elif known is None:
                known = entry
            if known is None:
                problems.append(f"{q(where + '/' + key)}: the guard does not read it")
            else:
                walk(known, value[key], f"{where}/{key}")

    for key in POLICY_ADDS:
        if key in data:
            form = template.get(key, [] if key == "one dash or two" else {})
            if key == "programs":  # only its languages' lists: "runs", ...
                form = {"languages": form.get("languages", {})}
            walk(form, data[key], key, NEW_ENTRIES.get(key))
    return problems


def is_count(value: object) -> bool:
    """A whole number from 0 to 100 (1.0 is one): how many words to pass."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return 0 <= value <= 100 and value == int(value)


def refusal_parts(reason: str) -> tuple[str, str]:
    """The rule id and the rest of a refusal: refused by NAME (RULE): WHY."""
    match = re.match(r"refused by [^(]*\(([^()]+)\): (.*)", reason, re.DOTALL)
    return (match[1], match[2]) if match else ("", reason)


def with_defaults(section: str, entry: dict) -> dict:
    """A smoke.json case with defaults for what it leaves out."""
    case = {"expect": {}, "files": {}, **entry}
    if section == "intercepts":
        case = {"event": "tool_call", "tool_name": "bash", "tool_args": {}, **case}
    elif section == "events":
        case.setdefault("fields", {})
    else:
        case.setdefault("args", "" if section == "commands" else {})
        case = {"keys": [], "cancel": False, **case}
    return case


def case_problem(section: str, case: dict | None, ext_dir: str) -> str:
    """What is wrong with a smoke.json case, or ""."""
    if case is None:
        return "must be an object"
    if CASE_KEY[section] not in case:
        return f"needs {CASE_KEY[section]}"
    if section == "commands" and not isinstance(case["args"], str):
        return "args must be a string"
    for key, value in case.items():
        kind = FIELD_TYPES.get(key, object)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return f"{key} must be {TYPE_NAMES[kind]}"
    if "after_ms" in case and (not case.get("cancel") or case["keys"]):
        return 'after_ms goes with "cancel": true and no keys (the keys come first)'
    if case.get("after_ms", 0) < 0:
        return "after_ms must be 0 or more"
    if not all(isinstance(key, str) and key for key in case.get("keys", [])):
        return (
            "keys must be a list of key names (up, down, enter, esc, ...) or characters"
        )
    problem = fixture_problem(case, ext_dir)
    if problem:
        return problem
    if "zot_tools" in case and answers_problem(case["zot_tools"]):
        return f"zot_tools: {answers_problem(case['zot_tools'])}"
    known = EXPECT_TYPES[section]
    for key, value in case["expect"].items():
        kind = known.get(key)
        if kind is None:
            return f"unknown expect key {q(key)}; {section} know {', '.join(known)}"
        if not isinstance(value, kind) or (
            kind is list and not all(isinstance(item, str) for item in value)
        ):
            return f"expect.{key} must be {TYPE_NAMES[kind]}"
    for key in ("files", "data_files"):
        wanted = case["expect"].get(key, {})
        if not all(text is None or isinstance(text, str) for text in wanted.values()):
            return f"expect.{key} must map file names to a text or null (not there)"
        for name in wanted:
            if not name or os.path.isabs(name) or ".." in name.split("/"):
                return f"expect.{key}: {q(name)}: name a file by its path in the folder"
    return ""


def expect_label(case: dict) -> str:
    parts = [
        f"{key} {json.dumps(value, ensure_ascii=False)}"
        for key, value in case["expect"].items()
    ]
    return " → " + (
        ", ".join(parts) or ("no result" if case.get("cancel") else "answered")
    )


def command_expectations(answer: dict, expect: dict) -> list[str]:
    action, error = answer.get("action") or "", answer.get("error") or ""
    key = "prompt" if action == "tool_prompt" else action
    text = answer.get(key, "") if key in ("prompt", "insert", "display") else ""
    problems = []
    if "error" in expect and bool(error) != expect["error"]:
        problems.append(f"got error {q(error)}" if error else "got no error")
    if "action" in expect and action != expect["action"]:
        problems.append(f"got action {q(action)}")
    if expect.get("contains", "") not in text or expect.get("equals", text) != text:
        problems.append(f"got text {q(text)}")
    return problems


def tool_expectations(
    answer: dict, is_error: bool, text: str, expect: dict
) -> list[str]:
    problems = []
    if expect.get("is_error", is_error) != is_error:
        problems.append(f"got is_error {str(is_error).lower()}")
    if expect.get("contains", "") not in text or expect.get("text", text) != text:
        problems.append(f"got text {q(text)}")
    structured = answer.get("structured_content")
    if "structured_content" in expect and structured != expect["structured_content"]:
        problems.append(f"got structured_content {q(structured)}")
    blocks = [b for b in answer.get("content") or [] if isinstance(b, dict)]
    markdown = any(b.get("format") == "markdown" for b in blocks)
    if expect.get("markdown", markdown) != markdown:
        problems.append("the text is " + ("markdown" if markdown else "not markdown"))
    return problems


def prompt_expectations(prompt: str | None, expect: dict) -> list[str]:
    shown = "no system_prompt" if prompt is None else f"system_prompt {q(prompt, 80)}"
    wrong = [
        "keeps_prompt" in expect and (prompt is None) != expect["keeps_prompt"],
        "system_prompt" in expect and prompt != expect["system_prompt"],
        "system_prompt_contains" in expect
        and expect["system_prompt_contains"] not in (prompt or ""),
    ]
    return [f"got {shown}"] if any(wrong) else []


def intercept_expectations(
    answer: dict, block: bool, reason: str, expect: dict
) -> list[str]:
    problems = []
    if expect.get("block", block) != block:
        problems.append(f"got block {str(block).lower()}, reason {q(reason)}")
    elif expect.get("reason_contains", "") not in reason:
        problems.append(f"got reason {q(reason)}")
    for key in ("modified_args", "replace_text"):
        if key in expect and answer.get(key) != expect[key]:
            got = f"{key} {q(answer[key])}" if key in answer else f"no {key}"
            problems.append(f"got {got}")
    return problems


def run_cases(s: Session, cases: dict) -> None:
    """Take session `s` through smoke.json's cases, each with its own line."""
    for case in cases["commands"]:
        name, args = case["name"].lstrip("/"), case["args"]
        keys = f" keys {' '.join(case['keys'])}" if case.get("keys") else ""
        label = f"smoke.json: command /{name} {q(args)}{keys}{expect_label(case)}"
        known = [known for known in s.commands if known.lower() == name.lower()]
        expect = with_answers(s, cases, case)
        if not known:
            s.report.fail(label, "not registered")
        elif s.prepare(label, case):
            if expect is None:
                label = f"smoke.json: command /{name} {q(args)}{keys}{OLD_HOST}"
            panel = s.check_command(label, known[0], args, expect, case["keys"])
            if panel in s.panels:
                s.close_panel(panel)
    for case in cases["tools"]:
        name, args = case["name"], case["args"]
        how = f" keys {' '.join(case['keys'])}" if case["keys"] else ""
        how += ", cancelled by zot" if case["cancel"] else ""
        how += f" (after_ms {case['after_ms']})" if "after_ms" in case else ""
        label = f"smoke.json: tool {name} {short(args)}{how}{expect_label(case)}"
        expect = with_answers(s, cases, case)
        if name not in s.tools:
            s.report.fail(label, "not registered")
        elif s.opts.old_host and (case["keys"] or case["cancel"]):
            s.report.skip(
                label, "zot 0.1.62 opens no panels from tools, cancels nothing"
            )
        elif case["cancel"] and "tool_cancel" not in s.hello_caps:
            s.report.fail(
                label,
                "hello does not list tool_cancel, so zot never cancels a call:"
                " list it (and stop the call on tool_cancel), or drop the case",
            )
        elif s.prepare(label, case):
            if expect is None:
                label = f"smoke.json: tool {name} {short(args)}{how}{OLD_HOST}"
            s.check_tool(
                label,
                name,
                args,
                expect=expect,
                keys=case["keys"],
                cancel=case["cancel"],
                after_ms=None
                if case["keys"]
                else case.get("after_ms", CANCEL_AFTER_MS),
            )
    s.zot_tools = cases["zot_tools"]
    for case in cases["intercepts"]:
        event, args = case["event"], short(case["tool_args"])
        subject = case["tool_name"] if event == "tool_call" else event
        if event == "before_agent_start":
            args = "in " + project_label(case)
        elif event == "turn_start":
            args = f"step {case.get('step', 1)}"
        elif event == "assistant_message":
            args = q(case.get("text", ""))
        label = f"smoke.json: intercept {subject} {args}{expect_label(case)}"
        if event not in s.intercepts:
            s.report.fail(label, f"the extension does not intercept {event}")
        elif not s.prepare(label, case):
            continue
        elif event == "before_agent_start":
            prompt = case.get("system_prompt", SYSTEM_PROMPT)
            s.check_prompt(label, s.opts.project_dir, prompt, expect=case["expect"])
        else:
            drop = {"expect", "zot_tools", *FIXTURE_KEYS}
            if event == "tool_call":
                fields = {"tool_id": "toolu_smoke", "step": 1, **case}
            else:  # zot sends a tool's fields with tool_call only
                fields = {"step": 1, **case}
                drop |= {"tool_name", "tool_args"}
            fields = {key: value for key, value in fields.items() if key not in drop}
            s.check_intercept(label, fields, expect=case["expect"])
    labels = []
    for case in cases["events"]:
        event, fields = case["event"], case["fields"]
        expected = expect_label(case) if case["expect"] else ""
        label = f"smoke.json: event {event} {short(fields)}{expected}"
        if s.opts.old_host and event not in OLD_EVENTS:
            s.report.skip(label, "zot 0.1.62 never sends it")
            continue
        if event not in s.events:
            s.report.warn(label, "not subscribed, so zot would not send it")
        if not s.prepare(label, case):
            continue
        if case["expect"]:
            s.check_event(label, event, fields, case["expect"])
            continue
        s.send({**event_frame(event, s.opts.project_dir, s.opts.old_host), **fields})
        labels.append(label)
    if labels:  # all delivered; one question shows the extension survived
        alive, detail = s.still_answering()
        detail = f"delivered; {detail}"
        for label in labels:
            s.report.verdict(label, [] if alive else [detail], detail)


def project_label(case: dict) -> str:
    """The project a case runs in, in a few words."""
    parts = [case["project"]] if case.get("project") else []
    if case.get("files"):
        parts.append(", ".join(case["files"]))
    if case.get("git"):
        parts.append(
            "a git repository" + (" with changes" if case.get("changes") else "")
        )
    return " + ".join(parts) or "an empty project"


# What a case that runs zot's tools checks on zot 0.1.62, which runs none for
# extensions: that it is answered (the extension sent no call_tool).
OLD_HOST = " on zot 0.1.62, which runs no tools for extensions → answered"


def with_answers(s: Session, cases: dict, case: dict) -> dict | None:
    """Set up the answers of zot's tools for a command or tool case (smoke.json's
    "zot_tools", the case's own over them); the case's expect, or None on zot
    0.1.62 for a case that runs zot's tools."""
    s.zot_tools = {**cases["zot_tools"], **case.get("zot_tools", {})}
    s.tool_calls = []
    uses_tools = "zot_tools" in case or "calls" in case["expect"]
    return None if s.opts.old_host and uses_tools else case["expect"]


def tools_with_cases(path: str) -> set[str]:
    """The tools smoke.json at `path` has cases for (read quietly: the phase
    smoke.json reports its problems)."""
    try:
        with open(path, encoding="utf-8") as fh:
            cases = json.load(fh).get("tools", [])
        return {case.get("name") for case in cases if isinstance(case, dict)}
    except (OSError, ValueError, AttributeError, TypeError):
        return set()


def file_expectations(
    folder: str, wanted: dict, where: str, appended: dict | None = None
) -> list[str]:
    """expect.files (or data_files): each file of `folder` holds its text, or
    (null) is not there; `where` names the folder in what goes wrong. With
    `appended` (the sizes files had before), a file that grew is judged by
    what was added to it: a log's new lines."""
    problems = []
    for name, want in wanted.items():
        try:
            with open(os.path.join(folder, name), "rb") as fh:
                data = fh.read()
        except OSError:
            data = None
        before = (appended or {}).get(name, 0)
        if data is not None and 0 < before <= len(data):
            data = data[before:]
        text = None if data is None else data.decode("utf-8", "replace")
        if want is None and text is not None:
            problems.append(f"{name} is in {where}: {q(text)}")
        elif want is not None and text is None:
            problems.append(f"{name} is not in {where}")
        elif want is not None and want not in text:
            problems.append(
                f"{name}: {q(text)} was added"
                if before and text
                else f"nothing was added to {name}"
                if before
                else f"{name} holds {q(text)}"
            )
    return problems
