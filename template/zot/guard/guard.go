// Package guard refuses bash commands before they run.
//
// The rules are data, in guard-rules.json beside this file (the template's,
// built into the binary and replaced on `copier update`), the team's files
// guard-policy.json includes, and guard-policy.json in the extension's folder
// (yours: rules you add, rules you switch off; read at start-up). The guard
// reads a command the way bash splits it, finds each simple command behind
// its wrappers (sudo, env, xargs, bash -c '...', $(...)), and asks the rules
// about it. It belongs to the template: `copier update` replaces it.
package guard

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

const (
	// A longer command is refused unread: checking it could take too long.
	maxCommand = 65536
	// A larger rules file is refused unread: every decision would be slow.
	maxRulesBytes = 1 << 20
	// Code inside code (bash -c '...', eval ...) deeper than this is refused.
	maxDepth = 8
	// So are $(...), `...` and ( ... ) nested deeper than this.
	maxNesting = 32
	// Where cd leads stops being followed past a path this long.
	maxPath = 4096
	// What a $(...), `...` or <(...) leaves in a word.
	substitution = "$()"
	// What xargs or parallel puts in a word from their input: unknown text.
	input = "${:input}"
	// parallel runs at most this many values one by one; more count as unknown.
	maxValues = 64
	// At most this many words of commands are judged again in one decision,
	// with a variable's value or a call's arguments in place ($cmd, f() {
	// "$@"; }).
	maxAgain = 4096
	// What a shell reads in a word other than its text: parallel's command
	// words with one of these are judged as words too (as -q keeps them).
	quotedChars = " \t\n'\"\\$`|&;<>()"
)

var (
	// The escapes of $'...', as bash reads them.
	ansiC = regexp.MustCompile(`\\([abeEfnrtv\\'"?]|[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}` +
		`|U[0-9A-Fa-f]{1,8}|c[\s\S])`)
	ansiCLetters = map[byte]rune{'a': 7, 'b': 8, 'e': 27, 'E': 27, 'f': 12, 'n': 10, 'r': 13, 't': 9, 'v': 11}
	// parallel's replacement strings: {}, {.}, {/}, {//}, {/.}, {#}, {%}, {1}, ...
	parallelReplace = regexp.MustCompile(`\{([0-9]*)(\.|/|//|/\.|#|%)?\}`)
)

// Refusal is why the guard refuses a command: the rule, its reason, what to
// do instead.
type Refusal struct{ Rule, Reason, Instead string }

// Message is the text zot shows the model.
func (r *Refusal) Message(name string) string {
	return fmt.Sprintf("refused by %s (%s): %s. Instead, %s.", name, r.Rule, r.Reason, r.Instead)
}

var (
	tooLong = &Refusal{
		"too-long",
		fmt.Sprintf("a command of over %d characters, too long to check", maxCommand),
		"split it up, or write long text to a file with the write tool",
	}
	tooManyAgain = &Refusal{
		"too-many-calls",
		fmt.Sprintf("more than %d words of commands run through variables or function arguments, too many to check", maxAgain),
		"write the script to a file and run that",
	}
	tooDeep = &Refusal{
		"too-deep",
		fmt.Sprintf("code nested more than %d levels deep, too deep to check", maxDepth),
		"write the script to a file and run that",
	}
)

// Check returns why a tool call must be refused, or nil to allow it. cwd is
// the project folder (hello_ack's cwd).
func Check(toolName string, toolArgs json.RawMessage, cwd string) *Refusal {
	if toolName != "bash" {
		return nil // the guard judges bash command lines only
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(toolArgs, &args) != nil {
		return nil
	}
	var command string
	raw := args["command"]
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &command) != nil {
		return nil // not a command line; zot's bash tool rejects it anyway
	}
	return checkCommand(command, cwd)
}

// checkCommand returns why the bash command must be refused, or nil to allow
// it. Deletes inside cwd, the project folder, and in the temp folders are
// allowed.
func checkCommand(command, cwd string) *Refusal {
	command = strings.ReplaceAll(command, "\\\n", "") // bash joins continued lines
	if utf8.RuneCountInString(command) > maxCommand {
		return tooLong
	}
	rules, err := loadPolicy()
	if err != nil { // fail closed, and say which file is at fault
		return unusableRules(err)
	}
	return newChecker(rules, cwd).check(command, 0, nil, 0, false)
}

func unusableRules(err error) *Refusal {
	reason := err.Error() + ", so the guard refuses every command"
	var unread readError
	var builtIn builtInError
	switch {
	case errors.As(err, &unread): // read at start-up, not built in
		return &Refusal{"unreadable-rules", reason, unread.fix}
	case errors.As(err, &builtIn):
		return &Refusal{"unreadable-rules", reason, "fix it, then run ./build (the rules are built in)"}
	}
	return &Refusal{"unreadable-rules", reason, "fix " + policyFile + " (./smoke-test points at the problem)"}
}

// WarnIfRulesUnusable reads the rules in the background, so that neither
// ready nor the first command waits for them (a command that comes first
// waits until they are read); when they cannot be used (then every bash
// call is refused), it tells the user and the log of extension name.
func WarnIfRulesUnusable(name string, to interface {
	Logf(format string, args ...any)
	Notify(level, message string)
}) {
	go func() {
		if _, err := loadPolicy(); err != nil {
			refusal := unusableRules(err)
			warning := fmt.Sprintf("%s: the guard cannot use its rules: %s. Instead, %s.", name, refusal.Reason, refusal.Instead)
			to.Logf("%s", warning)
			to.Notify("warn", warning)
		}
	}()
}

// --- Reading a command the way bash splits it ---------------------------------

// tokens splits text into runs of ordinary characters, runs of blanks, and
// single characters of syntax.
func tokens(text string) []string {
	count := 0
	for i := 0; i < len(text); i = tokenEnd(text, i) {
		count++
	}
	out := make([]string, 0, count)
	for i := 0; i < len(text); {
		j := tokenEnd(text, i)
		out = append(out, text[i:j])
		i = j
	}
	return out
}

// tokenEnd returns where the token that starts at i ends.
func tokenEnd(text string, i int) int {
	j := i + 1
	switch {
	case isBlankByte(text[i]):
		for j < len(text) && isBlankByte(text[j]) {
			j++
		}
	case !isSpecial[text[i]]:
		for j < len(text) && !isSpecial[text[j]] {
			j++
		}
	}
	return j
}

const (
	special = " \t\n'\"\\$`()|&;<>" // what ends a run of ordinary characters
	syntax  = special + "#"         // the first characters of tokens that are not text
)

// isSpecial is whether a byte ends a run of ordinary characters.
var isSpecial = func() (table [256]bool) {
	for _, c := range []byte(special) {
		table[c] = true
	}
	return table
}()

// keywords are skipped in front of a command.
var keywords = map[string]bool{
	"if": true, "then": true, "elif": true, "else": true, "fi": true, "do": true, "done": true,
	"while": true, "until": true, "!": true, "{": true, "}": true, "esac": true, "coproc": true,
}

// endsWord is whether a token ends a word (blanks do too).
func endsWord(token string) bool {
	return len(token) == 1 && strings.Contains("\n;&|()<>", token)
}

func isBlankByte(c byte) bool { return c == ' ' || c == '\t' }

func isBlank(token string) bool { return isBlankByte(token[0]) }

type redirect struct{ op, target string } // "<", ">" (any output) or "<<" (text)

// simple is one simple command: its words, redirections and where it stands.
type simple struct {
	words     []string
	redirects []redirect
	pipeline  int
	subs      []*simple // the simple commands of its $(...), `...` and <(...)
	nested    bool      // inside ( ), $( ), `` or <( ): a cd there does not last
	stdin     string    // a here-document's or here-string's text
	hasStdin  bool
	scope     int   // the subshell it stands in
	body      *body // the function whose body it is in
	keywords  int   // how many of its first words are keywords ({, if, ...)
}

// body is a function's body: its commands run where the function is called.
type body struct {
	name   string
	scope  int  // where it is defined: it is seen there and in its subshells
	depth  int  // the braces open around it; -1 until its { or ( is read
	closed bool // its } or ) was read: until then its commands run
	runs   []*invocation
	line   *line
	defs   *defs // the functions of the code it is defined in
}

// group is the bodies of one name defined in one subshell, judged in turn.
type group struct {
	bodies  []*body
	checked int  // how many are judged (once a decision, at a call)
	moves   bool // a cd in one moved where relative paths point
	busy    bool // being judged: a call in them does not judge them again
}

// heredoc is a here-document whose text starts on the next line.
type heredoc struct {
	command   *simple
	delimiter string
	strip     bool // <<-: leading tabs stripped
}

// parser is a shell's split of a command line into simple commands, quotes
// read. Words keep $NAME and ${...} as written; a command substitution leaves
// substitution in its word, and its commands go into the subs of the simple
// command the word belongs to. commands holds every simple command in the
// order they end (a substitution's before its command's).
type parser struct {
	tokens    []string
	i         int
	commands  []*simple
	functions map[string]bool
	pipelines int
	depth     int
	tooDeep   bool
	heredocs  []heredoc
	scope     int
	parents   []int   // each subshell's parent
	bodies    []*body // the functions defined, in order
	open      []*body // the bodies being read, innermost last
	braces    int     // the { read and not yet closed by a }
}

func (p *parser) peek() string { return p.peekAhead(0) }

// peekAhead returns the token ahead of the current one by ahead ("" past
// the end).
func (p *parser) peekAhead(ahead int) string {
	if at := p.i + ahead; at < len(p.tokens) {
		return p.tokens[at]
	}
	return ""
}

func (p *parser) newPipeline() int {
	p.pipelines++
	return p.pipelines
}

// parse returns the simple commands up to end (")" or "`"), or to the end.
func (p *parser) parse(end string) []*simple {
	if p.depth >= maxNesting {
		p.tooDeep = true
		p.i = len(p.tokens)
		return nil
	}
	p.depth++
	parent := p.scope // ( ), $( ), `` and <( ) start a subshell
	p.scope = len(p.parents)
	p.parents = append(p.parents, parent)
	var found []*simple
	pipeline := p.newPipeline()
	for p.i < len(p.tokens) {
		token := p.tokens[p.i]
		if token == end {
			p.i++
			break
		}
		switch {
		case token == "|": // | and |& go on with the pipeline, || ends it
			p.i++
			if p.peek() == "|" {
				p.i++
				pipeline = p.newPipeline()
			} else if p.peek() == "&" {
				p.i++
			}
		case token == ";" || token == "&" || token == "\n" || token == ")":
			p.i++
			pipeline = p.newPipeline()
			if token == "\n" {
				p.readHeredocs()
			}
		case isBlank(token):
			p.i++
		default:
			p.simpleCommand(&found, end, pipeline)
		}
	}
	p.depth--
	p.scope = parent
	return found
}

func (p *parser) simpleCommand(found *[]*simple, end string, pipeline int) {
	command := &simple{pipeline: pipeline, nested: p.depth > 1, scope: p.scope}
	if len(p.open) > 0 {
		command.body = p.open[len(p.open)-1]
	}
	for p.i < len(p.tokens) {
		token := p.tokens[p.i]
		if token == end || token == ";" || token == "\n" || token == "|" || token == ")" {
			break
		}
		if token == "&" {
			if p.i+1 < len(p.tokens) && p.tokens[p.i+1] == ">" {
				p.i += 2 // &> and &>>: both outputs into a file
				if p.peek() == ">" {
					p.i++
				}
				command.redirects = append(command.redirects, redirect{">", p.target(command, end)})
				continue
			}
			break
		}
		switch {
		case isBlank(token):
			p.i++
		case token == "<" || token == ">":
			p.redirect(command, end)
		case token == "(":
			p.i++
			p.skipBlanks()
			waiting := len(command.words) == command.keywords && len(p.open) > 0
			switch {
			case len(command.words) == command.keywords+1 && p.peek() == ")":
				p.i++
				name := command.words[command.keywords]
				command.words = command.words[:command.keywords]
				p.define(command, name) // name() { ...; }
			case waiting && p.open[len(p.open)-1].depth < 0:
				b := p.open[len(p.open)-1]
				if p.peek() == ")" {
					p.i++ // function name() { ...; }
				} else { // name() ( ... ): the body is a subshell
					b.depth = p.braces
					*found = append(*found, p.parse(")")...)
					if !b.closed { // with the bodies left open in it
						b.closed = true
						p.open = p.open[:slices.Index(p.open, b)]
					}
				}
			default:
				*found = append(*found, p.parse(")")...) // a subshell: its commands run
			}
		case token[0] == '#' && p.startsWord():
			for p.i < len(p.tokens) && p.tokens[p.i] != "\n" {
				p.i++ // a comment
			}
		case !strings.ContainsRune(syntax, rune(token[0])) && p.endsAfter(token, end):
			p.i++ // a plain word: the usual case, taken whole
			p.addWord(command, token, end)
		default:
			p.addWord(command, p.word(command, end), end)
		}
	}
	if len(command.words) > 0 || len(command.redirects) > 0 {
		*found = append(*found, command)
		p.commands = append(p.commands, command)
	}
}

// addWord adds a word to the command, or defines the name after
// `function`; { and } in front open and close bodies.
func (p *parser) addWord(command *simple, word, end string) {
	if len(command.words) == command.keywords {
		if word == "function" {
			p.skipBlanks()
			if next := p.peek(); next != "" && !endsWord(next) {
				p.define(command, p.word(command, end))
			}
			return
		}
		if keywords[word] {
			command.keywords++
			if word == "{" {
				if n := len(p.open); n > 0 && p.open[n-1].depth < 0 {
					p.open[n-1].depth = p.braces // the body starts
				}
				p.braces++
			} else if word == "}" {
				p.braces = max(0, p.braces-1)
				if n := len(p.open); n > 0 && p.open[n-1].depth >= 0 && p.braces <= p.open[n-1].depth {
					p.open[n-1].closed = true
					p.open = p.open[:n-1]
				}
			}
		}
	}
	command.words = append(command.words, word)
}

// define starts a function: name() or function name; what follows is its
// body.
func (p *parser) define(command *simple, name string) {
	b := &body{name: name, scope: p.scope, depth: -1}
	p.functions[name] = true
	p.bodies = append(p.bodies, b)
	p.open = append(p.open, b)
	command.body = b
}

