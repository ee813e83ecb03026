"""A user's first real task, in every flavour: a tool that reads a file of
the user's project and answers an error when it is missing, a command that
appends to a file there, and a tool that has zot read a file (call_tool).
Each passes ./smoke-test, with smoke.json cases that lay out the files first,
say what zot's read tool answers and check what was written; on zot 0.1.62
the tool that calls zot's tool answers at once that zot is too old."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import LANGUAGES, VARIANTS, build, register_in_go, run, smoke

# Per language: (text in the handler file to insert before, the code).
PYTHON = """
COUNT_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string", "description": "A file of the project"}},
    "required": ["path"],
}


@ext.tool("count_lines", "Count the lines of a file of the project.", COUNT_SCHEMA)
def count_lines(args: dict) -> object:
    path = os.path.join(ext.host.get("cwd") or ".", args["path"])
    try:
        with open(path, encoding="utf-8") as file:
            return str(sum(1 for _ in file))
    except OSError:
        return tool_result(f"no such file: {args['path']}", is_error=True)


@ext.tool("first_line", "The first line of a file, as zot reads it.", COUNT_SCHEMA)
def first_line(args: dict, cancelled: Event) -> object:
    result = ext.call_tool("read", {"path": args["path"]}, cancelled)
    if result["is_error"]:
        return result
    text = "".join(block.get("text", "") for block in result["content"])
    return text.split("\\n")[0]


@ext.command("todo", "Add TEXT to TODO.md")
def todo(args: str) -> dict:
    with open(os.path.join(ext.host.get("cwd") or ".", "TODO.md"), "a") as file:
        file.write(f"- {args.strip()}\\n")
    return display("added")

"""
GO = """
func countLines(args json.RawMessage) ext.ToolResult {
	var in struct{ Path string }
	if json.Unmarshal(args, &in) != nil || in.Path == "" {
		return ext.TextErrorResult(`invalid arguments: send {"path": "..."}`)
	}
	data, err := os.ReadFile(extension.Host().CWD + "/" + in.Path)
	if err != nil {
		return ext.TextErrorResult("no such file: " + in.Path)
	}
	return ext.TextResult(strconv.Itoa(strings.Count(string(data), "\\n")))
}

func firstLine(ctx context.Context, args json.RawMessage) ext.ToolResult {
	var in struct{ Path string }
	_ = json.Unmarshal(args, &in)
	result, err := extension.CallTool(ctx, "read", map[string]string{"path": in.Path})
	if err != nil {
		return ext.TextErrorResult(err.Error())
	}
	if result.IsError || len(result.Content) == 0 {
		return result
	}
	return ext.TextResult(strings.SplitN(result.Content[0].Text, "\\n", 2)[0])
}

func todo(args string) ext.Response {
	file, err := os.OpenFile(extension.Host().CWD+"/TODO.md", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return ext.Errorf("%v", err)
	}
	defer file.Close()
	fmt.Fprintf(file, "- %s\\n", strings.TrimSpace(args))
	return ext.Display("added")
}
"""
GO_REGISTER = """	extension.Tool("count_lines", "Count the lines of a file of the project.",
		json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}`),
		countLines)
	path := json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}`)
	extension.ToolWithOptions("first_line", "The first line of a file, as zot reads it.", path,
		ext.ToolOptions{}, schema.Checked(path, ext.TextErrorResult, firstLine))
	extension.Command("todo", "Add TEXT to TODO.md", todo)
