// Unit tests of the handlers in main.go: go test ./... (which also runs the
// tests of the template's code in zot/). ./smoke-test checks the whole
// extension the way zot runs it.
package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"example.com/demo-ext/zot/exttest"
)

// zot plays zot for the tests: it runs the extension as zot does, and the
// tests call its commands and tools by the names zot knows them by.
var zot *exttest.Zot

func TestMain(m *testing.M) {
	zot = exttest.Start(extension.Run)
	code := m.Run()
	zot.Stop()
	os.Exit(code)
}

func TestNamesAreWhatZotAccepts(t *testing.T) {
	names := map[string]string{"extension": extName, "command": command, "tool": tool, "panel command": panelCommand, "ask tool": askTool}
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	for what, name := range names {
		if !valid.MatchString(name) {
			t.Errorf("%s name %q: use letters, digits, '_' and '-' only", what, name)
		}
	}
}

func TestCommandPromptsWithItsArguments(t *testing.T) {
	reply := zot.Command(t, command, "  why is the sky blue?  ")
	if reply.Action != "prompt" || !strings.Contains(reply.Prompt, "why is the sky blue?") {
		t.Errorf("/%s TEXT answered %+v, want a prompt that contains the text", command, reply)
	}
}

func TestCommandShowsUsageWithoutArguments(t *testing.T) {
	for _, args := range []string{"", "   ", "\t\n"} {
		reply := zot.Command(t, command, args)
		if reply.Action != "display" || !strings.HasPrefix(reply.Display, "Usage: /"+command) {
			t.Errorf("/%s %q answered %+v, want a display that starts with the usage", command, args, reply)
		}
	}
}

