// Package ext speaks zot's extension protocol, JSON frames one per line over
// stdin/stdout, with Go's standard library only. main.go holds the handlers;
// this package comes from the template, and `copier update` brings its fixes.
//
// Its API is the one of zot's Go SDK (github.com/patriceckhart/zot/packages/agent/ext),
// same names, types and signatures: New, one call per handler (Command,
// Tool, ToolWithOptions, DeferredTool, InteractiveTool, On,
// InterceptToolCall, InterceptToolCallX, InterceptTurnStart,
// InterceptAssistantMessage, InterceptBeforeAgentStart, OnPanelKey), then
// Run; CallTool runs one of zot's own tools from a handler, ToolPrompt
// answers a command with a tool for zot to run. What the SDK does not offer
// has names the SDK does not use: Submit, ClearNotes, NewerHost,
// OnToolCallBlocked, Markdown, StructuredResult.
//
// Each request runs in its own goroutine, so a slow tool never holds up a
// guard decision (zot allows a call after 5 s without one), and a handler
// that panics is still answered. Panel keys, events and the results of
// CallTool are taken on the loop that reads stdin, in zot's order.
package ext

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxLine is zot's limit for a line: an answer this long or longer is
// replaced by an error.
const maxLine = 4 << 20

// HostInfo is what zot says in hello_ack.
type HostInfo struct {
	ProtocolVersion int    `json:"protocol_version"`
	ZotVersion      string `json:"zot_version"`
	Provider        string `json:"provider"`
	Model           string `json:"model"`
	CWD             string `json:"cwd"` // the user's project folder
	ExtensionDir    string `json:"extension_dir"`
	DataDir         string `json:"data_dir"`
}

// Response is a command's answer.
type Response struct {
	Action    string          `json:"action,omitempty"`
	Prompt    string          `json:"prompt,omitempty"`
	ToolName  string          `json:"tool_name,omitempty"` // with ToolPrompt
	ToolArgs  json.RawMessage `json:"tool_args,omitempty"` // with ToolPrompt: a JSON object
	Insert    string          `json:"insert,omitempty"`
	Display   string          `json:"display,omitempty"`
	OpenPanel *Panel          `json:"open_panel,omitempty"`
	Error     string          `json:"error,omitempty"` // shown in red; wins over Action
}

// Prompt submits text as a new user message.
func Prompt(text string) Response { return Response{Action: "prompt", Prompt: text} }

// Insert drops text into the editor at the cursor.
func Insert(text string) Response { return Response{Action: "insert", Insert: text} }

// Display shows text as a note in the chat without calling the model.
func Display(text string) Response { return Response{Action: "display", Display: text} }

// ToolPrompt submits text as a new user message and has zot run its tool
// name with args (a value that encodes to a JSON object) first. zot 0.1.62
// cannot: it gets the prompt alone.
func ToolPrompt(name string, args any, text string) Response {
	if name == "" || text == "" {
		return Errorf("tool_prompt requires a name and prompt")
	}
	encoded, ok := jsonObject(args)
	if !ok {
		return Errorf("tool_prompt args must be a JSON object")
	}
	return Response{Action: "tool_prompt", Prompt: text, ToolName: name, ToolArgs: encoded}
}

// jsonObject encodes value, and reports whether it is a JSON object.
func jsonObject(value any) (json.RawMessage, bool) {
	encoded, err := json.Marshal(value)
	return encoded, err == nil && len(encoded) > 0 && encoded[0] == '{'
}

// Noop tells zot the command was handled and nothing changes.
func Noop() Response { return Response{Action: "noop"} }

// Errorf shows an error in the chat.
func Errorf(format string, args ...any) Response {
	return Response{Action: "noop", Error: fmt.Sprintf(format, args...)}
}

// Panel is a box of text lines zot shows above the editor; while it is open
// the user's keys go to the extension (OnPanelKey).
type Panel struct {
	ID     string   `json:"id"`
	Title  string   `json:"title"`
	Lines  []string `json:"lines"`
	Footer string   `json:"footer"`
}

func newPanel(id, title string, lines []string, footer string) *Panel {
	return &Panel{ID: id, Title: title, Lines: append([]string{}, lines...), Footer: footer}
}

// OpenPanel answers a command by opening a panel. Register its key handler
// with OnPanelKey first.
func OpenPanel(id, title string, lines []string, footer string) Response {
	return Response{Action: "open_panel", OpenPanel: newPanel(id, title, lines, footer)}
}

// ToolContent is one block of a tool's result.
type ToolContent struct {
	Type     string `json:"type"` // "text" or "image"
	Text     string `json:"text,omitempty"`
	Format   string `json:"format,omitempty"` // "markdown", or plain text
	MimeType string `json:"mime_type,omitempty"`
	Data     string `json:"data,omitempty"` // base64
}