// endsAfter is whether the word ends with the current token (no quote or $
// joined to it).
func (p *parser) endsAfter(token, end string) bool {
	following := " "
	if p.i+1 < len(p.tokens) {
		following = p.tokens[p.i+1]
	}
	if following == "(" && token[len(token)-1] == '=' {
		return false // a=(x y): an array
	}
	return isBlank(following) || endsWord(following) || following == end
}

// startsWord is whether the token stands at a word's start (where # starts a
// comment).
func (p *parser) startsWord() bool {
	if p.i == 0 {
		return true
	}
	previous := p.tokens[p.i-1]
	return endsWord(previous) || isBlank(previous)
}

func (p *parser) skipBlanks() {
	for p.i < len(p.tokens) && isBlank(p.tokens[p.i]) {
		p.i++
	}
}

func (p *parser) redirect(command *simple, end string) {
	first := p.tokens[p.i]
	words := command.words
	if n := len(words); n > 0 && isNumber(words[n-1]) && p.tokens[p.i-1] == words[n-1] {
		command.words = words[:n-1] // 2> file: the 2 belongs to the redirection
	}
	p.i++
	second := p.peek()
	switch {
	case second == "(": // <(...) or >(...): a process substitution, a word
		p.i++
		command.subs = append(command.subs, p.parse(")")...)
		command.words = append(command.words, substitution)
	case first == "<" && second == "<":
		p.i++
		if p.peek() == "<" { // <<< word: a here-string
			p.i++
			text := p.target(command, end)
			command.redirects = append(command.redirects, redirect{"<<", text})
			if !command.hasStdin {
				command.stdin, command.hasStdin = text, true
			}
			return
		}
		strip := strings.HasPrefix(p.peek(), "-") // <<-: leading tabs stripped
		if p.peek() == "-" {
			p.i++ // <<- EOF
		} else if strip {
			p.tokens[p.i] = p.tokens[p.i][1:] // <<-EOF
		}
		p.heredocs = append(p.heredocs, heredoc{command, p.target(command, end), strip})
	case second == "&": // >&2 and <&0 copy a descriptor; >& FILE writes it
		p.i++
		target := p.target(command, end)
		if first == ">" && !isNumber(target) && target != "-" {
			command.redirects = append(command.redirects, redirect{">", target})
		}
	default:
		if (second == ">" || second == "|") && first == ">" || second == ">" && first == "<" {
			p.i++ // >> and >| append or overwrite; <> reads and writes
			first = ">"
		}
		command.redirects = append(command.redirects, redirect{first, p.target(command, end)})
	}
}

// target is the word after a redirection operator ("" if there is none).
func (p *parser) target(command *simple, end string) string {
	p.skipBlanks()
	token := p.peek()
	if token == "" || endsWord(token) || token == end {
		return ""
	}
	return p.word(command, end)
}

// readHeredocs reads the text of the here-documents started on the line just
// ended.
func (p *parser) readHeredocs() {
	for _, doc := range p.heredocs {
		var lines []string
		start, ended := p.i, false
		for p.i < len(p.tokens) {
			token := p.tokens[p.i]
			p.i++
			if token != "\n" {
				continue
			}
			text := strings.Join(p.tokens[start:p.i-1], "")
			start = p.i
			line := text
			if doc.strip {
				line = strings.TrimLeft(text, "\t")
			}
			if line == doc.delimiter {
				ended = true
				break
			}
			lines = append(lines, text)
		}
		if !ended && start < p.i {
			lines = append(lines, strings.Join(p.tokens[start:p.i], ""))
		}
		doc.command.stdin = strings.Join(lines, "\n")
		doc.command.hasStdin = true
	}
	p.heredocs = p.heredocs[:0]
}

// word reads one word, quotes taken off; its substitutions go to
// command.subs.
func (p *parser) word(command *simple, end string) string {
	var parts wordParts
	for p.i < len(p.tokens) {
		token := p.tokens[p.i]
		if token == end || endsWord(token) || isBlank(token) {
			if token == "(" && strings.HasSuffix(parts.last, "=") {
				p.i++ // a=(x y): an array's words are data
				parts.add("(" + p.rawUntil(")") + ")")
				continue
			}
			break
		}
		p.i++
		switch token {
		case "'":
			parts.add(p.rawUntil("'"))
		case `"`:
			p.doubleQuoted(&parts, command)
		case `\`:
			if next := p.peek(); next != "" {
				parts.add(next)
				p.i++
			}
		case "$":
			if p.peek() != `"` { // $"...": a double-quoted string
				p.dollar(&parts, command)
			}
		case "`":
			command.subs = append(command.subs, p.parse("`")...)
			parts.add(substitution)
		default:
			parts.add(token)
		}
	}
	return parts.String()
}

// wordParts is a word read so far, and the last part added to it.
type wordParts struct {
	strings.Builder
	last string
}

func (w *wordParts) add(part string) {
	w.WriteString(part)
	w.last = part
}

// expansion returns the text of ${...} (end "}") or $((...)) (end ")", after
// its "(("), up to its end; the $(...) and `...` in it run: their commands go
// to command.subs.
func (p *parser) expansion(command *simple, end string) string {
	start, depth := p.i, 0
scan:
	for p.i < len(p.tokens) {
		token := p.tokens[p.i]
		p.i++
		switch {
		case token == "$" && p.peek() == "(" && p.peekAhead(1) != "(":
			p.i++
			command.subs = append(command.subs, p.parse(")")...)
		case token == "`":
			command.subs = append(command.subs, p.parse("`")...)
		case token == `\`:
			p.i++
		case end == "}" && strings.Contains(token, "}"):
			break scan
		case end == ")" && token == "(":
			depth++
		case end == ")" && token == ")":
			if depth == 0 {
				if p.peek() == ")" {
					p.i++
				}
				break scan
			}
			depth--
		}
	}
	return strings.Join(p.tokens[start:min(p.i, len(p.tokens))], "")
}

// rawUntil returns the text up to the token end (taken too), as it stands.
func (p *parser) rawUntil(end string) string {
	start := p.i
	for p.i < len(p.tokens) && p.tokens[p.i] != end {
		p.i++
	}
	text := strings.Join(p.tokens[start:p.i], "")
	p.i++
	return text
}

func (p *parser) doubleQuoted(parts *wordParts, command *simple) {
	for p.i < len(p.tokens) {
		token := p.tokens[p.i]
		p.i++
		switch token {
		case `"`:
			return
		case `\`:
			if next := p.peek(); next == "$" || next == "`" || next == `"` || next == `\` {
				p.i++
				parts.add(next)
			} else {
				parts.add(`\`)
			}
		case "$":
			if p.peek() == "'" { // "$'": no escapes inside double quotes
				parts.add("$")
			} else {
				p.dollar(parts, command)
			}
		case "`":
			command.subs = append(command.subs, p.parse("`")...)
			parts.add(substitution)
		default:
			parts.add(token)
		}
	}
}

// dollar reads what follows a $: $(...), $((...)), ${...}, $'...' or a name.
func (p *parser) dollar(parts *wordParts, command *simple) {
	following := p.peek()
	switch {
	case following == "(":
		p.i++
		if p.peek() == "(" { // $(( arithmetic )): a number
			p.i++
			p.expansion(command, ")")
			parts.add("$((0))")
		} else {
			inner := p.parse(")")
			command.subs = append(command.subs, inner...)
			parts.add(heredocText(inner))
		}
	case strings.HasPrefix(following, "{"): // ${...} as written, up to its }
		parts.add("$" + p.expansion(command, "}"))
	case following == "'": // $'...': escapes decoded as bash does
		p.i++
		start := p.i
		for p.i < len(p.tokens) && p.tokens[p.i] != "'" {
			if p.tokens[p.i] == `\` {
				p.i++
			}
			p.i++
		}
		parts.add(ansiCText(strings.Join(p.tokens[start:min(p.i, len(p.tokens))], "")))
		p.i++
	default:
		parts.add("$")
	}
}

// heredocText is what a $(...) leaves in its word: the text of a
// here-document when its only command is cat of one ($(cat <<EOF ... EOF)),
// or substitution.
func heredocText(inner []*simple) string {
	if len(inner) != 1 {
		return substitution
	}
	cat := inner[0]
	if len(cat.words) != 1 || cat.words[0] != "cat" || !cat.hasStdin {
		return substitution
	}
	for _, to := range cat.redirects {
		if to.op != "<<" {
			return substitution
		}
	}
	return cat.stdin
}

// ansiCText is the text of $'...' with its escapes decoded; a NUL ends it,
// and a byte that is not ASCII, or no character, stands as U+FFFD.
func ansiCText(text string) string {
	var out strings.Builder
	at := 0
	for _, m := range ansiC.FindAllStringSubmatchIndex(text, -1) {
		out.WriteString(text[at:m[0]])
		at = m[1]
		escape := text[m[2]:m[3]]
		kind := escape[0]
		var code rune
		switch {
		case ansiCLetters[kind] != 0:
			code = ansiCLetters[kind]
		case strings.IndexByte(`\'"?`, kind) >= 0:
			code = rune(kind)
		case kind == 'x':
			n, _ := strconv.ParseUint(escape[1:], 16, 32)
			code = rune(n)
		case kind == 'u' || kind == 'U':
			n, _ := strconv.ParseUint(escape[1:], 16, 32)
			code = rune(n)
			if n > 0x10FFFF || 0xD800 <= n && n <= 0xDFFF {
				code = 0xFFFD
			}
		case kind == 'c':
			letter, _ := utf8.DecodeRuneInString(escape[1:])
			switch {
			case letter >= 0x80:
				code = 0xFFFD
			case letter == '?':
				code = 0x7F
			case 'a' <= letter && letter <= 'z':
				code = (letter - 32) & 0x1F
			default:
				code = letter & 0x1F
			}
		default:
			n, _ := strconv.ParseUint(escape, 8, 32)
			code = rune(n & 0xFF)
		}
		if kind != 'u' && kind != 'U' && 0x80 <= code && code <= 0xFF {
			code = 0xFFFD // a byte, not a character
		}
		if code == 0 {
			return out.String()
		}
		out.WriteRune(code)
	}
	out.WriteString(text[at:])
	return out.String()
}

func isNumber(word string) bool {
	return word != "" && strings.Trim(word, "0123456789") == ""
}

// --- The rules ------------------------------------------------------------------

// The template's rules are built into the binary: run ./build after changing
// them. The extension's own policy is read at start-up from its folder, the
// working directory zot starts it in.
var (
	//go:embed guard-rules.json
	rulesJSON []byte
)

const (
	rulesFile  = "zot/guard/guard-rules.json" // as the extension's folder holds it
	policyFile = "guard-policy.json"
)

// patterns is a list of names where * stands for any text.
type patterns struct {
	list    []string
	exact   map[string]bool
	globs   [][]string      // the patterns with a *, split at each *
	written map[string]bool // every entry, as written
}

func newPatterns(list []string) *patterns {
	p := &patterns{list: list, exact: map[string]bool{}, written: map[string]bool{}}
	for _, pattern := range list {
		p.written[pattern] = true
		if strings.Contains(pattern, "*") {
			p.globs = append(p.globs, strings.Split(pattern, "*"))
		} else {
			p.exact[pattern] = true
		}
	}
	return p
}

// matches is whether word fits one of the patterns.
func (p *patterns) matches(word string) bool {
	if p.exact[word] {
		return true
	}
	for _, pieces := range p.globs {
		if globMatches(word, pieces) {
			return true
		}
	}
	return false
}

// has is whether word is one of the list's entries, as written.
func (p *patterns) has(word string) bool { return p.written[word] }

// globMatches is whether the whole word fits the pieces of a pattern split at
// its *s.
func globMatches(word string, pieces []string) bool {
	first, last := pieces[0], pieces[len(pieces)-1]
	if len(word) < len(first)+len(last) || !strings.HasPrefix(word, first) || !strings.HasSuffix(word, last) {
		return false
	}
	middle := word[len(first) : len(word)-len(last)]
	for _, piece := range pieces[1 : len(pieces)-1] {
		at := strings.Index(middle, piece)
		if at < 0 {
			return false
		}
		middle = middle[at+len(piece):]
	}
	return true
}

// rule is one rule of guard-rules.json or guard-policy.json: a nil field is
// one the rule does not have.
type rule struct {
	id, reason, instead string
	command, option, notOption, arg, target, redirect, exec, runsOutputOf, pipedTo, input,
	subcommand *patterns
	skip          int
	minArgs       int
	targets       string
	defaultTarget *string
	forkBomb      bool
	codeFromInput bool
	// long: the rule with its options spelt with two dashes, for a program
	// whose options take one dash or two alike
	long *rule
}

type wrapper struct {
	withValue   *patterns
	assignments bool
	args        int
	addsArgs    bool
	bare        []string          // words taken as options: env's -
	values      *wrapperValues    // options read, not only skipped
	valueLists  map[string]string // parallel's ::: (words) and :::: (files)
}

// wrapperValues are the options of a wrapper whose values the guard reads.
type wrapperValues struct {
	Chdir       []string          `json:"chdir"`        // env -C DIR
	SplitString []string          `json:"split string"` // env -S STRING
	Replace     map[string]string `json:"replace"`      // xargs -I R, -i: {}
	InputFile   []string          `json:"input file"`   // xargs -a FILE
}

// codeOptions are the options after which an interpreter takes its code.
type codeOptions struct {
	pieces  []string // the key split at each *
	options []string
}

// policy is guard-rules.json with the changes of the files guard-policy.json
// includes and of guard-policy.json.
type policy struct {
	rules        []*rule
	byCommand    map[string]commandRules // the rules that ask about a name
	cacheLock    sync.Mutex
	wrappers     map[string]wrapper
	code         map[string][]string
	wildCode     []codeOptions // the keys of "code" with a *, in order
	shells       *patterns
	optionValues map[string]*patterns
	oneDashOrTwo *patterns            // programs whose options take one dash or two alike
	longValues   map[string]*patterns // optionValues spelt with two dashes, for those
	temp         [][]string
	devices      *patterns
	secrets      *patterns
	notSecrets   *patterns
	narrowedBy   *patterns // find's -name: FOLDER/NAME is all it finds
	widenedBy    *patterns // find's -o, !: unless one of these is given
	programs     programs  // code run by python -c, node -e, ...
}

var (
	loaded     *policy
	loadErr    error
	loadedOnce sync.Once
)

