// Unit tests of the runtime, which comes from the template.
package ext

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestALineOverZotsLimitIsReadWholeAndAnswered(t *testing.T) {
	e := New("probe", "1.0.0")
	e.Tool("size", "d", json.RawMessage(`{"type":"object"}`), func(args json.RawMessage) ToolResult {
		return TextResult(strconv.Itoa(len(args)))
	})
	e.Tool("echo", "d", json.RawMessage(`{"type":"object"}`), func(args json.RawMessage) ToolResult {
		var in struct{ Text string }
		_ = json.Unmarshal(args, &in)
		return TextResult(in.Text)
	})
	zot := connect(t, e, true)
	stdin, toExtension := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- e.serve(stdin) }()
	write := func(line string) {
		if _, err := io.WriteString(toExtension, line); err != nil {
			t.Fatal(err)
		}
	}
	zot.next() // hello
	write(`{"type": "hello_ack", "capabilities": []}` + "\n")
	for range 3 { // the two tools, ready
		zot.next()
	}
	args := `{"text": "` + strings.Repeat("x", maxLine) + `"}`
	write(`{"type": "tool_call", "id": "1", "name": "size", "args": ` + args + "}\r\n")
	zot.expect(`{"type": "tool_result", "id": "1", "content": [{"type": "text", "text": "` + strconv.Itoa(len(args)) + `"}], "is_error": false}`)
	// The answer is over the limit too: an error instead. The last line
	// needs no newline.
	write(`{"type": "tool_call", "id": "2", "name": "echo", "args": ` + args + "}")
	if err := toExtension.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	result := zot.next()
	text := fmt.Sprint(result["content"])
	if result["id"] != "2" || result["is_error"] != true || !strings.Contains(text, "over zot's limit of 4 MiB for one line") {
		t.Errorf("the answer over the limit: %.200v", result)
	}
	if log := zot.log.String(); !strings.Contains(log, "over zot's limit") {
		t.Errorf("logged %q, want the frame over the limit", log)
	}
}

func TestHandshakeOnANewerAndAnOlderHost(t *testing.T) {
	for _, ack := range []string{`"capabilities": ["call_tool"]`, `"capabilities": []`, `"zot_version": "0.1.62"`} {
		e := New("probe", "1.0.0")
		e.Command("c", "a command", func(string) Response { return Noop() })
		e.Tool("t", "a tool", json.RawMessage(`{"type":"object"}`), func(json.RawMessage) ToolResult { return TextResult("") })
		e.InterceptBeforeAgentStart(func(BeforeAgentStartEvent) *string { return nil })
		e.InterceptAssistantMessage(func(string) AssistantMessageDecision { return AssistantMessageDecision{} })
		e.InterceptTurnStart(func(int) TurnStartDecision { return TurnStartDecision{} })
		e.InterceptToolCall(func(string, json.RawMessage) (bool, string) { return true, "" })
		e.InteractiveTool("i", "asks", json.RawMessage(`{"type":"object"}`),
			func(context.Context, json.RawMessage) ToolResult { return TextResult("") })
		zot := connect(t, e, false)
		stdin := strings.NewReader(`{"type": "hello_ack", "cwd": "/p", ` + ack + "}\n" + `{"type": "shutdown"}` + "\n")
		if err := e.serve(stdin); err != nil {
			t.Fatal(err)
		}
		hello := zot.next()
		want := []any{"commands", "tools", "events", "panels", "tool_cancel", "call_tool"}
		if got := hello["capabilities"]; !reflect.DeepEqual(got, want) {
			t.Errorf("hello capabilities %v, want %v", got, want)
		}
		intercepts := []any{"tool_call", "before_agent_start", "turn_start", "assistant_message"}
		for _, want := range []string{"register_command", "register_tool", "register_tool", "subscribe", "ready", "shutdown_ack"} {
			if frame := zot.next(); frame["type"] != want {
				t.Fatalf("%v, want a %s frame", frame, want)
			} else if want == "subscribe" && !reflect.DeepEqual(frame["intercept"], intercepts) {
				t.Errorf("subscribe %v, want the intercepts %v", frame, intercepts)
			}
		}
		if newer := strings.Contains(ack, "capabilities"); e.NewerHost() != newer || e.Host().CWD != "/p" {
			t.Errorf("hello_ack with %s: NewerHost() %v, Host() %+v", ack, e.NewerHost(), e.Host())
		}
		if calls := strings.Contains(ack, "call_tool"); e.canCallTool.Load() != calls {
			t.Errorf("hello_ack with %s: CallTool usable %v", ack, !calls)
		}
	}
}

