package host

import (
	"strconv"
	"sync/atomic"
)

// panelsOpened counts the panels the extension opened, for their ids.
var panelsOpened atomic.Int64

// PanelID is the id of a new panel of a kind: KIND-N, where N counts every
// panel the extension opens.
func PanelID(kind string) string {
	return kind + "-" + strconv.FormatInt(panelsOpened.Add(1), 10)
}

// Menu is a panel's lines for items, the selected one marked.
func Menu(items []string, selected int) []string {
	lines := make([]string, len(items))
	for i, item := range items {
		lines[i] = "  " + item
		if i == selected {
			lines[i] = "› " + item
		}
	}
	return lines
}