// loadPolicy reads the rules on first use; an error names the file at fault.
func loadPolicy() (*policy, error) {
	loadedOnce.Do(func() {
		own, err := readOwnPolicy()
		if err == nil {
			loaded, err = readPolicy(rulesJSON, own)
		}
		// Not a file read at start-up: the template's rules are at fault when
		// they fail alone too (they are built in).
		if unread := (readError{}); err != nil && !errors.As(err, &unread) {
			if _, alone := readPolicy(rulesJSON, []byte(`{}`)); alone != nil {
				err = builtInError{alone}
			}
		}
		loadErr = err
	})
	return loaded, loadErr
}

// noEmptyPattern reports a rule or a list of rules file name with an empty
// pattern, which no two engines would read alike. What is not of its kind is
// passed over here: it has an error of its own.
func noEmptyPattern(name string, object map[string]json.RawMessage) error {
	var rules []json.RawMessage
	var lists map[string]json.RawMessage
	_ = json.Unmarshal(object["rules"], &rules)
	_ = json.Unmarshal(object["lists"], &lists)
	hasEmpty := func(text json.RawMessage) bool {
		var patterns []any
		return json.Unmarshal(text, &patterns) == nil && slices.Contains(patterns, any(""))
	}
	for _, text := range rules {
		var fields map[string]json.RawMessage
		if json.Unmarshal(text, &fields) != nil {
			continue
		}
		for _, value := range fields {
			if hasEmpty(value) {
				return fmt.Errorf("%s has an empty pattern in rule %s", name, fields["id"])
			}
		}
	}
	for key, list := range lists {
		if hasEmpty(list) {
			return fmt.Errorf("%s has an empty pattern in list %q", name, key)
		}
	}
	return nil
}

// policyKeys are the keys the guard reads of guard-policy.json; a file it
// includes has them all but "include" (which has an error of its own there).
var policyKeys = append([]string{"about", "include", "lists", "off", "option values", "rules"}, addsTo...)

// addsTo are the keys of guard-rules.json a policy adds to: objects merged
// name by name, lists extended ("lists" and "option values" are read on
// their own).
var addsTo = []string{"classes", "code", "find", "one dash or two", "programs", "shells", "wrappers"}

// newEntry is what a policy's new entry of "code" or "wrappers" may hold (a
// wrapper of the template's may hold these too).
var newEntry = map[string]any{
	"code": []any{},
	"wrappers": map[string]any{
		"options with value": []any{}, "bare options": []any{}, "args": json.Number("0"),
		"assignments": false, "adds args": false,
	},
}

// policyKinds are the keys of a policy whose values have a kind, in the order
// they are checked: whether a value is of its kind, and the problem if not.
var policyKinds = []struct {
	key     string
	fits    func(any) bool
	problem string
}{
	{"off", isNames, `has an "off" that is not a list of rule ids`},
	{"rules", isRules, `has "rules" that is not a list of rules`},
	{"lists", isLists, `has "lists" that is not an object of lists of names`},
	{"option values", isLists, `has "option values" that is not an object of lists of options`},
}

// checkPolicy reports a key of policy file name the guard does not read (a
// misspelt one would leave its part out unseen), or a value not of its key's
// kind (for what it adds to guard-rules.json, template: the kind there).
func checkPolicy(name string, object, template map[string]json.RawMessage) error {
	for _, key := range slices.Sorted(maps.Keys(object)) {
		if !slices.Contains(policyKeys, key) {
			return fmt.Errorf(`%s has a key the guard does not read: "%s"`, name, key)
		}
	}
	for _, kind := range policyKinds {
		var value any
		if raw, ok := object[kind.key]; ok && (json.Unmarshal(raw, &value) != nil || !kind.fits(value)) {
			return fmt.Errorf("%s %s", name, kind.problem)
		}
	}
	for _, key := range addsTo {
		raw, ok := object[key]
		if !ok {
			continue
		}
		var form any = map[string]any{}
		if key == "one dash or two" {
			form = []any{}
		}
		if known, ok := template[key]; ok {
			form = jsonValue(known)
		}
		if key == "programs" { // only its languages' lists: "runs", ...
			fields, _ := form.(map[string]any)
			languages, ok := fields["languages"]
			if !ok {
				languages = map[string]any{}
			}
			form = map[string]any{"languages": languages}
		}
		if problem := formProblem(form, jsonValue(raw), key, newEntry[key]); problem != "" {
			return fmt.Errorf("%s %s", name, problem)
		}
	}
	return nil
}

// jsonValue is a JSON text's value, numbers as written (json.Number).
func jsonValue(text json.RawMessage) any {
	decoder := json.NewDecoder(bytes.NewReader(text))
	decoder.UseNumber()
	var value any
	_ = decoder.Decode(&value) // the text is a part of an object read
	return value
}

// formProblem is what is wrong with a policy's value at where (keys joined
// by /), where guard-rules.json has form; a new name may be given when entry
// (the form of one) is: "" if nothing is.
func formProblem(form, value any, where string, entry any) string {
	switch form.(type) {
	case []any:
		if isNames(value) {
			return ""
		}
		return fmt.Sprintf(`has "%s" that is not a list of names`, where)
	case bool:
		if _, ok := value.(bool); ok {
			return ""
		}
		return fmt.Sprintf(`has "%s" that is not true or false`, where)
	case json.Number:
		if isCount(value) {
			return ""
		}
		return fmt.Sprintf(`has "%s" that is not a whole number from 0 to 100`, where)
	case string:
		if _, ok := value.(string); ok {
			return ""
		}
		return fmt.Sprintf(`has "%s" that is not a text`, where)
	}
	object, ok := value.(map[string]any)
	if !ok {
		return fmt.Sprintf(`has "%s" that is not an object`, where)
	}
	forms, _ := form.(map[string]any)
	for _, key := range slices.Sorted(maps.Keys(object)) {
		known := forms[key]
		entryFields, entryIsObject := entry.(map[string]any)
		if knownFields, knownIsObject := known.(map[string]any); entryIsObject && knownIsObject {
			known = mergedFields(entryFields, knownFields)
		} else if known == nil {
			known = entry
		}
		if known == nil {
			return fmt.Sprintf(`has a key the guard does not read: "%s/%s"`, where, key)
		}
		if problem := formProblem(known, object[key], where+"/"+key, nil); problem != "" {
			return problem
		}
	}
	return ""
}

// mergedFields is base's fields with more's in their place.
func mergedFields(base, more map[string]any) map[string]any {
	out := maps.Clone(base)
	maps.Copy(out, more)
	return out
}

// isCount is whether a JSON value is a whole number from 0 to 100 (1.0 is
// one): how many words to pass.
func isCount(value any) bool {
	number, ok := value.(json.Number)
	if !ok {
		return false
	}
	n, _ := number.Float64() // out of range: ±Inf
	return 0 <= n && n <= 100 && n == math.Trunc(n)
}

// added returns a policy's value added to the one before (JSON texts; base
// nil when there is none): objects merged name by name, lists extended;
// anything else replaces.
func added(base, more json.RawMessage) json.RawMessage {
	switch kind := jsonKind(base); {
	case kind == '{' && jsonKind(more) == '{':
		baseKeys, baseFields := jsonFields(base)
		moreKeys, moreFields := jsonFields(more)
		out := []byte{'{'}
		for _, key := range moreKeys {
			if _, ok := baseFields[key]; !ok {
				baseKeys = append(baseKeys, key) // a new name comes last
			}
		}
		for k, key := range baseKeys {
			if k > 0 {
				out = append(out, ',')
			}
			name, _ := json.Marshal(key)
			out = append(append(out, name...), ':')
			value := baseFields[key]
			if more, ok := moreFields[key]; ok {
				value = added(baseFields[key], more)
			}
			out = append(out, value...)
		}
		return append(out, '}')
	case kind == '[' && jsonKind(more) == '[':
		var baseItems, moreItems []json.RawMessage
		_ = json.Unmarshal(base, &baseItems)
		_ = json.Unmarshal(more, &moreItems)
		out, _ := json.Marshal(append(baseItems, moreItems...))
		return out
	}
	return more
}

// jsonKind is the first character of a JSON text: { an object, [ a list.
func jsonKind(text json.RawMessage) byte {
	if text = bytes.TrimLeft(text, " \t\r\n"); len(text) > 0 {
		return text[0]
	}
	return 0
}

// jsonFields returns a JSON object's keys, in order, and its fields.
func jsonFields(text json.RawMessage) ([]string, map[string]json.RawMessage) {
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(text, &fields)
	keys := make([]string, 0, len(fields))
	seen := map[string]bool{}
	decoder := json.NewDecoder(bytes.NewReader(text))
	if _, err := decoder.Token(); err != nil { // {
		return keys, fields
	}
	for decoder.More() {
		key, err := decoder.Token()
		var value json.RawMessage
		if err != nil || decoder.Decode(&value) != nil {
			break
		}
		if name := key.(string); !seen[name] {
			seen[name] = true
			keys = append(keys, name)
		}
	}
	return keys, fields
}

// isNames is whether a JSON value is a list of strings.
func isNames(value any) bool {
	list, ok := value.([]any)
	for _, item := range list {
		if _, isString := item.(string); !isString {
			return false
		}
	}
	return ok
}

// isRules is whether a JSON value is a list of objects.
func isRules(value any) bool {
	list, ok := value.([]any)
	for _, item := range list {
		if _, isObject := item.(map[string]any); !isObject {
			return false
		}
	}
	return ok
}

// isLists is whether a JSON value is an object of lists of strings.
func isLists(value any) bool {
	object, ok := value.(map[string]any)
	for _, list := range object {
		if !isNames(list) {
			return false
		}
	}
	return ok
}

// jsonObject reads a rules file's text; an error names the file.
func jsonObject(name string, text []byte) (map[string]json.RawMessage, error) {
	if len(text) > maxRulesBytes {
		return nil, fmt.Errorf("%s is %d bytes, over the guard's limit of 1 MiB", name, len(text))
	}
	var object map[string]json.RawMessage
	if err := json.Unmarshal(text, &object); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON or not an object (%v)", name, err)
	} else if object == nil {
		return nil, fmt.Errorf("%s does not hold a JSON object", name)
	}
	return object, nil
}

// readOwnPolicy reads guard-policy.json's text from the extension's folder.
func readOwnPolicy() ([]byte, error) {
	return readRulesFile(policyFile, fmt.Sprintf("restore %s (git checkout %[1]s, or copier update)", policyFile))
}

// readRulesFile reads the text of a rules file read at start-up (not built
// in); restore is what to do when it is missing.
func readRulesFile(path, restore string) ([]byte, error) {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, readError{fmt.Errorf("%s is missing", path), restore}
	} else if err == nil && info.Size() > maxRulesBytes {
		err := fmt.Errorf("%s is %d bytes, over the guard's limit of 1 MiB", path, info.Size())
		return nil, readError{err, fmt.Sprintf("keep %s under 1 MiB (fewer rules, or broader patterns)", path)}
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, readError{fmt.Errorf("%s cannot be read (%v)", path, err), "fix " + path}
	}
	return text, nil
}

// builtInError is a problem with guard-rules.json, which is built into the
// binary: fixing it needs ./build.
type builtInError struct{ error }

func (e builtInError) Unwrap() error { return e.error }

func readPolicy(rulesText, policyText []byte) (*policy, error) {
	data, err := jsonObject(rulesFile, rulesText)
	if err != nil {
		return nil, err
	}
	own, err := jsonObject(policyFile, policyText)
	if err != nil {
		return nil, err
	}
	template, err := readLayer(rulesFile, data, nil)
	if err != nil {
		return nil, err
	}
	ownLayer, err := readLayer(policyFile, own, data)
	if err != nil {
		return nil, err
	}
	included, err := readIncluded(own, data)
	if err != nil {
		return nil, err
	}
	layers := append(append([]layer{template}, included...), ownLayer)
	data = maps.Clone(data)
	for _, l := range layers[1:] {
		for key, value := range l.adds {
			data[key] = added(data[key], value)
		}
	}
	var (
		classes      map[string][]string
		wrappers     map[string]map[string]json.RawMessage
		shells       []string
		oneDashOrTwo []string
		find         struct {
			NarrowedBy []string `json:"narrowed by"`
			WidenedBy  []string `json:"widened by"`
		}
	)
	err = errors.Join(
		field(data, "classes", &classes), field(data, "wrappers", &wrappers), field(data, "shells", &shells),
		field(data, "find", &find), field(data, "one dash or two", &oneDashOrTwo),
	)
	if err != nil {
		return nil, fmt.Errorf("%s has a field of the wrong type (%v)", rulesFile, err)
	}
	lists := map[string][]string{}
	optionValues := map[string][]string{}
	for _, l := range layers {
		for name, list := range l.lists {
			lists[name] = list // a list replaces the one of its name before
		}
		for name, options := range l.optionValues {
			optionValues[name] = append(optionValues[name], options...) // these add up
		}
	}
	p := &policy{
		byCommand:    map[string]commandRules{},
		wrappers:     map[string]wrapper{},
		code:         map[string][]string{},
		shells:       newPatterns(shells),
		optionValues: map[string]*patterns{},
		oneDashOrTwo: newPatterns(oneDashOrTwo),
		longValues:   map[string]*patterns{},
		devices:      newPatterns(classes["device"]),
		secrets:      newPatterns(classes["secret"]),
		notSecrets:   newPatterns(classes["not secret"]),
		narrowedBy:   newPatterns(find.NarrowedBy),
		widenedBy:    newPatterns(find.WidenedBy),
	}
	for i, l := range layers {
		for _, text := range l.rules {
			r, err := readRule(text, lists)
			if err != nil {
				return nil, err
			}
			if !switchedOff(r.id, layers[i:]) {
				r.long = longRule(r)
				p.rules = append(p.rules, r)
			}
		}
	}
	for name, fields := range wrappers {
		var w wrapper
		var withValue []string
		var args float64 // 1.0 is one
		err := errors.Join(
			field(fields, "options with value", &withValue), field(fields, "assignments", &w.assignments),
			field(fields, "args", &args), field(fields, "adds args", &w.addsArgs),
			field(fields, "bare options", &w.bare), field(fields, "values", &w.values),
			field(fields, "value lists", &w.valueLists),
		)
		if err != nil {
			return nil, fmt.Errorf("wrapper %s: %w", name, err)
		}
		w.withValue = newPatterns(withValue)
		w.args = int(args)
		p.wrappers[name] = w
	}
	if err := p.readCode(data["code"]); err != nil {
		return nil, err
	}
	if err := p.readPrograms(data["programs"]); err != nil {
		return nil, err
	}
	for name, list := range optionValues {
		p.optionValues[name] = newPatterns(list)
		p.longValues[name] = newPatterns(twoDashed(list))
	}
	for _, folder := range classes["temp"] {
		p.temp = append(p.temp, normal(folder))
	}
	return p, nil
}

