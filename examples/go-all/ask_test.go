// Unit tests of ask.go: the tool askTool and its panel, through the fake zot
// of main_test.go.

package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"example.com/demo-ext/zot/exttest"
)

func TestAskToolIsANameZotAccepts(t *testing.T) {
	if !zotName.MatchString(askTool) {
		t.Errorf("ask tool %q: use letters, digits, '_' and '-' only", askTool)
	}
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
