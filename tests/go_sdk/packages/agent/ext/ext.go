// Package ext stands in for zot's Go SDK (the package of the same path in
// github.com/patriceckhart/zot) when the suite cannot download it.
//
// It is written from the SDK's API and from what the SDK does on the wire,
// not from its code, and it behaves like it, limits included:
//
//   - hello lists commands, tools, events, panels, tool_cancel and call_tool,
//     whatever the extension registers;
//   - Run reads hello_ack first (anything else is an error), calls the OnHello
//     callback, then sends the registrations in the order they were made, one
//     subscribe (intercepts in the order before_agent_start, tool_call,
//     turn_start, assistant_message) and ready;
//   - commands, tools, intercepts, panel keys and panel closes each run in a
//     goroutine of their own (so two keys may be handled out of order); events
//     run on the read loop;
//   - a tool cancelled by tool_cancel sends no result; a panicking handler
//     becomes an error (an intercept that panics blocks the call);
//   - CallTool fails at once, sending nothing, when hello_ack lists no
//     call_tool; else it sends call_tool (ids sdk-1, sdk-2, ...; parent_id
//     from the tool call whose handler's context it gets), and waits for the
//     tool_result the read loop hands it, 60 s at most; a done context sends
//     call_tool_cancel and returns ctx.Err(); a truncated result gets a last
//     text block; the end of Run is an error;
//   - lines over 4 MiB end Run with an error; malformed lines and unknown frame
//     types (panel_resize among them) are logged and skipped;
//   - shutdown is answered with shutdown_ack, and Run returns.
//
// What the SDK cannot do, this cannot either: nothing sends submit or
// clear_notes, and hello_ack's capabilities are not exposed
// (HostInfo.ZotVersion is the only way to tell an older zot). Replay is
// sent, but there is no Reconciler or OperationKey here (the generated
// projects do not use them).
package ext

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// maxLine is the longest line Run reads, as zot's own limit.
const maxLine = 4 << 20

// HostInfo is what hello_ack told the extension.
type HostInfo struct {
	ProtocolVersion int
	ZotVersion      string
	Provider        string
	Model           string
	CWD             string
	ExtensionDir    string
	DataDir         string
}

// Panel is a panel's content.
type Panel struct {
	ID     string
	Title  string
	Lines  []string
	Footer string
}

// Response is a command's answer.
type Response struct {
	Action    string
	Prompt    string
	ToolName  string
	ToolArgs  json.RawMessage
	Insert    string
	Display   string
	OpenPanel *Panel
	Error     string
}

// ToolContent is one block of a tool result: text (Format "markdown" or
// empty) or an image (MimeType and base64 Data).
type ToolContent struct {
	Format   string
	Type     string
	Text     string
	MimeType string
	Data     string
}

// ToolResult is a tool's answer.
type ToolResult struct {
	Content           []ToolContent
	IsError           bool
	ActivateTools     []string
	StructuredContent json.RawMessage
}

// ToolOptions are a tool's registration options.
type ToolOptions struct {
	OutputSchema          json.RawMessage
	Namespace             string
	NamespaceDescription  string
	NamespaceInstructions string
	Exposure              string
	Deferred              bool
	Interactive           bool
	Replay                string
}

// EventResult is the bounded output of a tool, in tool_result events.
type EventResult struct {
	Content   []ToolContent `json:"content,omitempty"`
	IsError   bool          `json:"is_error,omitempty"`
	Truncated bool          `json:"truncated,omitempty"`
}

// Event is a lifecycle event; which fields are set depends on Name.
type Event struct {
	Name          string
	AgentRunID    string
	SessionID     string
	Queued        bool
	ImageCount    int
	CWD           string
	Sequence      uint64
	Status        string
	Reason        string
	Source        string
	Decision      string
	Stage         string
	Result        *EventResult
	Executed      *bool
	CompactionID  string
	MessageCount  *int
	TokenEstimate *int
	AgentID       string
	AgentName     string
	Step          int
	Stop          string
	Error         string
	ToolID        string
	ToolName      string
	ToolArgs      json.RawMessage
	ToolPreview   string
	ToolArgsRaw   string
	Text          string
}