// layer is what a rules file adds: guard-rules.json, a file guard-policy.json
// includes, or guard-policy.json.
type layer struct {
	off          []string
	rules        []json.RawMessage
	lists        map[string][]string
	optionValues map[string][]string
	adds         map[string]json.RawMessage // what it adds to guard-rules.json's keys (addsTo)
}

// readLayer reads the fields of rules file name that add to the rules; a
// policy (guard-policy.json or a file it includes; template: the object of
// guard-rules.json, nil for guard-rules.json itself) has no other keys.
func readLayer(name string, object, template map[string]json.RawMessage) (layer, error) {
	l := layer{adds: map[string]json.RawMessage{}}
	if err := noEmptyPattern(name, object); err != nil {
		return l, err
	}
	if template != nil {
		if err := checkPolicy(name, object, template); err != nil {
			return l, err
		}
	}
	for _, key := range addsTo {
		if value, ok := object[key]; ok {
			l.adds[key] = value
		}
	}
	err := errors.Join(
		field(object, "off", &l.off), field(object, "rules", &l.rules), field(object, "lists", &l.lists),
		field(object, "option values", &l.optionValues),
	)
	if err != nil {
		return l, fmt.Errorf("%s has a field of the wrong type (%v)", name, err)
	}
	return l, nil
}

// switchedOff is whether a file's "off" names the rule: its own file's or a
// later one's.
func switchedOff(id string, layers []layer) bool {
	for _, l := range layers {
		if slices.Contains(l.off, id) {
			return true
		}
	}
	return false
}

// readError is a problem with a rules file read at start-up, guard-policy.json
// or a file it includes, and its fix: such a file is not built in, so fixing
// it needs no ./build.
type readError struct {
	error
	fix string
}

// readIncluded reads the team's policy files guard-policy.json names in
// "include", in order. They are not built in: they are read when the guard
// loads its rules, relative to the working directory, which is the
// extension's folder (zot starts the extension there).
func readIncluded(own, template map[string]json.RawMessage) ([]layer, error) {
	var paths []string
	if field(own, "include", &paths) != nil || slices.Contains(paths, "") {
		err := errors.New(`guard-policy.json has an "include" that is not a list of file paths`)
		return nil, readError{err, `fix guard-policy.json ("include": ["team-policy/guard-policy.json"])`}
	}
	for _, path := range paths {
		if strings.HasPrefix(path, "/") || slices.Contains(strings.Split(path, "/"), "..") {
			err := fmt.Errorf("guard-policy.json includes %q, outside the extension's folder", path)
			return nil, readError{err, "name a file inside the extension's folder, relative to it"}
		}
	}
	var layers []layer
	for _, path := range paths {
		object, err := readIncludedFile(path)
		if err != nil {
			return nil, err
		}
		if _, ok := object["include"]; ok {
			err := fmt.Errorf(`%s has an "include" of its own (an included file cannot include)`, path)
			return nil, readError{err, fmt.Sprintf(`move the files %s includes into guard-policy.json's "include"`, path)}
		}
		l, err := readLayer(path, object, template)
		if err != nil {
			return nil, readError{err, fmt.Sprintf("fix %s (./smoke-test points at the problem)", path)}
		}
		layers = append(layers, l)
	}
	return layers, nil
}

// readIncludedFile reads a file guard-policy.json includes as a JSON object.
func readIncludedFile(path string) (map[string]json.RawMessage, error) {
	text, err := readRulesFile(path, fmt.Sprintf(`restore %s (from a submodule: git submodule update --init), or take it out of "include" in guard-policy.json`, path))
	if err != nil {
		return nil, err
	}
	object, err := jsonObject(path, text)
	if err != nil {
		return nil, readError{err, fmt.Sprintf("fix %s (./smoke-test points at the problem)", path)}
	}
	return object, nil
}

// field reads fields[key] into v, if the key is there (written exactly so).
func field(fields map[string]json.RawMessage, key string, v any) error {
	raw, ok := fields[key]
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%q: %w", key, err)
	}
	return nil
}

// readRule reads a rule, with each @name of its lists replaced by that list.
func readRule(text json.RawMessage, lists map[string][]string) (*rule, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(text, &fields); err != nil {
		return nil, fmt.Errorf("a rule: %w", err)
	}
	r := &rule{targets: "all"}
	if _, ok := fields["default target"]; ok {
		r.defaultTarget = new(string)
	}
	err := errors.Join(
		field(fields, "id", &r.id), field(fields, "reason", &r.reason),
		field(fields, "instead", &r.instead), field(fields, "targets", &r.targets),
		field(fields, "skip", &r.skip), field(fields, "default target", r.defaultTarget),
		field(fields, "fork bomb", &r.forkBomb), field(fields, "min args", &r.minArgs),
		field(fields, "code from input", &r.codeFromInput),
	)
	for key, list := range map[string]**patterns{
		"command": &r.command, "option": &r.option, "not option": &r.notOption, "arg": &r.arg,
		"target": &r.target, "redirect": &r.redirect, "exec": &r.exec,
		"runs output of": &r.runsOutputOf, "piped to": &r.pipedTo, "input": &r.input,
		"subcommand": &r.subcommand,
	} {
		if _, ok := fields[key]; !ok || err != nil {
			continue
		}
		var names []string
		if err = field(fields, key, &names); err == nil {
			names, err = expand(names, lists, 0)
			*list = newPatterns(names)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("rule %s: %w", r.id, err)
	}
	return r, nil
}

func expand(names []string, lists map[string][]string, depth int) ([]string, error) {
	if depth > 100 {
		return nil, fmt.Errorf("the lists name each other in a loop")
	}
	out := make([]string, 0, len(names))
	for _, name := range names {
		if inner, ok := strings.CutPrefix(name, "@"); ok {
			expanded, err := expand(lists[inner], lists, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, expanded...)
		} else {
			out = append(out, name)
		}
	}
	return out, nil
}

// readCode reads "code", keeping the order of the keys with a *.
func (p *policy) readCode(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, &p.code); err != nil {
		return fmt.Errorf("code: %w", err)
	}
	decoder := json.NewDecoder(strings.NewReader(string(raw)))
	if _, err := decoder.Token(); err != nil { // {
		return err
	}
	for decoder.More() {
		key, err := decoder.Token()
		if err != nil {
			return err
		}
		var options []string
		if err := decoder.Decode(&options); err != nil {
			return err
		}
		if name := key.(string); strings.Contains(name, "*") {
			p.wildCode = append(p.wildCode, codeOptions{strings.Split(name, "*"), options})
		}
	}
	return nil
}

// twoDashes returns the rule, words and options that take a value of a
// program whose options take one dash or two alike (terraform -destroy,
// --destroy), all spelt with two: each option one name, never letters run
// together.
func (c *checker) twoDashes(r *rule, run *invocation) (*rule, []string, *patterns) {
	return r.long, twoDashed(run.args), c.policy.longValues[run.name]
}

// twoDashed returns words with each option of one dash spelt with two.
func twoDashed(words []string) []string {
	out := make([]string, len(words))
	for k, word := range words {
		if isOption(word) && word[1] != '-' {
			word = "-" + word
		}
		out[k] = word
	}
	return out
}

// longRule returns the rule with its options spelt with two dashes.
func longRule(r *rule) *rule {
	long := *r
	if r.option != nil {
		long.option = newPatterns(twoDashed(r.option.list))
	}
	if r.notOption != nil {
		long.notOption = newPatterns(twoDashed(r.notOption.list))
	}
	return &long
}

// commandRules are the rules that ask about a command name, and whether its
// options take one dash or two alike.
type commandRules struct {
	rules []*rule
	long  bool
}

// rulesFor returns the rules whose command fits name, or that name none, in
// order, and whether its options take one dash or two alike.
func (p *policy) rulesFor(name string) ([]*rule, bool) {
	p.cacheLock.Lock()
	defer p.cacheLock.Unlock()
	if found, ok := p.byCommand[name]; ok {
		return found.rules, found.long
	}
	if len(p.byCommand) > 1000 { // any name may come: keep the cache small
		clear(p.byCommand)
	}
	var found []*rule
	for _, r := range p.rules {
		if r.command == nil || r.command.matches(name) {
			found = append(found, r)
		}
	}
	long := p.oneDashOrTwo.matches(name)
	p.byCommand[name] = commandRules{found, long}
	return found, long
}

// codeOptions returns the options after which a shell or interpreter takes
// its code (-c).
func (p *policy) codeOptions(name string) []string {
	if options, ok := p.code[name]; ok {
		return options
	}
	for _, entry := range p.wildCode {
		if globMatches(name, entry.pieces) {
			return entry.options
		}
	}
	return nil
}

func basename(word string) string { return word[strings.LastIndexByte(word, '/')+1:] }

// isOption is whether word is -x, -xyz or --long (not -, --, or -1, which is a
// number).
func isOption(word string) bool {
	return len(word) > 1 && word[0] == '-' && !('0' <= word[1] && word[1] <= '9') && word != "--"
}

func isShort(word string) bool { return len(word) > 1 && word[0] == '-' && word[1] != '-' }

// valueAt returns where the first letter of a cluster that takes a value
// stands (0: none): in git checkout -qbNAME, b; the rest of the word is its
// value.
func valueAt(word string, withValue *patterns) int {
	for i, letter := range word {
		if i > 0 && withValue.written["-"+string(letter)] {
			return i
		}
	}
	return 0
}

// takesValue is whether the next word is the option's value: -C DIR, or -qb
// NAME.
func takesValue(word string, withValue *patterns) bool {
	if withValue == nil || len(withValue.list) == 0 {
		return false
	}
	if withValue.written[word] {
		return true
	}
	if !isShort(word) {
		return false
	}
	at := valueAt(word, withValue)
	_, size := utf8.DecodeLastRuneInString(word)
	return at > 0 && at == len(word)-size
}

// optionMatches is whether word is the option wanted: -f matches any cluster
// with an f (-rf) before a letter that takes a value (not -bfix); longer
// names match whole (=value aside).
func optionMatches(word, wanted string, withValue *patterns) bool {
	if utf8.RuneCountInString(wanted) == 2 && wanted != "--" {
		if !isShort(word) {
			return false
		}
		letters := word[1:]
		if withValue != nil && len(withValue.list) > 0 {
			if at := valueAt(word, withValue); at > 0 {
				_, size := utf8.DecodeRuneInString(word[at:])
				letters = word[1 : at+size]
			}
		}
		_, size := utf8.DecodeRuneInString(wanted)
		return strings.Contains(letters, wanted[size:])
	}
	name, _, _ := strings.Cut(word, "=")
	return word == wanted || name == wanted ||
		strings.Contains(wanted, "*") && globMatches(name, strings.Split(wanted, "*"))
}

// isAssignment is whether word starts with NAME=, NAME+= or NAME[...]=.
func isAssignment(word string) bool {
	i := 0
	for i < len(word) && (word[i] == '_' || 'A' <= word[i] && word[i] <= 'Z' ||
		'a' <= word[i] && word[i] <= 'z' || i > 0 && '0' <= word[i] && word[i] <= '9') {
		i++
	}
	if i == 0 {
		return false
	}
	if i < len(word) && word[i] == '[' {
		end := strings.IndexByte(word[i:], ']')
		if end < 0 {
			return false
		}
		i += end + 1
	}
	if i < len(word) && word[i] == '+' {
		i++
	}
	return i < len(word) && word[i] == '='
}

// --- Where a path points ----------------------------------------------------------

// normal returns the parts of an absolute path, with . and .. worked out.
func normal(path string) []string {
	var parts []string
	for part := range strings.SplitSeq(path, "/") {
		switch part {
		case "..":
			if len(parts) > 0 {
				parts = parts[:len(parts)-1]
			}
		case "", ".":
		default:
			parts = append(parts, part)
		}
	}
	return parts
}

func climbsOut(path string) bool {
	depth := 0
	for part := range strings.SplitSeq(path, "/") {
		switch part {
		case "..":
			depth--
			if depth < 0 {
				return true
			}
		case "", ".":
		default:
			depth++
		}
	}
	return false
}

func isWildcard(part string) bool {
	return strings.Trim(strings.TrimLeft(part, "."), "*?") == "" && strings.Contains(part, "*")
}

func hasPrefixParts(parts, prefix []string) bool {
	return len(parts) >= len(prefix) && slices.Equal(parts[:len(prefix)], prefix)
}

// fromHome writes $HOME/... and ${HOME}/... as ~/...
func fromHome(word string, whole bool) string {
	for _, home := range []string{"$HOME", "${HOME}"} {
		if whole && word == home || strings.HasPrefix(word, home+"/") {
			return "~" + word[len(home):]
		}
	}
	return word
}

// where returns the class of a path: inside, temp, remote, or one of the
// unsafe ones. here is the folder relative paths start from ("" when not
// known), project the project folder's parts, temp the temp folders' parts.
func where(word, here string, project []string, temp [][]string) string {
	if word == "" || word == "{}" {
		return "inside"
	}
	word = fromHome(word, true)
	if strings.Contains(word, "$") || strings.Contains(word, "{") && strings.Contains(word, ",") {
		return "unknown" // a variable, a substitution, or {a,b}
	}
	if strings.HasPrefix(word, "~") {
		if word != "~" && !strings.HasPrefix(word, "~/") {
			return "home" // ~user
		}
		if len(normal(word[1:])) <= 1 || climbsOut(word[min(2, len(word)):]) {
			return "home"
		}
		return "outside"
	}
	first, _, _ := strings.Cut(word, "/")
	if !strings.HasPrefix(word, "/") && strings.Contains(first, ":") {
		return "remote" // host:path
	}
	relative := !strings.HasPrefix(word, "/")
	if relative && here == "" {
		return "unknown"
	}
	path := word
	if relative {
		path = here + "/" + word
	}
	parts := normal(path)
	if len(parts) == 0 || len(parts) == 1 && isWildcard(parts[0]) {
		return "root"
	}
	if hasPrefixParts(parts, project) {
		rest := parts[len(project):]
		if len(rest) == 0 || len(rest) == 1 && isWildcard(rest[0]) {
			return "project"
		}
		return "inside"
	}
	if relative && here == "/"+strings.Join(project, "/") {
		return "parent" // climbed out of the project
	}
	if len(parts) == 1 {
		return "system"
	}
	for _, top := range temp {
		if hasPrefixParts(parts, top) && len(parts) > len(top) {
			return "temp"
		}
	}
	return "outside"
}