func TestHelloListsCallToolEvenWithNothingRegistered(t *testing.T) {
	e := New("probe", "1.0.0")
	e.InterceptTurnStart(func(int) TurnStartDecision { return TurnStartDecision{} })
	zot := connect(t, e, true)
	if err := e.serve(strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
	if got := zot.next()["capabilities"]; !reflect.DeepEqual(got, []any{"events", "call_tool"}) {
		t.Errorf("hello capabilities %v, want [events call_tool]", got)
	}
}

func TestRegisterToolSendsOptionsOnlyWhenUsed(t *testing.T) {
	e := New("probe", "1.0.0")
	schema := json.RawMessage(`{"type":"object"}`)
	e.Tool("plain", "d", schema, func(json.RawMessage) ToolResult { return TextResult("") })
	e.ToolWithOptions("rich", "d", schema, ToolOptions{
		OutputSchema: schema, Namespace: "git", NamespaceDescription: "Git tools", NamespaceInstructions: "Commit often.",
		Exposure: "codemode", Deferred: true, Interactive: true, Replay: "idempotent",
	}, func(context.Context, json.RawMessage) ToolResult { return TextResult("") })
	e.DeferredTool("later", "d", schema, func(json.RawMessage) ToolResult { return TextResult("") })
	zot := connect(t, e, true)
	for _, registration := range e.registrations {
		e.send(registration)
	}
	zot.expect(`{"type": "register_tool", "name": "plain", "description": "d", "schema": {"type": "object"}}`)
	zot.expect(`{"type": "register_tool", "name": "rich", "description": "d", "schema": {"type": "object"},
		"output_schema": {"type": "object"}, "namespace": "git", "namespace_description": "Git tools",
		"namespace_instructions": "Commit often.", "exposure": "codemode", "deferred": true,
		"interactive": true, "replay": "idempotent"}`)
	zot.expect(`{"type": "register_tool", "name": "later", "description": "d", "schema": {"type": "object"}, "deferred": true}`)
}

func TestAnExposureOrReplayZotDoesNotKnowPanicsAtRegistration(t *testing.T) {
	for _, refused := range []struct {
		options ToolOptions
		want    string
	}{
		{ToolOptions{Exposure: "hidden"}, `tool t: exposure "hidden" must be one of direct, codemode, deferred, model-only`},
		{ToolOptions{Replay: "always", Exposure: "direct"}, `tool t: replay "always" must be one of never, safe, idempotent, reconcile`},
	} {
		options, want := refused.options, refused.want
		e := New("probe", "1.0.0")
		func() {
			defer func() {
				if got := recover(); got != want {
					t.Errorf("ToolWithOptions(%+v) panicked with %v, want %q", options, got, want)
				}
			}()
			e.ToolWithOptions("t", "d", json.RawMessage(`{}`), options,
				func(context.Context, json.RawMessage) ToolResult { return TextResult("") })
		}()
		if len(e.registrations) != 0 || e.tools["t"] != nil {
			t.Errorf("ToolWithOptions(%+v) registered the tool", options)
		}
	}
	for _, exposure := range []string{"", "direct", "codemode", "deferred", "model-only"} {
		for _, replay := range []string{"", "never", "safe", "idempotent", "reconcile"} {
			New("probe", "1.0.0").ToolWithOptions("t", "d", json.RawMessage(`{}`),
				ToolOptions{Exposure: exposure, Replay: replay},
				func(context.Context, json.RawMessage) ToolResult { return TextResult("") })
		}
	}
}

func TestAResultActivatesDeferredTools(t *testing.T) {
	e := New("probe", "1.0.0")
	e.Tool("open", "d", json.RawMessage(`{}`), func(json.RawMessage) ToolResult {
		result := TextResult("more tools")
		result.ActivateTools = []string{"later"}
		return result
	})
	zot := connect(t, e, true)
	zot.send(`{"type": "tool_call", "id": "1", "name": "open", "args": {}}`)
	zot.expect(`{"type": "tool_result", "id": "1", "content": [{"type": "text", "text": "more tools"}], "is_error": false,
		"activate_tools": ["later"]}`)
}

func TestNotesAndSubmitFrames(t *testing.T) {
	e := New("probe", "1.0.0")
	zot := connect(t, e, true)
	e.Notify("warn", "careful")
	e.ClearNotes()
	e.Submit("go on")
	zot.expect(`{"type": "notify", "level": "warn", "message": "careful"}`)
	zot.expect(`{"type": "clear_notes"}`)
	zot.expect(`{"type": "submit", "text": "go on"}`)
}

func TestFramesFromManyGoroutinesAreWholeLines(t *testing.T) {
	e := New("probe", "1.0.0")
	var out lockedBuffer
	e.out = &out
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.Notify("info", strings.Repeat(fmt.Sprint(i), 4096))
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for _, line := range lines {
		var frame map[string]string
		if err := json.Unmarshal([]byte(line), &frame); err != nil || frame["type"] != "notify" {
			t.Fatalf("not a whole notify frame: %.80q", line)
		}
	}
	if len(lines) != 64 {
		t.Errorf("%d lines, want 64", len(lines))
	}
}

func TestRichResultHelpers(t *testing.T) {
	cases := map[string]any{
		`{"type":"text","text":"**hi**","format":"markdown"}`:                           Markdown("**hi**"),
		`{"type":"image","mime_type":"image/png","data":"iVBO"}`:                        Image("image/png", "iVBO"),
		`{"type":"image","mime_type":"image/png","data":"AAEC"}`:                        ImageBytes("image/png", []byte{0, 1, 2}),
		`{"content":[{"type":"text","text":"x"}],"is_error":false}`:                     TextResult("x"),
		`{"content":[{"type":"text","text":"x","format":"markdown"}],"is_error":false}`: MarkdownResult("x"),
		`{"content":[{"type":"text","text":"2"}],"is_error":false,"structured_content":{"n":2}}`: StructuredResult(
			map[string]int{"n": 2}, Text("2")),
	}
	for want, value := range cases {
		if got, _ := json.Marshal(value); string(got) != want {
			t.Errorf("%s, want %s", got, want)
		}
	}
	if result := StructuredResult(make(chan int)); !result.IsError {
		t.Errorf("a value JSON cannot encode: %+v, want an error result", result)
	}
}

func TestPanelFrames(t *testing.T) {
	e := New("probe", "1.0.0")
	zot := connect(t, e, true)
	got, _ := json.Marshal(OpenPanel("p-1", "T", nil, "F"))
	if want := `{"action":"open_panel","open_panel":{"id":"p-1","title":"T","lines":[],"footer":"F"}}`; string(got) != want {
		t.Errorf("OpenPanel: %s, want %s", got, want)
	}
	e.OpenPanel("p-2", "T", []string{"a"}, "F")
	e.RenderPanel("p-2", "T2", []string{"b"}, "F2")
	e.ClosePanel("p-2")
	zot.expect(`{"type": "open_panel", "panel": {"id": "p-2", "title": "T", "lines": ["a"], "footer": "F"}}`)
	zot.expect(`{"type": "panel_render", "panel_id": "p-2", "title": "T2", "lines": ["b"], "footer": "F2"}`)
	zot.expect(`{"type": "panel_close", "panel_id": "p-2"}`)
}

func TestPanelKeysAndClosingReachTheirPanelOnly(t *testing.T) {
	e := New("probe", "1.0.0")
	zot := connect(t, e, true)
	var got []string
	for _, id := range []string{"a", "b"} {
		e.OnPanelKey(id, func(key, text string) { got = append(got, id+" "+key+" "+text) },
			func() { got = append(got, id+" closed") })
	}
	e.OnPanelKey("keys-only", func(key, _ string) { got = append(got, "keys-only "+key) }, nil)
	for _, line := range []string{
		`{"type": "panel_key", "panel_id": "a", "key": "rune", "text": "j"}`,
		`{"type": "panel_key", "panel_id": "b", "key": "enter"}`,
		`{"type": "panel_resize", "panel_id": "a", "width": 80}`,
		`{"type": "panel_close", "panel_id": "a"}`,
		`{"type": "panel_key", "panel_id": "a", "key": "up"}`, // closed: ignored
		`{"type": "panel_key", "panel_id": "nope", "key": "up"}`,
		`{"type": "panel_close", "panel_id": "nope"}`,
		`{"type": "panel_key", "key": "up"}`,
		`{"type": "panel_close", "panel_id": "keys-only"}`,
		`{"type": "panel_key", "panel_id": "keys-only", "key": "up"}`,
	} {
		zot.send(line)
	}
	e.ClosePanel("b")
	zot.expect(`{"type": "panel_close", "panel_id": "b"}`)
	zot.send(`{"type": "panel_key", "panel_id": "b", "key": "esc"}`) // closed by the extension
	zot.quiet()
	if want := []string{"a rune j", "b enter ", "a closed"}; !reflect.DeepEqual(got, want) {
		t.Errorf("handlers saw %q, want %q", got, want)
	}
}

func TestAPanickingKeyHandlerIsLogged(t *testing.T) {
	e := New("probe", "1.0.0")
	zot := connect(t, e, true)
	e.OnPanelKey("p", func(string, string) { panic("boom") }, nil)
	zot.send(`{"type": "panel_key", "panel_id": "p", "key": "up"}`)
	zot.quiet()
}

func TestACancelledToolCallSendsNoResult(t *testing.T) {
	e := New("probe", "1.0.0")
	cancelled := make(chan error, 1)
	e.ToolWithOptions("slow", "d", json.RawMessage(`{"type":"object"}`), ToolOptions{},
		func(ctx context.Context, _ json.RawMessage) ToolResult {
			<-ctx.Done()
			cancelled <- ctx.Err()
			return TextResult("too late")
		})
	e.Tool("quick", "d", json.RawMessage(`{"type":"object"}`), func(args json.RawMessage) ToolResult {
		return TextResult(string(args))
	})
	zot := connect(t, e, true)
	zot.send(`{"type": "tool_call", "id": "1", "name": "slow", "args": {}}`)
	zot.send(`{"type": "tool_cancel", "id": "1"}`)
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ctx.Err() = %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the handler's context was not cancelled")
	}
	zot.send(`{"type": "tool_cancel", "id": "1"}`)    // finished
	zot.send(`{"type": "tool_cancel", "id": "nope"}`) // unknown
	zot.quiet()
	zot.send(`{"type": "tool_call", "id": "2", "name": "quick", "args": [1]}`)
	zot.expect(`{"type": "tool_result", "id": "2", "content": [{"type": "text", "text": "[1]"}], "is_error": false}`)
	zot.send(`{"type": "tool_cancel", "id": "2"}`)
	zot.quiet()
}