// BeforeAgentStartEvent is the system prompt and its context before a run.
type BeforeAgentStartEvent struct {
	SystemPrompt string
	SessionID    string
	AgentRunID   string
	CWD          string
	Provider     string
	Model        string
}

// ToolCallDecision is the answer of a rich tool_call intercept.
type ToolCallDecision struct {
	Block        bool
	Reason       string
	ModifiedArgs json.RawMessage
}

// TurnStartDecision is the answer of a turn_start intercept.
type TurnStartDecision struct {
	Block  bool
	Reason string
}

// AssistantMessageDecision is the answer of an assistant_message intercept.
type AssistantMessageDecision struct {
	Block       bool
	Reason      string
	ReplaceText string
}

// The handlers' types.
type (
	CommandHandler          func(args string) Response
	ToolHandler             func(args json.RawMessage) ToolResult
	InteractiveToolHandler  func(ctx context.Context, args json.RawMessage) ToolResult
	EventHandler            func(ev Event)
	InterceptHandler        func(toolName string, args json.RawMessage) (allow bool, reason string)
	ToolCallHandler         func(toolName string, args json.RawMessage) ToolCallDecision
	BeforeAgentStartHandler func(BeforeAgentStartEvent) *string
	TurnStartHandler        func(step int) TurnStartDecision
	AssistantMessageHandler func(text string) AssistantMessageDecision
)

// Responses.
func Prompt(text string) Response  { return Response{Action: "prompt", Prompt: text} }
func Insert(text string) Response  { return Response{Action: "insert", Insert: text} }
func Display(text string) Response { return Response{Action: "display", Display: text} }
func Noop() Response               { return Response{Action: "noop"} }

// Errorf is a response zot shows in red.
func Errorf(format string, args ...any) Response {
	return Response{Action: "noop", Error: fmt.Sprintf(format, args...)}
}

// OpenPanel is a response that opens a panel.
func OpenPanel(id, title string, lines []string, footer string) Response {
	return Response{Action: "open_panel", OpenPanel: &Panel{ID: id, Title: title, Lines: lines, Footer: footer}}
}

// ToolPrompt asks zot to run a tool after submitting text as a prompt.
func ToolPrompt(name string, args any, text string) Response {
	if name == "" || text == "" {
		return Errorf("tool_prompt requires a name and prompt")
	}
	encoded, err := json.Marshal(args)
	if err != nil || len(encoded) == 0 || encoded[0] != '{' {
		return Errorf("tool_prompt args must be a JSON object")
	}
	return Response{Action: "tool_prompt", Prompt: text, ToolName: name, ToolArgs: encoded}
}

// Content blocks and results.
func Text(s string) ToolContent { return ToolContent{Type: "text", Text: s} }
func Image(mimeType, base64Data string) ToolContent {
	return ToolContent{Type: "image", MimeType: mimeType, Data: base64Data}
}
func ImageBytes(mimeType string, data []byte) ToolContent {
	return Image(mimeType, base64.StdEncoding.EncodeToString(data))
}
func TextResult(s string) ToolResult { return ToolResult{Content: []ToolContent{Text(s)}} }
func TextErrorResult(s string) ToolResult {
	return ToolResult{Content: []ToolContent{Text(s)}, IsError: true}
}
func MarkdownResult(s string) ToolResult {
	return ToolResult{Content: []ToolContent{{Type: "text", Text: s, Format: "markdown"}}}
}

type toolEntry struct {
	run  InteractiveToolHandler
	wire registerTool
}

// Extension is one extension: register handlers, then Run.
type Extension struct {
	name, version string
	in            io.Reader
	out           io.Writer
	logs          io.Writer
	writing       sync.Mutex

	mu          sync.Mutex
	host        HostInfo
	onHello     func(HostInfo)
	commands    map[string]CommandHandler
	commandList []registerCommand
	tools       map[string]*toolEntry
	toolList    []string
	events      map[string]EventHandler
	eventList   []string
	running     map[string]context.CancelFunc
	keys        map[string]func(key, text string)
	closes      map[string]func()

	guard      InterceptHandler
	guardX     ToolCallHandler
	beforeRun  BeforeAgentStartHandler
	turnStart  TurnStartHandler
	assistant  AssistantMessageHandler
	guardIsSet bool

	hostCalls    atomic.Bool // hello_ack lists call_tool
	callCount    atomic.Int64
	waitingCalls map[string]chan hostToolResult // CallTool's calls, by id
	ended        chan struct{}                  // closed when Run returns
}

