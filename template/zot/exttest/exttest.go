// Package exttest plays zot for an extension's unit tests: it starts the
// extension in the test binary, as zot starts it, and talks to it in JSON
// lines, so a test calls a command or a tool by the name zot knows it by,
// whatever the function behind it is called. It works with zot's Go SDK and
// with the standard-library runtime alike. It comes from the template, and
// `copier update` brings its fixes.
//
// main_test.go starts it once for all tests:
//
//	var zot *exttest.Zot
//
//	func TestMain(m *testing.M) {
//		zot = exttest.Start(extension.Run)
//		code := m.Run()
//		zot.Stop()
//		os.Exit(code)
//	}
//
// It plays a newer zot, or zot 0.1.62 with exttest.Start(extension.Run,
// exttest.OldHost()). Its own tools, which the extension calls with
// CallTool, answer what a test gives them (AnswerTool), and it records the
// calls (CalledTools).
package exttest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// How long a test waits for the extension: far longer than it should take.
const timeout = 10 * time.Second

// The pipes to the extension. An extension may take os.Stdin, os.Stdout
// and os.Stderr when it is made, as a package variable of main, so they are
// swapped here, before package main is initialized; Start gives os.Stdout
// back to the tests, and keeps what the extension logs (Log).
var (
	stdin, stdout, stderr  = os.Stdin, os.Stdout, os.Stderr
	toExtension            *os.File // zot's end of the extension's stdin
	fromExtension, fromLog *os.File // zot's end of its stdout and stderr
)

func init() {
	var err error
	var in, out, log *os.File
	if in, toExtension, err = os.Pipe(); err == nil {
		if fromExtension, out, err = os.Pipe(); err == nil {
			fromLog, log, err = os.Pipe()
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "exttest: no pipes to the extension:", err)
		os.Exit(1)
	}
	os.Stdin, os.Stdout, os.Stderr = in, out, log
}

// Zot is zot as the extension sees it, after the handshake.
type Zot struct {
	// Project is zot's project folder (hello_ack's cwd), an empty folder of
	// its own; DataDir is the extension's data folder, another.
	Project, DataDir string
	// Commands and Tools are what the extension registered.
	Commands, Tools []string

	old      bool // plays zot 0.1.62
	ids      atomic.Int64
	writing  sync.Mutex
	mu       sync.Mutex
	waiting  map[string]chan []byte // replies, by request id
	running  map[string]string      // the tool calls under way: their tool, by id
	frames   []Frame                // sent by the extension on its own
	arrived  chan struct{}          // a frame was added to frames
	problem  string                 // a line that is not a JSON object
	unread   string                 // a frame zot 0.1.62 cannot read, sent since the last reply
	answers  map[string]Answer      // what zot's tools answer, by name
	called   []CalledTool           // since the last request
	log      strings.Builder
	finished chan error // Run's result
}

// Option changes the zot Start plays.
type Option func(*Zot)

// OldHost makes Start play zot 0.1.62: its hello_ack lists no capabilities,
// so it runs none of its tools for the extension (a call_tool from the
// extension fails the test: zot 0.1.62 would never answer it).
func OldHost() Option { return func(z *Zot) { z.old = true } }

// Answer is what one of zot's own tools answers when the extension calls it
// (CallTool).
type Answer struct {
	Text      string    // the result's text, one text block (when Content is empty)
	Content   []Content // the result's blocks
	IsError   bool
	Truncated bool // zot cut the result (over 256 KiB): the extension adds a note
}

// CalledTool is a call of one of zot's tools the extension made (CallTool).
type CalledTool struct {
	ID, Name string
	Args     json.RawMessage
	// ParentID is the id of the tool call whose handler made it (Call.ID),
	// "" outside a tool call.
	ParentID string
	// Cancelled: the extension sent call_tool_cancel for it.
	Cancelled bool
}

// Decision is the extension's whole answer to an intercept.
type Decision struct {
	Block        bool            `json:"block"`
	Reason       string          `json:"reason"`
	ModifiedArgs json.RawMessage `json:"modified_args"` // the call's new arguments (tool_call)
	ReplaceText  string          `json:"replace_text"`  // the text shown instead (assistant_message)
}

// Frame is one frame the extension sent on its own, not as a reply:
// "notify", "panel_render", "panel_close", "open_panel", "submit", ...
type Frame map[string]any

