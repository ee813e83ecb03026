// Unit tests of the handlers in main.go: go test ./... (which also runs the
// tests of the other files and of the template's code in zot/). ./smoke-test
// checks the whole extension the way zot runs it.
package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

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

// zotName is what zot accepts as the name of a command or a tool.
var zotName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestNamesAreWhatZotAccepts(t *testing.T) {
	names := map[string]string{"extension": extName, "command": command, "tool": tool}
	for what, name := range names {
		if !zotName.MatchString(name) {
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