// Text is a block of plain text.
func Text(text string) ToolContent { return ToolContent{Type: "text", Text: text} }

// Markdown is a block of text zot renders as Markdown (older zot shows it
// as is).
func Markdown(text string) ToolContent {
	return ToolContent{Type: "text", Text: text, Format: "markdown"}
}

// Image is an image block from base64 data, such as "image/png".
func Image(mimeType, base64Data string) ToolContent {
	return ToolContent{Type: "image", MimeType: mimeType, Data: base64Data}
}

// ImageBytes is an image block from the image's bytes.
func ImageBytes(mimeType string, data []byte) ToolContent {
	return Image(mimeType, base64.StdEncoding.EncodeToString(data))
}

// ToolResult is a tool's answer to the model.
type ToolResult struct {
	Content []ToolContent `json:"content"`
	IsError bool          `json:"is_error"`
	// ActivateTools names deferred tools (DeferredTool) zot then shows to
	// the model.
	ActivateTools []string `json:"activate_tools,omitempty"`
	// StructuredContent is the result as JSON, matching the tool's
	// OutputSchema (ToolOptions).
	StructuredContent json.RawMessage `json:"structured_content,omitempty"`
}

// TextResult is a tool result of one text block.
func TextResult(text string) ToolResult { return ToolResult{Content: []ToolContent{Text(text)}} }

// TextErrorResult is a tool result of one text block, marked as an error.
func TextErrorResult(text string) ToolResult {
	return ToolResult{Content: []ToolContent{Text(text)}, IsError: true}
}

// MarkdownResult is a tool result of one Markdown text block.
func MarkdownResult(text string) ToolResult {
	return ToolResult{Content: []ToolContent{Markdown(text)}}
}

// StructuredResult is a tool result whose structured_content is value as
// JSON, with content for the model to read.
func StructuredResult(value any, content ...ToolContent) ToolResult {
	structured, err := json.Marshal(value)
	if err != nil {
		return TextErrorResult("could not encode the result: " + err.Error())
	}
	return ToolResult{Content: content, StructuredContent: structured}
}

// ToolOptions are a tool's optional settings, all of them newer zot's (zot
// 0.1.62 ignores them).
type ToolOptions struct {
	// OutputSchema is the JSON Schema of the results' StructuredContent.
	OutputSchema json.RawMessage
	// Namespace groups tools for the model, with a description of the group
	// and instructions for using it.
	Namespace             string
	NamespaceDescription  string
	NamespaceInstructions string
	// Exposure is where zot offers the tool: "direct" (the default),
	// "codemode", "deferred" or "model-only".
	Exposure string
	// Deferred tools stay hidden from the model until a result names them
	// in ActivateTools.
	Deferred bool
	// Interactive tools may open panels and wait for the user, with no time
	// limit (newer zot only).
	Interactive bool
	// Replay is what `zot continuous` may do with a call cut short: "never"
	// (the default), "safe", "idempotent" or "reconcile".
	Replay string
}

// The values zot accepts for ToolOptions' Exposure and Replay ("" too).
var (
	exposures = []string{"direct", "codemode", "deferred", "model-only"}
	replays   = []string{"never", "safe", "idempotent", "reconcile"}
)

// EventResult is the bounded output of a tool, in tool_result events.
type EventResult struct {
	Content   []ToolContent `json:"content,omitempty"`
	IsError   bool          `json:"is_error,omitempty"`
	Truncated bool          `json:"truncated,omitempty"`
}