// New makes an extension; name should be extension.json's.
func New(name, version string) *Extension {
	return &Extension{
		name: name, version: version, in: os.Stdin, out: os.Stdout, logs: os.Stderr,
		commands: map[string]CommandHandler{}, tools: map[string]*toolEntry{},
		events: map[string]EventHandler{}, running: map[string]context.CancelFunc{},
		keys: map[string]func(string, string){}, closes: map[string]func(){},
		waitingCalls: map[string]chan hostToolResult{}, ended: make(chan struct{}),
	}
}

// Host is hello_ack's metadata (zero before Run has read it).
func (e *Extension) Host() HostInfo { return e.host }

// OnHello runs fn once hello_ack has arrived, before the registrations go out.
func (e *Extension) OnHello(fn func(HostInfo)) { e.locked(func() { e.onHello = fn }) }

// Logf writes one line to stderr, which zot keeps in the extension's log.
func (e *Extension) Logf(format string, args ...any) {
	fmt.Fprintf(e.logs, "["+e.name+"] "+format+"\n", args...)
}

// Command registers a slash command.
func (e *Extension) Command(name, description string, fn CommandHandler) {
	e.locked(func() {
		e.commands[name] = fn
		e.commandList = append(e.commandList, registerCommand{"register_command", name, description})
	})
}

// Tool registers a tool whose handler cannot notice cancellation.
func (e *Extension) Tool(name, description string, schema json.RawMessage, fn ToolHandler) {
	e.ToolWithOptions(name, description, schema, ToolOptions{}, ignoreContext(fn))
}

// DeferredTool registers a tool the model sees once a result activates it.
func (e *Extension) DeferredTool(name, description string, schema json.RawMessage, fn ToolHandler) {
	e.ToolWithOptions(name, description, schema, ToolOptions{Deferred: true}, ignoreContext(fn))
}

// StructuredTool registers a tool with an output schema.
func (e *Extension) StructuredTool(name, description string, schema, outputSchema json.RawMessage, fn ToolHandler) {
	e.ToolWithOptions(name, description, schema, ToolOptions{OutputSchema: outputSchema}, ignoreContext(fn))
}

// InteractiveTool registers a tool that waits for the user.
func (e *Extension) InteractiveTool(name, description string, schema json.RawMessage, fn InteractiveToolHandler) {
	e.ToolWithOptions(name, description, schema, ToolOptions{Interactive: true}, fn)
}

// ToolWithOptions registers a tool whose context ends when zot cancels it.
func (e *Extension) ToolWithOptions(name, description string, schema json.RawMessage, o ToolOptions, fn InteractiveToolHandler) {
	wire := registerTool{
		Type: "register_tool", Name: name, Description: description, Schema: schema,
		OutputSchema: o.OutputSchema, Namespace: o.Namespace, NamespaceDescription: o.NamespaceDescription,
		NamespaceInstructions: o.NamespaceInstructions, Exposure: o.Exposure, Deferred: o.Deferred,
		Interactive: o.Interactive, Replay: o.Replay,
	}
	e.locked(func() {
		e.tools[name] = &toolEntry{fn, wire}
		e.toolList = append(e.toolList, name)
	})
}

func ignoreContext(fn ToolHandler) InteractiveToolHandler {
	return func(_ context.Context, args json.RawMessage) ToolResult { return fn(args) }
}

// On subscribes to an event; a later handler for the same name replaces it.
func (e *Extension) On(name string, fn EventHandler) {
	e.locked(func() {
		if _, known := e.events[name]; !known {
			e.eventList = append(e.eventList, name)
		}
		e.events[name] = fn
	})
}

// InterceptToolCall registers a guard: (false, reason) refuses the call.
func (e *Extension) InterceptToolCall(fn InterceptHandler) {
	e.locked(func() { e.guard, e.guardIsSet = fn, true })
}

