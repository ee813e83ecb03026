// The pick panel: /PANEL_COMMAND opens a list of prompts, enter sends the
// selected one to the model. main.go adds it to the extension
// (registerPicker).

package main

import (
	"sync/atomic"

	"example.com/demo-ext/zot/host"

	"example.com/demo-ext/zot/ext"
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
	id := host.PanelID("pick")
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
		extension.RenderPanel(id, pickTitle, host.Menu(prompts, selected), pickFooter)
	}, func() {})
	return ext.OpenPanel(id, pickTitle, host.Menu(prompts, 0), pickFooter)
}