// Event is a lifecycle event; which fields are set depends on Name (zot's
// documentation of events lists them). Pointers tell a field zot did not
// send from false or zero.
type Event struct {
	Name          string          `json:"event"`
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
	AgentName     string          `json:"agent_name"`
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

// ToolCallDecision is the answer of InterceptToolCallX: Block refuses the
// call (the model sees Reason), else ModifiedArgs, a JSON object, replaces
// its arguments (empty: unchanged).
type ToolCallDecision struct {
	Block        bool
	Reason       string
	ModifiedArgs json.RawMessage
}

// TurnStartDecision is the answer of InterceptTurnStart: Block ends the turn
// before the model is called.
type TurnStartDecision struct {
	Block  bool
	Reason string
}

// AssistantMessageDecision is the answer of InterceptAssistantMessage: Block
// hides the model's text, else a non-empty ReplaceText is shown instead.
type AssistantMessageDecision struct {
	Block       bool
	Reason      string
	ReplaceText string
}

// BeforeAgentStartEvent is what zot says before the model starts on a
// prompt (newer zot only).
type BeforeAgentStartEvent struct {
	SystemPrompt string
	SessionID    string
	AgentRunID   string
	CWD          string // the user's project folder
	Provider     string
	Model        string
}

// toolHandler runs a tool call; ctx ends when zot cancels the call.
type toolHandler = func(ctx context.Context, args json.RawMessage) ToolResult

// panelHandlers receive an open panel's keys and its closing by zot.
type panelHandlers struct {
	onKey   func(key, text string)
	onClose func()
}

// Extension is one zot extension: New makes it, a call per handler registers
// it, Run answers zot.
type Extension struct {
	name, version string
	host          HostInfo
	newerHost     bool
	registrations []any // register_command and register_tool frames
	commands      map[string]func(args string) Response
	tools         map[string]toolHandler
	events        []string
	onEvent       map[string]func(Event)
	guard         func(toolName string, args json.RawMessage) (allow bool, reason string)
	guardX        func(toolName string, args json.RawMessage) ToolCallDecision
	onBlocked     func(toolName, reason string)
	beforeStart   func(BeforeAgentStartEvent) *string
	turnStart     func(step int) TurnStartDecision
	assistant     func(text string) AssistantMessageDecision
	onHello       func(HostInfo)
	usesPanels    bool
	canCallTool   atomic.Bool // hello_ack lists call_tool

	out     io.Writer // stdout
	log     io.Writer // stderr
	writeMu sync.Mutex
	mu      sync.Mutex                     // guards running, panels, calls and abandoned
	running map[string]*context.CancelFunc // by id: the tool calls running
	panels  map[string]panelHandlers

	callIDs   atomic.Int64
	calls     map[string]chan frame // by id: CallTool's calls waiting for zot
	abandoned map[string]bool       // calls given up on, whose result is dropped
	stopped   chan struct{}         // closed when Run returns
	stopOnce  sync.Once
}

// New makes an extension; name is the manifest's name.
func New(name, version string) *Extension {
	return &Extension{
		name: name, version: version,
		commands:  map[string]func(string) Response{},
		tools:     map[string]toolHandler{},
		onEvent:   map[string]func(Event){},
		out:       os.Stdout,
		log:       os.Stderr,
		running:   map[string]*context.CancelFunc{},
		panels:    map[string]panelHandlers{},
		calls:     map[string]chan frame{},
		abandoned: map[string]bool{},
		stopped:   make(chan struct{}),
	}
}

// Command registers the slash command /name.
func (e *Extension) Command(name, description string, run func(args string) Response) {
	e.commands[name] = run
	e.usesPanels = true // its answer may open a panel
	e.registrations = append(e.registrations, map[string]any{
		"type": "register_command", "name": name, "description": description,
	})
}

// Tool registers a tool the model calls; schema is the JSON Schema of its
// arguments. ToolWithOptions gives the handler a context.
func (e *Extension) Tool(name, description string, schema json.RawMessage, run func(args json.RawMessage) ToolResult) {
	e.ToolWithOptions(name, description, schema, ToolOptions{},
		func(_ context.Context, args json.RawMessage) ToolResult { return run(args) })
}

// ToolWithOptions registers a tool whose handler gets a context that is
// cancelled when zot gives up on the call; the result of a cancelled call
// is never sent. Pass that context to CallTool. An Exposure or Replay zot
// does not know panics, before anything is sent.
func (e *Extension) ToolWithOptions(name, description string, schema json.RawMessage, options ToolOptions,
	run func(ctx context.Context, args json.RawMessage) ToolResult) {
	if options.Exposure != "" && !slices.Contains(exposures, options.Exposure) {
		panic(fmt.Sprintf("tool %s: exposure %q must be one of %s", name, options.Exposure, strings.Join(exposures, ", ")))
	}
	if options.Replay != "" && !slices.Contains(replays, options.Replay) {
		panic(fmt.Sprintf("tool %s: replay %q must be one of %s", name, options.Replay, strings.Join(replays, ", ")))
	}
	e.tools[name] = run
	registration := map[string]any{
		"type": "register_tool", "name": name, "description": description, "schema": schema,
	}
	if len(options.OutputSchema) > 0 {
		registration["output_schema"] = options.OutputSchema
	}
	for key, value := range map[string]string{
		"namespace": options.Namespace, "namespace_description": options.NamespaceDescription,
		"namespace_instructions": options.NamespaceInstructions, "exposure": options.Exposure,
		"replay": options.Replay,
	} {
		if value != "" {
			registration[key] = value
		}
	}
	if options.Deferred {
		registration["deferred"] = true
	}
	if options.Interactive {
		registration["interactive"] = true
		e.usesPanels = true
	}
	e.registrations = append(e.registrations, registration)
}

// DeferredTool registers a tool the model sees only once another tool's
// result names it in ActivateTools (newer zot).
func (e *Extension) DeferredTool(name, description string, schema json.RawMessage, run func(args json.RawMessage) ToolResult) {
	e.ToolWithOptions(name, description, schema, ToolOptions{Deferred: true},
		func(_ context.Context, args json.RawMessage) ToolResult { return run(args) })
}

// InteractiveTool registers a tool that may open panels and wait for the
// user (newer zot only).
func (e *Extension) InteractiveTool(name, description string, schema json.RawMessage,
	run func(ctx context.Context, args json.RawMessage) ToolResult) {
	e.ToolWithOptions(name, description, schema, ToolOptions{Interactive: true}, run)
}

// On subscribes to a lifecycle event. Event handlers run one at a time, in
// zot's order, on the loop that reads stdin: keep them quick.
func (e *Extension) On(event string, handle func(Event)) {
	if _, known := e.onEvent[event]; !known {
		e.events = append(e.events, event)
	}
	e.onEvent[event] = handle
}

// InterceptToolCall registers a guard asked before every tool call runs.
func (e *Extension) InterceptToolCall(guard func(toolName string, args json.RawMessage) (allow bool, reason string)) {
	e.guard = guard
}

// InterceptToolCallX registers a guard asked before every tool call runs
// that may also rewrite the call's arguments; it wins over
// InterceptToolCall.
func (e *Extension) InterceptToolCallX(guard func(toolName string, args json.RawMessage) ToolCallDecision) {
	e.guardX = guard
}

// InterceptTurnStart registers a handler asked before each turn of the
// model (step counts them from 1); blocking ends the turn.
func (e *Extension) InterceptTurnStart(handle func(step int) TurnStartDecision) {
	e.turnStart = handle
}

// InterceptAssistantMessage registers a handler asked before the model's
// final text is shown: it may hide it or show another text.
func (e *Extension) InterceptAssistantMessage(handle func(text string) AssistantMessageDecision) {
	e.assistant = handle
}

// OnToolCallBlocked registers a handler run after zot has received a
// refusal of the guard (InterceptToolCall or InterceptToolCallX).
func (e *Extension) OnToolCallBlocked(handle func(toolName, reason string)) {
	e.onBlocked = handle
}

// InterceptBeforeAgentStart registers a handler asked before the model
// starts on a prompt: it returns the new system prompt, or nil to keep it.
func (e *Extension) InterceptBeforeAgentStart(handle func(BeforeAgentStartEvent) *string) {
	e.beforeStart = handle
}

// OnHello registers a handler run once hello_ack has arrived, before the
// registrations go out.
func (e *Extension) OnHello(handle func(HostInfo)) { e.onHello = handle }

// Host is what zot said in hello_ack (the zero value before).
func (e *Extension) Host() HostInfo { return e.host }

// NewerHost reports whether zot is newer than 0.1.62: its hello_ack lists
// capabilities. Only a newer zot opens panels from a tool and takes submit.
func (e *Extension) NewerHost() bool { return e.newerHost }

// Logf writes a line to stderr, which zot keeps in ext-NAME.log; stdout
// carries frames only.
func (e *Extension) Logf(format string, args ...any) {
	fmt.Fprintf(e.log, "[%s] %s\n", e.name, fmt.Sprintf(format, args...))
}

// Notify shows a note to the user: level is "info", "success", "warn" or
// "error".
func (e *Extension) Notify(level, message string) {
	e.send(map[string]any{"type": "notify", "level": level, "message": message})
}

// ClearNotes removes the extension's notes.
func (e *Extension) ClearNotes() { e.send(map[string]any{"type": "clear_notes"}) }

// Submit sends text as the user's next prompt (newer zot only).
func (e *Extension) Submit(text string) { e.send(map[string]any{"type": "submit", "text": text}) }

// callToolTimeout is how long CallTool waits for zot: zot's own limit.
var callToolTimeout = 60 * time.Second

// truncatedNote ends a result zot cut.
const truncatedNote = "[zot cut this result: over 256 KiB]"

// parentCall is the key of the id of the tool call whose handler got the
// context (ToolWithOptions).
type parentCall struct{}

// callError is CallTool's error: its text is the error result's; it wraps
// ctx.Err() when the call was cancelled.
type callError struct {
	text  string
	cause error
}

func (e *callError) Error() string { return e.text }
func (e *callError) Unwrap() error { return e.cause }

// CallTool runs zot's tool name (such as "read" or "bash") with args, a
// value that encodes to a JSON object, and returns its result. Pass the
// context of the tool handler that makes the call: zot needs it to know the
// call's parent, and cancelling it (zot gave up on the outer call) cancels
// this one. zot's own answer, an error result included (a refusal, a tool
// that failed), comes with a nil error. When the call could not run (a zot
// too old to run its tools, args that are not an object, no answer within
// 60 s, ctx done, zot stopped) the result is an error result and err says
// the same. zot cuts a result over 256 KiB and says so in a last text block.
func (e *Extension) CallTool(ctx context.Context, name string, args any) (ToolResult, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	fail := func(cause error, format string, values ...any) (ToolResult, error) {
		text := fmt.Sprintf(format, values...)
		return TextErrorResult(text), &callError{text, cause}
	}
	if !e.canCallTool.Load() { // zot 0.1.62 would never answer
		return fail(nil, "cannot call %s: this zot is too old to run its tools for extensions (update zot)", name)
	}
	encoded, ok := jsonObject(args)
	if name == "" || !ok {
		return fail(nil, "call_tool requires a name and JSON object args")
	}
	id := fmt.Sprintf("call-%d", e.callIDs.Add(1))
	reply := make(chan frame, 1)
	e.mu.Lock()
	e.calls[id] = reply
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.calls, id)
		e.mu.Unlock()
	}()
	call := map[string]any{"type": "call_tool", "id": id, "name": name, "args": encoded}
	if parent, _ := ctx.Value(parentCall{}).(string); parent != "" {
		call["parent_id"] = parent
	}
	select {
	case <-e.stopped:
		return fail(nil, "zot stopped before answering the call of %s", name)
	default:
	}
	e.send(call)
	timeout := time.NewTimer(callToolTimeout)
	defer timeout.Stop()
	select {
	case f := <-reply:
		return hostResult(f), nil
	case <-ctx.Done():
		e.abandon(id)
		return fail(ctx.Err(), "the call of %s was cancelled", name)
	case <-timeout.C:
		e.abandon(id)
		return fail(context.DeadlineExceeded, "zot did not answer the call of %s within 60 s", name)
	case <-e.stopped:
		return fail(nil, "zot stopped before answering the call of %s", name)
	}
}