// InterceptToolCallX registers a guard that may also rewrite the arguments;
// it wins over InterceptToolCall.
func (e *Extension) InterceptToolCallX(fn ToolCallHandler) {
	e.locked(func() { e.guardX, e.guardIsSet = fn, true })
}

// InterceptBeforeAgentStart registers a hook that may replace the system prompt.
func (e *Extension) InterceptBeforeAgentStart(fn BeforeAgentStartHandler) {
	e.locked(func() { e.beforeRun = fn })
}

// InterceptTurnStart registers a hook that may stop a turn.
func (e *Extension) InterceptTurnStart(fn TurnStartHandler) { e.locked(func() { e.turnStart = fn }) }

// InterceptAssistantMessage registers a hook on the model's final text.
func (e *Extension) InterceptAssistantMessage(fn AssistantMessageHandler) {
	e.locked(func() { e.assistant = fn })
}

// OnPanelKey routes a panel's keys and its closing by zot; nil keeps the
// callback registered before.
func (e *Extension) OnPanelKey(panelID string, onKey func(key, text string), onClose func()) {
	e.locked(func() {
		if onKey != nil {
			e.keys[panelID] = onKey
		}
		if onClose != nil {
			e.closes[panelID] = onClose
		}
	})
}

// OpenPanel opens a panel from anywhere (not as a command's answer).
func (e *Extension) OpenPanel(id, title string, lines []string, footer string) {
	_ = e.send(openPanel{"open_panel", panelSpec{id, title, lines, footer}})
}

// RenderPanel redraws a panel.
func (e *Extension) RenderPanel(panelID, title string, lines []string, footer string) {
	_ = e.send(panelRender{"panel_render", panelID, title, lines, footer})
}

// ClosePanel closes a panel.
func (e *Extension) ClosePanel(panelID string) { _ = e.send(panelClose{"panel_close", panelID}) }

// Notify shows the user a note.
func (e *Extension) Notify(level, message string) { _ = e.send(notify{"notify", level, message}) }

// parentKey is the context key of the id of the tool call a handler runs.
type parentKey struct{}

// CallTool asks zot to run one of its tools with args (a value that encodes
// to a JSON object). zot's answer comes back as the result, a failing tool
// as IsError; a call that could not be made or answered is an error.
func (e *Extension) CallTool(ctx context.Context, name string, args any) (ToolResult, error) {
	if !e.hostCalls.Load() {
		return ToolResult{}, errors.New("host does not support call_tool")
	}
	if ctx == nil {
		return ToolResult{}, errors.New("call_tool requires a context")
	}
	encoded, err := json.Marshal(args)
	if err != nil {
		return ToolResult{}, fmt.Errorf("encode tool args: %w", err)
	}
	if len(encoded) == 0 || encoded[0] != '{' {
		return ToolResult{}, errors.New("call_tool args must be a JSON object")
	}
	ctx, stop := context.WithTimeout(ctx, 60*time.Second)
	defer stop()
	id := fmt.Sprintf("sdk-%d", e.callCount.Add(1))
	answer := make(chan hostToolResult, 1)
	e.locked(func() { e.waitingCalls[id] = answer })
	defer e.locked(func() { delete(e.waitingCalls, id) })
	parent, _ := ctx.Value(parentKey{}).(string)
	if err := e.send(callTool{"call_tool", id, name, encoded, parent}); err != nil {
		return ToolResult{}, err
	}
	select {
	case got := <-answer:
		result := ToolResult{IsError: got.IsError}
		for _, b := range got.Content {
			result.Content = append(result.Content, ToolContent{Type: b.Type, Text: b.Text, MimeType: b.MimeType, Data: b.Data})
		}
		if got.Truncated {
			result.Content = append(result.Content, Text("[tool result truncated by host]"))
		}
		return result, nil
	case <-ctx.Done():
		_ = e.send(callToolCancel{"call_tool_cancel", id})
		return ToolResult{}, ctx.Err()
	case <-e.ended:
		return ToolResult{}, errors.New("host disconnected")
	}
}

