package host

import (
	"reflect"
	"regexp"
	"testing"
)

func TestMenuMarksTheSelectedItem(t *testing.T) {
	want := []string{"  one", "› two", "  three"}
	if got := Menu([]string{"one", "two", "three"}, 1); !reflect.DeepEqual(got, want) {
		t.Errorf("Menu() = %q, want %q", got, want)
	}
}

func TestPanelIDsAreKindAndACount(t *testing.T) {
	first, second := PanelID("pick"), PanelID("ask")
	if !regexp.MustCompile(`^pick-[1-9][0-9]*$`).MatchString(first) || !regexp.MustCompile(`^ask-[1-9][0-9]*$`).MatchString(second) || first[5:] == second[4:] {
		t.Errorf("panel ids %q and %q, want pick-N and ask-M, N and M apart", first, second)
	}
}