func TestToolSchemaIsAJSONObjectSchema(t *testing.T) {
	var schema struct {
		Type     string   `json:"type"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(toolSchema, &schema); err != nil || schema.Type != "object" {
		t.Fatalf("toolSchema must be a JSON Schema object: %v", err)
	}
}

func TestToolEchoesValidArguments(t *testing.T) {
	cases := []struct{ args, want string }{
		{`{"text": "hello"}`, "hello"},
		{`{"text": "abc", "uppercase": true}`, "ABC"},
		{`{"text": "abc", "uppercase": false, "extra": 1}`, "abc"},
		{`{"text": "héllo 😀 \"q\" \\ $(x)"}`, `héllo 😀 "q" \ $(x)`},
	}
	for _, c := range cases {
		result := zot.Tool(t, tool, c.args)
		if result.IsError || len(result.Content) != 1 || result.Text() != c.want {
			t.Errorf("%s %s answered %+v, want the text %q", tool, c.args, result, c.want)
		}
	}
}

func TestToolRefusesBadArgumentsWithAHelpfulError(t *testing.T) {
	cases := []struct{ args, hint string }{
		{`{}`, `"text" is required`},
		{`{"text": " "}`, `"text" must not be blank`},
		{`{"text": 42}`, `"text" must be a string`},
		{`{"text": null}`, `"text" must be a string`},
		{`{"text": "x", "uppercase": "yes"}`, `"uppercase" must be true or false`},
		{`{"text": "x", "uppercase": null}`, `"uppercase" must be true or false`},
		{`[1, 2]`, "the arguments must be an object"},
		{`null`, "the arguments must be an object"},
	}
	for _, c := range cases {
		result := zot.Tool(t, tool, c.args)
		if !result.IsError || !strings.HasPrefix(result.Text(), "invalid arguments: ") || !strings.Contains(result.Text(), c.hint) {
			t.Errorf("%s %s answered %+v, want the error \"invalid arguments: ...%s...\"", tool, c.args, result, c.hint)
		}
	}
}

func TestEventsAreAppendedToTheAuditLog(t *testing.T) {
	path := filepath.Join(zot.DataDir, extName+"-events.jsonl")
	_ = os.Remove(path) // a log of an earlier run
	sent := []map[string]any{
		{"step": 1.0},
		{"tool_name": "bash", "tool_args": map[string]any{"command": "ls"}},
	}
	for i, fields := range sent {
		fields["event"] = events[i%len(events)]
		zot.Event(events[i%len(events)], fields)
	}
	var lines []string
	for deadline := time.Now().Add(5 * time.Second); len(lines) < len(sent); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d lines, want %d\n%s", path, len(lines), len(sent), zot.Log())
		}
		data, _ := os.ReadFile(path)
		lines = strings.SplitAfter(string(data), "\n")
		lines = lines[:len(lines)-1] // whole lines only
	}
	if len(lines) != len(sent) {
		t.Fatalf("%s has %d lines, want %d", path, len(lines), len(sent))
	}
	for i, line := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d is not JSON: %v", i+1, err)
		}
		receivedAt, _ := got["received_at"].(string)
		if _, err := time.Parse(time.RFC3339, receivedAt); err != nil {
			t.Errorf("line %d: received_at %q is not RFC 3339", i+1, receivedAt)
		}
		delete(got, "received_at")
		if !reflect.DeepEqual(got, sent[i]) {
			t.Errorf("line %d: %v, want the event's fields %v", i+1, got, sent[i])
		}
	}
}

func TestGuardRefusesDangerousCommandsAndTellsTheUser(t *testing.T) {
	block, reason := zot.Intercept(t, "bash", `{"command": "rm -rf /"}`)
	if !block || !strings.HasPrefix(reason, "refused by "+extName+" (") {
		t.Fatalf("rm -rf /: block %v, %q; want a refusal that names %s", block, reason, extName)
	}
	if note := zot.Next(t, "notify"); note.Text("level") != "warn" || note.Text("message") != reason {
		t.Errorf("the user was shown %v, want the reason as a warning", note)
	}
}

func TestGuardAllowsEverydayCommands(t *testing.T) {
	for _, call := range []struct{ tool, args string }{
		{"bash", `{"command": "ls -la"}`},
		{"bash", `{"command": "rm -rf node_modules"}`},
		{"read", `{"path": "/etc/hosts"}`},
	} {
		if block, reason := zot.Intercept(t, call.tool, call.args); block {
			t.Errorf("%s %s: refused (%s), want it allowed", call.tool, call.args, reason)
		}
	}
}

func TestMenuMarksTheSelectedItem(t *testing.T) {
	want := []string{"  one", "› two", "  three"}
	if got := menu([]string{"one", "two", "three"}, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("menu() = %q, want %q", got, want)
	}
	first, second := nextPanelID("pick"), nextPanelID("ask")
	if !regexp.MustCompile(`^pick-[1-9][0-9]*$`).MatchString(first) || !regexp.MustCompile(`^ask-[1-9][0-9]*$`).MatchString(second) {
		t.Errorf("panel ids %q and %q, want pick-N and ask-M", first, second)
	}
}

// pickerOpened runs the picker's command and returns the panel it opens.
func pickerOpened(t *testing.T) *exttest.Panel {
	t.Helper()
	reply := zot.Command(t, panelCommand, "")
	want := []string{"› " + prompts[0], "  " + prompts[1], "  " + prompts[2], "  " + prompts[3]}
	if panel := reply.OpenPanel; reply.Action != "open_panel" || panel == nil || panel.Title != pickTitle ||
		panel.Footer != pickFooter || !reflect.DeepEqual(panel.Lines, want) {
		t.Fatalf("/%s answered %+v, want a panel with the lines %q", panelCommand, reply, want)
	}
	return reply.OpenPanel
}

func TestPickerKeysMoveTheSelectionAndEnterSendsIt(t *testing.T) {
	id := pickerOpened(t).ID
	steps := []struct {
		key      string
		selected int
	}{
		{"down", 1}, {"j", 2}, {"end", 3}, {"down", 3}, {"up", 2},
		{"k", 1}, {"home", 0}, {"up", 0}, {"pagedown", 3}, {"pageup", 0}, {"down", 1},
	}
	for _, step := range steps {
		zot.Key(id, step.key)
		render := zot.Next(t, "panel_render")
		if lines := menu(prompts, step.selected); render.Text("panel_id") != id || !reflect.DeepEqual(render["lines"], asAny(lines)) {
			t.Fatalf("after %s: %v, want the lines %q", step.key, render, lines)
		}
	}
	for _, other := range []string{"left", "tab", "x", "backspace"} {
		zot.Key(id, other)
	}
	zot.Quiet(t, "panel_render", "panel_close")
	zot.Key(id, "enter")
	if closed := zot.Next(t, "panel_close"); closed.Text("panel_id") != id {
		t.Errorf("enter: %v, want the panel closed", closed)
	}
	// The prompt goes to the model; where zot (or zot's Go SDK) cannot send
	// it, a note shows it to paste.
	if sent := zot.Next(t, "submit", "notify"); sent.Text("text") != prompts[1] && !strings.Contains(sent.Text("message"), prompts[1]) {
		t.Errorf("enter: %v, want %q sent", sent, prompts[1])
	}
}

func TestPickerClosesOnEscOrQ(t *testing.T) {
	for _, key := range []string{"esc", "q"} {
		id := pickerOpened(t).ID
		zot.Key(id, key)
		if closed := zot.Next(t, "panel_close"); closed.Text("panel_id") != id {
			t.Errorf("%s: %v, want the panel closed", key, closed)
		}
	}
}

func asAny(lines []string) []any {
	out := make([]any, len(lines))
	for i, line := range lines {
		out[i] = line
	}
	return out
}

func TestAskRefusesBadArguments(t *testing.T) {
	for args, problem := range map[string]string{
		`{}`:                `"action" is required`,
		`{"action": 1}`:     `"action" must be a string`,
		`{"action": " \t"}`: `"action" must not be blank`,
	} {
		result := zot.Tool(t, askTool, args)
		if want := "invalid arguments: " + problem; !result.IsError || result.Text() != want {
			t.Errorf("%s %s answered %+v, want the error %q", askTool, args, result, want)
		}
	}
}

// asking calls the ask tool for action and returns the call and the id of
// the panel it opens.
func asking(t *testing.T, action string) (*exttest.Call, string) {
	t.Helper()
	call := zot.StartTool(t, askTool, `{"action": "`+action+`"}`)
	opened := zot.Next(t, "open_panel")
	panel, _ := opened["panel"].(map[string]any)
	id, _ := panel["id"].(string)
	if panel["title"] != askTitle || !reflect.DeepEqual(panel["lines"], []any{action, "", "› Approve", "  Decline"}) {
		t.Fatalf("%s opened %v, want the action and Approve selected", askTool, opened)
	}
	return call, id
}

func TestAskReturnsTheUsersAnswer(t *testing.T) {
	for _, c := range []struct {
		keys     []string
		approved bool
	}{
		{[]string{"enter"}, true}, {[]string{"down", "enter"}, false}, {[]string{"down", "up", "enter"}, true},
		{[]string{"y"}, true}, {[]string{"n"}, false}, {[]string{"esc"}, false}, {[]string{"q"}, false},
	} {
		call, id := asking(t, "delete build/")
		for i, key := range c.keys {
			zot.Key(id, key)
			if i < len(c.keys)-1 { // the selection moved: wait for it
				zot.Next(t, "panel_render")
			}
		}
		checkAnswer(t, call.Result(t), "delete build/", c.approved)
		if closed := zot.Next(t, "panel_close"); closed.Text("panel_id") != id {
			t.Errorf("keys %v: %v, want the panel closed", c.keys, closed)
		}
	}
}

func TestAskDeclinesWhenZotClosesThePanel(t *testing.T) {
	call, id := asking(t, "push")
	zot.ClosePanel(id)
	checkAnswer(t, call.Result(t), "push", false)
}

func TestAskClosesItsPanelWhenCancelled(t *testing.T) {
	call, id := asking(t, "push")
	call.Cancel()
	if closed := zot.Next(t, "panel_close"); closed.Text("panel_id") != id {
		t.Errorf("cancelled: %v, want the panel closed", closed)
	}
	call.NoResult(t)
}

func checkAnswer(t *testing.T, result exttest.ToolResult, action string, approved bool) {
	t.Helper()
	text := "**Declined** by the user: " + action + ". Do not do it; ask the user what to do instead."
	if approved {
		text = "**Approved** by the user: " + action
	}
	var got map[string]any
	_ = json.Unmarshal(result.StructuredContent, &got)
	want := map[string]any{"approved": approved, "action": action}
	if result.IsError || result.Text() != text || result.Content[0].Format != "markdown" || !reflect.DeepEqual(got, want) {
		t.Errorf("result %+v, want the markdown %q and %v", result, text, want)
	}
}

const conventionsHeading = "\n\n## Project conventions (CONVENTIONS.md)\n\n"

// withConventions is a project folder whose CONVENTIONS.md holds text.
func withConventions(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, conventionsFile), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestConventionsAreAddedToTheSystemPrompt(t *testing.T) {
	cases := []struct{ base, file, want string }{
		{"You are zot.", "Use tabs.\n", "You are zot." + conventionsHeading + "Use tabs.\n"},
		{"", "  Use tabs.", conventionsHeading + "  Use tabs."},
		{"p", "a\xffb\xe2\x82c\xf0\x9f\x98", "p" + conventionsHeading + "a\ufffdb\ufffdc\ufffd"},
	}
	for _, c := range cases {
		got := zot.BeforeAgentStart(t, c.base, withConventions(t, c.file))
		if got == nil || *got != c.want {
			t.Errorf("with %q: %v, want %q", c.file, got, c.want)
		}
	}
}

func TestNoConventionsKeepThePrompt(t *testing.T) {
	folder := withConventions(t, " \n\t ")
	if err := os.MkdirAll(filepath.Join(folder, "sub", conventionsFile), 0o755); err != nil {
		t.Fatal(err)
	}
	// "" is zot's project folder, which has none.
	for _, cwd := range []string{folder, t.TempDir(), filepath.Join(folder, "sub"), filepath.Join(folder, "missing"), ""} {
		if got := zot.BeforeAgentStart(t, "p", cwd); got != nil {
			t.Errorf("in %s: %q, want nil (keep the prompt)", cwd, *got)
		}
	}
}

func TestConventionsAreCutToOneMiB(t *testing.T) {
	folder := withConventions(t, strings.Repeat("é", maxPrompt)) // 2 MiB
	for _, base := range []string{"", "x", strings.Repeat("y", maxPrompt-len(conventionsHeading))} {
		got := zot.BeforeAgentStart(t, base, folder)
		if got == nil || len(*got) > maxPrompt || len(*got) < maxPrompt-1 || !utf8.ValidString(*got) ||
			!strings.HasPrefix(*got, base+conventionsHeading) {
			t.Errorf("with a base of %d bytes: %v, want at most %d bytes, whole characters", len(base), got != nil, maxPrompt)
		}
	}
	if got := zot.BeforeAgentStart(t, strings.Repeat("y", maxPrompt), folder); got != nil {
		t.Errorf("a base of 1 MiB: %d bytes, want nil (keep the prompt)", len(*got))
	}
}