// Run speaks the protocol until shutdown or the end of stdin.
func (e *Extension) Run() error {
	defer close(e.ended)
	defer e.cancelAll()
	lines := bufio.NewScanner(e.in)
	lines.Buffer(make([]byte, 0, 64<<10), maxLine)
	capabilities := []string{"commands", "tools", "events", "panels", "tool_cancel", "call_tool"}
	if err := e.send(hello{"hello", e.name, e.version, capabilities}); err != nil {
		return err
	}
	if !lines.Scan() {
		return lines.Err()
	}
	var ack helloAck
	if err := json.Unmarshal(lines.Bytes(), &ack); err != nil {
		return fmt.Errorf("parse hello_ack: %w", err)
	} else if ack.Type != "hello_ack" {
		return fmt.Errorf("first host frame must be hello_ack (got %q)", ack.Type)
	}
	e.host = HostInfo{ack.ProtocolVersion, ack.ZotVersion, ack.Provider, ack.Model, ack.CWD, ack.ExtensionDir, ack.DataDir}
	e.hostCalls.Store(slices.Contains(ack.Capabilities, "call_tool"))
	e.mu.Lock()
	onHello := e.onHello
	e.mu.Unlock()
	if onHello != nil {
		onHello(e.host)
	}
	e.announce()
	for lines.Scan() {
		if e.dispatch(lines.Bytes()) {
			return nil
		}
	}
	return lines.Err()
}

func (e *Extension) announce() {
	e.mu.Lock()
	frames := []any{}
	for _, c := range e.commandList {
		frames = append(frames, c)
	}
	for _, name := range e.toolList {
		frames = append(frames, e.tools[name].wire)
	}
	var intercepts []string
	for _, on := range []struct {
		set  bool
		name string
	}{
		{e.beforeRun != nil, "before_agent_start"},
		{e.guardIsSet, "tool_call"},
		{e.turnStart != nil, "turn_start"},
		{e.assistant != nil, "assistant_message"},
	} {
		if on.set {
			intercepts = append(intercepts, on.name)
		}
	}
	if len(e.eventList) > 0 || len(intercepts) > 0 {
		frames = append(frames, subscribe{"subscribe", append([]string(nil), e.eventList...), intercepts})
	}
	e.mu.Unlock()
	for _, frame := range append(frames, typeOnly{"ready"}) {
		_ = e.send(frame)
	}
}

// dispatch handles one line from zot; true means shut down. The frame's type
// is read first, then the fields of that type: a frame whose fields have the
// wrong types is skipped.
func (e *Extension) dispatch(line []byte) bool {
	var frame typeOnly
	if err := json.Unmarshal(line, &frame); err != nil {
		e.Logf("malformed frame from host: %v", err)
		return false
	}
	switch frame.Type {
	case "hello_ack": // already read
	case "command_invoked":
		var f struct{ ID, Name, Args string }
		if json.Unmarshal(line, &f) == nil {
			e.command(f.ID, f.Name, f.Args)
		}
	case "tool_call":
		var f struct {
			ID, Name string
			Args     json.RawMessage
		}
		if json.Unmarshal(line, &f) == nil {
			e.call(f.ID, f.Name, f.Args)
		}
	case "tool_result": // the answer to a CallTool
		var f hostToolResult
		if json.Unmarshal(line, &f) == nil {
			if answer := lookup(e, e.waitingCalls, f.ID); answer != nil {
				select {
				case answer <- f:
				default:
				}
			}
		}
	case "tool_cancel":
		var f struct{ ID string }
		if json.Unmarshal(line, &f) == nil {
			if cancel := lookup(e, e.running, f.ID); cancel != nil {
				cancel()
			}
		}
	case "event":
		var f eventFrame
		if json.Unmarshal(line, &f) == nil {
			if fn := lookup(e, e.events, f.Event); fn != nil {
				e.event(fn, f)
			}
		}
	case "event_intercept":
		var f interceptFrame
		if json.Unmarshal(line, &f) == nil {
			go e.intercept(f)
		}
	case "panel_key":
		var f struct {
			PanelID   string `json:"panel_id"`
			Key, Text string
		}
		if json.Unmarshal(line, &f) == nil {
			if fn := lookup(e, e.keys, f.PanelID); fn != nil {
				go fn(f.Key, f.Text)
			}
		}
	case "panel_close":
		var f struct {
			PanelID string `json:"panel_id"`
		}
		if json.Unmarshal(line, &f) == nil {
			if fn := lookup(e, e.closes, f.PanelID); fn != nil {
				go fn()
			}
		}
	case "shutdown":
		_ = e.send(typeOnly{"shutdown_ack"})
		return true
	default:
		e.Logf("unknown frame type %q", frame.Type)
	}
	return false
}