func TestACallWhoseIDComesAgainWhileItRunsIsStillAnswered(t *testing.T) {
	e := New("probe", "1.0.0")
	release := make(chan struct{})
	e.Tool("wait", "d", json.RawMessage(`{"type":"object"}`), func(args json.RawMessage) ToolResult {
		if string(args) == `"first"` {
			<-release
		}
		return TextResult(string(args))
	})
	zot := connect(t, e, true)
	zot.send(`{"type": "tool_call", "id": "1", "name": "wait", "args": "first"}`)
	zot.send(`{"type": "tool_call", "id": "1", "name": "wait", "args": "second"}`)
	zot.expect(`{"type": "tool_result", "id": "1", "content": [{"type": "text", "text": "\"second\""}], "is_error": false}`)
	close(release)
	zot.expect(`{"type": "tool_result", "id": "1", "content": [{"type": "text", "text": "\"first\""}], "is_error": false}`)
}

func TestBeforeAgentStartRepliesWithTheNewPromptOrNone(t *testing.T) {
	e := New("probe", "1.0.0")
	e.InterceptBeforeAgentStart(func(event BeforeAgentStartEvent) *string {
		switch event.SystemPrompt {
		case "keep":
			return nil
		case "crash":
			panic("boom")
		}
		prompt := event.SystemPrompt + "+" + event.CWD + "+" + event.Model
		return &prompt
	})
	zot := connect(t, e, true)
	frame := `{"type": "event_intercept", "id": "%s", "event": "before_agent_start", "system_prompt": %s, "cwd": "/p", "model": "m"}`
	zot.send(fmt.Sprintf(frame, "1", `"base"`))
	zot.expect(`{"type": "event_intercept_response", "id": "1", "system_prompt": "base+/p+m"}`)
	zot.send(fmt.Sprintf(frame, "2", `42`))
	zot.expect(`{"type": "event_intercept_response", "id": "2", "system_prompt": "+/p+m"}`)
	for i, prompt := range []string{`"keep"`, `"crash"`} {
		zot.send(fmt.Sprintf(frame, fmt.Sprint(3+i), prompt))
		zot.expect(fmt.Sprintf(`{"type": "event_intercept_response", "id": "%d"}`, 3+i))
	}
	zot.send(`{"type": "event_intercept", "id": "5", "event": "turn_start", "step": 1}`)
	zot.expect(`{"type": "event_intercept_response", "id": "5", "block": false}`)
}