// secretForms returns a word, and the file it names in @file, name=@file and
// --opt=file.
func secretForms(word string) []string {
	forms := []string{word}
	if file, ok := strings.CutPrefix(word, "@"); ok {
		forms = append(forms, file)
	}
	if _, file, ok := strings.Cut(word, "=@"); ok {
		forms = append(forms, file)
	} else if _, file, ok := strings.Cut(word, "="); ok && strings.HasPrefix(word, "--") {
		forms = append(forms, file)
	}
	for i, form := range forms {
		forms[i] = fromHome(form, false)
	}
	return forms
}

// --- Checking ---------------------------------------------------------------------

// invocation is a simple command behind its wrappers: what runs, with which
// words.
type invocation struct {
	name     string // "" for a line of redirections only
	args     []string
	command  *simple
	code     []string   // shell code it runs: sh -c CODE, eval ..., a here-document
	execs    [][]string // the commands of find's -exec ... ;
	position int        // where it stands in its pipeline
	chdir    *string    // the folder a wrapper runs it in: env -C DIR
	// fromInput: it runs code it reads (xargs sh -c, parallel)
	fromInput bool
	// codeOnStdin: it runs the lines it reads (parallel alone)
	codeOnStdin bool
	// refusal: a program too large to check
	refusal *Refusal
}

// line is the simple commands of one piece of code, grouped by pipeline.
type line struct {
	defs      *defs
	pipelines map[int][]*invocation
	memo      map[memoKey]int // a position in a pipeline
}

// defs is the functions a piece of code may call: its own, and those of the
// code that runs it.
type defs struct {
	functions map[string]bool // every name defined
	parents   []int
	own       map[string]map[int]*group // by name, by scope
	exported  map[string]bool
	outer     *defs // the code that runs it (nil: none)
	outerAt   int   // the scope it runs from there
	passesAll bool  // all are passed on, as eval does, or only those exported, as bash -c does
	// values: the values of the variables set in it, by the forms that use
	// them ("$cmd", "${cmd}", ...)
	values map[string][]string
}

func newDefs(p *parser, outer *defs, outerAt int, passesAll bool) *defs {
	d := &defs{
		p.functions, p.parents, map[string]map[int]*group{}, map[string]bool{}, outer, outerAt, passesAll,
		assigned(p.commands),
	}
	// eval's functions last after it: their bodies are judged as they stand
	deferred := outer == nil || !passesAll
	for _, b := range p.bodies {
		if !b.closed || !deferred {
			continue
		}
		if d.own[b.name] == nil {
			d.own[b.name] = map[int]*group{}
		}
		g := d.own[b.name][b.scope]
		if g == nil {
			g = &group{}
			d.own[b.name][b.scope] = g
		}
		g.bodies = append(g.bodies, b)
		b.defs = d
		b.runs = []*invocation{}
	}
	return d
}

// knows is whether a function of this name may be defined (a quick test).
func (d *defs) knows(name string) bool {
	return d.functions[name] || d.outer != nil && d.outer.knows(name)
}

// export notes export -f NAME (declare -fx NAME): bash -c sees the function
// too.
func (d *defs) export(run *invocation) {
	if run.name != "export" && run.name != "declare" && run.name != "typeset" {
		return
	}
	if !slices.ContainsFunc(run.args, func(arg string) bool { return isShort(arg) && strings.Contains(arg, "f") }) {
		return
	}
	for _, arg := range positionals(run.args) {
		d.exported[arg] = true
	}
}

// groups returns the bodies a command name in scope may run, by where they
// are defined: its subshell, those around it, then the code that runs it
// (every false: those exported only).
func (d *defs) groups(name string, scope int, every bool) []*group {
	var found []*group
	if own := d.own[name]; own != nil && (every || d.exported[name]) {
		for at := scope; at >= 0; at = d.parents[at] {
			if g := own[at]; g != nil {
				found = append(found, g)
			}
		}
	}
	if d.outer != nil {
		found = append(found, d.outer.groups(name, d.outerAt, every && d.passesAll)...)
	}
	return found
}

type memoKey struct {
	what     string
	field    *patterns
	name     string
	pipeline int
}

func newLine(runs []*invocation, d *defs) *line {
	l := &line{d, map[int][]*invocation{}, map[memoKey]int{}}
	for _, run := range runs {
		members := l.pipelines[run.command.pipeline]
		run.position = len(members)
		l.pipelines[run.command.pipeline] = append(members, run)
	}
	return l
}

func (l *line) members(run *invocation) []*invocation {
	return l.pipelines[run.command.pipeline]
}

// checker makes one decision: the rules asked about each simple command in
// turn.
type checker struct {
	policy  *policy
	project []string
	here    string // where relative paths start ("" when not known)
	again   int    // words of commands judged again (maxAgain)
}

func newChecker(p *policy, cwd string) *checker {
	// "/" or none is no project: no path is inside it.
	if !strings.HasPrefix(cwd, "/") || len(normal(cwd)) == 0 {
		cwd = "/.project"
	}
	project := normal(cwd)
	return &checker{p, project, "/" + strings.Join(project, "/"), 0}
}

// check judges a piece of code; outer is the code that runs it (nil: none),
// from scope at, passing on all its functions (eval) or those exported.
func (c *checker) check(text string, depth int, outer *defs, at int, passesAll bool) *Refusal {
	if depth > maxDepth {
		return tooDeep
	}
	p := &parser{tokens: tokens(text), functions: map[string]bool{}, scope: -1}
	p.parse("")
	if p.tooDeep {
		return tooDeep
	}
	d := newDefs(p, outer, at, passesAll)
	runs := make([]*invocation, 0, len(p.commands))
	for _, command := range p.commands {
		run := c.unwrap(command.words, command)
		if values, ok := d.values[run.name]; ok {
			run = c.runVariable(run, values)
		}
		if b := command.body; b != nil && b.runs != nil {
			b.runs = append(b.runs, run) // runs where the function is called
		} else {
			runs = append(runs, run)
		}
		d.export(run)
	}
	l := newLine(runs, d)
	for _, run := range runs {
		if refusal := c.checkRun(run, l, depth); refusal != nil {
			return refusal
		}
	}
	return nil
}

func (c *checker) checkRun(run *invocation, l *line, depth int) *Refusal {
	if run.chdir != nil {
		return c.inFolder(run, l, depth)
	}
	c.followCd(run, l)
	if run.codeOnStdin {
		if text, ok := knownInput(run, l); ok { // echo 'make a' | parallel: that is its code
			run.fromInput, run.codeOnStdin = false, false
			run.code = append(run.code, text)
		}
	}
	if run.refusal != nil {
		return run.refusal
	}
	rules, long := c.policy.rulesFor(run.name)
	for _, r := range rules {
		if c.holds(r, run, l, long) {
			return &Refusal{r.id, r.reason, r.instead}
		}
	}
	if text, ok := fedText(run); ok {
		c.feed(run, l, text)
		if run.refusal != nil {
			return run.refusal
		}
	}
	here := c.here // a cd in code run by another shell does not last
	for _, code := range run.code {
		// eval runs code in this shell, with its functions; bash -c sees
		// only those exported
		refusal := c.check(code, depth+1, l.defs, run.command.scope, run.name == "eval")
		c.here = here
		if refusal != nil {
			return refusal
		}
	}
	for _, words := range run.execs {
		inner := c.unwrap(words, run.command)
		refusal := c.checkRun(inner, newLine([]*invocation{inner}, l.defs), depth+1)
		c.here = here
		if refusal != nil {
			return refusal
		}
	}
	if l.defs.knows(run.name) {
		return c.call(run, l, depth)
	}
	return nil
}

// runVariable is a command named by a variable set in the code ($cmd after
// cmd="rm -rf x"): the command of its first value, the others to be judged
// beside it.
func (c *checker) runVariable(run *invocation, values []string) *invocation {
	var commands [][]string
	for _, value := range values {
		words := append(splitString(value), run.args...)
		if c.again += len(words); c.again > maxAgain {
			run.refusal = tooManyAgain
			return run
		}
		commands = append(commands, words)
	}
	inner := c.unwrap(commands[0], run.command)
	if inner.chdir == nil {
		inner.chdir = run.chdir
	}
	inner.execs = append(inner.execs, commands[1:]...)
	return inner
}

// inFolder judges a command a wrapper runs in another folder (env -C DIR):
// its relative paths start there.
func (c *checker) inFolder(run *invocation, l *line, depth int) *Refusal {
	here, folder := c.here, *run.chdir
	run.chdir = nil
	switch {
	case strings.Contains(folder, "$") || strings.HasPrefix(folder, "~"):
		c.here = ""
	case strings.HasPrefix(folder, "/"):
		c.here = "/" + strings.Join(normal(folder), "/")
	case c.here != "":
		c.here = "/" + strings.Join(normal(c.here+"/"+folder), "/")
	}
	refusal := c.checkRun(run, l, depth)
	c.here = here
	return refusal
}

// call judges a function called: each body, where it is first called.
func (c *checker) call(run *invocation, l *line, depth int) *Refusal {
	for _, g := range l.defs.groups(run.name, run.command.scope, true) {
		if g.busy {
			continue
		}
		if g.checked == len(g.bodies) && g.moves {
			c.here = "" // where a cd leads this time is not followed
		}
		g.busy = true
		for g.checked < len(g.bodies) {
			if depth >= maxDepth {
				return tooDeep
			}
			b := g.bodies[g.checked]
			g.checked++
			here := c.here
			if b.line == nil {
				b.line = newLine(b.runs, b.defs)
			}
			for _, inner := range b.runs {
				if refusal := c.checkRun(inner, b.line, depth+1); refusal != nil {
					return refusal
				}
			}
			g.moves = g.moves || c.here != here
		}
		if refusal := c.forwarded(run, g, depth); refusal != nil {
			return refusal
		}
		g.busy = false
	}
	return nil
}

// forwarded judges the commands of the bodies that run their arguments
// ("$@", $1, ...) again, with the arguments of this call in their place.
func (c *checker) forwarded(run *invocation, g *group, depth int) *Refusal {
	for _, b := range g.bodies {
		for _, inner := range b.runs {
			words, found := withArguments(inner.command.words, run.args)
			if !found {
				continue
			}
			if depth >= maxDepth {
				return tooDeep
			}
			if c.again += len(words); c.again > maxAgain {
				return tooManyAgain
			}
			here := c.here
			fresh := c.unwrap(words, inner.command)
			if values, ok := b.defs.values[fresh.name]; ok {
				fresh = c.runVariable(fresh, values)
			}
			refusal := c.checkRun(fresh, newLine([]*invocation{fresh}, b.defs), depth+1)
			c.here = here
			if refusal != nil {
				return refusal
			}
		}
	}
	return nil
}

// followCd moves where later relative paths point after cd DIR.
func (c *checker) followCd(run *invocation, l *line) {
	if run.name != "cd" && run.name != "pushd" && run.name != "popd" {
		return
	}
	if run.command.nested || len(l.members(run)) > 1 {
		c.here = "" // (cd x); ... or cd x | ...: where it ends is not followed
		return
	}
	path := "~"
	if paths := positionals(run.args); len(paths) > 0 && run.name != "popd" {
		path = paths[0]
	}
	switch {
	case path == "-" || strings.Contains(path, "$") || strings.HasPrefix(path, "~"):
		c.here = ""
	case strings.HasPrefix(path, "/"):
		c.here = "/" + strings.Join(normal(path), "/")
	case c.here != "":
		c.here = "/" + strings.Join(normal(c.here+"/"+path), "/")
	}
	if utf8.RuneCountInString(c.here) > maxPath {
		c.here = "" // cd a; cd a; ...: too deep to follow
	}
}

// unwrap finds the command that runs, behind keywords, assignments and
// wrappers.
func (c *checker) unwrap(words []string, command *simple) *invocation {
	i, addsArgs := 0, false
	var state wrapperState
	for i < len(words) {
		word := words[i]
		if keywords[word] || isAssignment(word) {
			i++
			continue
		}
		w, ok := c.policy.wrappers[basename(word)]
		if !ok {
			break
		}
		i++
		for i < len(words) && (len(words[i]) > 1 && words[i][0] == '-' || slices.Contains(w.bare, words[i])) {
			i++
			if words[i-1] == "--" {
				break
			}
			if w.values != nil {
				words, i = wrapperOption(&w, words, i, &state)
			} else if w.withValue.has(words[i-1]) {
				i++
			}
		}
		if w.valueLists != nil {
			return c.parallel(&w, words, i, command, &state)
		}
		for w.assignments && i < len(words) && isAssignment(words[i]) {
			i++
		}
		i += w.args
		addsArgs = addsArgs || w.addsArgs
	}
	run := &invocation{command: command, chdir: state.chdir}
	if i < len(words) {
		run.name = basename(words[i])
		run.args = words[i+1 : len(words) : len(words)] // appending copies
	}
	if state.replace != "" { // xargs -I R: R stands for what xargs reads
		args := make([]string, len(run.args))
		for j, arg := range run.args {
			args[j] = strings.ReplaceAll(arg, state.replace, input)
		}
		run.args = args
	} else if addsArgs {
		run.args = append(run.args, input)
	}
	c.findCode(run)
	c.codeFromInput(run)
	return run
}

// wrapperState is what a wrapper's options say about the command it runs.
type wrapperState struct {
	chdir     *string // env -C DIR
	replace   string  // xargs -I R
	inputFile string  // xargs -a FILE: the values are not on its input
	splits    int     // how many env -S strings were split
}

// codeFromInput is whether a shell or interpreter runs what xargs reads:
// xargs sh -c.
func (c *checker) codeFromInput(run *invocation) {
	if !slices.Contains(run.args, input) {
		return
	}
	options, args := c.policy.codeOptions(run.name), run.args
	for i := 0; i+1 < len(args); i++ {
		for _, option := range options {
			if optionMatches(args[i], option, nil) {
				at := i + 1
				if args[i+1] == "--" && i+2 < len(args) {
					at = i + 2 // bash -c -- CODE
				}
				run.fromInput = args[at] == input
				return
			}
		}
	}
}

