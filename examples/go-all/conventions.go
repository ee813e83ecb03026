// The project's conventions in the system prompt: before each agent run,
// CONVENTIONS.md of the project zot works in is added to it. main.go adds
// it to the extension (registerConventions).

package main

import (
	"cmp"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"example.com/demo-ext/zot/ext"
)

// registerConventions adds the project's conventions to the system prompt.
func registerConventions() {
	extension.InterceptBeforeAgentStart(addConventions)
}

const (
	conventionsFile = "CONVENTIONS.md" // in the user's project folder
	maxPrompt       = 1 << 20          // the longest system prompt zot takes
)

// addConventions appends the project's conventions to the system prompt
// before the model starts; nil keeps the prompt as it is.
func addConventions(event ext.BeforeAgentStartEvent) *string {
	folder := cmp.Or(event.CWD, extension.Host().CWD)
	if folder == "" {
		return nil
	}
	path := filepath.Join(folder, conventionsFile)
	text, err := readConventions(path)
	if err != nil {
		extension.Logf("could not read %s: %v", path, err)
		return nil
	} else if strings.TrimSpace(text) == "" {
		return nil
	}
	prompt := event.SystemPrompt + "\n\n## Project conventions (" + conventionsFile + ")\n\n"
	if len(prompt) > maxPrompt {
		extension.Logf("%s left out: the system prompt is already %d bytes", conventionsFile, len(event.SystemPrompt))
		return nil
	}
	if prompt += text; len(prompt) > maxPrompt {
		prompt = strings.ToValidUTF8(prompt[:maxPrompt], "") // whole characters only
	}
	return &prompt
}

// readConventions reads up to maxPrompt bytes of a file as UTF-8 text; a
// missing file, or one that is not a regular file, reads as "".
func readConventions(path string) (string, error) {
	if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
		return "", nil
	}
	file, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, maxPrompt))
	// Each invalid sequence becomes U+FFFD (a character cut short, once).
	var text strings.Builder
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		for r == utf8.RuneError && size < min(len(data), 3) && !utf8.FullRune(data[:size+1]) {
			size++
		}
		text.WriteRune(r)
		data = data[size:]
	}
	return text.String(), err
}
