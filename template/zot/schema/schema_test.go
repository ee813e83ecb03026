package schema

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

func TestTheChecksOfSchemaCasesJSON(t *testing.T) {
	data, err := os.ReadFile("../schema-cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Cases []struct {
			Schema, Args any
			Problems     []string
		}
	}
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	for _, c := range table.Cases {
		found := Problems(c.Schema, c.Args, "")
		if len(found) == 0 && len(c.Problems) == 0 {
			continue
		}
		if !reflect.DeepEqual(found, c.Problems) {
			t.Errorf("%v with %v: %q, want %q", c.Schema, c.Args, found, c.Problems)
		}
	}
}

func TestCheckedRunsTheHandlerOnlyWithArgumentsThatFit(t *testing.T) {
	refuse := func(text string) string { return "refused: " + text }
	ran := func(_ context.Context, args json.RawMessage) string { return "ran " + string(args) }
	run := Checked(json.RawMessage(`{"type": "object", "required": ["n"]}`), refuse, ran)
	for args, want := range map[string]string{
		`{"n": 1}`: `ran {"n": 1}`,
		`{}`:       `refused: invalid arguments: "n" is required`,
		``:         `refused: invalid arguments: the arguments must be an object`,
		`[`:        `refused: invalid arguments: the arguments are not JSON`,
	} {
		if got := run(context.Background(), json.RawMessage(args)); got != want {
			t.Errorf("%s: %q, want %q", args, got, want)
		}
	}
}
