"""Go-specific checks: the layout, the guard, updates from earlier releases."""

from __future__ import annotations

import os
import random
import re
import runpy
import time

import pytest
from conftest import (
    CAPABILITIES,
    GUARD_ALLOWED,
    GUARD_CWD,
    GUARD_REFUSED,
    build,
    combo_id,
    render,
    run,
    slow_tool,
)
from host import ExtensionProcess
from robustness import line, pipeline
from test_update import edit

# Changes to the cases of guard-cases.json: the same commands quoted, behind
# wrappers, nested, joined to others, with odd blanks and non-ASCII letters.
# They are data sent to the guard, never run.
ODD = ["\v", "\f", "\r", "\x85", "\xa0", "\u2028", "\u3000", "\ufeff", "é", "ß", "😀"]
JOINERS = [" ", "  ", "\t", "\n", ";", " | ", " && ", " || ", " & ", "\\\n", *ODD]


def single(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def double(text: str) -> str:
    return '"' + re.sub(r'(["\\$`])', r"\\\1", text) + '"'


WRAPPERS = [
    lambda c: "sudo " + c,
    lambda c: "sudo -u root env A=1 " + c,
    lambda c: "nohup " + c,
    lambda c: "timeout 5 " + c,
    lambda c: "xargs " + c,
    lambda c: "command " + c,
    lambda c: "bash -c " + single(c),
    lambda c: "sh -c " + double(c),
    lambda c: "eval " + single(c),
    lambda c: "bash -c -- " + single(c),
    lambda c: "bash <<< " + single(c),
    lambda c: "echo " + single(c) + " | sh",
    lambda c: "echo $(" + c + ")",
    lambda c: "x=`" + c + "`",
    lambda c: "( " + c + " )",
    lambda c: "{ " + c + "; }",
    lambda c: "bash <<EOF\n" + c + "\nEOF",
    lambda c: "bash <<-'EOF'\n\t" + c + "\n\tEOF",
    lambda c: "find . -exec " + c + " \\;",
    lambda c: "if true; then " + c + "; fi",
    lambda c: "echo hi | " + c,
    lambda c: c + " | cat",
    lambda c: "cd /tmp && " + c,
    lambda c: "cd .. && " + c,
    lambda c: "cd ~; " + c,
    lambda c: "(cd /tmp); " + c,
    lambda c: "bash -c 'cd /'; " + c,
    lambda c: "cd /tmp | cat; " + c,
    lambda c: c + " # a note",
    lambda c: "# " + c,
]


def mutations(cases: list[str], count: int) -> list[str]:
    rng = random.Random(0)

    def change(command: str) -> str:
        kind = rng.randrange(6)
        if kind == 0:
            return rng.choice(WRAPPERS)(command)
        if kind == 1:  # a word quoted
            words = command.split(" ")
            i = rng.randrange(len(words))
            words[i] = rng.choice(["'", '"']) + words[i] + rng.choice(["'", '"', ""])
            return " ".join(words)
        if kind == 2:
            return command.replace(" ", rng.choice(JOINERS), rng.randint(1, 3))
        if kind == 3:
            i = rng.randrange(len(command) + 1)
            return command[:i] + rng.choice([*ODD, "\\", "$", "`", "(", ")", "#"]) + command[i:]
        if kind == 4:
            return command + rng.choice(JOINERS) + rng.choice(cases)
        i = rng.randrange(len(command) + 1)
        return command[:i] + command[i + 1 :]

    out = []
    for _ in range(count):
        command = rng.choice(cases)
        for _ in range(rng.randint(1, 3)):
            command = change(command)
        out.append(command)
    return out


def test_go_guard_gives_guard_pys_verdicts(projects):
    """go test passes, and a running Go extension answers every case, and
    hundreds of changed ones, with guard.py's rule and message."""
    project = projects.get("go", ["guard"])
    result = run(["go", "test", "-count=1", "./..."], project)
    assert result.returncode == 0, result.stdout + result.stderr
    check = runpy.run_path(str(projects.get("python", ["guard"]) / "zot" / "guard" / "guard.py"))[
        "check"
    ]
    cases = [*GUARD_REFUSED, *GUARD_ALLOWED]
    commands = cases + mutations(cases, 600)
    nested = "rm -rf /"
    for _ in range(10):  # too-deep from the ninth level
        nested = "bash -c " + single(nested)
        commands.append(nested)
    commands += ["$(" * 33 + "ls" + ")" * 33, "é" * 65536, "é" * 65537]
    with ExtensionProcess(project) as ext:
        hello, _ = ext.handshake(cwd=GUARD_CWD)
        lines, expect = [], {}
        for i, command in enumerate(commands):
            frame = {"type": "event_intercept", "id": f"g{i}", "event": "tool_call"}
            frame.update(tool_id="toolu_1", tool_name="bash", tool_args={"command": command})
            lines.append(line(frame))
            expect[f"g{i}"] = "event_intercept_response"
        answers = pipeline(ext, lines, expect)
    for i, command in enumerate(commands):
        answer = answers[f"g{i}"]
        refusal = check(command, GUARD_CWD)
        want = refusal.message(hello["name"]) if refusal else None
        assert (answer.get("reason") if answer["block"] else None) == want, command


SDK_MODULE = "github.com/patriceckhart/zot"

# What only the protocol does in Go: reading stdin, writing stdout, framing,
# the handshake and registration frames, the writer's lock.
GO_PROTOCOL = re.compile(
    r"os\.Std(in|out)|bufio\.|sync\.|Mutex|ReadSlice|json\.NewEncoder"
    r'|"type": *"(hello|hello_ack|ready|subscribe|register_command|register_tool|shutdown_ack)"'
)


def test_main_go_holds_no_protocol_and_the_runtime_is_the_templates_package(tmp_path):
    """zot/ext is the same in every project; zot/guard comes with guard."""
    one = render(tmp_path / "one", language="go", capabilities=["tools"])
    two = render(tmp_path / "two", language="go", capabilities=CAPABILITIES, name="other")
    runtime = "zot/ext/ext.go"
    assert (one / runtime).read_text() == (two / runtime).read_text()
    assert GO_PROTOCOL.search((one / runtime).read_text())
    assert not (one / "zot/guard").exists() and (two / "zot/guard/guard.go").is_file()
    three = render(tmp_path / "three", language="go", go_sdk=True, capabilities=["guard"])
    assert not (three / "zot/ext").exists()
    for name in ("guard.go", "guard-rules.json", "guard-cases.json", "guard_test.go"):
        assert (two / "zot/guard" / name).read_text() == (three / "zot/guard" / name).read_text()
    for project in (one, two):
        main = (project / "main.go").read_text()
        assert not GO_PROTOCOL.search(main), GO_PROTOCOL.search(main)
        assert "regexp" not in main and "dangerous" not in main


# What the root of a Go project holds, beside dotfiles, guard-policy.json
# (with the guard) and skills/: the template's code is under zot/.
GO_ROOT = {
    "main.go", "main_test.go", "go.mod", "extension.json", "smoke.json", "README.md",
    "build", "start", "smoke-test", "zot",
}  # fmt: skip


@pytest.mark.parametrize("go_sdk", [False, True], ids=["std", "sdk"])
@pytest.mark.parametrize("capabilities", [["commands", "tools"], CAPABILITIES], ids=combo_id)
def test_the_root_holds_the_users_files_and_zot_the_templates(tmp_path, go_sdk, capabilities):
    project = render(tmp_path / "p", language="go", go_sdk=go_sdk, capabilities=capabilities)
    root = {p.name for p in project.iterdir() if not p.name.startswith(".")}
    extra = {"guard-policy.json"} if "guard" in capabilities else set()
    extra |= {"skills"} if "skills" in capabilities else set()
    for capability, name in [("ask", "ask"), ("events", "audit"), ("prompt", "conventions")]:
        extra |= {f"{name}.go", f"{name}_test.go"} if capability in capabilities else set()
    extra |= {"picker.go", "picker_test.go"} if "panel" in capabilities else set()
    assert root == GO_ROOT | extra, root ^ (GO_ROOT | extra)
    assert (project / "zot/ext").exists() != go_sdk


@pytest.mark.parametrize("capabilities", [["commands", "tools"], CAPABILITIES], ids=combo_id)
def test_both_flavours_differ_only_in_the_import_of_ext(tmp_path, capabilities):
    """One main.go and one main_test.go for both flavours: switching go_sdk
    merges cleanly."""
    sdk = render(tmp_path / "sdk", language="go", go_sdk=True, capabilities=capabilities)
    std = render(tmp_path / "std", language="go", go_sdk=False, capabilities=capabilities)
    for name in sorted(p.name for p in sdk.glob("*.go")):
        sdk_source = (sdk / name).read_text()
        std_source = sdk_source.replace(
            f"{SDK_MODULE}/packages/agent/ext", "example.com/demo-ext/zot/ext"
        )
        assert std_source == (std / name).read_text(), name
    assert f'\n\t"{SDK_MODULE}/packages/agent/ext"\n' in (sdk / "main.go").read_text()
    assert {p.name for p in sdk.glob("*.go")} == {p.name for p in std.glob("*.go")}


@pytest.mark.parametrize("language", ["go", "go-sdk"])
def test_renaming_the_tool_function_keeps_the_build_and_the_tests(projects, tmp_path, language):
    """The tests call the tool by the name zot knows it by: renaming its
    function breaks nothing; taking out its registration fails go test, not
    ./build, with a message that says what to do."""
    project = projects.fresh_copy(tmp_path, language, ["commands", "tools"])
    main = project / "main.go"
    main.write_text(main.read_text().replace("runTool", "echoText"))
    for command in (["./build"], ["go", "test", "-count=1", "."]):
        result = run(command, project)
        assert result.returncode == 0, result.stdout + result.stderr
    edit(
        main,
        "\textension.ToolWithOptions(tool, toolDescription, toolSchema, ext.ToolOptions{},\n"
        "\t\tschema.Checked(toolSchema, ext.TextErrorResult, echoText))",
        "\t_ = schema.Checked(toolSchema, ext.TextErrorResult, echoText)",
    )
    result = run(["./build"], project)
    assert result.returncode == 0, result.stdout + result.stderr
    result = run(["go", "test", "-count=1", "."], project)
    assert result.returncode != 0
    assert (
        "no tool demo_ext is registered (registered: []): register it in main.go" in result.stdout
    )


@pytest.mark.parametrize("own_group", [True, False], ids=["own-group", "shared-group"])
@pytest.mark.parametrize("ending", ["shutdown", "end-of-input"])
def test_exits_within_100_ms_with_a_tool_running(projects, tmp_path, own_group, ending):
    """zot 0.1.62 starts extensions in its own process group: no reliance on it."""
    project = projects.fresh_copy(tmp_path, "go", CAPABILITIES)
    edit(project / "main.go", *slow_tool("go", 10))
    build(project)
    with ExtensionProcess(project, data_dir=tmp_path, own_group=own_group) as ext:
        ext.handshake()
        ext.send({"type": "tool_call", "id": "slow", "name": "demo_ext", "args": {"text": "x"}})
        time.sleep(0.2)  # the tool is running
        if ending == "shutdown":
            ext.send({"type": "shutdown"})
        started = time.monotonic()
        ext.close_stdin()
        assert ext.wait(2) == 0
        assert time.monotonic() - started < 0.1
        assert not ext.leftovers()


def test_a_replace_to_a_local_checkout_of_zot_builds_without_go_sum(projects, tmp_path):
    """go.mod's go line matches zot's own (1.25.0): no "updates to go.mod needed".

    A local module at zot's path stands in for a checkout (the suite cannot
    download zot); the project imports a package of it, requires it and
    replaces it by the folder, with no go.sum, as docs/troubleshooting.md says.
    """
    checkout = tmp_path / "zot"
    (checkout / "packages" / "probe").mkdir(parents=True)
    (checkout / "go.mod").write_text("module github.com/patriceckhart/zot\n\ngo 1.25.0\n")
    (checkout / "packages" / "probe" / "probe.go").write_text(
        'package probe\n\n// Name is read by the project.\nconst Name = "zot"\n'
    )
    project = projects.fresh_copy(tmp_path, "go", ["commands"])
    (project / "probe.go").write_text(
        'package main\n\nimport "github.com/patriceckhart/zot/packages/probe"\n\n'
        "var _ = probe.Name\n"
    )
    with (project / "go.mod").open("a") as go_mod:
        go_mod.write(
            "\nrequire github.com/patriceckhart/zot v0.0.0\n"
            f"\nreplace github.com/patriceckhart/zot => {checkout}\n"
        )
    (project / "demo-ext").unlink()
    result = run(["./build"], project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (project / "go.sum").exists()


def test_the_picker_the_ask_tool_and_the_prompt_as_zot_drives_them(projects, tmp_path):
    """The new frames end to end, on a newer zot: keys, submit, notes, cancel."""
    project = projects.get("go", CAPABILITIES)
    (tmp_path / "CONVENTIONS.md").write_text("Indent with tabs.\n")
    with ExtensionProcess(project) as ext:
        hello, _ = ext.handshake()
        assert hello["capabilities"] == [
            "commands", "tools", "events", "panels", "tool_cancel", "call_tool"
        ]  # fmt: skip
        opened = ext.command("demo-ext-pick", "")
        assert opened["action"] == "open_panel" and opened["open_panel"]["id"] == "pick-1"
        ext.send({"type": "panel_key", "panel_id": "pick-1", "key": "rune", "text": "j"})
        assert ext.read_frame()["lines"][1] == "› Review the uncommitted changes for bugs."
        ext.send({"type": "panel_resize", "panel_id": "pick-1", "width": 80})
        ext.send({"type": "panel_key", "panel_id": "pick-1", "key": "enter"})
        assert ext.read_frame() == {"type": "panel_close", "panel_id": "pick-1"}
        assert ext.read_frame() == {
            "type": "submit",
            "text": "Review the uncommitted changes for bugs.",
        }

        ext.send(
            {
                "type": "tool_call",
                "id": "a1",
                "name": "demo_ext_confirm",
                "args": {"action": "push"},
            }
        )
        assert ext.read_frame()["type"] == "notify"
        assert ext.read_frame()["panel"]["id"] == "ask-2"
        ext.send({"type": "panel_key", "panel_id": "ask-2", "key": "rune", "text": "y"})
        frames = ext.read_until("tool_result")
        assert [f["type"] for f in frames] == ["panel_close", "clear_notes", "tool_result"]
        assert frames[-1]["structured_content"] == {"approved": True, "action": "push"}
        assert frames[-1]["content"][0]["format"] == "markdown"

        ext.send(
            {
                "type": "tool_call",
                "id": "a2",
                "name": "demo_ext_confirm",
                "args": {"action": "push"},
            }
        )
        assert [ext.read_frame()["type"] for _ in range(2)] == ["notify", "open_panel"]
        ext.send({"type": "tool_cancel", "id": "a2"})
        assert [ext.read_frame()["type"] for _ in range(2)] == ["panel_close", "clear_notes"]
        with pytest.raises(TimeoutError):
            ext.read_frame(0.5)  # never a tool_result for a cancelled call

        answer = ext.request(
            {
                "type": "event_intercept",
                "event": "before_agent_start",
                "system_prompt": "You are zot.",
                "cwd": str(tmp_path),
            }
        )
        assert answer == {
            "type": "event_intercept_response",
            "id": answer["id"],
            "system_prompt": "You are zot.\n\n## Project conventions (CONVENTIONS.md)\n\nIndent with tabs.\n",
        }
        assert ext.shutdown() == 0


def test_on_zot_0_1_62_the_picker_shows_the_choice_and_the_ask_tool_declines(projects):
    project = projects.get("go", CAPABILITIES)
    with ExtensionProcess(project) as ext:
        ext.handshake(capabilities=None)  # zot 0.1.62 sends no capabilities
        ext.command("demo-ext-pick", "anything")
        ext.send({"type": "panel_key", "panel_id": "pick-1", "key": "enter"})
        assert ext.read_frame() == {"type": "panel_close", "panel_id": "pick-1"}
        note = ext.read_frame()
        assert note["type"] == "notify" and note["message"].startswith("Chosen: Explain how")
        result = ext.tool("demo_ext_confirm", {"action": "push"})
        assert result["is_error"] and "needs a newer zot" in result["content"][0]["text"]
        assert ext.shutdown() == 0


# A test file that registers handlers calling zot's tools and rewriting
# intercepts, then drives them through exttest's fake zot, newer (OLD_ZOT
# unset) or 0.1.62 (OLD_ZOT=1). FLAVOUR says which texts to expect: the
# runtime's (std) or the SDK's (sdk).
ZOT_TOOLS_TEST = """package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"EXT_PACKAGE"
	"example.com/demo-ext/zot/exttest"
)

// More handlers, registered before TestMain starts the extension.
func init() {
	call := func(ctx context.Context, args json.RawMessage) ext.ToolResult {
		var in struct {
			Tool   string         `json:"tool"`
			Args   map[string]any `json:"args"`
			Orphan bool           `json:"orphan"`
		}
		_ = json.Unmarshal(args, &in)
		if in.Orphan {
			ctx = context.Background()
		}
		result, err := extension.CallTool(ctx, in.Tool, in.Args)
		if err != nil {
			return ext.TextErrorResult("err: " + err.Error())
		}
		return result
	}
	extension.ToolWithOptions("demo_call", "Calls one of zot's tools.", json.RawMessage(`{"type":"object"}`),
		ext.ToolOptions{Namespace: "demo", Exposure: "direct", Replay: "safe"}, call)
	extension.Command("demo-explain", "Explain a file", func(args string) ext.Response {
		return ext.ToolPrompt("read", map[string]string{"path": args}, "Explain "+args)
	})
	extension.InterceptToolCallX(func(tool string, args json.RawMessage) ext.ToolCallDecision {
		if tool == "bash" {
			return ext.ToolCallDecision{ModifiedArgs: json.RawMessage(`{"command":"ls"}`)}
		}
		return ext.ToolCallDecision{Block: tool == "rm", Reason: "no rm"}
	})
	extension.InterceptTurnStart(func(step int) ext.TurnStartDecision {
		return ext.TurnStartDecision{Block: step > 2, Reason: "two turns"}
	})
	extension.InterceptAssistantMessage(func(text string) ext.AssistantMessageDecision {
		return ext.AssistantMessageDecision{ReplaceText: strings.ToUpper(text)}
	})
}

func hostOptions() []exttest.Option {
	if os.Getenv("OLD_ZOT") != "" {
		return []exttest.Option{exttest.OldHost()}
	}
	return nil
}

func TestZotToolsOnANewerZot(t *testing.T) {
	if os.Getenv("OLD_ZOT") != "" {
		t.Skip("zot 0.1.62")
	}
	zot.AnswerTool("read", exttest.Answer{Text: "package main"})
	call := zot.StartTool(t, "demo_call", `{"tool": "read", "args": {"path": "main.go"}}`)
	if result := call.Result(t); result.IsError || result.Text() != "package main" {
		t.Errorf("read answered %+v", result)
	}
	called := zot.CalledTools()
	prefix := map[string]string{"std": "call-", "sdk": "sdk-"}[os.Getenv("FLAVOUR")]
	if len(called) != 1 || called[0].Name != "read" || called[0].ParentID != call.ID() ||
		string(called[0].Args) != `{"path":"main.go"}` || called[0].Cancelled || !strings.HasPrefix(called[0].ID, prefix) {
		t.Errorf("calls %+v, want read (id %s...) with the tool call as parent", called, prefix)
	}
	note := map[string]string{"std": "[zot cut this result: over 256 KiB]", "sdk": "[tool result truncated by host]"}
	zot.AnswerTool("read", exttest.Answer{Content: []exttest.Content{{Type: "text", Text: "big"}}, Truncated: true})
	if result := zot.Tool(t, "demo_call", `{"tool": "read", "args": {}}`); result.Text() != "big"+note[os.Getenv("FLAVOUR")] {
		t.Errorf("a truncated result: %+v", result)
	}
	for args, want := range map[string]string{
		`{"tool": "grep", "args": {}}`:                 "this test's zot has no answer for its tool grep",
		`{"tool": "read", "args": {}, "orphan": true}`: "parent_id is required while an extension tool is active",
		`{"tool": "demo_call", "args": {}}`:            "tool call cycle detected",
	} {
		if result := zot.Tool(t, "demo_call", args); !result.IsError || result.Text() != want {
			t.Errorf("%s: %+v, want the error %q", args, result, want)
		}
	}
	reply := zot.Command(t, "demo-explain", "main.go")
	if reply.Action != "tool_prompt" || reply.ToolName != "read" || string(reply.ToolArgs) != `{"path":"main.go"}` || reply.Prompt != "Explain main.go" {
		t.Errorf("demo-explain answered %+v", reply)
	}
	if d := zot.ToolCallDecision(t, "bash", `{"command": "rm -rf /"}`); d.Block || string(d.ModifiedArgs) != `{"command":"ls"}` {
		t.Errorf("bash: %+v", d)
	}
	if d := zot.ToolCallDecision(t, "rm", `{}`); !d.Block || d.Reason != "no rm" || d.ModifiedArgs != nil {
		t.Errorf("rm: %+v", d)
	}
	if d := zot.TurnStart(t, 3); !d.Block || d.Reason != "two turns" {
		t.Errorf("turn 3: %+v", d)
	}
	if d := zot.TurnStart(t, 1); d.Block {
		t.Errorf("turn 1: %+v", d)
	}
	if d := zot.AssistantMessage(t, "done"); d.Block || d.ReplaceText != "DONE" {
		t.Errorf("assistant_message: %+v", d)
	}
}

func TestZotToolsOnZot0162(t *testing.T) {
	if os.Getenv("OLD_ZOT") == "" {
		t.Skip("a newer zot")
	}
	want := map[string]string{
		"std": "err: cannot call read: this zot is too old to run its tools for extensions (update zot)",
		"sdk": "err: host does not support call_tool",
	}[os.Getenv("FLAVOUR")]
	if result := zot.Tool(t, "demo_call", `{"tool": "read", "args": {"path": "main.go"}}`); !result.IsError || result.Text() != want {
		t.Errorf("read answered %+v, want the error %q", result, want)
	}
	if called := zot.CalledTools(); len(called) != 0 {
		t.Errorf("calls %+v, want none", called)
	}
	reply := zot.Command(t, "demo-explain", "main.go")
	if action := map[string]string{"std": "prompt", "sdk": "tool_prompt"}[os.Getenv("FLAVOUR")]; reply.Action != action || reply.Prompt != "Explain main.go" {
		t.Errorf("demo-explain answered %+v, want %s", reply, action)
	}
}
"""


@pytest.mark.parametrize("language", ["go", "go-sdk"])
def test_handlers_call_zots_tools_through_exttest_on_both_zots(projects, tmp_path, language):
    """CallTool, ToolPrompt and the intercepts that rewrite, in both flavours,
    through exttest: its tools' answers, the calls it records (parent ids),
    its refusals, the whole intercept answers, and zot 0.1.62 (OldHost)."""
    project = projects.fresh_copy(tmp_path, language, ["commands", "tools"])
    ext_package = (
        f"{SDK_MODULE}/packages/agent/ext"
        if language == "go-sdk"
        else "example.com/demo-ext/zot/ext"
    )
    (project / "zot_tools_test.go").write_text(ZOT_TOOLS_TEST.replace("EXT_PACKAGE", ext_package))
    edit(
        project / "main_test.go",
        "zot = exttest.Start(extension.Run)",
        "zot = exttest.Start(extension.Run, hostOptions()...)",
    )
    flavour = "sdk" if language == "go-sdk" else "std"
    for old in ("", "1"):
        env = {**os.environ, "FLAVOUR": flavour, "OLD_ZOT": old}
        result = run(
            ["go", "test", "-count=1", "-run", "TestZotTools", "-v", "."], project, env=env
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.count("--- PASS") == 1, result.stdout


# What the tool does with each text, in the test below: it starts a program
# through processes.Command in each way a call can leave one running, or one
# meant to outlive the call (plain exec.Command), or waits to be cancelled.
PROGRAMS_OF_A_CALL = """\
	switch in.Text {
	case "child": // never waited for
		_ = processes.Command(ctx, "sleep", "300").Start()
	case "setsid": // a grandchild in a session of its own
		_ = processes.Command(ctx, "sh", "-c", "setsid sleep 300 >/dev/null 2>&1 &").Run()
	case "slow": // in the background, takes 0.3 s to end on SIGTERM
		_ = processes.Command(ctx, "sh", "-c", "(trap 'sleep 0.3; exit' TERM; sleep 300 & wait) >/dev/null 2>&1 & sleep 0.1").Run()
	case "panic":
		_ = processes.Command(ctx, "sleep", "300").Start()
		panic("boom")
	case "cancel": // runs until zot cancels the call
		_ = processes.Command(ctx, "sh", "-c", "setsid sleep 300 >/dev/null 2>&1 & sleep 300").Run()
	case "background": // meant to outlive the call
		_ = exec.Command("sleep", "300").Start()
	}
"""


def marked(pid: int) -> list[tuple[int, str, str]]:
    """The processes that carry the mark of the extension `pid`: each one's
    id, mark and command line; zombies (which have exited) aside."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                if stat.read().rpartition(b")")[2].split()[0] == b"Z":
                    continue
            with open(f"/proc/{entry}/environ", "rb") as environ:
                variables = environ.read().split(b"\0")
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read().rstrip(b"\0").replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue  # gone, another user's, or not a process
        for variable in variables:
            if variable.startswith(f"ZOT_EXT_RUN={pid}.".encode()):
                found.append((int(entry), variable.decode().partition("=")[2], command))
    return found


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="needs /proc")
@pytest.mark.parametrize("language", ["go", "go-sdk"])
def test_a_calls_programs_are_gone_when_its_result_arrives(projects, tmp_path, language):
    """Through schema.Checked, what a tool started with processes.Command is
    stopped before its result goes out, in both flavours (the SDK cancels the
    call's context only after it has sent the result): looked for at once,
    no waiting. tool_cancel stops them and sends nothing; a plain exec.Command
    outlives the call and ends with the extension."""
    project = projects.fresh_copy(tmp_path, language, ["commands", "tools"])
    edit(project / "main.go", '\t"os"\n', '\t"os"\n\t"os/exec"\n')
    edit(project / "main.go", "\tif in.Uppercase {\n", PROGRAMS_OF_A_CALL + "\tif in.Uppercase {\n")
    build(project)
    with ExtensionProcess(project, data_dir=tmp_path) as ext:
        ext.handshake()
        pid = ext.proc.pid
        for text in ("child", "setsid", "slow", "panic"):
            result = ext.tool("demo_ext", {"text": text})
            assert marked(pid) == [], (text, result)
            assert result.get("is_error", False) == (text == "panic"), result
        ext.tool("demo_ext", {"text": "background"})
        background = marked(pid)
        assert [(mark.count("/"), command) for _, mark, command in background] == [
            (0, "sleep 300")  # the run's mark
        ], background
        ext.send({"type": "tool_call", "id": "c", "name": "demo_ext", "args": {"text": "cancel"}})
        deadline = time.monotonic() + 5
        while [c for _, _, c in marked(pid)].count("sleep 300") < 3:  # the call's have started
            assert time.monotonic() < deadline, marked(pid)
            time.sleep(0.01)
        ext.send({"type": "tool_cancel", "id": "c"})
        deadline = time.monotonic() + 2
        while marked(pid) != background:
            assert time.monotonic() < deadline, marked(pid)
            time.sleep(0.01)
        assert (
            ext.tool("demo_ext", {"text": "after"})["content"][0]["text"] == "after"
        )  # none for c
        assert ext.shutdown() == 0
        assert marked(pid) == []


def test_a_request_over_zots_line_limit_is_read_and_answered(projects):
    """zot/ext reads a line of any length, as the other runtimes do; an answer
    over 4 MiB becomes the call's error (the SDK ends its read loop instead:
    test_go_sdk.py)."""
    project = projects.get("go", ["commands", "tools"])
    text = "x" * (4 << 20)
    with ExtensionProcess(project) as ext:
        ext.handshake()
        ext.send({"type": "tool_call", "id": "big", "name": "demo_ext", "args": {"text": text}})
        reply = ext.read_reply(timeout=30)
        assert reply["id"] == "big" and reply["is_error"] is True, str(reply)[:200]
        assert "over zot's limit of 4 MiB for one line" in reply["content"][0]["text"]
        assert ext.tool("demo_ext", {"text": "after"})["content"][0]["text"] == "after"
        assert ext.shutdown() == 0
