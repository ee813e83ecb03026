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

// policyRefusal is the refusal of every command under guard-policy.json
// text policy, or nil when the guard can use it.
func policyRefusal(policy string) *Refusal {
	if _, err := readPolicy(rulesJSON, []byte(policy)); err != nil {
		return unusableRules(err)
	}
	return nil
}

func TestGuardRefusesAPolicyWithAKeyItDoesNotReadOrOfTheWrongKind(t *testing.T) {
	cases := map[string]string{
		`{"optoin values": {}, "ofF": [], "about": "x"}`: `has a key the guard does not read: "ofF"`,
		`{"off": "git-stash-drop"}`:                      `has an "off" that is not a list of rule ids`,
		`{"off": null}`:                                  `has an "off" that is not a list of rule ids`,
		`{"off": ["x", 1]}`:                              `has an "off" that is not a list of rule ids`,
		`{"rules": [{"id": "x"}, "y"]}`:                  `has "rules" that is not a list of rules`,
		`{"lists": {"network": "curl"}}`:                 `has "lists" that is not an object of lists of names`,
		`{"lists": [], "off": 1}`:                        `has an "off" that is not a list of rule ids`,
		`{"option values": {"kubectl": ["-n", null]}}`:   `has "option values" that is not an object of lists of options`,
		`{"lists": {"a": ["", 1]}}`:                      `has an empty pattern in list "a"`,
		`{"shells": "tclsh"}`:                            `has "shells" that is not a list of names`,
		`{"classes": {"prod": ["/srv/*"]}}`:              `has a key the guard does not read: "classes/prod"`,
		`{"code": {"tclsh": "-c"}}`:                      `has "code/tclsh" that is not a list of names`,
		`{"find": {"about": 1}}`:                         `has "find/about" that is not a text`,
		`{"wrappers": {"env": {"assignments": 1}}}`:      `has "wrappers/env/assignments" that is not true or false`,
		`{"wrappers": {"nohup": {"args": 1.5}}}`:         `has "wrappers/nohup/args" that is not a whole number from 0 to 100`,
		`{"wrappers": {"f": {"bare option": []}}}`:       `has a key the guard does not read: "wrappers/f/bare option"`,
		`{"programs": {"languages": {"tcl": {}}}}`:       `has a key the guard does not read: "programs/languages/tcl"`,
		`{"one dash or two": {}}`:                        `has "one dash or two" that is not a list of names`,
	}
	for policy, problem := range cases {
		refusal := policyRefusal(policy)
		want := Refusal{
			"unreadable-rules", "guard-policy.json " + problem + ", so the guard refuses every command",
			"fix guard-policy.json (./smoke-test points at the problem)",
		}
		if refusal == nil || *refusal != want {
			t.Errorf("%s: %+v, want %+v", policy, refusal, want)
		}
	}
	every := `{"about": 1, "include": [], "lists": {}, "off": [], "option values": {}, "rules": [], "classes": {},
		"code": {}, "find": {}, "one dash or two": [], "programs": {}, "shells": [], "wrappers": {"nohup": {"args": 1.0}}}`
	if refusal := policyRefusal(every); refusal != nil {
		t.Errorf("a policy with every key: %+v", refusal)
	}
}

func TestGuardRefusesAnIncludedFileWithAKeyItDoesNotRead(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("team.json", []byte(`{"include": 1, "optoin values": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	refusal := policyRefusal(`{"include": ["team.json"]}`)
	if refusal == nil || !strings.HasPrefix(refusal.Reason, `team.json has an "include" of its own`) {
		t.Errorf("an include of its own comes first: %+v", refusal)
	}
	if err := os.WriteFile("team.json", []byte(`{"optoin values": {}, "rules": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	want := Refusal{
		"unreadable-rules",
		`team.json has a key the guard does not read: "optoin values", so the guard refuses every command`,
		"fix team.json (./smoke-test points at the problem)",
	}
	if refusal := policyRefusal(`{"include": ["team.json"]}`); refusal == nil || *refusal != want {
		t.Errorf("%+v, want %+v", refusal, want)
	}
}

func TestGuardPolicyOptionValuesAddToTheTemplates(t *testing.T) {
	t.Chdir(t.TempDir())
	team := `{"option values": {"mycli": ["--region"]}}`
	if err := os.WriteFile("team.json", []byte(team), 0o644); err != nil {
		t.Fatal(err)
	}
	rule := `{"id": "no-drop", "command": ["mycli"], "subcommand": ["drop"], "reason": "r", "instead": "i"}`
	cases := []struct {
		optionValues, command string
		refused               bool
	}{
		{`{}`, "mycli drop x", true},
		{`{}`, "mycli --env prod drop x", false},
		{`{"mycli": ["--env"]}`, "mycli --env prod drop x", true},
		{`{"mycli": ["--env"]}`, "mycli --env prod --region eu drop x", true},
		{`{"mycli": ["--env"]}`, "mycli --env prod --zone eu drop x", false},
	}
	for _, c := range cases {
		policy := fmt.Sprintf(`{"include": ["team.json"], "rules": [%s], "option values": %s}`, rule, c.optionValues)
		p, err := readPolicy(rulesJSON, []byte(policy))
		if err != nil {
			t.Fatal(err)
		}
		refusal := newChecker(p, "/home/user/project").check(c.command, 0, nil, 0, false)
		if (refusal != nil) != c.refused || c.refused && refusal.Rule != "no-drop" {
			t.Errorf("%s with %s: %+v, want refused %v", c.command, c.optionValues, refusal, c.refused)
		}
	}
}

// A policy, and the files it includes, add to guard-rules.json's wrappers,
// shells, code, "one dash or two", ...: a wrapper's "args" may be 1.0.
func TestGuardPolicyAddsToTheTemplatesLists(t *testing.T) {
	t.Chdir(t.TempDir())
	team := `{"wrappers": {"firejail": {"options with value": ["--profile"]}}, "shells": ["tclsh"]}`
	if err := os.WriteFile("team.json", []byte(team), 0o644); err != nil {
		t.Fatal(err)
	}
	rule := `{"id": "no-drop", "command": ["mytool"], "option": ["-drop"], "reason": "r", "instead": "i"}`
	commands := map[string]string{
		"firejail --profile strict rm -rf ~": "delete-outside-project",
		"tclsh -c 'rm -rf ~'":                "delete-outside-project",
		"mytool --env prod --drop users":     "no-drop",
		"nohup 5 rm -rf ~":                   "delete-outside-project",
	}
	cases := []struct {
		policy  string
		refused bool
	}{
		{`{"rules": [` + rule + `]}`, false},
		{`{"include": ["team.json"], "rules": [` + rule + `], "code": {"tclsh": ["-c"]},
			"one dash or two": ["mytool"], "wrappers": {"nohup": {"args": 1.0}}}`, true},
	}
	for _, c := range cases {
		p, err := readPolicy(rulesJSON, []byte(c.policy))
		if err != nil {
			t.Fatal(err)
		}
		for command, rule := range commands {
			refusal := newChecker(p, "/home/user/project").check(command, 0, nil, 0, false)
			if (refusal != nil) != c.refused || c.refused && refusal.Rule != rule {
				t.Errorf("%s under %s: %+v, want refused %v", command, c.policy, refusal, c.refused)
			}
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