// Type is the frame's type.
func (f Frame) Type() string { text, _ := f["type"].(string); return text }

// Text is a string field of the frame ("" if it has none).
func (f Frame) Text(field string) string { text, _ := f[field].(string); return text }

// Response is a command's answer.
type Response struct {
	Action    string          `json:"action"`
	Prompt    string          `json:"prompt"`
	ToolName  string          `json:"tool_name"` // tool_prompt: the tool zot runs
	ToolArgs  json.RawMessage `json:"tool_args"` // tool_prompt: its arguments
	Insert    string          `json:"insert"`
	Display   string          `json:"display"`
	Error     string          `json:"error"`
	OpenPanel *Panel          `json:"open_panel"`
}

// Panel is a panel a command opens.
type Panel struct {
	ID     string   `json:"id"`
	Title  string   `json:"title"`
	Lines  []string `json:"lines"`
	Footer string   `json:"footer"`
}

// ToolResult is a tool's answer to the model.
type ToolResult struct {
	Content           []Content       `json:"content"`
	IsError           bool            `json:"is_error"`
	StructuredContent json.RawMessage `json:"structured_content"`
	ActivateTools     []string        `json:"activate_tools"`
}

// Text is the text of the result's blocks, one after the other.
func (r ToolResult) Text() string {
	var text strings.Builder
	for _, block := range r.Content {
		text.WriteString(block.Text)
	}
	return text.String()
}

// Content is one block of a tool's result.
type Content struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Format   string `json:"format"`
	MimeType string `json:"mime_type"`
	Data     string `json:"data"`
}

// Start runs the extension (run is its Run) and answers its hello as a
// newer zot would (or as options say), in folders of its own; it returns
// once the extension is ready. A problem ends the test binary with a
// message.
func Start(run func() error, options ...Option) *Zot {
	os.Stdout = stdout
	z := &Zot{
		waiting: map[string]chan []byte{}, running: map[string]string{}, answers: map[string]Answer{},
		arrived: make(chan struct{}, 1), finished: make(chan error, 1),
	}
	for _, option := range options {
		option(z)
	}
	var err error
	if z.Project, err = os.MkdirTemp("", "exttest-project-"); err == nil {
		z.DataDir, err = os.MkdirTemp("", "exttest-data-")
	}
	if err != nil {
		fail("no temporary folders: %v", err)
	}
	go func() { z.finished <- run() }()
	go z.keepLog()
	lines := bufio.NewScanner(fromExtension)
	lines.Buffer(nil, 8<<20)
	hello := make(chan Frame, 1)
	go func() {
		if lines.Scan() {
			var first Frame
			_ = json.Unmarshal(lines.Bytes(), &first)
			hello <- first
		}
		close(hello)
	}()
	select {
	case first := <-hello:
		if first.Type() != "hello" {
			fail("the extension's first line is not hello: %v\n%s", first, z.Log())
		}
	case err := <-z.finished:
		fail("Run returned before hello: %v\n%s", err, z.Log())
	case <-time.After(timeout):
		fail("no hello from the extension within %v", timeout)
	}
	ready := make(chan struct{})
	go z.read(lines, ready)
	folder, _ := os.Getwd()
	ack := map[string]any{
		"type": "hello_ack", "protocol_version": 1, "capabilities": []string{"call_tool"},
		"zot_version": "0.2.0", "provider": "test", "model": "test-model",
		"cwd": z.Project, "extension_dir": folder, "data_dir": z.DataDir,
	}
	if z.old { // no capabilities at all
		delete(ack, "capabilities")
		ack["zot_version"] = "0.1.62"
	}
	z.send(ack)
	select {
	case <-ready:
	case <-time.After(timeout):
		fail("the extension was not ready within %v\n%s", timeout, z.Log())
	}
	return z
}

func fail(format string, args ...any) {
	fmt.Fprintf(stderr, "exttest: "+format+"\n", args...)
	os.Exit(1)
}

// Stop sends shutdown, waits for Run to return and removes the folders.
func (z *Zot) Stop() {
	z.send(map[string]any{"type": "shutdown"})
	select {
	case <-z.finished:
	case <-time.After(timeout):
		fmt.Fprintf(stderr, "exttest: Run did not return within %v of shutdown\n", timeout)
	}
	_ = os.RemoveAll(z.Project)
	_ = os.RemoveAll(z.DataDir)
}

// Log is what the extension wrote to stderr (its log) so far.
func (z *Zot) Log() string {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.log.String()
}