func (e *Extension) command(id, name, args string) {
	fn := lookup(e, e.commands, name)
	if fn == nil {
		e.respond(id, Errorf("no handler for /%s", name))
		return
	}
	go func() {
		defer func() {
			if r := recover(); r != nil {
				e.respond(id, Errorf("panic: %v", r))
			}
		}()
		e.respond(id, fn(args))
	}()
}

func (e *Extension) call(id, name string, args json.RawMessage) {
	entry := lookup(e, e.tools, name)
	if entry == nil {
		e.respondTool(id, TextErrorResult(fmt.Sprintf("no handler for tool %q", name)))
		return
	}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), parentKey{}, id))
	e.locked(func() { e.running[id] = cancel })
	go func() {
		defer e.locked(func() { delete(e.running, id) })
		defer cancel()
		defer func() {
			if r := recover(); r != nil && ctx.Err() == nil {
				e.respondTool(id, TextErrorResult(fmt.Sprintf("panic: %v", r)))
			}
		}()
		result := entry.run(ctx, args)
		if ctx.Err() == nil { // a cancelled call gets no result
			e.respondTool(id, result)
		}
	}()
}

func (e *Extension) event(fn EventHandler, f eventFrame) {
	defer func() {
		if r := recover(); r != nil {
			e.Logf("event %s handler panicked: %v", f.Event, r)
		}
	}()
	fn(Event{
		Name: f.Event, AgentRunID: f.AgentRunID, SessionID: f.SessionID, Queued: f.Queued,
		ImageCount: f.ImageCount, CWD: f.CWD, Sequence: f.Sequence, Status: f.Status, Reason: f.Reason,
		Source: f.Source, Decision: f.Decision, Stage: f.Stage, Result: f.Result, Executed: f.Executed,
		CompactionID: f.CompactionID, MessageCount: f.MessageCount, TokenEstimate: f.TokenEstimate,
		AgentID: f.AgentID, AgentName: f.Name, Step: f.Step, Stop: f.Stop, Error: f.Error,
		ToolID: f.ToolID, ToolName: f.ToolName, ToolArgs: f.ToolArgs, ToolPreview: f.ToolPreview,
		ToolArgsRaw: f.ToolArgsRaw, Text: f.Text,
	})
}

func (e *Extension) intercept(f interceptFrame) {
	answer := interceptResponse{Type: "event_intercept_response", ID: f.ID}
	defer func() {
		if r := recover(); r != nil { // a guard that fails refuses
			answer = interceptResponse{Type: answer.Type, ID: f.ID, Block: true, Reason: fmt.Sprintf("intercept panic: %v", r)}
		}
		_ = e.send(answer)
	}()
	e.mu.Lock()
	guard, guardX, beforeRun, turnStart, assistant := e.guard, e.guardX, e.beforeRun, e.turnStart, e.assistant
	e.mu.Unlock()
	switch f.Event {
	case "before_agent_start":
		if beforeRun != nil && f.SystemPrompt != nil {
			event := BeforeAgentStartEvent{*f.SystemPrompt, f.SessionID, f.AgentRunID, f.CWD, f.Provider, f.Model}
			if prompt := beforeRun(event); prompt != nil {
				answer.SystemPrompt, _ = json.Marshal(*prompt)
			}
		}
	case "tool_call":
		if guardX != nil {
			d := guardX(f.ToolName, f.ToolArgs)
			answer.Block, answer.Reason = d.Block, d.Reason
			if !d.Block && len(d.ModifiedArgs) > 0 && json.Valid(d.ModifiedArgs) {
				answer.ModifiedArgs = d.ModifiedArgs
			}
		} else if guard != nil {
			allow, reason := guard(f.ToolName, f.ToolArgs)
			answer.Block, answer.Reason = !allow, reason
		}
	case "turn_start":
		if turnStart != nil {
			d := turnStart(f.Step)
			answer.Block, answer.Reason = d.Block, d.Reason
		}
	case "assistant_message":
		if assistant != nil {
			d := assistant(f.Text)
			answer.Block, answer.Reason = d.Block, d.Reason
			if !d.Block && d.ReplaceText != f.Text {
				answer.ReplaceText = d.ReplaceText
			}
		}
	}
}