func TestARefusalIsSentBeforeWhatFollowsIt(t *testing.T) {
	e := New("probe", "1.0.0")
	e.InterceptToolCall(func(tool string, _ json.RawMessage) (bool, string) {
		if tool == "bash" {
			return false, "no bash"
		}
		return true, ""
	})
	e.OnToolCallBlocked(func(tool, reason string) { e.Notify("warn", tool+": "+reason) })
	zot := connect(t, e, true)
	zot.send(`{"type": "event_intercept", "id": "1", "event": "tool_call", "tool_name": "read"}`)
	zot.expect(`{"type": "event_intercept_response", "id": "1", "block": false}`)
	zot.send(`{"type": "event_intercept", "id": "2", "event": "tool_call", "tool_name": "bash"}`)
	zot.expect(`{"type": "event_intercept_response", "id": "2", "block": true, "reason": "no bash"}`)
	zot.expect(`{"type": "notify", "level": "warn", "message": "bash: no bash"}`)
}

func TestMalformedAndUnknownFramesWriteNothing(t *testing.T) {
	e := New("probe", "1.0.0")
	zot := connect(t, e, false)
	for _, line := range []string{`{`, `[1]`, `null`, `{"type": "what"}`, `{"type": "tool_cancel"}`,
		`{"type": "panel_key", "panel_id": 7}`, `{"type": "tool_call", "name": "x"}`} {
		zot.send(line)
	}
	zot.quiet()
}