func (z *Zot) keepLog() {
	lines := bufio.NewScanner(fromLog)
	lines.Buffer(nil, 8<<20)
	for lines.Scan() {
		z.mu.Lock()
		z.log.Write(lines.Bytes())
		z.log.WriteByte('\n')
		z.mu.Unlock()
	}
}

// read takes the extension's lines: the registrations up to ready, then
// replies, which go to their request, and frames it sends on its own.
func (z *Zot) read(lines *bufio.Scanner, ready chan struct{}) {
	for lines.Scan() {
		var f Frame
		if err := json.Unmarshal(lines.Bytes(), &f); err != nil || f == nil {
			z.mu.Lock()
			z.problem = fmt.Sprintf("the extension wrote a line that is not a JSON object: %.200q", lines.Bytes())
			z.mu.Unlock()
			continue
		}
		z.mu.Lock()
		switch id := f.Text("id"); {
		case f.Type() == "call_tool" || f.Type() == "call_tool_cancel":
			z.callTool(f, lines.Bytes())
		case f.Type() == "register_command":
			z.Commands = append(z.Commands, f.Text("name"))
		case f.Type() == "register_tool":
			z.Tools = append(z.Tools, f.Text("name"))
		case f.Type() == "ready" && ready != nil:
			close(ready)
			ready = nil
		case id != "" && z.waiting[id] != nil:
			z.waiting[id] <- slices.Clone(lines.Bytes())
			delete(z.waiting, id)
			delete(z.running, id)
		default:
			z.frames = append(z.frames, f)
			select {
			case z.arrived <- struct{}{}:
			default:
			}
		}
		z.mu.Unlock()
	}
}

// callTool takes the extension's call_tool (or call_tool_cancel) and
// answers it as zot would, from the answers the test gave; z.mu is held.
func (z *Zot) callTool(f Frame, line []byte) {
	if z.old {
		z.unread = fmt.Sprintf("the extension sent %s to zot 0.1.62, whose hello_ack lists no call_tool: it cannot read it", f.Type())
	}
	id := f.Text("id")
	if f.Type() == "call_tool_cancel" {
		for i := range z.called {
			if z.called[i].ID == id {
				z.called[i].Cancelled = true
			}
		}
		return
	}
	var call struct {
		Args json.RawMessage `json:"args"`
	}
	_ = json.Unmarshal(line, &call)
	name, parent := f.Text("name"), f.Text("parent_id")
	z.called = append(z.called, CalledTool{ID: id, Name: name, Args: call.Args, ParentID: parent})
	if z.old {
		return // zot 0.1.62 never answers
	}
	parentTool, parentFound := z.running[parent]
	var answer Answer
	switch args := strings.TrimSpace(string(call.Args)); {
	case parent != "" && !parentFound:
		answer = Answer{Text: "unknown or expired parent tool call", IsError: true}
	case parent == "" && len(z.running) > 0:
		answer = Answer{Text: "parent_id is required while an extension tool is active", IsError: true}
	case parentFound && parentTool == name:
		answer = Answer{Text: "tool call cycle detected", IsError: true}
	case name == "" || !json.Valid(call.Args) || !strings.HasPrefix(args, "{"):
		answer = Answer{Text: "call_tool requires a name and JSON object args", IsError: true}
	default:
		var given bool
		if answer, given = z.answers[name]; !given {
			answer = Answer{Text: "this test's zot has no answer for its tool " + name, IsError: true}
		}
	}
	result := map[string]any{"type": "tool_result", "id": id, "name": name, "is_error": answer.IsError}
	blocks := []map[string]string{}
	for _, block := range answer.Content {
		fields := map[string]string{"type": block.Type, "text": block.Text, "format": block.Format,
			"mime_type": block.MimeType, "data": block.Data}
		maps.DeleteFunc(fields, func(_, value string) bool { return value == "" })
		blocks = append(blocks, fields)
	}
	if len(answer.Content) == 0 {
		blocks = append(blocks, map[string]string{"type": "text", "text": answer.Text})
	}
	result["content"] = blocks
	if answer.Truncated {
		result["truncated"] = true
	}
	go z.send(result) // not from the loop that reads the extension's frames
}

// AnswerTool sets what zot's own tool name answers when the extension calls
// it (CallTool), from now on. A tool with no answer answers an error: "this
// test's zot has no answer for its tool NAME".
func (z *Zot) AnswerTool(name string, answer Answer) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.answers[name] = answer
}

