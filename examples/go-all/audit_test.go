// Unit tests of audit.go: zot's events in the audit log, through the fake zot
// of main_test.go.

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

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