// abandon tells zot to cancel a call; zot answers it all the same, and that
// result is dropped.
func (e *Extension) abandon(id string) {
	e.mu.Lock()
	if _, waiting := e.calls[id]; waiting { // else its result came already
		e.abandoned[id] = true
	}
	delete(e.calls, id)
	e.mu.Unlock()
	e.send(map[string]any{"type": "call_tool_cancel", "id": id})
}

// callResult hands zot's tool_result to the CallTool waiting for it, without
// waiting itself: it runs on the read loop.
func (e *Extension) callResult(f frame) {
	id, _ := f.text("id")
	e.mu.Lock()
	reply, waiting := e.calls[id]
	delete(e.calls, id)
	abandoned := e.abandoned[id]
	delete(e.abandoned, id)
	e.mu.Unlock()
	switch {
	case waiting:
		reply <- f // the only send on its channel, of room 1
	case !abandoned:
		e.Logf("ignored a tool_result for %q, which is no call of a tool of zot's", id)
	}
}

// hostResult reads zot's tool_result; a field of the wrong type reads as
// empty or false.
func hostResult(f frame) ToolResult {
	var blocks []json.RawMessage
	_ = json.Unmarshal(f["content"], &blocks)
	result := ToolResult{Content: []ToolContent{}, IsError: string(f["is_error"]) == "true"}
	for _, raw := range blocks {
		var block ToolContent
		if len(raw) > 0 && raw[0] == '{' {
			_ = json.Unmarshal(raw, &block) // a field of the wrong type stays empty
			result.Content = append(result.Content, block)
		}
	}
	if string(f["truncated"]) == "true" {
		result.Content = append(result.Content, Text(truncatedNote))
	}
	return result
}