// CalledTools are the calls of zot's tools the extension made since the
// last request (Command, Tool, StartTool, Intercept, ...), in order.
func (z *Zot) CalledTools() []CalledTool {
	z.mu.Lock()
	defer z.mu.Unlock()
	return slices.Clone(z.called)
}

func (z *Zot) send(fields map[string]any) {
	line, err := json.Marshal(fields)
	if err != nil {
		panic(err)
	}
	z.writing.Lock()
	defer z.writing.Unlock()
	_, _ = toExtension.Write(append(line, '\n'))
}

// request sends a frame with a new id and returns the channel its reply
// comes on. It forgets the frames sent on their own before it.
func (z *Zot) request(fields map[string]any) (string, chan []byte) {
	id := "t" + strconv.FormatInt(z.ids.Add(1), 10)
	reply := make(chan []byte, 1)
	z.mu.Lock()
	z.waiting[id], z.frames, z.called = reply, nil, nil
	if fields["type"] == "tool_call" {
		z.running[id], _ = fields["name"].(string)
	}
	z.mu.Unlock()
	fields["id"] = id
	z.send(fields)
	return id, reply
}

func (z *Zot) wait(t testing.TB, what string, reply chan []byte, into any) {
	t.Helper()
	select {
	case line := <-reply:
		if err := json.Unmarshal(line, into); err != nil {
			t.Fatalf("%s: the reply %s does not decode: %v", what, line, err)
		}
		z.mu.Lock()
		problem := z.unread
		z.unread = ""
		z.mu.Unlock()
		if problem != "" {
			t.Fatalf("%s: %s", what, problem)
		}
	case <-time.After(timeout):
		t.Fatalf("%s: no reply within %v\n%s", what, timeout, z.Log())
	}
}

// Command runs the slash command /name with args, as the user types it.
func (z *Zot) Command(t testing.TB, name, args string) Response {
	t.Helper()
	if !slices.Contains(z.Commands, name) {
		t.Fatalf("no command /%s is registered (registered: %v): register it in main.go, or test the command you have", name, z.Commands)
	}
	_, reply := z.request(map[string]any{"type": "command_invoked", "name": name, "args": args})
	var answer Response
	z.wait(t, "/"+name, reply, &answer)
	return answer
}

// Call is a tool call under way.
type Call struct {
	z     *Zot
	id    string
	name  string
	reply chan []byte
}

// ID is the call's id, the ParentID of the calls of zot's tools its handler
// makes.
func (c *Call) ID() string { return c.id }

// StartTool calls the tool name with args (JSON) and returns at once.
func (z *Zot) StartTool(t testing.TB, name, args string) *Call {
	t.Helper()
	if !slices.Contains(z.Tools, name) {
		t.Fatalf("no tool %s is registered (registered: %v): register it in main.go, or test the tool you have", name, z.Tools)
	}
	fields := map[string]any{"type": "tool_call", "name": name, "args": json.RawMessage(args)}
	if !json.Valid([]byte(args)) { // what a model may send all the same
		fields["args"] = args
	}
	id, reply := z.request(fields)
	return &Call{z, id, name, reply}
}

// Result waits for the call's result.
func (c *Call) Result(t testing.TB) ToolResult {
	t.Helper()
	var result ToolResult
	c.z.wait(t, "tool "+c.name, c.reply, &result)
	return result
}

// Cancel tells the extension zot has given up on the call (tool_cancel).
func (c *Call) Cancel() {
	c.z.mu.Lock()
	delete(c.z.running, c.id)
	c.z.mu.Unlock()
	c.z.send(map[string]any{"type": "tool_cancel", "id": c.id})
}

// NoResult checks that the call sends no result for a while: zot drops the
// result of a call it has cancelled.
func (c *Call) NoResult(t testing.TB) {
	t.Helper()
	select {
	case line := <-c.reply:
		t.Fatalf("tool %s: sent %s, want no result", c.name, line)
	case <-time.After(100 * time.Millisecond):
	}
}

// Tool calls the tool name with args (JSON) and returns its result.
func (z *Zot) Tool(t testing.TB, name, args string) ToolResult {
	t.Helper()
	return z.StartTool(t, name, args).Result(t)
}