// reader registers the tool "reader", which calls zot's tool "read" with
// its own arguments and answers what CallTool returned, err included.
func reader(e *Extension) {
	e.ToolWithOptions("reader", "d", json.RawMessage(`{}`), ToolOptions{},
		func(ctx context.Context, args json.RawMessage) ToolResult {
			result, err := e.CallTool(ctx, "read", args)
			if err != nil {
				result.Content = append(result.Content, Text(" | err: "+err.Error()))
			}
			return result
		})
}

func TestCallToolFromAToolHandlerNamesItsParent(t *testing.T) {
	e := New("probe", "1.0.0")
	reader(e)
	zot := connect(t, e, true)
	zot.send(`{"type": "tool_call", "id": "outer-1", "name": "reader", "args": {"path": "a.go"}}`)
	zot.expect(`{"type": "call_tool", "id": "call-1", "name": "read", "args": {"path": "a.go"}, "parent_id": "outer-1"}`)
	zot.send(`{"type": "tool_result", "id": "call-1", "name": "read", "content": [{"type": "text", "text": "package a"}]}`)
	zot.expect(`{"type": "tool_result", "id": "outer-1", "content": [{"type": "text", "text": "package a"}], "is_error": false}`)
	// zot's refusals are error results, with a nil error
	zot.send(`{"type": "tool_call", "id": "outer-2", "name": "reader", "args": {}}`)
	zot.expect(`{"type": "call_tool", "id": "call-2", "name": "read", "args": {}, "parent_id": "outer-2"}`)
	zot.send(`{"type": "tool_result", "id": "call-2", "name": "read", "is_error": true,
		"content": [{"type": "text", "text": "tool call depth limit reached"}]}`)
	zot.expect(`{"type": "tool_result", "id": "outer-2", "content": [{"type": "text", "text": "tool call depth limit reached"}],
		"is_error": true}`)
}

func TestCallToolReadsZotsAnswerWhateverItIs(t *testing.T) {
	e := New("probe", "1.0.0")
	zot := connect(t, e, true)
	for i, c := range []struct{ answer, want string }{
		{`"content": [{"type": "text", "text": "big"}], "is_error": false, "truncated": true`,
			`{"content": [{"type": "text", "text": "big"}, {"type": "text", "text": "[zot cut this result: over 256 KiB]"}], "is_error": false}`},
		{`"content": [{"type": "image", "mime_type": "image/png", "data": "iVBO"}], "is_error": true`,
			`{"content": [{"type": "image", "mime_type": "image/png", "data": "iVBO"}], "is_error": true}`},
		{`"content": "text", "is_error": "yes", "truncated": 1`, `{"content": [], "is_error": false}`},
		{`"content": [7, {"type": "text", "text": 5}, {"type": "text", "text": "ok", "format": "markdown"}]`,
			`{"content": [{"type": "text"}, {"type": "text", "text": "ok", "format": "markdown"}], "is_error": false}`},
		{``, `{"content": [], "is_error": false}`},
	} {
		id := fmt.Sprintf("call-%d", i+1)
		got := make(chan ToolResult, 1)
		go func() {
			result, err := e.CallTool(context.Background(), "read", map[string]string{"path": "x"})
			if err != nil {
				t.Errorf("CallTool: err %v for zot's own answer", err)
			}
			got <- result
		}()
		zot.expect(`{"type": "call_tool", "id": "` + id + `", "name": "read", "args": {"path": "x"}}`) // no parent_id
		if c.answer != "" {
			c.answer = ", " + c.answer
		}
		zot.send(`{"type": "tool_result", "id": "` + id + `"` + c.answer + `}`)
		if result, _ := json.Marshal(<-got); !sameJSON(t, string(result), c.want) {
			t.Errorf("answer %s: CallTool returned %s, want %s", c.answer, result, c.want)
		}
	}
	zot.send(`{"type": "tool_result", "id": "call-1", "content": []}`) // answered already
	zot.send(`{"type": "tool_result", "content": []}`)
	zot.quiet()
	if log := zot.log.String(); strings.Count(log, "which is no call of a tool of zot's") != 2 {
		t.Errorf("log %q, want two lines about the unknown tool_results", log)
	}
}

func TestCallToolOnZot0162SendsNothing(t *testing.T) {
	e := New("probe", "1.0.0")
	reader(e)
	zot := connect(t, e, false)
	zot.send(`{"type": "tool_call", "id": "1", "name": "reader", "args": {"path": "a.go"}}`)
	text := "cannot call read: this zot is too old to run its tools for extensions (update zot)"
	zot.expectFrame(map[string]any{"type": "tool_result", "id": "1", "is_error": true, "content": []map[string]string{
		{"type": "text", "text": text}, {"type": "text", "text": " | err: " + text}}})
	// too old comes first, whatever the call
	if _, err := e.CallTool(context.Background(), "bash", "not an object"); err == nil || err.Error() != strings.ReplaceAll(text, "read", "bash") {
		t.Errorf("err %v, want the zot too old", err)
	}
	zot.quiet()
}