"""
TYPESCRIPT = """
ext.tool(
  "count_lines",
  "Count the lines of a file of the project.",
  { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  (args) => {
    const { path } = args as { path: string };
    try {
      const text = readFileSync(join(ext.host.cwd ?? ".", path), "utf8");
      return String(text.split("\\n").length - 1);
    } catch {
      return errorResult(`no such file: ${path}`);
    }
  },
);

ext.tool(
  "first_line",
  "The first line of a file, as zot reads it.",
  { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  async (args, signal) => {
    const { path } = args as { path: string };
    const result = await ext.callTool("read", { path }, signal);
    if (result.is_error) return result;
    const text = result.content.map((block) => (block.type === "text" ? block.text : "")).join("");
    return text.split("\\n")[0];
  },
);

ext.command("todo", "Add TEXT to TODO.md", (args) => {
  appendFileSync(join(ext.host.cwd ?? ".", "TODO.md"), `- ${args.trim()}\\n`);
  return { action: "display", display: "added" };
});
"""
SHELL = r"""
count_lines() {
	if [[ ! -f $HOST_CWD/$1 ]]; then
		printf 'no such file: %s' "$1"
		return 1
	fi
	local lines
	lines=$(wc -l <"$HOST_CWD/$1")
	printf '%s' "$((lines))"
}

first_line() {
	local args
	args=$(jq -cn --arg path "$1" '{path: $path}')
	if ! ext_call_tool read "$args"; then
		jq -j '[.content[].text // empty] | join("")' <<<"$REPLY"
		return 1
	fi
	jq -j '[.content[].text // empty] | join("") | split("\n")[0]' <<<"$REPLY"
}

todo() {
	printf -- '- %s\n' "$1" >>"$HOST_CWD/TODO.md"
	printf 'display\nadded'
}

ext_tool count_lines 'Count the lines of a file of the project.' \
	'{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}' \
	'.path' count_lines
ext_tool first_line 'The first line of a file, as zot reads it.' \
	'{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}' \
	'.path' first_line
ext_command todo 'Add TEXT to TODO.md' todo
"""

CASES = {
    "tools": [
        {
            "name": "count_lines",
            "args": {"path": "notes/a.txt"},
            "files": {"notes/a.txt": "one\ntwo\n"},
            "expect": {"is_error": False, "text": "2"},
        },
        {
            "name": "count_lines",
            "args": {"path": "gone.txt"},
            "expect": {"is_error": True, "text": "no such file: gone.txt"},
        },
        {
            "name": "first_line",
            "args": {"path": "notes.md"},
            "expect": {"is_error": False, "text": "# Notes", "calls": ["read"]},
        },
        {
            "name": "first_line",
            "args": {"path": "gone.md"},
            "zot_tools": {"read": {"text": "no such file: gone.md", "is_error": True}},
            "expect": {"is_error": True, "text": "no such file: gone.md", "calls": ["read"]},
        },
    ],
    "commands": [
        {
            "name": "todo",
            "args": "buy milk",
            "files": {"TODO.md": "- first\n"},
            "expect": {"equals": "added", "files": {"TODO.md": "- first\n- buy milk\n"}},
        }
    ],
}


def add_the_task(project, language: str) -> None:
    handler = project / VARIANTS[language].handler
    source = handler.read_text()
    if language == "python":
        source = source.replace("from zot import ", "import os\n\nfrom zot import ")
        source = source.replace(" display, prompt", " display, prompt, tool_result")
        source = source.replace(
            '\nif __name__ == "__main__":', PYTHON + '\nif __name__ == "__main__":'
        )
    elif language.startswith("go"):
        source = source.replace("import (\n", 'import (\n\t"fmt"\n\t"strconv"\n', 1)
        source = register_in_go(source, GO_REGISTER)
        source += GO
    elif language.startswith("typescript"):
        imports = 'import { appendFileSync, readFileSync } from "node:fs";\n'
        imports += 'import { join } from "node:path";\n'
        imports += 'import { errorResult } from "../zot/runtime.js";\n'
        source = imports + source + TYPESCRIPT
    else:
        last = source.index("\n# Sourced (as test_main.sh does)")
        source = source[:last] + "\n" + SHELL + source[last:]
    handler.write_text(source)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_file_tool_and_a_command_that_writes_pass_the_smoke_test(projects, tmp_path, language):
    project = projects.fresh_copy(tmp_path, language, ["commands", "tools"])
    add_the_task(project, language)
    cases = json.loads((project / "smoke.json").read_text())
    for section, more in copy.deepcopy(CASES).items():
        cases[section] += more
    cases["zot_tools"] = {"read": "# Notes\nmore\n"}  # what zot's read tool answers
    (project / "smoke.json").write_text(json.dumps(cases, indent=2))
    build(project)
    report = smoke(project)
    checks = {c["check"]: c for c in report["checks"]}
    # the probe with made-up arguments finds no file: a warning, not a failure
    probe = checks['tool count_lines {"path": "smoke test"}']
    assert probe["status"] == "warn" and "smoke.json's cases" in probe["detail"], probe
    assert sum(c.startswith("smoke.json: tool count_lines") for c in checks) == 2
    assert sum(c.startswith("smoke.json: tool first_line") for c in checks) == 2
    # zot 0.1.62 runs no tools for extensions: the call answers at once, with
    # an error that says zot is too old (zot's SDK in its own words)
    report = smoke(project, "--old-host")
    checks = {c["check"]: c for c in report["checks"]}
    probe = checks['tool first_line {"path": "smoke test"}']
    assert probe["detail"].startswith("answered that zot is too old"), probe
    # a case whose expectation does not hold fails, naming the file
    cases["commands"][-1]["expect"]["files"]["TODO.md"] = "- something else\n"
    (project / "smoke.json").write_text(json.dumps(cases, indent=2))
    report = json.loads(run(["./smoke-test", "--json"], project).stdout)
    failed = [c for c in report["checks"] if c["status"] == "fail"]
    assert [c["check"].split(" →")[0] for c in failed] == ['smoke.json: command /todo "buy milk"']
    assert "TODO.md holds" in failed[0]["detail"]