// Intercept asks the extension about a call of toolName with args (JSON)
// before it runs: whether it blocks the call, and why.
func (z *Zot) Intercept(t testing.TB, toolName, args string) (block bool, reason string) {
	t.Helper()
	decision := z.ToolCallDecision(t, toolName, args)
	return decision.Block, decision.Reason
}

// ToolCallDecision asks the extension about a call of toolName with args
// (JSON) before it runs, and returns its whole answer: with ModifiedArgs
// when it rewrites the arguments.
func (z *Zot) ToolCallDecision(t testing.TB, toolName, args string) Decision {
	t.Helper()
	return z.intercept(t, "intercept "+toolName, map[string]any{
		"event": "tool_call", "tool_id": "call-1", "step": 1, "tool_name": toolName, "tool_args": json.RawMessage(args),
	})
}

// TurnStart asks the extension before turn step of the model (from 1):
// blocking ends the turn.
func (z *Zot) TurnStart(t testing.TB, step int) Decision {
	t.Helper()
	return z.intercept(t, "turn_start", map[string]any{"event": "turn_start", "step": step})
}

// AssistantMessage asks the extension before the model's final text is
// shown: blocking hides it, ReplaceText shows another text.
func (z *Zot) AssistantMessage(t testing.TB, text string) Decision {
	t.Helper()
	return z.intercept(t, "assistant_message", map[string]any{"event": "assistant_message", "step": 1, "text": text})
}

func (z *Zot) intercept(t testing.TB, what string, fields map[string]any) Decision {
	t.Helper()
	fields["type"] = "event_intercept"
	_, reply := z.request(fields)
	var decision Decision
	z.wait(t, what, reply, &decision)
	return decision
}

// BeforeAgentStart asks the extension for the system prompt before a run
// in the project folder cwd: the new prompt, or nil to keep systemPrompt.
func (z *Zot) BeforeAgentStart(t testing.TB, systemPrompt, cwd string) *string {
	t.Helper()
	_, reply := z.request(map[string]any{
		"type": "event_intercept", "event": "before_agent_start", "system_prompt": systemPrompt,
		"session_id": "session-1", "agent_run_id": "run-1", "cwd": cwd, "provider": "test", "model": "test-model",
	})
	var answer struct {
		SystemPrompt *string `json:"system_prompt"`
	}
	z.wait(t, "before_agent_start", reply, &answer)
	return answer.SystemPrompt
}

// Event sends the lifecycle event name with fields; it asks for no reply.
func (z *Zot) Event(name string, fields map[string]any) {
	event := map[string]any{"type": "event", "event": name}
	for key, value := range fields {
		event[key] = value
	}
	z.send(event)
}

// Key presses key in the open panel id: a letter ("j") or the name of a key
// ("down", "enter", "esc").
func (z *Zot) Key(panelID, key string) {
	text := ""
	if len([]rune(key)) == 1 {
		key, text = "rune", key
	}
	z.send(map[string]any{"type": "panel_key", "panel_id": panelID, "key": key, "text": text})
}

// ClosePanel closes panel id, as zot does when the user leaves it.
func (z *Zot) ClosePanel(panelID string) {
	z.send(map[string]any{"type": "panel_close", "panel_id": panelID})
}

// Next is the next frame the extension sends on its own since the last
// request, of one of types (any type without them); frames of other types
// are passed over.
func (z *Zot) Next(t testing.TB, types ...string) Frame {
	t.Helper()
	deadline := time.After(timeout)
	for {
		z.mu.Lock()
		problem := z.problem
		for len(z.frames) > 0 {
			f := z.frames[0]
			z.frames = z.frames[1:]
			if len(types) == 0 || slices.Contains(types, f.Type()) {
				z.mu.Unlock()
				return f
			}
		}
		z.mu.Unlock()
		if problem != "" {
			t.Fatal(problem)
		}
		select {
		case <-z.arrived:
		case <-deadline:
			t.Fatalf("no %s frame within %v\n%s", strings.Join(types, " or "), timeout, z.Log())
		}
	}
}

// Quiet checks that the extension sends no frame of types (of any type
// without them) for a while.
func (z *Zot) Quiet(t testing.TB, types ...string) {
	t.Helper()
	time.Sleep(50 * time.Millisecond)
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, f := range z.frames {
		if len(types) == 0 || slices.Contains(types, f.Type()) {
			t.Fatalf("sent %v, want nothing", f)
		}
	}
	z.frames = nil
}