// OnPanelKey routes the keys of panel panelID to onKey and its closing by
// zot to onClose (either may be nil) until the panel closes. Both run on
// the loop that reads stdin: keep them quick.
func (e *Extension) OnPanelKey(panelID string, onKey func(key, text string), onClose func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.panels[panelID] = panelHandlers{onKey, onClose}
}

// OpenPanel opens a panel by itself, outside a command's answer (newer zot
// only). Register its key handler with OnPanelKey first.
func (e *Extension) OpenPanel(id, title string, lines []string, footer string) {
	e.send(map[string]any{"type": "open_panel", "panel": newPanel(id, title, lines, footer)})
}

// RenderPanel replaces an open panel's title, lines and footer.
func (e *Extension) RenderPanel(panelID, title string, lines []string, footer string) {
	e.send(map[string]any{
		"type": "panel_render", "panel_id": panelID, "title": title,
		"lines": append([]string{}, lines...), "footer": footer,
	})
}

// ClosePanel closes a panel and forgets its handlers.
func (e *Extension) ClosePanel(panelID string) {
	e.mu.Lock()
	delete(e.panels, panelID)
	e.mu.Unlock()
	e.send(map[string]any{"type": "panel_close", "panel_id": panelID})
}

// Run says hello, registers the handlers once zot answers, then answers zot
// until shutdown or the end of stdin.
func (e *Extension) Run() error { return e.serve(os.Stdin) }

