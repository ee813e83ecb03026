// Unit tests of conventions.go: CONVENTIONS.md in the system prompt, through
// the fake zot of main_test.go.

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

const conventionsHeading = "\n\n## Project conventions (CONVENTIONS.md)\n\n"

// withConventions is a project folder whose CONVENTIONS.md holds text.
func withConventions(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, conventionsFile), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestConventionsAreAddedToTheSystemPrompt(t *testing.T) {
	cases := []struct{ base, file, want string }{
		{"You are zot.", "Use tabs.\n", "You are zot." + conventionsHeading + "Use tabs.\n"},
		{"", "  Use tabs.", conventionsHeading + "  Use tabs."},
		{"p", "a\xffb\xe2\x82c\xf0\x9f\x98", "p" + conventionsHeading + "a\ufffdb\ufffdc\ufffd"},
	}
	for _, c := range cases {
		got := zot.BeforeAgentStart(t, c.base, withConventions(t, c.file))
		if got == nil || *got != c.want {
			t.Errorf("with %q: %v, want %q", c.file, got, c.want)
		}
	}
}

func TestNoConventionsKeepThePrompt(t *testing.T) {
	folder := withConventions(t, " \n\t ")
	if err := os.MkdirAll(filepath.Join(folder, "sub", conventionsFile), 0o755); err != nil {
		t.Fatal(err)
	}
	// "" is zot's project folder, which has none.
	for _, cwd := range []string{folder, t.TempDir(), filepath.Join(folder, "sub"), filepath.Join(folder, "missing"), ""} {
		if got := zot.BeforeAgentStart(t, "p", cwd); got != nil {
			t.Errorf("in %s: %q, want nil (keep the prompt)", cwd, *got)
		}
	}
}

func TestConventionsAreCutToOneMiB(t *testing.T) {
	folder := withConventions(t, strings.Repeat("é", maxPrompt)) // 2 MiB
	for _, base := range []string{"", "x", strings.Repeat("y", maxPrompt-len(conventionsHeading))} {
		got := zot.BeforeAgentStart(t, base, folder)
		if got == nil || len(*got) > maxPrompt || len(*got) < maxPrompt-1 || !utf8.ValidString(*got) ||
			!strings.HasPrefix(*got, base+conventionsHeading) {
			t.Errorf("with a base of %d bytes: %v, want at most %d bytes, whole characters", len(base), got != nil, maxPrompt)
		}
	}
	if got := zot.BeforeAgentStart(t, strings.Repeat("y", maxPrompt), folder); got != nil {
		t.Errorf("a base of 1 MiB: %d bytes, want nil (keep the prompt)", len(*got))
	}
}
