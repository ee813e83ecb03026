// The approval tool: askTool shows the model's action in a panel and
// answers with the user's choice. main.go adds it to the extension
// (registerAsk).

package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"

	"example.com/demo-ext/zot/host"
	"example.com/demo-ext/zot/schema"

	"example.com/demo-ext/zot/ext"
)

// registerAsk adds the tool askTool to the extension.
func registerAsk() {
	extension.ToolWithOptions(askTool, askDescription, askSchema,
		ext.ToolOptions{Interactive: true, OutputSchema: askOutputSchema},
		schema.Checked(askSchema, ext.TextErrorResult, runAsk))
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
	id, answers := host.PanelID("ask"), make(chan bool, 1)
	answer := func(approved bool) { // the first answer counts
		select {
		case answers <- approved:
		default:
		}
	}
	lines := func(selected int) []string {
		return append([]string{action, ""}, host.Menu([]string{"Approve", "Decline"}, selected)...)
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