func (e *Extension) respond(id string, r Response) {
	answer := commandResponse{
		Type: "command_response", ID: id, Action: r.Action, Prompt: r.Prompt, ToolName: r.ToolName,
		ToolArgs: r.ToolArgs, Insert: r.Insert, Display: r.Display, Error: r.Error,
	}
	if answer.Action == "" {
		answer.Action = "noop"
	}
	if p := r.OpenPanel; p != nil {
		answer.OpenPanel = &panelSpec{p.ID, p.Title, p.Lines, p.Footer}
	}
	_ = e.send(answer)
}

func (e *Extension) respondTool(id string, r ToolResult) {
	blocks := make([]contentBlock, len(r.Content))
	for i, c := range r.Content {
		blocks[i] = contentBlock{c.Type, c.Text, c.Format, c.MimeType, c.Data}
	}
	_ = e.send(toolResult{"tool_result", id, blocks, r.IsError, r.ActivateTools, r.StructuredContent})
}

// send writes one frame as one line; frames never interleave.
func (e *Extension) send(frame any) error {
	line, err := json.Marshal(frame)
	if err != nil {
		return err
	}
	e.writing.Lock()
	defer e.writing.Unlock()
	_, err = e.out.Write(append(line, '\n'))
	return err
}

func (e *Extension) cancelAll() {
	e.locked(func() {
		for id, cancel := range e.running {
			cancel()
			delete(e.running, id)
		}
	})
}

func (e *Extension) locked(fn func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fn()
}

// lookup reads a handler or a tool call under the lock; a missing one is nil.
func lookup[V any](e *Extension, m map[string]V, key string) V {
	e.mu.Lock()
	defer e.mu.Unlock()
	return m[key]
}