func TestCallToolWithoutANameOrObjectArgsSendsNothing(t *testing.T) {
	e := New("probe", "1.0.0")
	zot := connect(t, e, true)
	want := "call_tool requires a name and JSON object args"
	for _, c := range []struct {
		name string
		args any
	}{
		{"", map[string]any{}}, {"read", nil}, {"read", []int{1}}, {"read", "{}"}, {"read", json.RawMessage(`[1]`)},
		{"read", json.RawMessage(`{`)}, {"read", make(chan int)},
	} {
		result, err := e.CallTool(context.Background(), c.name, c.args)
		if err == nil || err.Error() != want || !result.IsError || result.Content[0].Text != want {
			t.Errorf("CallTool(%q, %#v) = %+v, %v; want the error %q", c.name, c.args, result, err, want)
		}
	}
	zot.quiet()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.CallTool(ctx, "read", json.RawMessage(` {"path": "a"} `))
	}()
	zot.expect(`{"type": "call_tool", "id": "call-1", "name": "read", "args": {"path": "a"}}`)
	cancel()
	<-done // done with callToolTimeout, which a later test changes
}

func TestCancellingTheOuterCallCancelsTheCallOfZotsTool(t *testing.T) {
	e := New("probe", "1.0.0")
	errs := make(chan error, 1)
	e.ToolWithOptions("waits", "d", json.RawMessage(`{}`), ToolOptions{},
		func(ctx context.Context, args json.RawMessage) ToolResult {
			result, err := e.CallTool(ctx, "bash", args)
			if !result.IsError || result.Content[0].Text != "the call of bash was cancelled" {
				t.Errorf("CallTool returned %+v", result)
			}
			errs <- err
			return result
		})
	zot := connect(t, e, true)
	zot.send(`{"type": "tool_call", "id": "outer", "name": "waits", "args": {"command": "sleep 9"}}`)
	zot.expect(`{"type": "call_tool", "id": "call-1", "name": "bash", "args": {"command": "sleep 9"}, "parent_id": "outer"}`)
	zot.send(`{"type": "tool_cancel", "id": "outer"}`)
	zot.expect(`{"type": "call_tool_cancel", "id": "call-1"}`)
	if err := <-errs; err == nil || err.Error() != "the call of bash was cancelled" || !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want the call cancelled (context.Canceled)", err)
	}
	zot.send(`{"type": "tool_result", "id": "call-1", "content": [], "is_error": true}`) // zot answers all the same
	zot.quiet()                                                                          // and no result for the cancelled outer call
	if log := zot.log.String(); log != "" {
		t.Errorf("logged %q, want the late result dropped quietly", log)
	}
}

func TestCallToolGivesUpAfterTheTimeLimit(t *testing.T) {
	limit := callToolTimeout
	callToolTimeout = 20 * time.Millisecond
	t.Cleanup(func() { callToolTimeout = limit })
	e := New("probe", "1.0.0")
	zot := connect(t, e, true)
	result, err := e.CallTool(context.Background(), "read", map[string]any{})
	want := "zot did not answer the call of read within 60 s"
	if err == nil || err.Error() != want || !result.IsError || result.Content[0].Text != want {
		t.Errorf("CallTool = %+v, %v; want the error %q", result, err, want)
	}
	zot.expect(`{"type": "call_tool", "id": "call-1", "name": "read", "args": {}}`)
	zot.expect(`{"type": "call_tool_cancel", "id": "call-1"}`)
}

func TestCallToolEndsWhenZotStops(t *testing.T) {
	e := New("probe", "1.0.0")
	zot := connect(t, e, true)
	stdin, toExtension := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- e.serve(stdin) }()
	zot.next() // hello
	_, _ = toExtension.Write([]byte(`{"type": "hello_ack", "capabilities": ["call_tool"]}` + "\n"))
	zot.expect(`{"type": "ready"}`)
	errs := make(chan error, 1)
	go func() {
		_, err := e.CallTool(context.Background(), "read", map[string]any{})
		errs <- err
	}()
	zot.expect(`{"type": "call_tool", "id": "call-1", "name": "read", "args": {}}`)
	_ = toExtension.Close()
	want := "zot stopped before answering the call of read"
	if err := <-errs; err == nil || err.Error() != want {
		t.Errorf("err %v, want %q", err, want)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if _, err := e.CallTool(context.Background(), "read", map[string]any{}); err == nil || err.Error() != want {
		t.Errorf("after the end: err %v, want %q", err, want)
	}
	zot.quiet()
}

