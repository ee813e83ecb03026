// demo-ext: edit the handlers in this file. zot runs the binary ./build
// makes from it, the package ext speaks the protocol, and zot/ holds the
// template's code.
package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"

	"example.com/demo-ext/zot/guard"
	"example.com/demo-ext/zot/processes"
	"example.com/demo-ext/zot/schema"

	"example.com/demo-ext/zot/ext"
)

const (
	extName    = "demo-ext"
	extVersion = "0.1.0"
)

// extension answers zot: init registers each handler with it (a capability
// in a file of its own through its register function), main runs it.
var extension = ext.New(extName, extVersion)

func init() {
	extension.Command(command, commandHelp, runCommand)
	extension.ToolWithOptions(tool, toolDescription, toolSchema, ext.ToolOptions{},
		schema.Checked(toolSchema, ext.TextErrorResult, runTool))
	extension.InterceptToolCall(guardToolCall)
	extension.OnHello(func(ext.HostInfo) { guard.WarnIfRulesUnusable(extName, extension) })
	registerAsk()
	registerAudit()
	registerConventions()
	registerPicker()
}

func main() {
	err := extension.Run()
	processes.StopAll() // what the handlers started ends with the extension
	if err != nil {
		extension.Logf("fatal: %v", err)
		os.Exit(1)
	}
}

const (
	command     = "demo-ext"
	commandHelp = "A zot extension"
)

// runCommand answers `/COMMAND ARGS` with a command_response action.
func runCommand(args string) ext.Response {
	text := strings.TrimSpace(args)
	if text == "" {
		// Display shows a note in the chat without calling the model.
		return ext.Display("Usage: /" + command + " TEXT\n\nSends TEXT to the model.")
	}
	// Prompt submits the text as a new user message.
	return ext.Prompt("Answer briefly and concretely:\n\n" + text)
}

const (
	tool            = "demo_ext"
	toolDescription = "Echo the given text back, optionally in upper case."
)

// toolSchema is the JSON Schema of the tool's arguments.
var toolSchema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"text": {"type": "string", "description": "The text to echo back."},
		"uppercase": {"type": "boolean", "description": "Return it in upper case."}
	},
	"required": ["text"]
}`)

// runTool runs the tool. Its arguments fit toolSchema: schema.Checked answers
// a call whose arguments do not with an error for the model.
func runTool(ctx context.Context, args json.RawMessage) ext.ToolResult {
	var in struct {
		Text      string `json:"text"`
		Uppercase bool   `json:"uppercase"`
	}
	if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.Text) == "" { // what the schema cannot say
		return ext.TextErrorResult(`invalid arguments: "text" must not be blank`)
	}
	// zot may cancel a long call: if ctx.Err() != nil { return ext.TextErrorResult("cancelled") }
	if in.Uppercase {
		return ext.TextResult(strings.ToUpper(in.Text))
	}
	return ext.TextResult(in.Text)
}

// guardToolCall refuses the tool calls that the template's guard rules, with
// your changes in guard-policy.json, catch; the model reads the reason as the
// tool's error. Paths are judged against zot's project folder.
func guardToolCall(toolName string, args json.RawMessage) (allow bool, reason string) {
	refusal := guard.Check(toolName, args, extension.Host().CWD)
	if refusal == nil {
		return true, ""
	}
	reason = refusal.Message(extName)
	extension.Logf("blocked: %s", reason)
	extension.Notify("warn", reason) // the user reads it too
	return false, reason
}
