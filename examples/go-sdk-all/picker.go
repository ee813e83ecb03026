// The pick panel: /PANEL_COMMAND lists what pickItems returns, enter sends
// the selected one to the model. main.go adds it to the extension
// (registerPicker).

package main

import (
	"sync/atomic"

	"example.com/demo-ext/zot/host"

	"github.com/patriceckhart/zot/packages/agent/ext"
)

// registerPicker adds /panelCommand to the extension.
func registerPicker() {
	extension.Command(panelCommand, panelHelp, openPicker)
}

const (
	panelCommand = "demo-ext-pick"
	panelHelp    = "Pick a prompt from a list for the model"
	pickTitle    = "Pick a prompt"
	pickFooter   = "↑/↓ move · enter choose · esc close"
	pickEmpty    = "Nothing to pick." // the note when pickItems returns none
)

// pickItems returns what /PANEL_COMMAND lists, asked each time it opens;
// cwd is zot's project folder. Its error is shown to the user. A variable,
// so that tests can give items of their own.
var pickItems = func(cwd string) ([]string, error) {
	// The files git sees changed or new, for one (import "os/exec", "strings"):
	//	out, err := exec.Command("git", "-C", cwd, "ls-files", "--modified", "--others", "--exclude-standard").Output()
	//	return strings.FieldsFunc(string(out), func(r rune) bool { return r == '\n' }), err
	return []string{
		"Explain how this project is organised.",
		"Review the uncommitted changes for bugs.",
		"Write tests for the code I changed last.",
		"List the TODO comments and suggest which to do first.",
	}, nil
}

// openPicker answers `/PANEL_COMMAND` with a panel listing pickItems (with
// none, a note): the arrow keys (or j/k) move, enter sends the selected one
// to the model, esc (or q) closes.
func openPicker(string) ext.Response {
	items, err := pickItems(extension.Host().CWD)
	if err != nil {
		return ext.Errorf("%s failed: %v", extName, err)
	}
	if len(items) == 0 {
		extension.Notify("info", pickEmpty)
		return ext.Noop()
	}
	id := host.PanelID("pick")
	var chosen atomic.Int64 // keys may be handled in goroutines of their own
	extension.OnPanelKey(id, func(key, text string) {
		selected := int(chosen.Load())
		switch {
		case key == "up" || key == "rune" && text == "k":
			selected = max(selected-1, 0)
		case key == "down" || key == "rune" && text == "j":
			selected = min(selected+1, len(items)-1)
		case key == "home" || key == "pageup":
			selected = 0
		case key == "end" || key == "pagedown":
			selected = len(items) - 1
		case key == "enter":
			extension.ClosePanel(id)
			host.Submit(extension, items[selected])
			return
		case key == "esc" || key == "rune" && text == "q":
			extension.ClosePanel(id)
			return
		default:
			return
		}
		chosen.Store(int64(selected))
		extension.RenderPanel(id, pickTitle, host.Menu(items, selected), pickFooter)
	}, func() {})
	return ext.OpenPanel(id, pickTitle, host.Menu(items, 0), pickFooter)
}
