// Unit tests of picker.go: /PANEL_COMMAND and its panel, through the fake zot
// of main_test.go.

package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"example.com/demo-ext/zot/exttest"
	"example.com/demo-ext/zot/host"
)

// testItems is what pickItems returns in most tests.
var testItems = []string{"one", "two", "three", "four"}

func TestPanelCommandIsANameZotAccepts(t *testing.T) {
	if !zotName.MatchString(panelCommand) {
		t.Errorf("panel command %q: use letters, digits, '_' and '-' only", panelCommand)
	}
}

// pickFrom runs the picker's command with pickItems returning items and
// err, and returns its answer. pickItems must get zot's project folder.
func pickFrom(t *testing.T, items []string, err error) exttest.Response {
	t.Helper()
	var folders []string
	saved := pickItems
	pickItems = func(cwd string) ([]string, error) {
		folders = append(folders, cwd)
		return items, err
	}
	defer func() { pickItems = saved }()
	reply := zot.Command(t, panelCommand, "")
	if !reflect.DeepEqual(folders, []string{zot.Project}) {
		t.Errorf("pickItems got %q, want zot's project folder %q", folders, zot.Project)
	}
	return reply
}

// pickerOpened opens the picker on testItems and returns its panel.
func pickerOpened(t *testing.T) *exttest.Panel {
	t.Helper()
	reply := pickFrom(t, testItems, nil)
	want := host.Menu(testItems, 0)
	if panel := reply.OpenPanel; reply.Action != "open_panel" || panel == nil || panel.Title != pickTitle ||
		panel.Footer != pickFooter || !reflect.DeepEqual(panel.Lines, want) {
		t.Fatalf("/%s answered %+v, want a panel with the lines %q", panelCommand, reply, want)
	}
	return reply.OpenPanel
}

func TestPickerListsTheItemsOfZotsProjectFolder(t *testing.T) {
	want := []string{"› main.go", "  README.md"}
	if reply := pickFrom(t, []string{"main.go", "README.md"}, nil); reply.OpenPanel == nil || !reflect.DeepEqual(reply.OpenPanel.Lines, want) {
		t.Errorf("/%s answered %+v, want a panel with the lines %q", panelCommand, reply, want)
	}
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
		if lines := host.Menu(testItems, step.selected); render.Text("panel_id") != id || !reflect.DeepEqual(render["lines"], asAny(lines)) {
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
	// The item goes to the model; where zot (or zot's Go SDK) cannot send
	// it, a note shows it to paste.
	if sent := zot.Next(t, "submit", "notify"); sent.Text("text") != testItems[1] && !strings.Contains(sent.Text("message"), testItems[1]) {
		t.Errorf("enter: %v, want %q sent", sent, testItems[1])
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

func TestPickerWithNothingToPickShowsANote(t *testing.T) {
	if reply := pickFrom(t, nil, nil); reply.Action != "noop" || reply.Error != "" || reply.OpenPanel != nil {
		t.Errorf("/%s answered %+v, want a noop", panelCommand, reply)
	}
	if note := zot.Next(t, "notify"); note.Text("level") != "info" || note.Text("message") != pickEmpty {
		t.Errorf("note %v, want %q", note, pickEmpty)
	}
}

func TestPickerShowsTheErrorOfPickItems(t *testing.T) {
	reply := pickFrom(t, nil, errors.New("not a git repository"))
	if !strings.Contains(reply.Error, "not a git repository") || reply.OpenPanel != nil {
		t.Errorf("/%s answered %+v, want the error", panelCommand, reply)
	}
}

// pickItems itself, in the fake zot's project folder (empty: put there what
// yours reads).
func TestPickItemsWorksInAProjectFolder(t *testing.T) {
	if _, err := pickItems(zot.Project); err != nil {
		t.Errorf("pickItems: %v", err)
	}
}

func asAny(lines []string) []any {
	out := make([]any, len(lines))
	for i, line := range lines {
		out[i] = line
	}
	return out
}
