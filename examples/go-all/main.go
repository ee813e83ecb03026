// demo-ext: edit the handlers in this file. zot runs the binary ./build
// makes from it, the package ext speaks the protocol, and zot/ holds the
// template's code.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"example.com/demo-ext/zot/guard"
	"example.com/demo-ext/zot/host"
	"example.com/demo-ext/zot/processes"
	"example.com/demo-ext/zot/schema"

	"example.com/demo-ext/zot/ext"
)

const (
	extName    = "demo-ext"
	extVersion = "0.1.0"
)

// extension answers zot: init registers each handler with it, main runs it.
var extension = ext.New(extName, extVersion)

func init() {
	extension.Command(command, commandHelp, runCommand)
	extension.ToolWithOptions(tool, toolDescription, toolSchema, ext.ToolOptions{},
		schema.Checked(toolSchema, ext.TextErrorResult, runTool))
	for _, event := range events {
		extension.On(event, recordEvent)
	}
	extension.InterceptToolCall(guardToolCall)
	extension.OnHello(func(ext.HostInfo) { guard.WarnIfRulesUnusable(extName, extension) })
	extension.Command(panelCommand, panelHelp, openPicker)
	extension.ToolWithOptions(askTool, askDescription, askSchema,
		ext.ToolOptions{Interactive: true, OutputSchema: askOutputSchema},
		schema.Checked(askSchema, ext.TextErrorResult, runAsk))
	extension.InterceptBeforeAgentStart(addConventions)
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

// events are the lifecycle events written to the audit log.
var events = []string{"session_start", "turn_start", "tool_call", "turn_end", "assistant_message"}

// recordEvent appends the event to the audit log in zot's data folder: one
// JSON line, the event's fields plus "received_at".
func recordEvent(event ext.Event) {
	entry := auditEntry{
		Event: event.Name, Step: event.Step, Stop: event.Stop, Error: event.Error,
		ToolID: event.ToolID, ToolName: event.ToolName, ToolArgs: event.ToolArgs, Text: event.Text,
		ReceivedAt: time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	}
	path := filepath.Join(extension.Host().DataDir, extName+"-events.jsonl")
	if err := appendLine(path, entry); err != nil {
		extension.Logf("could not write the audit log: %v", err)
		return
	}
	extension.Logf("event %s", event.Name)
}

// auditEntry is one line of the audit log.
type auditEntry struct {
	Event      string          `json:"event"`
	Step       int             `json:"step,omitempty"`
	Stop       string          `json:"stop,omitempty"`
	Error      string          `json:"error,omitempty"`
	ToolID     string          `json:"tool_id,omitempty"`
	ToolName   string          `json:"tool_name,omitempty"`
	ToolArgs   json.RawMessage `json:"tool_args,omitempty"`
	Text       string          `json:"text,omitempty"`
	ReceivedAt string          `json:"received_at"`
}

func appendLine(path string, value any) error {
	line, err := json.Marshal(value)
	if err != nil {
		return err
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = file.Write(append(line, '\n'))
	return cmp.Or(err, file.Close())
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

// panelsOpened counts the panels opened, for their ids.
var panelsOpened atomic.Int64

func nextPanelID(kind string) string {
	return kind + "-" + strconv.FormatInt(panelsOpened.Add(1), 10)
}

// menu is a panel's lines for items, the selected one marked.
func menu(items []string, selected int) []string {
	lines := make([]string, len(items))
	for i, item := range items {
		lines[i] = "  " + item
		if i == selected {
			lines[i] = "› " + item
		}
	}
	return lines
}

const (
	panelCommand = "demo-ext-pick"
	panelHelp    = "Pick a prompt from a list for the model"
	pickTitle    = "Pick a prompt"
	pickFooter   = "↑/↓ move · enter choose · esc close"
)

var prompts = []string{
	"Explain how this project is organised.",
	"Review the uncommitted changes for bugs.",
	"Write tests for the code I changed last.",
	"List the TODO comments and suggest which to do first.",
}

// openPicker answers `/PANEL_COMMAND` with a panel listing prompts: the
// arrow keys (or j/k) move, enter sends the selected one to the model, esc
// (or q) closes.
func openPicker(string) ext.Response {
	id := nextPanelID("pick")
	var chosen atomic.Int64 // keys may be handled in goroutines of their own
	extension.OnPanelKey(id, func(key, text string) {
		selected := int(chosen.Load())
		switch {
		case key == "up" || key == "rune" && text == "k":
			selected = max(selected-1, 0)
		case key == "down" || key == "rune" && text == "j":
			selected = min(selected+1, len(prompts)-1)
		case key == "home" || key == "pageup":
			selected = 0
		case key == "end" || key == "pagedown":
			selected = len(prompts) - 1
		case key == "enter":
			extension.ClosePanel(id)
			host.Submit(extension, prompts[selected])
			return
		case key == "esc" || key == "rune" && text == "q":
			extension.ClosePanel(id)
			return
		default:
			return
		}
		chosen.Store(int64(selected))
		extension.RenderPanel(id, pickTitle, menu(prompts, selected), pickFooter)
	}, func() {})
	return ext.OpenPanel(id, pickTitle, menu(prompts, 0), pickFooter)
}

const (
	askTool        = "demo_ext_confirm"
	askDescription = "Ask the user to approve an action before you take it. Returns whether they approved."
	askTitle       = "Approve?"
	askFooter      = "↑/↓ move · enter choose · y/n · esc decline"
)

// The JSON Schemas of the ask tool's arguments and of its structured results.
var (
	askSchema = json.RawMessage(`{"type": "object", "required": ["action"], "properties": {
		"action": {"type": "string", "description": "What you want to do, in one sentence."}}}`)
	askOutputSchema = json.RawMessage(`{"type": "object", "required": ["approved", "action"],
		"properties": {"approved": {"type": "boolean"}, "action": {"type": "string"}}}`)
)

// runAsk shows the action in a panel and waits for the user's answer: the
// panel's keys arrive meanwhile. ctx ends when zot gives up on the call.
func runAsk(ctx context.Context, args json.RawMessage) ext.ToolResult {
	var in struct {
		Action string `json:"action"`
	}
	if json.Unmarshal(args, &in) != nil || strings.TrimSpace(in.Action) == "" { // what the schema cannot say
		return ext.TextErrorResult(`invalid arguments: "action" must not be blank`)
	}
	action := in.Action
	if !host.NewerZot(extension) {
		return ext.TextErrorResult("this zot cannot ask the user from a tool (it needs a newer zot): ask in the chat instead")
	}
	defer host.Waiting(extension, extName+" is waiting for your answer")()
	id, answers := nextPanelID("ask"), make(chan bool, 1)
	answer := func(approved bool) { // the first answer counts
		select {
		case answers <- approved:
		default:
		}
	}
	lines := func(selected int) []string {
		return append([]string{action, ""}, menu([]string{"Approve", "Decline"}, selected)...)
	}
	decide := func(approved bool) {
		extension.ClosePanel(id)
		answer(approved)
	}
	var selected atomic.Int64 // keys may be handled in goroutines of their own
	extension.OnPanelKey(id, func(key, text string) {
		switch {
		case key == "up" || key == "rune" && text == "k":
			selected.Store(0)
			extension.RenderPanel(id, askTitle, lines(0), askFooter)
		case key == "down" || key == "rune" && text == "j":
			selected.Store(1)
			extension.RenderPanel(id, askTitle, lines(1), askFooter)
		case key == "enter":
			decide(selected.Load() == 0)
		case key == "rune" && (text == "y" || text == "n"):
			decide(text == "y")
		case key == "esc" || key == "rune" && text == "q":
			decide(false)
		}
	}, func() { answer(false) }) // zot closed the panel
	extension.OpenPanel(id, askTitle, lines(0), askFooter)
	select {
	case approved := <-answers:
		return askResult(action, approved)
	case <-ctx.Done(): // zot has given up on the call: no result is sent
		extension.ClosePanel(id)
		return ext.TextErrorResult("cancelled")
	}
}

// askResult tells the model the user's answer, in words and as JSON.
func askResult(action string, approved bool) ext.ToolResult {
	text := "**Declined** by the user: " + action + ". Do not do it; ask the user what to do instead."
	if approved {
		text = "**Approved** by the user: " + action
	}
	result := ext.MarkdownResult(text)
	result.StructuredContent, _ = json.Marshal(map[string]any{"approved": approved, "action": action})
	return result
}

const (
	conventionsFile = "CONVENTIONS.md" // in the user's project folder
	maxPrompt       = 1 << 20          // the longest system prompt zot takes
)

// addConventions appends the project's conventions to the system prompt
// before the model starts; nil keeps the prompt as it is.
func addConventions(event ext.BeforeAgentStartEvent) *string {
	folder := cmp.Or(event.CWD, extension.Host().CWD)
	if folder == "" {
		return nil
	}
	path := filepath.Join(folder, conventionsFile)
	text, err := readConventions(path)
	if err != nil {
		extension.Logf("could not read %s: %v", path, err)
		return nil
	} else if strings.TrimSpace(text) == "" {
		return nil
	}
	prompt := event.SystemPrompt + "\n\n## Project conventions (" + conventionsFile + ")\n\n"
	if len(prompt) > maxPrompt {
		extension.Logf("%s left out: the system prompt is already %d bytes", conventionsFile, len(event.SystemPrompt))
		return nil
	}
	if prompt += text; len(prompt) > maxPrompt {
		prompt = strings.ToValidUTF8(prompt[:maxPrompt], "") // whole characters only
	}
	return &prompt
}

// readConventions reads up to maxPrompt bytes of a file as UTF-8 text; a
// missing file, or one that is not a regular file, reads as "".
func readConventions(path string) (string, error) {
	if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
		return "", nil
	}
	file, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, maxPrompt))
	// Each invalid sequence becomes U+FFFD (a character cut short, once).
	var text strings.Builder
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		for r == utf8.RuneError && size < min(len(data), 3) && !utf8.FullRune(data[:size+1]) {
			size++
		}
		text.WriteRune(r)
		data = data[size:]
	}
	return text.String(), err
}