// parallel reads parallel CMD ::: VALUES: a shell runs CMD once for each
// value, in place of its {} (or after it); values from its input, or from
// the files of ::::, are unknown. With no CMD, each value is a command line.
func (c *checker) parallel(w *wrapper, words []string, i int, command *simple, state *wrapperState) *invocation {
	i = min(i, len(words)) // parallel -j: its value missing
	at := i
	for at < len(words) && w.valueLists[words[at]] == "" {
		at++
	}
	var values []string
	seen := map[string]bool{}
	unknown := at == len(words) // no ::: : the values come from its input
	kind := ""
	for _, word := range words[at:] {
		if list := w.valueLists[word]; list != "" {
			kind = list
		} else if kind != "words" {
			unknown = true
		} else if !seen[word] {
			seen[word] = true
			values = append(values, word)
		}
	}
	cmd := words[i:at]
	// too many to judge one by one: as unknown as values read from input
	if len(values) > maxValues || len(values)*utf8.RuneCountInString(strings.Join(cmd, " ")) > maxCommand {
		values, unknown = nil, true
	}
	if unknown {
		values = append(values, input)
	}
	run := &invocation{name: "parallel", command: command, chdir: state.chdir}
	// GNU parallel joins the command's words into one line; with -q, and
	// moreutils' parallel, they stay words (bash -c 'CODE'): both judged
	readings := [][]string{cmd}
	if slices.ContainsFunc(cmd, func(word string) bool { return strings.ContainsAny(word, quotedChars) }) {
		quotedWords := make([]string, len(cmd))
		for k, word := range cmd {
			quotedWords[k] = shellQuoted(word)
		}
		readings = append(readings, quotedWords)
	}
	for _, value := range values {
		for _, reading := range readings {
			code := value
			if len(cmd) > 0 {
				code = fill(reading, value, state.replace)
			}
			if code == input {
				run.fromInput = true
				// no values and no command: it runs the lines it reads
				run.codeOnStdin = at == len(words) && state.inputFile == ""
			} else {
				run.code = append(run.code, code)
			}
		}
	}
	return run
}

// optionValue returns the value of an option named in names (-C DIR, -CDIR,
// --chdir=DIR), and whether it is the next word; ok is false for another
// option.
func optionValue(option string, names []string, following string) (value string, next, ok bool) {
	if slices.Contains(names, option) {
		return following, true, true
	}
	if name, value, found := strings.Cut(option, "="); found && strings.HasPrefix(name, "--") && slices.Contains(names, name) {
		return value, false, true
	}
	if isShort(option) && len(option) > 2 && slices.Contains(names, option[:2]) {
		return option[2:], false, true
	}
	return "", false, false
}

// wrapperOption reads a wrapper's option words[i-1]: a folder to run in (env
// -C), a string split into words (env -S), a replacement string (xargs -I).
// It returns the words, and where the next option stands.
func wrapperOption(w *wrapper, words []string, i int, state *wrapperState) ([]string, int) {
	option, following := words[i-1], ""
	if i < len(words) {
		following = words[i]
	}
	replace := make([]string, 0, len(w.values.Replace))
	for name := range w.values.Replace {
		replace = append(replace, name)
	}
	for what, names := range [][]string{w.values.Chdir, w.values.SplitString, replace, w.values.InputFile} {
		value, next, ok := optionValue(option, names, following)
		if !ok {
			continue
		}
		if what == 2 && w.values.Replace[option] != "" {
			value, next = w.values.Replace[option], false // xargs -i: {}, no value
		}
		end := i
		if next {
			end = i + 1
		}
		switch {
		case what == 1 && state.splits < maxDepth:
			state.splits++ // the string's words come in its place
			split := append(words[:i-1:i-1], splitString(value)...)
			return append(split, words[min(end, len(words)):]...), i - 1
		case what == 0:
			state.chdir = &value
		case what == 2:
			state.replace = value
		case what == 3:
			state.inputFile = value
		}
		return words, end
	}
	if w.withValue.has(option) {
		i++
	}
	return words, i
}

// splitString returns the words of env -S's string: split at blanks, quotes
// and backslashes taken off.
func splitString(text string) []string {
	var words []string
	var word []byte
	started := false // a word has begun ('' is one)
	mode := ""       // the quote, or backslash, that the characters before opened
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case (mode == "'" || mode == `"`) && string(c) == mode:
			mode = ""
		case mode == `"` && c == '\\':
			mode = `"\`
		case mode != "":
			word = append(word, c)
			if mode == `"\` {
				mode = `"`
			} else if mode == `\` {
				mode = ""
			}
		case strings.IndexByte(" \t\n\v\f\r", c) >= 0:
			if started {
				words = append(words, string(word))
			}
			word, started = nil, false
		default:
			started = true
			if c == '\'' || c == '"' || c == '\\' {
				mode = string(c)
			} else {
				word = append(word, c)
			}
		}
	}
	if started {
		words = append(words, string(word))
	}
	return words
}

// fill returns parallel's command line for one value: in place of each {}
// (or of parallel -I's string), or after the command; the value quoted.
func fill(cmd []string, value, replace string) string {
	found := false
	out := make([]string, 0, len(cmd)+1)
	for _, word := range cmd {
		if replace != "" {
			found = found || strings.Contains(word, replace)
			word = strings.ReplaceAll(word, replace, shellQuoted(value))
		} else if parallelReplace.MatchString(word) {
			found = true
			word = parallelReplace.ReplaceAllStringFunc(word, func(m string) string {
				how := parallelReplace.FindStringSubmatch(m)[2]
				return shellQuoted(transformed(value, how))
			})
		}
		out = append(out, word)
	}
	if !found {
		out = append(out, shellQuoted(value))
	}
	return strings.Join(out, " ")
}

// transformed returns a value as {.}, {/}, {//}, {/.}, {#} or {%} give it.
func transformed(value, how string) string {
	switch {
	case value == input:
		return value
	case how == "#" || how == "%":
		return "1" // the job's or the slot's number
	case how == "//": // the folder
		path := strings.TrimRight(value, "/")
		switch {
		case path == "" && value != "":
			return "/"
		case !strings.Contains(path, "/"):
			return "."
		}
		if folder := strings.TrimRight(path[:strings.LastIndexByte(path, '/')], "/"); folder != "" {
			return folder
		}
		return "/"
	}
	if strings.HasPrefix(how, "/") {
		value = basename(value)
	}
	if strings.HasSuffix(how, ".") { // without its extension
		if dot := strings.LastIndexByte(value, '.'); dot >= 0 && !strings.Contains(value[dot:], "/") {
			value = value[:dot]
		}
	}
	return value
}

// shellQuoted returns a value as one word in shell code (what xargs or
// parallel read stays unknown).
func shellQuoted(value string) string {
	if value == input {
		return value
	}
	return "'" + strings.ReplaceAll(value, "'", `'\''`) + "'"
}

// positional is where a function's arguments stand in its body: "$@", $*,
// $1, ${2}, ...
var positional = regexp.MustCompile(`^\$([@*1-9]|\{([@*]|[1-9])\})$`)

// setters are the commands that set the variables they are given (export
// X=1).
var setters = []string{"export", "declare", "typeset", "local", "readonly"}

// assigned returns the values each variable is set to in the code (cmd="rm
// -rf x", also by export, declare, ...), by the name a command uses for it
// ("$cmd", "${cmd}"); an array's words as written (cmd=(rm -rf x)).
func assigned(commands []*simple) map[string][]string {
	var values map[string][]string // each name's values, once each, in order
	var seen map[[2]string]bool
	for _, command := range commands {
		words := command.words[command.keywords:]
		if len(words) > 0 && slices.Contains(setters, words[0]) {
			words = slices.DeleteFunc(slices.Clone(words[1:]), isOption)
		}
		if len(words) == 0 || slices.ContainsFunc(words, func(word string) bool { return !isAssignment(word) }) {
			continue
		}
		for _, word := range words {
			name, value, _ := strings.Cut(word, "=")
			if strings.Contains(name, "[") || strings.HasSuffix(name, "+") {
				continue // a[1]=x, a+=x: a part of a value
			}
			if len(value) > 1 && value[0] == '(' && value[len(value)-1] == ')' {
				value = value[1 : len(value)-1]
			}
			if values == nil { // most code sets no variable
				values, seen = map[string][]string{}, map[[2]string]bool{}
			}
			if !seen[[2]string{name, value}] {
				seen[[2]string{name, value}] = true
				values[name] = append(values[name], value)
			}
		}
	}
	if values == nil {
		return nil
	}
	forms := make(map[string][]string, 4*len(values))
	for name, list := range values {
		for _, form := range []string{"$" + name, "${" + name + "}", "${" + name + "[@]}", "${" + name + "[*]}"} {
			forms[form] = list
		}
	}
	return forms
}

// withArguments returns the words of a function's command with a call's
// arguments in place of "$@", $1, ...; false when it has none of them.
func withArguments(words, args []string) ([]string, bool) {
	var out []string
	found := false
	for _, word := range words {
		var match []string
		if strings.HasPrefix(word, "$") {
			match = positional.FindStringSubmatch(word)
		}
		if match == nil {
			out = append(out, word)
			continue
		}
		found = true
		which := match[2]
		if which == "" {
			which = match[1]
		}
		if which == "@" || which == "*" {
			out = append(out, args...)
		} else if n := int(which[0] - '0'); n <= len(args) {
			out = append(out, splitString(args[n-1])...)
		}
	}
	return out, found
}

// findCode finds the shell code a command runs: sh -c CODE, eval ..., find
// -exec ... ;
func (c *checker) findCode(run *invocation) {
	if run.name == "eval" {
		run.code = append(run.code, strings.Join(run.args, " "))
	}
	if c.policy.shells.matches(run.name) {
		options := c.policy.codeOptions(run.name)
		found := false
		for i := 0; i+1 < len(run.args) && !found; i++ {
			for _, option := range options {
				if optionMatches(run.args[i], option, nil) {
					code := run.args[i+1]
					if code == "--" && i+2 < len(run.args) {
						code = run.args[i+2] // bash -c -- CODE
					}
					run.code = append(run.code, code)
					found = true
					break
				}
			}
		}
		if !found && run.command.hasStdin && len(positionals(run.args)) == 0 {
			run.code = append(run.code, run.command.stdin) // bash <<EOF, bash <<< CODE
		}
	}
	if run.name == "find" {
		c.findPaths(run)
	}
	if c.policy.programs.names.matches(run.name) {
		c.findProgram(run)
	}
}

// findPaths puts find's folders first in its words (narrowed to NAME by
// -name NAME), its tests after them, and the commands of its -exec ... ;
// apart.
func (c *checker) findPaths(run *invocation) {
	args := run.args
	i := 0 // -H, -L, -P, -D opts, -O3: options before the folders
	for i < len(args) && slices.Contains([]string{"-H", "-L", "-P", "-D", "-O"}, args[i][:min(2, len(args[i]))]) {
		if args[i] == "-D" {
			i++
		}
		i++
	}
	start := i
	for i < len(args) && !isOption(args[i]) && args[i] != "(" && args[i] != "!" {
		i++
	}
	folders, tests := args[start:min(i, len(args))], slices.Clone(args[:min(start, len(args))])
	var execs [][]string
	name, named, widened := "", false, false
	for i < len(args) {
		switch arg := args[i]; {
		case arg == "-exec" || arg == "-execdir" || arg == "-ok" || arg == "-okdir":
			end := i + 1
			for end < len(args) && args[end] != ";" && args[end] != "+" {
				end++
			}
			execs = append(execs, args[i+1:end])
			i = end + 1
			continue
		case c.policy.widenedBy.has(arg):
			widened = true // -o, !: what the name does not match may be found too
		case c.policy.narrowedBy.has(arg) && !named && i+1 < len(args):
			name, named = args[i+1], true
		}
		tests = append(tests, args[i])
		i++
	}
	if named && !widened && !strings.ContainsAny(name, "*?[\\") {
		if len(folders) == 0 {
			folders = []string{"."}
		}
		narrowed := make([]string, len(folders))
		for k, folder := range folders {
			narrowed[k] = folder + "/" + name
		}
		folders = narrowed
	}
	run.args = append(slices.Clone(folders), tests...)
	paths := folders
	if len(paths) == 0 {
		paths = []string{"."}
	}
	for _, words := range execs { // the folders take the place of the first {}
		if at := slices.Index(words, "{}"); at >= 0 {
			words = append(append(slices.Clone(words[:at]), paths...), words[at+1:]...)
		}
		run.execs = append(run.execs, words)
	}
}

// holds is whether every field of r holds for run (long: its options take
// one dash or two alike).
func (c *checker) holds(r *rule, run *invocation, l *line, long bool) bool {
	if r.codeFromInput && !run.fromInput {
		return false
	}
	if r.forkBomb && !forkBomb(run, l) {
		return false
	}
	if r.redirect != nil && !slices.ContainsFunc(run.command.redirects, func(to redirect) bool {
		return to.op == ">" && c.hasClass(to.target, r.redirect)
	}) {
		return false
	}
	if r.exec != nil && !slices.ContainsFunc(run.execs, func(words []string) bool {
		return len(words) > 0 && r.exec.has(basename(words[0]))
	}) {
		return false
	}
	if r.runsOutputOf != nil && !slices.ContainsFunc(run.command.subs, func(sub *simple) bool {
		return r.runsOutputOf.matches(c.unwrap(sub.words, sub).name)
	}) {
		return false
	}
	if r.pipedTo != nil && !c.pipedTo(run, l, r.pipedTo) {
		return false
	}
	if r.input != nil && !c.inputHas(run, l, r.input) {
		return false
	}
	if r.subcommand == nil && r.option == nil && r.notOption == nil && r.arg == nil && r.target == nil && r.minArgs == 0 {
		return true // no field about its words
	}
	if long {
		return c.wordsHold(c.twoDashes(r, run))
	}
	return c.wordsHold(r, run.args, c.policy.optionValues[run.name])
}

// wordsHold is whether the rule's subcommand, option, arg and target fields
// hold for a command's words args; withValue: its options that take a value.
func (c *checker) wordsHold(r *rule, args []string, withValue *patterns) bool {
	if r.subcommand != nil {
		sub := subcommand(args, withValue)
		if sub < 0 || !r.subcommand.has(args[sub]) {
			return false
		}
		args = args[sub+1:]
	}
	args = fromIndex(args, r.skip)
	if r.option == nil && r.notOption == nil && r.arg == nil && r.target == nil && r.minArgs == 0 {
		return true
	}
	options, positionals, values := split(args, withValue)
	if r.option != nil && !anyOption(options, r.option, withValue) {
		return false
	}
	if r.notOption != nil && anyOption(options, r.notOption, withValue) {
		return false
	}
	if len(positionals) < r.minArgs {
		return false
	}
	if r.arg != nil && !slices.ContainsFunc(positionals, r.arg.matches) {
		return false
	}
	if r.target != nil {
		return slices.ContainsFunc(pickTargets(r, args, positionals, values), func(target string) bool {
			return c.hasClass(target, r.target)
		})
	}
	return true
}

// fromIndex returns list from i on; a negative i counts from the end.
func fromIndex(list []string, i int) []string {
	if i < 0 {
		i = max(0, len(list)+i)
	}
	return list[min(i, len(list)):]
}

func anyOption(options []string, wanted, withValue *patterns) bool {
	for _, option := range options {
		for _, w := range wanted.list {
			if optionMatches(option, w, withValue) {
				return true
			}
		}
	}
	return false
}

// fedText is what echo or printf prints, or cat of its here-document (cat
// <<EOF).
func fedText(run *invocation) (string, bool) {
	switch {
	case run.name == "printf":
		return printfText(run.args), true
	case run.name == "echo":
		words, escapes := run.args, false
		for len(words) > 0 && slices.Contains([]string{"-e", "-n", "-E", "-ne", "-en"}, words[0]) {
			escapes = strings.Contains(words[0], "e") // echo -e: \n is a new line
			words = words[1:]
		}
		if escapes {
			return ansiCText(strings.Join(words, " ")), true
		}
		return strings.Join(words, " "), true
	case run.name == "cat" && len(run.args) == 0 && run.command.hasStdin:
		return run.command.stdin, true
	}
	return "", false
}

// directive is a directive of printf's format: %s, %-10s, %d, %%, ...
var directive = regexp.MustCompile(`%(%|[-+ #0]*[0-9]*(\.[0-9]*)?[a-zA-Z])`)

// printfText is what printf prints: its format, escapes read, with an
// argument in place of each directive, again while arguments are left (past
// maxCommand characters, the arguments left follow as they are).
func printfText(args []string) string {
	if len(args) == 0 {
		return ""
	}
	form, rest := ansiCText(args[0]), args[1:]
	var out strings.Builder
	size := 0
	for {
		used := len(rest)
		text := directive.ReplaceAllStringFunc(form, func(m string) string { return printfValue(m, &rest) })
		out.WriteString(text)
		size += utf8.RuneCountInString(text)
		if len(rest) == 0 || used == len(rest) {
			return out.String()
		}
		if size > maxCommand {
			return out.String() + " " + strings.Join(rest, " ")
		}
	}
}

// printfValue is what one directive of printf's format prints: %% a %, else
// the next argument (none left: nothing).
func printfValue(m string, rest *[]string) string {
	if m == "%%" {
		return "%"
	}
	if len(*rest) == 0 {
		return ""
	}
	value := (*rest)[0]
	*rest = (*rest)[1:]
	return value
}

// knownInput is what a command reads, when the line says: its
// here-document, or what echo, printf or cat <<EOF before it in its pipeline
// prints.
func knownInput(run *invocation, l *line) (string, bool) {
	if run.command.hasStdin {
		return run.command.stdin, true
	}
	if run.position == 0 || slices.ContainsFunc(run.command.redirects, func(r redirect) bool { return r.op == "<" }) {
		return "", false
	}
	return fedText(l.members(run)[run.position-1])
}

// forkBomb is whether run is a function defined here, run twice in one
// pipeline: name() { name | name & }.
func forkBomb(run *invocation, l *line) bool {
	if !l.defs.functions[run.name] {
		return false
	}
	key := memoKey{what: "fork bomb", name: run.name, pipeline: run.command.pipeline}
	count, ok := l.memo[key]
	if !ok {
		for _, other := range l.members(run) {
			if other.name == run.name {
				count++
			}
		}
		l.memo[key] = count
	}
	return count > 1
}

func (c *checker) hasClass(word string, classes *patterns) bool {
	if classes.has("secret") {
		forms := secretForms(word)
		if slices.ContainsFunc(forms, c.policy.secrets.matches) &&
			!slices.ContainsFunc(forms, c.policy.notSecrets.matches) {
			return true
		}
	}
	if classes.has("device") && c.policy.devices.matches(word) {
		return true
	}
	return classes.has(where(word, c.here, c.project, c.policy.temp))
}

// inputHas is whether what the command reads (< FILE, or earlier in its
// pipeline) has a class.
func (c *checker) inputHas(run *invocation, l *line, classes *patterns) bool {
	if c.readsClass(run, classes) {
		return true
	}
	key := memoKey{what: "input", field: classes, pipeline: run.command.pipeline}
	first, ok := l.memo[key]
	if !ok { // the first member that reads or names such a file
		members := l.members(run)
		first = len(members)
		for _, other := range members {
			if c.namesClass(other, classes) || c.readsClass(other, classes) {
				first = other.position
				break
			}
		}
		l.memo[key] = first
	}
	return first < run.position
}

// namesClass is whether a word of run that is not an option has a class.
func (c *checker) namesClass(run *invocation, classes *patterns) bool {
	for _, arg := range run.args {
		if !isOption(arg) && c.hasClass(arg, classes) {
			return true
		}
	}
	return false
}

// readsClass is whether run reads a file of a class (< FILE).
func (c *checker) readsClass(run *invocation, classes *patterns) bool {
	return slices.ContainsFunc(run.command.redirects, func(from redirect) bool {
		return from.op == "<" && c.hasClass(from.target, classes)
	})
}

// pipedTo is whether a later command of the pipeline runs the program it
// reads.
func (c *checker) pipedTo(run *invocation, l *line, names *patterns) bool {
	key := memoKey{what: "piped to", field: names, pipeline: run.command.pipeline}
	last, ok := l.memo[key]
	if !ok { // the last member that runs what it reads
		last = -1
		for _, other := range l.members(run) {
			if names.matches(other.name) && c.readsProgram(other) {
				last = other.position
			}
		}
		l.memo[key] = last
	}
	return last > run.position
}

// readsProgram is whether an interpreter takes its program from its standard
// input.
func (c *checker) readsProgram(run *invocation) bool {
	options := c.policy.codeOptions(run.name)
	for _, arg := range run.args {
		if isOption(arg) && slices.ContainsFunc(options, func(o string) bool { return optionMatches(arg, o, nil) }) {
			return false
		}
	}
	first := "-"
	if words := positionals(run.args); len(words) > 0 {
		first = words[0]
	}
	return first == "-" || first == "/dev/stdin" || slices.Contains(run.args, "-s")
}

// positionals returns the words that are not options.
func positionals(args []string) []string {
	var out []string
	for _, arg := range args {
		if !isOption(arg) {
			out = append(out, arg)
		}
	}
	return out
}

// leading returns the words before the first option (find's paths).
func leading(args []string) []string {
	for i, arg := range args {
		if isOption(arg) || arg == "(" || arg == "!" {
			return args[:i]
		}
	}
	return args
}

// subcommand returns where the first word that is not an option stands (git's
// push, ...), or -1.
func subcommand(args []string, withValue *patterns) int {
	for i := 0; i < len(args); {
		switch {
		case takesValue(args[i], withValue):
			i += 2
		case isOption(args[i]):
			i++
		default:
			return i
		}
	}
	return -1
}

// split returns the options, the positional words, and the values of
// --name=value options.
func split(args []string, withValue *patterns) (options, positionals, values []string) {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			options = append(options, arg)
			positionals = append(positionals, args[i+1:]...)
			break
		}
		if !isOption(arg) {
			positionals = append(positionals, arg)
			continue
		}
		options = append(options, arg)
		if takesValue(arg, withValue) {
			i++
		} else if _, value, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(arg, "--") {
			values = append(values, value)
		}
	}
	return options, positionals, values
}