func (e *Extension) serve(stdin io.Reader) error {
	// Calls of zot's tools still waiting learn that zot has stopped.
	defer e.stopOnce.Do(func() { close(e.stopped) })
	// Capabilities are information for zot, but for tool_cancel (zot sends
	// it) and call_tool (zot runs its tools for the extension only then):
	// what is registered, and call_tool always.
	capabilities := []string{}
	if len(e.commands) > 0 {
		capabilities = append(capabilities, "commands")
	}
	if len(e.tools) > 0 {
		capabilities = append(capabilities, "tools")
	}
	if len(e.events) > 0 || len(e.intercepts()) > 0 {
		capabilities = append(capabilities, "events")
	}
	if e.usesPanels {
		capabilities = append(capabilities, "panels")
	}
	if len(e.tools) > 0 {
		capabilities = append(capabilities, "tool_cancel")
	}
	capabilities = append(capabilities, "call_tool")
	// The first line on stdout must be hello.
	e.send(map[string]any{
		"type": "hello", "name": e.name, "version": e.version, "capabilities": capabilities,
	})
	// A line of any length is read whole and answered; an answer over zot's
	// limit becomes the request's error (send).
	in := bufio.NewReaderSize(stdin, 64<<10)
	for {
		line, err := in.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 && e.handle(line) {
			// Return at once, even with handlers still running: zot has
			// stopped listening.
			return nil
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil // zot closed stdin: it has stopped listening
		case err != nil:
			return fmt.Errorf("reading stdin: %w", err)
		}
	}
}

// send writes one frame as one line.
func (e *Extension) send(v any) {
	var line bytes.Buffer
	encoder := json.NewEncoder(&line) // Encode ends the line with \n
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(v); err != nil {
		e.Logf("could not encode a frame: %v", err)
		return
	}
	if line.Len() >= maxLine { // zot would disconnect the extension
		e.Logf("a frame of %d bytes is over zot's limit", line.Len())
		instead := overTheLimit(line.Bytes())
		line.Reset()
		_ = encoder.Encode(instead)
	}
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	if _, err := e.out.Write(line.Bytes()); err != nil {
		e.Logf("could not write to zot: %v", err)
	}
}

// overTheLimit is what zot gets instead of a frame too long for it: the
// request's error.
func overTheLimit(line []byte) map[string]any {
	var frame struct{ Type, ID string }
	_ = json.Unmarshal(line, &frame)
	why := fmt.Sprintf("the answer is %d bytes, over zot's limit of 4 MiB for one line: send less", len(line))
	answer := map[string]any{"type": frame.Type, "id": frame.ID}
	switch frame.Type {
	case "tool_result":
		answer["content"], answer["is_error"] = []map[string]string{{"type": "text", "text": why}}, true
	case "command_response":
		answer["action"], answer["error"] = "noop", why
	case "event_intercept_response":
		answer["block"], answer["reason"] = true, why
	default:
		return map[string]any{"type": "notify", "level": "error", "message": why}
	}
	return answer
}

// frame is one line from zot, its fields still encoded.
type frame map[string]json.RawMessage

// text returns a field that holds a string.
func (f frame) text(key string) (string, bool) {
	var value string
	raw := f[key]
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &value) != nil {
		return "", false
	}
	return value, true
}

// handle acts on one line from zot; it reports whether to stop.
func (e *Extension) handle(line []byte) (stop bool) {
	var f frame
	if err := json.Unmarshal(line, &f); err != nil || f == nil {
		problem := "a malformed line"
		if json.Valid(line) {
			problem = "a line that is not a JSON object"
		}
		e.Logf("skipped %s: %q", problem, line[:min(len(line), 80)])
		return false
	}
	kind, _ := f.text("type")
	switch kind {
	case "command_invoked", "tool_call", "event_intercept", "tool_cancel":
		id, ok := f.text("id")
		switch {
		case !ok:
			e.Logf("skipped a %s frame without an id", kind)
		case kind == "tool_cancel":
			e.cancelTool(id)
		case kind == "tool_call":
			// The call is known before its goroutine starts, so a
			// tool_cancel right behind it finds it. Its context names it as
			// the parent of the calls CallTool makes with it.
			ctx, cancel := context.WithCancel(context.WithValue(context.Background(), parentCall{}, id))
			e.mu.Lock()
			e.running[id] = &cancel
			e.mu.Unlock()
			go e.callTool(ctx, &cancel, id, f)
		default:
			go e.answer(kind, id, f)
		}
	case "tool_result": // zot's answer to CallTool
		e.callResult(f)
	case "panel_key", "panel_close":
		e.panelFrame(kind, f)
	case "panel_resize":
		// The host lays panels out itself.
	case "hello_ack":
		e.register(line)
	case "event":
		e.event(line, f)
	case "shutdown":
		e.send(map[string]any{"type": "shutdown_ack"})
		return true
	default:
		e.Logf("ignored a frame of type %q", kind)
	}
	return false
}

