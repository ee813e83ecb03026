// Unit tests of picker.go: /PANEL_COMMAND and its panel, through the fake zot
// of main_test.go.

package main

import (
	"reflect"
	"strings"
	"testing"

	"example.com/demo-ext/zot/exttest"
	"example.com/demo-ext/zot/host"
)

func TestPanelCommandIsANameZotAccepts(t *testing.T) {
	if !zotName.MatchString(panelCommand) {
		t.Errorf("panel command %q: use letters, digits, '_' and '-' only", panelCommand)
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
		if lines := host.Menu(prompts, step.selected); render.Text("panel_id") != id || !reflect.DeepEqual(render["lines"], asAny(lines)) {
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
