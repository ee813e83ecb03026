// Unit tests of the guard, which comes from the template: the template's
// rules on its own cases (./smoke-test judges them with your policy too).
package guard

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMain gives the guard the template's rules alone: no guard-policy.json.
func TestMain(m *testing.M) {
	loadedOnce.Do(func() { loaded, loadErr = readPolicy(rulesJSON, []byte(`{}`)) })
	if loadErr != nil {
		fmt.Fprintln(os.Stderr, loadErr)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// guardCases is guard-cases.json: the commands the guard must refuse, each
// with the rule that refuses it, and the commands it must allow, judged in
// the folder cwd (./smoke-test checks them too).
type guardCases struct {
	CWD     string            `json:"cwd"`
	Refused map[string]string `json:"refused"`
	Allowed []string          `json:"allowed"`
}

func TestGuardCases(t *testing.T) {
	data, err := os.ReadFile("guard-cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases guardCases
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatalf("guard-cases.json: %v", err)
	}
	for command, rule := range cases.Refused {
		if refusal := checkCommand(command, cases.CWD); refusal == nil || refusal.Rule != rule {
			t.Errorf("%q: %+v, want it refused by %s", command, refusal, rule)
		}
	}
	for _, command := range cases.Allowed {
		if refusal := checkCommand(command, cases.CWD); refusal != nil {
			t.Errorf("%q: refused, want it allowed: %s", command, refusal.Message("the guard"))
		}
	}
}

func TestGuardMessageNamesTheRule(t *testing.T) {
	refusal := Refusal{"a-rule", "its reason", "do this"}
	want := "refused by my-ext (a-rule): its reason. Instead, do this."
	if got := refusal.Message("my-ext"); got != want {
		t.Errorf("Message() = %q, want %q", got, want)
	}
}

func TestGuardRefusesCommandsTooLongToCheck(t *testing.T) {
	for length, refused := range map[int]bool{maxCommand: false, maxCommand + 1: true} {
		args, _ := json.Marshal(map[string]string{"command": strings.Repeat("é", length)})
		refusal := Check("bash", args, "/home/user/project")
		if (refusal != nil) != refused || refused && refusal.Rule != "too-long" {
			t.Errorf("a command of %d characters: %+v, want refused %v", length, refusal, refused)
		}
	}
}

func TestGuardJudgesOnlyBashCommandLines(t *testing.T) {
	cases := []struct{ tool, args string }{
		{"bash", `{}`},
		{"bash", `{"command": ["rm", "-rf", "/"]}`},
		{"bash", `{"command": null}`},
		{"bash", `null`},
		{"bash", ``},
		{"write", `{"path": "rm -rf /", "content": "rm -rf /"}`},
	}
	for _, c := range cases {
		if refusal := Check(c.tool, json.RawMessage(c.args), "/home/user/project"); refusal != nil {
			t.Errorf("Check(%q, %s) refused: %+v", c.tool, c.args, refusal)
		}
	}
}

// BenchmarkGuard4KiB times one decision on 4 KiB commands the guard allows
// (go test -bench Guard ./zot/guard): a build script, and ~200 short commands.
func BenchmarkGuard4KiB(b *testing.B) {
	steps := []struct {
		name string
		step func(i int) string
	}{
		{"script", func(i int) string {
			return fmt.Sprintf("cd ./web && npm ci --no-audit && npm run build -- --mode production | tee build-%d.log; "+
				"go test ./... 2>&1 | grep -v '^ok' > test.log || true; "+
				"git add -A && git commit -m \"Step %d: build the site, run the tests and keep the logs\"; ", i, i)
		}},
		{"dense", func(i int) string {
			return fmt.Sprintf("rm -rf ./build/x%d && echo \"step %d done\" | tee -a log.txt; ", i, i)
		}},
	}
	for _, s := range steps {
		var command strings.Builder
		for i := 0; command.Len() < 4096; i++ {
			command.WriteString(s.step(i))
		}
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				if refusal := checkCommand(command.String(), "/home/user/project"); refusal != nil {
					b.Fatal(refusal.Message("the guard"))
				}
			}
		})
	}
}