// pickTargets returns the words a rule's "target" looks at, by its "targets".
func pickTargets(r *rule, args, positionals, values []string) []string {
	var found []string
	switch r.targets {
	case "leading":
		found = leading(args)
	case "last":
		found = positionals[max(0, len(positionals)-1):]
	case "after first":
		found = positionals[min(1, len(positionals)):]
	case "all":
		found = append(slices.Clone(positionals), values...)
	default:
		for _, arg := range args {
			if value, ok := strings.CutPrefix(arg, r.targets); ok {
				found = append(found, value)
			}
		}
	}
	if len(found) == 0 && r.defaultTarget != nil {
		found = []string{*r.defaultTarget}
	}
	return found
}

// --- Code run by an interpreter -----------------------------------------------------
//
// python -c CODE, node -e CODE, perl -e CODE, ruby -e CODE, or a program read
// from a here-document: the guard reads the program's tokens (names, string
// literals, punctuation), not its meaning. A call of guard-rules.json's
// "programs" that runs a command is judged as that command (one string as
// bash -c STRING), and one that deletes files as rm with the call's paths.

// unknownValue is what a value the code computes leaves in a string.
const unknownValue = "$_"

// A program with more calls that run commands or delete files is refused:
// checking it could take too long. A call's arguments are read up to
// maxCallTokens tokens.
const (
	maxCalls      = 64
	maxCallTokens = 128
)

var tooManyCalls = &Refusal{
	"too-many-calls",
	fmt.Sprintf("a program with more than %d calls that run commands or delete files, too many to check", maxCalls),
	"write the script to a file and run that",
}

// grammars are the languages whose programs are read, in the order asked.
var grammars = []string{"python", "node", "perl", "ruby"}

var pyPrefixes = map[string]bool{"r": true, "u": true, "b": true, "f": true, "br": true, "rb": true, "fr": true, "rf": true}

var closing = map[string]string{"(": ")", "[": "]", "{": "}", "<": ">", "/": "/", "|": "|", "!": "!"}

// callEnds are the words that end a perl or ruby call written without ( ).
var callEnds = map[string]bool{"if": true, "unless": true, "or": true, "and": true, "do": true, "while": true, "until": true}

// programLanguage is one language of "programs": its interpreters, the
// options that take its code, and the calls it knows.
type programLanguage struct {
	names, code, withValue, lastOption *patterns
	calls                              [3]*patterns // runs, deletes, deletes files
	codeAttached                       bool         // -cCODE: the code may follow its option in the word
	pathObjects                        *patterns    // Path("x") is "x"
}

var callKinds = [3]string{"runs", "deletes", "deletes files"}

type programs struct {
	names     *patterns // every language's interpreters
	languages map[string]*programLanguage
	deleteAs  map[string][]string
}

