// The audit log: zot's lifecycle events, one JSON line each, appended to
// NAME-events.jsonl in zot's data folder. main.go adds it to the extension
// (registerAudit).

package main

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/patriceckhart/zot/packages/agent/ext"
)

// registerAudit records events in the audit log.
func registerAudit() {
	for _, event := range events {
		extension.On(event, recordEvent)
	}
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