// register answers hello_ack: the registrations, then ready.
func (e *Extension) register(line []byte) {
	var ack struct {
		HostInfo
		Capabilities json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(line, &ack); err != nil {
		e.Logf("hello_ack: %v", err)
	}
	var capabilities []any
	_ = json.Unmarshal(ack.Capabilities, &capabilities)
	e.host, e.newerHost = ack.HostInfo, bytes.HasPrefix(ack.Capabilities, []byte("["))
	e.canCallTool.Store(slices.Contains(capabilities, any("call_tool")))
	if e.onHello != nil {
		e.onHello(e.host)
	}
	for _, registration := range e.registrations {
		e.send(registration)
	}
	intercept := e.intercepts()
	if len(e.events) > 0 || len(intercept) > 0 {
		events := append([]string{}, e.events...)
		e.send(map[string]any{"type": "subscribe", "events": events, "intercept": intercept})
	}
	e.send(map[string]any{"type": "ready"})
}

// intercepts are the intercepts registered, in the order subscribe lists them.
func (e *Extension) intercepts() []string {
	intercept := []string{}
	for _, on := range []struct {
		registered bool
		name       string
	}{
		{e.guard != nil || e.guardX != nil, "tool_call"},
		{e.beforeStart != nil, "before_agent_start"},
		{e.turnStart != nil, "turn_start"},
		{e.assistant != nil, "assistant_message"},
	} {
		if on.registered {
			intercept = append(intercept, on.name)
		}
	}
	return intercept
}

// event runs an event's handler on the read loop, so handlers see zot's order.
func (e *Extension) event(line []byte, f frame) {
	name, _ := f.text("event")
	handle := e.onEvent[name]
	if handle == nil {
		return
	}
	defer e.recoverAs("event " + name)
	var event Event
	_ = json.Unmarshal(line, &event) // a field of the wrong type stays unset
	handle(event)
}

// recoverAs logs a handler's panic instead of ending the extension.
func (e *Extension) recoverAs(what string) {
	if problem := recover(); problem != nil {
		e.Logf("%s handler failed: %v", what, problem)
	}
}

// panelFrame routes panel_key and panel_close to the panel's handlers, on
// the read loop, so keys arrive in order.
func (e *Extension) panelFrame(kind string, f frame) {
	id, _ := f.text("panel_id")
	e.mu.Lock()
	handlers, open := e.panels[id]
	if kind == "panel_close" {
		delete(e.panels, id)
	}
	e.mu.Unlock()
	if !open {
		e.Logf("ignored %s for panel %q, which is not open", kind, id)
		return
	}
	defer e.recoverAs(kind)
	if key, _ := f.text("key"); kind == "panel_key" && handlers.onKey != nil {
		text, _ := f.text("text")
		handlers.onKey(key, text)
	} else if kind == "panel_close" && handlers.onClose != nil {
		handlers.onClose()
	}
}

// cancelTool ends a running call's context; its result will not be sent.
func (e *Extension) cancelTool(id string) {
	e.mu.Lock()
	cancel, running := e.running[id]
	delete(e.running, id)
	e.mu.Unlock()
	if !running {
		e.Logf("ignored tool_cancel for %q, which is not running", id)
		return
	}
	(*cancel)()
}

// callTool runs a tool call and sends its result, unless zot cancelled it.
func (e *Extension) callTool(ctx context.Context, cancel *context.CancelFunc, id string, f frame) {
	result := e.runTool(ctx, f)
	defer (*cancel)()
	e.mu.Lock()
	running := e.running[id] == cancel // not cancelled (nor a later call with its id)
	if running {
		delete(e.running, id)
	}
	e.mu.Unlock()
	if !running && ctx.Err() != nil {
		return // cancelled: zot drops a late result anyway
	}
	if result.Content == nil {
		result.Content = []ToolContent{}
	}
	e.send(toolResult{Type: "tool_result", ID: id, ToolResult: result})
}

func (e *Extension) runTool(ctx context.Context, f frame) (result ToolResult) {
	name, _ := f.text("name")
	defer func() {
		if problem := recover(); problem != nil {
			e.Logf("tool_call handler failed: %v", problem)
			result = TextErrorResult(fmt.Sprintf("%s failed: %v", e.name, problem))
		}
	}()
	if run := e.tools[name]; run != nil {
		return run(ctx, f["args"])
	}
	return TextErrorResult("unknown tool: " + name)
}

// answer runs one request's handler and sends its reply with the request's
// id; a handler that panics is answered with the failure.
func (e *Extension) answer(kind, id string, f frame) {
	defer func() {
		if problem := recover(); problem != nil {
			e.Logf("%s handler failed: %v", kind, problem)
			e.send(e.failed(kind, id, fmt.Sprintf("%s failed: %v", e.name, problem)))
		}
	}()
	event, _ := f.text("event")
	switch {
	case kind == "command_invoked":
		e.send(e.runCommand(id, f))
	case event == "before_agent_start" && e.beforeStart != nil:
		e.send(e.systemPrompt(id, f))
	default:
		reply := e.intercept(id, f)
		e.send(reply)
		if toolName, _ := f.text("tool_name"); reply.Block && event == "tool_call" && e.onBlocked != nil {
			e.onBlocked(toolName, reply.Reason)
		}
	}
}

type commandResponse struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Response
}