func TestToolPromptAndItsFallbackOnZot0162(t *testing.T) {
	for _, c := range []struct {
		response Response
		want     string
	}{
		{ToolPrompt("read", map[string]string{"path": "a.go"}, "Explain a.go"),
			`{"action": "tool_prompt", "tool_name": "read", "tool_args": {"path": "a.go"}, "prompt": "Explain a.go"}`},
		{ToolPrompt("", map[string]string{}, "x"), `{"action": "noop", "error": "tool_prompt requires a name and prompt"}`},
		{ToolPrompt("read", map[string]string{}, ""), `{"action": "noop", "error": "tool_prompt requires a name and prompt"}`},
		{ToolPrompt("read", []string{}, "x"), `{"action": "noop", "error": "tool_prompt args must be a JSON object"}`},
		{ToolPrompt("read", nil, "x"), `{"action": "noop", "error": "tool_prompt args must be a JSON object"}`},
		{Response{Action: "tool_prompt", ToolName: "read", Prompt: "x"}, // made by hand, without args
			`{"action": "noop", "error": "tool_prompt args must be a JSON object"}`},
	} {
		for _, newer := range []bool{true, false} {
			e := New("probe", "1.0.0")
			e.Command("c", "d", func(string) Response { return c.response })
			zot := connect(t, e, newer)
			zot.send(`{"type": "command_invoked", "id": "1", "name": "c", "args": ""}`)
			want := c.want
			if !newer && strings.Contains(want, "tool_prompt\"") {
				want = `{"action": "prompt", "prompt": "Explain a.go"}`
			}
			var fields map[string]any
			_ = json.Unmarshal([]byte(want), &fields)
			fields["type"], fields["id"] = "command_response", "1"
			zot.expectFrame(fields)
			logged := strings.Contains(zot.log.String(), "zot 0.1.62 cannot run a tool from a command: sent the prompt alone")
			if logged != (want == `{"action": "prompt", "prompt": "Explain a.go"}`) {
				t.Errorf("newer %v, %s: logged %q", newer, want, zot.log.String())
			}
		}
	}
}

func TestInterceptToolCallXMayRewriteTheArguments(t *testing.T) {
	e := New("probe", "1.0.0")
	e.InterceptToolCall(func(string, json.RawMessage) (bool, string) { return false, "the plain guard is not asked" })
	e.InterceptToolCallX(func(tool string, args json.RawMessage) ToolCallDecision {
		switch tool {
		case "bash":
			return ToolCallDecision{ModifiedArgs: json.RawMessage(`{"command": "ls -la", "was": ` + string(args) + `}`)}
		case "rm":
			return ToolCallDecision{Block: true, Reason: "no rm", ModifiedArgs: json.RawMessage(`{}`)}
		case "list":
			return ToolCallDecision{ModifiedArgs: json.RawMessage(`["not", "an", "object"]`)}
		case "broken":
			return ToolCallDecision{ModifiedArgs: json.RawMessage(`{`)}
		case "crash":
			panic("boom")
		}
		return ToolCallDecision{}
	})
	blocked := make(chan string, 8)
	e.OnToolCallBlocked(func(tool, reason string) { blocked <- tool + ": " + reason })
	zot := connect(t, e, true)
	frame := `{"type": "event_intercept", "id": "%d", "event": "tool_call", "tool_id": "t", "tool_name": "%s", "tool_args": {"command": "ls"}}`
	for i, want := range []string{
		`{"type": "event_intercept_response", "id": "0", "block": false, "modified_args": {"command": "ls -la", "was": {"command": "ls"}}}`,
		`{"type": "event_intercept_response", "id": "1", "block": true, "reason": "no rm"}`,
		`{"type": "event_intercept_response", "id": "2", "block": false}`,
		`{"type": "event_intercept_response", "id": "3", "block": false}`,
		`{"type": "event_intercept_response", "id": "4", "block": true, "reason": "probe failed: boom"}`,
		`{"type": "event_intercept_response", "id": "5", "block": false}`,
	} {
		zot.send(fmt.Sprintf(frame, i, []string{"bash", "rm", "list", "broken", "crash", "read"}[i]))
		zot.expect(want)
	}
	if log := zot.log.String(); strings.Count(log, "modified_args must be a JSON object") != 2 {
		t.Errorf("log %q, want two lines about arguments that are not an object", log)
	}
	if got := <-blocked; got != "rm: no rm" || len(blocked) > 0 {
		t.Errorf("OnToolCallBlocked saw %q (and %d more), want rm's refusal only", got, len(blocked))
	}
}