// readPrograms reads "programs".
func (p *policy) readPrograms(raw json.RawMessage) error {
	var data struct {
		DeleteAs  map[string][]string                   `json:"delete as"`
		Languages map[string]map[string]json.RawMessage `json:"languages"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &data); err != nil {
			return fmt.Errorf("%s has a field of the wrong type (programs: %v)", rulesFile, err)
		}
	}
	p.programs = programs{languages: map[string]*programLanguage{}, deleteAs: data.DeleteAs}
	var names []string
	for _, grammar := range grammars {
		fields := data.Languages[grammar]
		spec := map[string][]string{}
		for _, key := range append([]string{"names", "code", "options with value", "last option", "path objects"}, callKinds[:]...) {
			var list []string
			if err := field(fields, key, &list); err != nil {
				return fmt.Errorf("%s has a field of the wrong type (programs %s: %v)", rulesFile, grammar, err)
			}
			spec[key] = list
		}
		language := &programLanguage{
			names: newPatterns(spec["names"]), code: newPatterns(spec["code"]),
			withValue: newPatterns(spec["options with value"]), lastOption: newPatterns(spec["last option"]),
			codeAttached: true, pathObjects: newPatterns(spec["path objects"]),
		}
		if err := field(fields, "code attached", &language.codeAttached); err != nil {
			return fmt.Errorf("%s has a field of the wrong type (programs %s: %v)", rulesFile, grammar, err)
		}
		for k, kind := range callKinds {
			language.calls[k] = newPatterns(spec[kind])
		}
		p.programs.languages[grammar] = language
		names = append(names, spec["names"]...)
	}
	p.programs.names = newPatterns(names)
	return nil
}

// findProgram adds the commands a program run by python -c, node -e, ...
// hands to a shell or runs, and the files it deletes, as shell code.
func (c *checker) findProgram(run *invocation) {
	grammar, language := c.language(run.name)
	if language == nil {
		return
	}
	if code, ok := programCode(run, language, run.command.stdin, run.command.hasStdin); ok {
		c.readProgram(run, code, grammar, language)
	}
}

// language is the grammar and the "programs" entry of interpreter name.
func (c *checker) language(name string) (string, *programLanguage) {
	for _, grammar := range grammars {
		if language := c.policy.programs.languages[grammar]; language.names.matches(name) {
			return grammar, language
		}
	}
	return "", nil
}

// readProgram adds to run's code what program code hands to a shell or runs,
// and the files it deletes, as shell code (too many calls: a refusal).
func (c *checker) readProgram(run *invocation, code, grammar string, language *programLanguage) {
	tokens := withPaths(programTokens(code, grammar), language.pathObjects)
	found, ok := programCommands(tokens, language, grammar, c.policy.programs.deleteAs)
	if ok {
		run.code = append(run.code, found...)
	} else if run.refusal == nil {
		run.refusal = tooManyCalls
	}
}

// feed judges text printed into a later command of the pipeline that runs
// what it reads: shell code (echo 'CODE' | sh, cat <<EOF | bash), or the
// program of an interpreter (echo 'CODE' | python3).
func (c *checker) feed(run *invocation, l *line, text string) {
	if c.pipedTo(run, l, c.policy.shells) {
		run.code = append(run.code, text)
	}
	for _, other := range l.members(run) {
		if other.position <= run.position || other.command.hasStdin || !c.policy.programs.names.matches(other.name) {
			continue
		}
		grammar, language := c.language(other.name)
		if language == nil {
			continue
		}
		if _, own := programCode(other, language, "", false); !own {
			if code, ok := programCode(other, language, text, true); ok && code != "" {
				c.readProgram(run, text, grammar, language)
			}
		}
	}
}

type programToken struct {
	kind byte // 'n' a name, 's' a string's value, 'x' a command literal's, 'p' punctuation
	text string
}

func isWordStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isWordByte(c byte) bool { return isWordStart(c) || '0' <= c && c <= '9' }

// pieces splits code into names (os.system, .execSync, File::Path::rmtree),
// => and ==, escapes (a backslash and the next character), runs of blanks,
// and single characters.
func pieces(code string) []string {
	var out []string
	n := len(code)
	wordAt := func(j int) bool { return j < n && isWordStart(code[j]) }
	for i := 0; i < n; {
		c := code[i]
		j := i
		switch {
		case isWordStart(c) || c == '.' && wordAt(i+1) || c == ':' && i+1 < n && code[i+1] == ':' && wordAt(i+2):
			for {
				if code[j] == '.' {
					j++
				} else if code[j] == ':' {
					j += 2
				}
				for j < n && isWordByte(code[j]) {
					j++
				}
				if !(j < n && (code[j] == '.' && wordAt(j+1) || code[j] == ':' && j+1 < n && code[j+1] == ':' && wordAt(j+2))) {
					break
				}
			}
		case (c == '=') && i+1 < n && (code[i+1] == '>' || code[i+1] == '='):
			j = i + 2
		case c == '\\' && i+1 < n:
			_, size := utf8.DecodeRuneInString(code[i+1:])
			j = i + 1 + size
		case c == ' ' || c == '\t':
			for j < n && (code[j] == ' ' || code[j] == '\t') {
				j++
			}
		default:
			_, size := utf8.DecodeRuneInString(code[i:])
			j = i + size
		}
		out = append(out, code[i:j])
		i = j
	}
	return out
}

// programTokens reads a program's tokens: names, string literals' values,
// command literals' (`...`, qx(...), %x(...)) and punctuation.
func programTokens(code, grammar string) []programToken {
	ps := pieces(code)
	var out []programToken
	n := len(ps)
	node := grammar == "node"
	at := func(i int) string {
		if i < n {
			return ps[i]
		}
		return ""
	}
	for i := 0; i < n; {
		piece, following := ps[i], at(i+1)
		i++
		switch {
		case piece[0] == ' ' || piece[0] == '\t' || piece[0] == '\r':
		case piece == "\n":
			if grammar == "perl" || grammar == "ruby" {
				out = append(out, programToken{'p', ";"}) // a line ends a statement
			}
		case piece == "#" && !node || node && piece+following == "//":
			for i < n && ps[i] != "\n" {
				i++ // a comment
			}
		case node && piece+following == "/*":
			i++
			for i < n && !(ps[i-1] == "*" && ps[i] == "/") {
				i++
			}
			i++
		case piece == "'" || piece == "\"" || piece == "`":
			if grammar == "python" && piece == "`" {
				out = append(out, programToken{'p', piece})
				continue
			}
			i = quoted(ps, i, piece, grammar, "", &out)
		case grammar == "python" && pyPrefixes[strings.ToLower(piece)] && (following == "'" || following == "\""):
			i = quoted(ps, i+1, following, grammar, strings.ToLower(piece), &out)
		case grammar == "perl" && (piece == "q" || piece == "qq" || piece == "qx") && closing[following] != "":
			i = quoted(ps, i+1, following, grammar, piece, &out)
		case grammar == "ruby" && piece == "%" && (following == "x" || following == "q" || following == "Q") &&
			closing[at(i+1)] != "":
			i = quoted(ps, i+2, ps[i+1], grammar, "%"+following, &out)
		case isWordStart(piece[0]) || (piece[0] == '.' || piece[0] == ':') && len(piece) > 1:
			out = append(out, programToken{'n', piece})
		default:
			out = append(out, programToken{'p', piece})
		}
	}
	return out
}

// quoted reads a string or command literal from ps[i] (after its opening
// quote): its value goes to out, and where it ends is returned. prefix is how
// it was started: r, f, ... (python), q, qq, qx (perl), %q, %Q, %x (ruby).
func quoted(ps []string, i int, quote, grammar, prefix string, out *[]programToken) int {
	n := len(ps)
	at := func(i int) string {
		if i < n {
			return ps[i]
		}
		return ""
	}
	closeWith := quote
	if last := prefix[max(0, len(prefix)-1):]; last == "q" || last == "Q" || last == "x" {
		closeWith = closing[quote]
	}
	triple := grammar == "python" && at(i) == quote && at(i+1) == quote
	if triple {
		i += 2
	}
	perlish := grammar == "perl" || grammar == "ruby"
	single := quote == "'" && perlish || prefix == "q" || prefix == "%q"
	raw := grammar == "python" && strings.Contains(prefix, "r")
	command := quote == "`" && perlish || prefix == "qx" || prefix == "%x"
	interpolates := !single && (perlish || grammar == "node" && quote == "`" ||
		grammar == "python" && strings.Contains(prefix, "f"))
	kind := byte('s')
	if command {
		kind = 'x'
	}
	var value strings.Builder
	for i < n {
		piece, following := ps[i], at(i+1)
		i++
		switch {
		case piece == closeWith && (!triple || at(i) == closeWith && at(i+1) == closeWith):
			if triple {
				i += 2
			}
			*out = append(*out, programToken{kind, value.String()})
			return i
		case piece[0] == '\\' && len(piece) > 1:
			escaped := piece[1:]
			switch {
			case raw || single && escaped != "\\" && escaped != closeWith:
				value.WriteString(piece)
			case escaped == "n":
				value.WriteString("\n")
			case escaped == "t":
				value.WriteString("\t")
			default:
				value.WriteString(escaped)
			}
		case !interpolates:
			value.WriteString(piece)
		case grammar == "python" && (piece == "{" || piece == "}") && following == piece:
			value.WriteString(piece) // {{ and }} in an f-string
			i++
		case piece == "{" && grammar == "python" || following == "{" &&
			(piece == "$" && (grammar == "node" || grammar == "perl") || piece == "#" && grammar == "ruby" ||
				piece == "@" && grammar == "perl"):
			for i < n && ps[i] != "}" {
				i++ // {...}, ${...}, #{...}: a value the code computes
			}
			i++
			value.WriteString(unknownValue)
		case grammar == "perl" && (piece == "$" || piece == "@") && following != "" && isWordStart(following[0]):
			value.WriteString(unknownValue) // "$dir/x": a variable's value
			i++
		default:
			value.WriteString(piece)
		}
	}
	*out = append(*out, programToken{kind, value.String()})
	return n
}

// programCode returns the program an interpreter runs: the values of its code
// options (python -c CODE), or stdin, the text it reads, when it reads its
// program there (hasStdin: it reads a text that is known).
func programCode(run *invocation, language *programLanguage, stdin string, hasStdin bool) (string, bool) {
	var codes []string
	args := run.args
	script, hasScript := "", false
	for i := 0; i < len(args); {
		arg := args[i]
		i++
		if arg == "--" {
			if i < len(args) {
				script, hasScript = args[i], true
			}
			break
		}
		if !isOption(arg) {
			script, hasScript = arg, true
			break
		}
		if found, value, inWord := codeOptionValue(arg, language.code, language.withValue); found {
			if !language.codeAttached && !strings.HasPrefix(arg, "--") {
				inWord = false // node -pe CODE
			}
			if !inWord && i < len(args) {
				value, inWord = args[i], true
				i++
			}
			if inWord {
				codes = append(codes, value)
			}
		} else if found, _, _ := codeOptionValue(arg, language.lastOption, language.withValue); found {
			return strings.Join(codes, "\n"), len(codes) > 0 // python -m MODULE ...
		} else if takesValue(arg, language.withValue) {
			i++
		}
	}
	if len(codes) > 0 {
		return strings.Join(codes, "\n"), true
	}
	if hasStdin && (!hasScript || script == "-" || script == "/dev/stdin") {
		return stdin, true // python3 <<EOF, perl <<< CODE, echo CODE | ruby
	}
	return "", false
}

// codeOptionValue is whether arg is one of the code options wanted, and its
// value when it is in the word (-cCODE, --eval=CODE).
func codeOptionValue(arg string, wanted, withValue *patterns) (found bool, value string, inWord bool) {
	if strings.HasPrefix(arg, "--") {
		for _, option := range wanted.list {
			if arg == option {
				return true, "", false
			}
			if strings.HasPrefix(option, "--") && strings.HasPrefix(arg, option+"=") {
				return true, arg[len(option)+1:], true
			}
		}
		return false, "", false
	}
	for k, letter := range arg {
		if k == 0 {
			continue
		}
		if wanted.has("-" + string(letter)) {
			rest := arg[k+utf8.RuneLen(letter):]
			return true, rest, rest != ""
		}
		if withValue.has("-" + string(letter)) {
			break // the rest of the word is that option's value
		}
	}
	return false, "", false
}

// programCommands returns the shell code of the calls in a program that run a
// command or delete files; false when there are too many to check.
func programCommands(tokens []programToken, language *programLanguage, grammar string, deleteAs map[string][]string) ([]string, bool) {
	var found []string
	calls := 0
	for i, token := range tokens {
		if token.kind == 'x' {
			if calls++; calls > maxCalls {
				return nil, false
			}
			found = append(found, token.text) // `...`: run by a shell
			continue
		}
		if token.kind != 'n' {
			continue
		}
		what := -1
		for k := range callKinds {
			if language.calls[k].matches(token.text) {
				what = k
				break
			}
		}
		if what < 0 {
			continue
		}
		args, called := callArgs(tokens, i+1, grammar)
		if !called {
			continue
		}
		if calls++; calls > maxCalls {
			return nil, false
		}
		var words []string
		values, lists := 0, 0
		if token.text[0] == '.' && what > 0 && i > 0 && tokens[i-1].kind == 's' {
			words, values = []string{tokens[i-1].text}, 1 // Path("x").unlink()
			args = nil
		}
		for _, arg := range args {
			if !isValue(arg) {
				continue
			}
			isList, each := argValues(arg)
			values++
			if isList {
				lists++
			}
			words = append(words, each...)
		}
		if what == 0 && values == 1 && lists == 0 {
			found = append(found, words[0]) // one string: a shell runs it
		} else if len(words) > 0 {
			var quotedWords []string
			if what > 0 {
				words = append(slices.Clone(deleteAs[callKinds[what]]), words...)
			}
			for _, word := range words {
				quotedWords = append(quotedWords, shellQuoted(word))
			}
			found = append(found, strings.Join(quotedWords, " "))
		}
	}
	return found, true
}

func isPunct(token programToken, texts ...string) bool {
	return token.kind == 'p' && slices.Contains(texts, token.text)
}

// withPaths returns the tokens with each path object made of a string
// (Path("x")) as that string.
func withPaths(tokens []programToken, makers *patterns) []programToken {
	out := make([]programToken, 0, len(tokens))
	for i := 0; i < len(tokens); i++ {
		if tokens[i].kind == 'n' && makers.matches(tokens[i].text) && i+3 < len(tokens) &&
			isPunct(tokens[i+1], "(") && tokens[i+2].kind == 's' && isPunct(tokens[i+3], ")") {
			out = append(out, tokens[i+2])
			i += 3
		} else {
			out = append(out, tokens[i])
		}
	}
	return out
}

// callArgs returns the arguments of a call whose name ends before tokens[i],
// each a list of tokens; false when the name is not called there.
func callArgs(tokens []programToken, i int, grammar string) ([][]programToken, bool) {
	parens := i < len(tokens) && isPunct(tokens[i], "(")
	if parens {
		i++
	} else if grammar != "perl" && grammar != "ruby" {
		return nil, false
	}
	args := [][]programToken{nil}
	depth := 0
	for start := i; i < len(tokens); i++ {
		if i-start == maxCallTokens {
			args[len(args)-1] = append(args[len(args)-1], programToken{'p', "..."}) // the rest: taken as computed
			break
		}
		token := tokens[i]
		switch {
		case isPunct(token, "(", "[", "{"):
			depth++
		case isPunct(token, ")", "]", "}"):
			if depth == 0 {
				return args, true
			}
			depth--
		case isPunct(token, ";"):
			if depth == 0 && !parens {
				return args, true
			}
			continue // a line break inside ( ) or [ ]
		case depth == 0 && isPunct(token, ","):
			args = append(args, nil)
			continue
		case depth == 0 && !parens && token.kind == 'n' && callEnds[token.text]:
			return args, true
		}
		args[len(args)-1] = append(args[len(args)-1], token)
	}
	return args, true
}

// isValue is whether an argument can be a command's word or a path: not an
// object or hash ({...}), a function (=>, function, lambda), or a keyword
// argument (shell=True, exception: true).
func isValue(arg []programToken) bool {
	if len(arg) == 0 || isPunct(arg[0], "{") {
		return false
	}
	for _, token := range arg {
		if isPunct(token, "=>") || token.kind == 'n' && (token.text == "function" || token.text == "lambda") {
			return false
		}
	}
	return !(len(arg) > 1 && arg[0].kind == 'n' && isPunct(arg[1], "=", ":"))
}

// argValues returns whether an argument is a list ([...]), and its values.
func argValues(arg []programToken) (bool, []string) {
	if !(isPunct(arg[0], "[") && isPunct(arg[len(arg)-1], "]")) {
		return false, []string{valueOf(arg)}
	}
	items := [][]programToken{nil}
	depth := 0
	for _, token := range arg[1 : len(arg)-1] {
		switch {
		case isPunct(token, "(", "[", "{"):
			depth++
		case isPunct(token, ")", "]", "}"):
			depth--
		case depth == 0 && isPunct(token, ","):
			items = append(items, nil)
			continue
		}
		items[len(items)-1] = append(items[len(items)-1], token)
	}
	var values []string
	for _, item := range items {
		if len(item) > 0 {
			values = append(values, valueOf(item))
		}
	}
	return true, values
}

// valueOf returns the text of string literals, with unknownValue for what the
// code computes.
func valueOf(tokens []programToken) string {
	var out strings.Builder
	computed := false
	for _, token := range tokens {
		if token.kind == 's' {
			out.WriteString(token.text)
			computed = false
		} else if !computed {
			out.WriteString(unknownValue)
			computed = true
		}
	}
	return out.String()
}