// The frames, as zot reads and writes them.
type (
	typeOnly struct {
		Type string `json:"type"`
	}
	hello struct {
		Type         string   `json:"type"`
		Name         string   `json:"name"`
		Version      string   `json:"version"`
		Capabilities []string `json:"capabilities,omitempty"`
	}
	helloAck struct {
		Type            string   `json:"type"`
		ProtocolVersion int      `json:"protocol_version"`
		ZotVersion      string   `json:"zot_version"`
		Provider        string   `json:"provider"`
		Model           string   `json:"model"`
		CWD             string   `json:"cwd"`
		ExtensionDir    string   `json:"extension_dir"`
		DataDir         string   `json:"data_dir"`
		Capabilities    []string `json:"capabilities"`
	}
	registerCommand struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
	}
	registerTool struct {
		Type                  string          `json:"type"`
		Name                  string          `json:"name"`
		Description           string          `json:"description,omitempty"`
		Schema                json.RawMessage `json:"schema"`
		OutputSchema          json.RawMessage `json:"output_schema,omitempty"`
		Namespace             string          `json:"namespace,omitempty"`
		NamespaceDescription  string          `json:"namespace_description,omitempty"`
		NamespaceInstructions string          `json:"namespace_instructions,omitempty"`
		Exposure              string          `json:"exposure,omitempty"`
		Deferred              bool            `json:"deferred,omitempty"`
		Interactive           bool            `json:"interactive,omitempty"`
		Replay                string          `json:"replay,omitempty"`
	}
	callTool struct {
		Type     string          `json:"type"`
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Args     json.RawMessage `json:"args"`
		ParentID string          `json:"parent_id,omitempty"`
	}
	callToolCancel struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	hostToolResult struct {
		ID        string         `json:"id"`
		Name      string         `json:"name"`
		Content   []contentBlock `json:"content"`
		IsError   bool           `json:"is_error"`
		Truncated bool           `json:"truncated"`
	}
	subscribe struct {
		Type      string   `json:"type"`
		Events    []string `json:"events,omitempty"`
		Intercept []string `json:"intercept,omitempty"`
	}
	panelSpec struct {
		ID     string   `json:"id"`
		Title  string   `json:"title,omitempty"`
		Lines  []string `json:"lines,omitempty"`
		Footer string   `json:"footer,omitempty"`
	}
	commandResponse struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Action    string          `json:"action"`
		Prompt    string          `json:"prompt,omitempty"`
		ToolName  string          `json:"tool_name,omitempty"`
		ToolArgs  json.RawMessage `json:"tool_args,omitempty"`
		Insert    string          `json:"insert,omitempty"`
		Display   string          `json:"display,omitempty"`
		OpenPanel *panelSpec      `json:"open_panel,omitempty"`
		Error     string          `json:"error,omitempty"`
	}
	contentBlock struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		Format   string `json:"format,omitempty"`
		MimeType string `json:"mime_type,omitempty"`
		Data     string `json:"data,omitempty"`
	}
	toolResult struct {
		Type              string          `json:"type"`
		ID                string          `json:"id"`
		Content           []contentBlock  `json:"content"`
		IsError           bool            `json:"is_error,omitempty"`
		ActivateTools     []string        `json:"activate_tools,omitempty"`
		StructuredContent json.RawMessage `json:"structured_content,omitempty"`
	}
	notify struct {
		Type    string `json:"type"`
		Level   string `json:"level"`
		Message string `json:"message"`
	}
	openPanel struct {
		Type  string    `json:"type"`
		Panel panelSpec `json:"panel"`
	}
	panelRender struct {
		Type    string   `json:"type"`
		PanelID string   `json:"panel_id"`
		Title   string   `json:"title,omitempty"`
		Lines   []string `json:"lines,omitempty"`
		Footer  string   `json:"footer,omitempty"`
	}
	panelClose struct {
		Type    string `json:"type"`
		PanelID string `json:"panel_id"`
	}
	interceptResponse struct {
		Type         string          `json:"type"`
		ID           string          `json:"id"`
		Block        bool            `json:"block,omitempty"`
		Reason       string          `json:"reason,omitempty"`
		ModifiedArgs json.RawMessage `json:"modified_args,omitempty"`
		ReplaceText  string          `json:"replace_text,omitempty"`
		SystemPrompt json.RawMessage `json:"system_prompt,omitempty"`
	}
	eventFrame struct {
		Event         string          `json:"event"`
		Name          string          `json:"name"`
		AgentRunID    string          `json:"agent_run_id"`
		SessionID     string          `json:"session_id"`
		Queued        bool            `json:"queued"`
		ImageCount    int             `json:"image_count"`
		CWD           string          `json:"cwd"`
		Sequence      uint64          `json:"sequence"`
		Status        string          `json:"status"`
		Reason        string          `json:"reason"`
		Source        string          `json:"source"`
		Decision      string          `json:"decision"`
		Stage         string          `json:"stage"`
		Result        *EventResult    `json:"result"`
		Executed      *bool           `json:"executed"`
		CompactionID  string          `json:"compaction_id"`
		MessageCount  *int            `json:"message_count"`
		TokenEstimate *int            `json:"token_estimate"`
		AgentID       string          `json:"agent_id"`
		Step          int             `json:"step"`
		Stop          string          `json:"stop"`
		Error         string          `json:"error"`
		ToolID        string          `json:"tool_id"`
		ToolName      string          `json:"tool_name"`
		ToolArgs      json.RawMessage `json:"tool_args"`
		ToolPreview   string          `json:"tool_preview"`
		ToolArgsRaw   string          `json:"tool_args_raw"`
		Text          string          `json:"text"`
	}
	interceptFrame struct {
		ID           string          `json:"id"`
		Event        string          `json:"event"`
		ToolName     string          `json:"tool_name"`
		ToolArgs     json.RawMessage `json:"tool_args"`
		Step         int             `json:"step"`
		Text         string          `json:"text"`
		SystemPrompt *string         `json:"system_prompt"` // absent: not a prompt to change
		SessionID    string          `json:"session_id"`
		AgentRunID   string          `json:"agent_run_id"`
		CWD          string          `json:"cwd"`
		Provider     string          `json:"provider"`
		Model        string          `json:"model"`
	}
)