type toolResult struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	ToolResult
}

type interceptResponse struct {
	Type         string          `json:"type"`
	ID           string          `json:"id"`
	Block        bool            `json:"block"`
	Reason       string          `json:"reason,omitempty"`
	ModifiedArgs json.RawMessage `json:"modified_args,omitempty"`
	ReplaceText  string          `json:"replace_text,omitempty"`
}

// promptResponse answers before_agent_start: no system_prompt keeps it.
type promptResponse struct {
	Type         string  `json:"type"`
	ID           string  `json:"id"`
	SystemPrompt *string `json:"system_prompt,omitempty"`
}

func (e *Extension) runCommand(id string, f frame) commandResponse {
	name, _ := f.text("name")
	args, _ := f.text("args")
	reply := Response{Error: "unknown command: /" + name}
	if run := e.commands[name]; run != nil {
		reply = run(args)
	}
	switch {
	case reply.Action == "":
		reply.Action = "noop"
	case reply.Action == "tool_prompt" && reply.Error == "":
		reply = ToolPrompt(reply.ToolName, reply.ToolArgs, reply.Prompt) // checked, if made by hand
		if reply.Error == "" && !e.newerHost {
			// zot 0.1.62 would show "unknown action tool_prompt".
			e.Logf("zot 0.1.62 cannot run a tool from a command: sent the prompt alone")
			reply = Prompt(reply.Prompt)
		}
	}
	return commandResponse{Type: "command_response", ID: id, Response: reply}
}

// intercept asks the handler of a tool_call, turn_start or
// assistant_message intercept; without one the answer allows.
func (e *Extension) intercept(id string, f frame) interceptResponse {
	reply := interceptResponse{Type: "event_intercept_response", ID: id}
	event, _ := f.text("event")
	switch {
	case event == "tool_call" && e.guardX != nil:
		toolName, _ := f.text("tool_name")
		decision := e.guardX(toolName, f["tool_args"])
		reply.Block, reply.Reason = decision.Block, decision.Reason
		if !decision.Block && len(decision.ModifiedArgs) > 0 {
			if args, ok := jsonObject(decision.ModifiedArgs); ok {
				reply.ModifiedArgs = args
			} else {
				e.Logf("the arguments of %s were not changed: modified_args must be a JSON object, not %.80s",
					toolName, decision.ModifiedArgs)
			}
		}
	case event == "tool_call" && e.guard != nil:
		toolName, _ := f.text("tool_name")
		allow, reason := e.guard(toolName, f["tool_args"])
		reply.Block, reply.Reason = !allow, reason
	case event == "turn_start" && e.turnStart != nil:
		var step int
		_ = json.Unmarshal(f["step"], &step) // not a number: 0
		decision := e.turnStart(step)
		reply.Block, reply.Reason = decision.Block, decision.Reason
	case event == "assistant_message" && e.assistant != nil:
		text, _ := f.text("text")
		decision := e.assistant(text)
		reply.Block, reply.Reason = decision.Block, decision.Reason
		if !decision.Block && decision.ReplaceText != text {
			reply.ReplaceText = decision.ReplaceText // "" is left out: shown as is
		}
	}
	return reply
}

// systemPrompt asks the before_agent_start handler; one that panics keeps
// the prompt.
func (e *Extension) systemPrompt(id string, f frame) (reply promptResponse) {
	reply = promptResponse{Type: "event_intercept_response", ID: id}
	defer e.recoverAs("before_agent_start")
	var event BeforeAgentStartEvent
	event.SystemPrompt, _ = f.text("system_prompt")
	event.SessionID, _ = f.text("session_id")
	event.AgentRunID, _ = f.text("agent_run_id")
	event.CWD, _ = f.text("cwd")
	event.Provider, _ = f.text("provider")
	event.Model, _ = f.text("model")
	reply.SystemPrompt = e.beforeStart(event)
	return reply
}

// failed is the answer to a request whose handler panicked, so zot is never
// left waiting.
func (e *Extension) failed(kind, id, text string) any {
	if kind == "command_invoked" {
		return commandResponse{Type: "command_response", ID: id, Response: Errorf("%s", text)}
	}
	// A guard that fails refuses rather than letting the call through.
	return interceptResponse{Type: "event_intercept_response", ID: id, Block: true, Reason: text}
}
