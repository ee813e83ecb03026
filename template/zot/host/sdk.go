// Package host does, with zot's Go SDK, what main.go asks of zot beyond the
// SDK's API, as far as the SDK can: the SDK has no call that sends a prompt
// or clears a note, and tells an older zot only by its version. It comes
// from the template, and `copier update` brings its fixes.
package host

import (
	"fmt"
	"strings"

	"github.com/patriceckhart/zot/packages/agent/ext"
)

// Submit shows text in a note for the user to paste: the SDK cannot send it
// to the model as the user's next prompt.
func Submit(e *ext.Extension, text string) {
	e.Notify("info", "Chosen: "+text+" (paste it to send it)")
}

// Waiting would show message as a note until done is called; the SDK
// cannot clear a note, so it shows none.
func Waiting(*ext.Extension, string) (done func()) { return func() {} }

// NewerZot reports whether zot is newer than 0.1.62, which cannot show a
// panel that a tool opens, by the version in hello_ack: the SDK shows no
// other sign of it.
func NewerZot(e *ext.Extension) bool { return !olderVersion(e.Host().ZotVersion) }

// olderVersion is whether zot's version is 0.1.62 or older. A build of zot
// from source says 0.0.0, and counts as newer.
func olderVersion(version string) bool {
	var major, minor, patch int
	_, err := fmt.Sscanf(strings.TrimPrefix(version, "v"), "%d.%d.%d", &major, &minor, &patch)
	return err == nil && major == 0 && (minor == 0 && patch > 0 || minor == 1 && patch <= 62)
}
