// Package host does what main.go asks of zot beyond the API of zot's Go SDK,
// which the standard-library runtime (zot/ext) offers. It comes from the
// template, and `copier update` brings its fixes.
package host

import "example.com/demo-ext/zot/ext"

// Submit sends text to the model as the user's next prompt; zot 0.1.62 and
// older cannot take it, so there it shows text in a note for the user to
// paste.
func Submit(e *ext.Extension, text string) {
	if !e.NewerHost() {
		e.Notify("info", "Chosen: "+text+" (this zot cannot submit it: paste it yourself)")
		return
	}
	e.Submit(text)
}

// Waiting shows message as a note until done is called.
func Waiting(e *ext.Extension, message string) (done func()) {
	e.Notify("info", message)
	return e.ClearNotes
}

// NewerZot reports whether zot is newer than 0.1.62: only a newer zot shows
// a panel that a tool opens, or takes a prompt the extension submits.
func NewerZot(e *ext.Extension) bool { return e.NewerHost() }