func TestTurnStartAndAssistantMessageIntercepts(t *testing.T) {
	e := New("probe", "1.0.0")
	e.InterceptTurnStart(func(step int) TurnStartDecision {
		switch step {
		case 3:
			return TurnStartDecision{Block: true, Reason: "three turns are enough"}
		case 4:
			panic("boom")
		}
		return TurnStartDecision{Reason: fmt.Sprint(step)}
	})
	e.InterceptAssistantMessage(func(text string) AssistantMessageDecision {
		switch text {
		case "secret":
			return AssistantMessageDecision{Block: true, Reason: "hidden", ReplaceText: "x"}
		case "crash":
			panic("boom")
		case "same", "":
			return AssistantMessageDecision{ReplaceText: text}
		}
		return AssistantMessageDecision{ReplaceText: strings.ToUpper(text)}
	})
	zot := connect(t, e, true)
	for i, c := range []struct{ fields, want string }{
		{`"event": "turn_start", "step": 1`, `"block": false, "reason": "1"`},
		{`"event": "turn_start", "step": 3`, `"block": true, "reason": "three turns are enough"`},
		{`"event": "turn_start", "step": 4`, `"block": true, "reason": "probe failed: boom"`},
		{`"event": "turn_start", "step": "two"`, `"block": false, "reason": "0"`},
		{`"event": "assistant_message", "text": "hi"`, `"block": false, "replace_text": "HI"`},
		{`"event": "assistant_message", "text": "same"`, `"block": false`},
		{`"event": "assistant_message", "text": 5`, `"block": false`},
		{`"event": "assistant_message", "text": "secret"`, `"block": true, "reason": "hidden"`},
		{`"event": "assistant_message", "text": "crash"`, `"block": true, "reason": "probe failed: boom"`},
	} {
		zot.send(fmt.Sprintf(`{"type": "event_intercept", "id": "%d", %s}`, i, c.fields))
		zot.expect(fmt.Sprintf(`{"type": "event_intercept_response", "id": "%d", %s}`, i, c.want))
	}
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		t.Fatalf("not JSON: %s or %s", a, b)
	}
	return reflect.DeepEqual(x, y)
}

// fakeZot stands for zot in a test: e's frames arrive on frames, and send
// hands e a line as if zot had written it.
type fakeZot struct {
	t      *testing.T
	e      *Extension
	frames chan []byte
	log    *lockedBuffer // what e logs
}

// connect makes e talk to a fake zot for the test; newer sets whether zot
// is newer than 0.1.62 (NewerHost) and runs its tools (CallTool).
func connect(t *testing.T, e *Extension, newer bool) *fakeZot {
	zot := &fakeZot{t, e, make(chan []byte, 1024), &lockedBuffer{}}
	out, log, wasNewer := e.out, e.log, e.newerHost
	e.out, e.log, e.newerHost = zot, zot.log, newer
	e.canCallTool.Store(newer)
	t.Cleanup(func() { e.out, e.log, e.newerHost = out, log, wasNewer })
	return zot
}

// Write takes one frame: the extension writes each in one call.
func (z *fakeZot) Write(line []byte) (int, error) {
	z.frames <- bytes.Clone(line)
	return len(line), nil
}

func (z *fakeZot) send(line string) {
	z.t.Helper()
	if z.e.handle([]byte(line)) {
		z.t.Fatalf("%s ended the session", line)
	}
}

// next is the next frame the extension sends.
func (z *fakeZot) next() map[string]any {
	z.t.Helper()
	select {
	case line := <-z.frames:
		var frame map[string]any
		if err := json.Unmarshal(line, &frame); err != nil || !bytes.HasSuffix(line, []byte("\n")) {
			z.t.Fatalf("not a JSON line: %q", line)
		}
		return frame
	case <-time.After(2 * time.Second):
		z.t.Fatal("no frame within 2 s")
		return nil
	}
}

// expect checks that the next frame is want (JSON).
func (z *fakeZot) expect(want string) {
	z.t.Helper()
	var wanted map[string]any
	if err := json.Unmarshal([]byte(want), &wanted); err != nil {
		z.t.Fatal(err)
	}
	if got := z.next(); !reflect.DeepEqual(got, wanted) {
		got, _ := json.Marshal(got)
		z.t.Fatalf("sent %s\nwant %s", got, want)
	}
}

// expectFrame checks that the next frame is want.
func (z *fakeZot) expectFrame(want map[string]any) {
	z.t.Helper()
	line, err := json.Marshal(want)
	if err != nil {
		z.t.Fatal(err)
	}
	z.expect(string(line))
}

// quiet checks that the extension sends nothing more for a while.
func (z *fakeZot) quiet() {
	z.t.Helper()
	select {
	case line := <-z.frames:
		z.t.Fatalf("sent %s, want nothing", line)
	case <-time.After(50 * time.Millisecond):
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.String()
}
