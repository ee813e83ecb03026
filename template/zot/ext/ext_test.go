// Unit tests of the runtime, which comes from the template.
package ext

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestReadLineTakesLinesUpToZotsLimit(t *testing.T) {
	fits := bytes.Repeat([]byte("x"), maxLine)
	input := bytes.Join([][]byte{
		[]byte("{}"), bytes.Repeat([]byte("y"), 1<<20), fits, append(fits, 'z'), []byte("last"),
	}, []byte("\n"))
	in := bufio.NewReader(bytes.NewReader(input))
	for i, want := range []int{2, 1 << 20, maxLine} {
		line, err := readLine(in)
		if got := len(bytes.TrimSpace(line)); err != nil || got != want {
			t.Fatalf("line %d: %d bytes, %v; want %d bytes", i+1, got, err, want)
		}
	}
	if _, err := readLine(in); !errors.Is(err, errTooLong) {
		t.Fatalf("a line over maxLine: %v, want errTooLong", err)
	}
	if line, err := readLine(in); err != nil || string(line) != "last" {
		t.Fatalf("the line after it: %q, %v; want \"last\" (no newline at the end)", line, err)
	}
	if _, err := readLine(in); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
}

func TestHandshakeOnANewerAndAnOlderHost(t *testing.T) {
	for _, ack := range []string{`"capabilities": ["call_tool"]`, `"capabilities": []`, `"zot_version": "0.1.62"`} {
		e := New("probe", "1.0.0")
		e.Command("c", "a command", func(string) Response { return Noop() })
		e.Tool("t", "a tool", json.RawMessage(`{"type":"object"}`), func(json.RawMessage) ToolResult { return TextResult("") })
		e.InterceptBeforeAgentStart(func(BeforeAgentStartEvent) *string { return nil })
		e.InteractiveTool("i", "asks", json.RawMessage(`{"type":"object"}`),
			func(context.Context, json.RawMessage) ToolResult { return TextResult("") })
		zot := connect(t, e, false)
		stdin := strings.NewReader(`{"type": "hello_ack", "cwd": "/p", ` + ack + "}\n" + `{"type": "shutdown"}` + "\n")
		if err := e.serve(stdin); err != nil {
			t.Fatal(err)
		}
		hello := zot.next()
		if got := hello["capabilities"]; !reflect.DeepEqual(got, []any{"commands", "tools", "events", "panels", "tool_cancel"}) {
			t.Errorf("hello capabilities %v", got)
		}
		for _, want := range []string{"register_command", "register_tool", "register_tool", "subscribe", "ready", "shutdown_ack"} {
			if frame := zot.next(); frame["type"] != want {
				t.Fatalf("%v, want a %s frame", frame, want)
			} else if want == "subscribe" && !reflect.DeepEqual(frame["intercept"], []any{"before_agent_start"}) {
				t.Errorf("subscribe %v, want the before_agent_start intercept", frame)
			}
		}
		if newer := strings.Contains(ack, "capabilities"); e.NewerHost() != newer || e.Host().CWD != "/p" {
			t.Errorf("hello_ack with %s: NewerHost() %v, Host() %+v", ack, e.NewerHost(), e.Host())
		}
	}
}

func TestRegisterToolSendsOptionsOnlyWhenUsed(t *testing.T) {
	e := New("probe", "1.0.0")
	schema := json.RawMessage(`{"type":"object"}`)
	e.Tool("plain", "d", schema, func(json.RawMessage) ToolResult { return TextResult("") })
	e.ToolWithOptions("rich", "d", schema, ToolOptions{Interactive: true, OutputSchema: schema},
		func(context.Context, json.RawMessage) ToolResult { return TextResult("") })
	plain, _ := json.Marshal(e.registrations[0])
	rich, _ := json.Marshal(e.registrations[1])
	if strings.Contains(string(plain), "interactive") || strings.Contains(string(plain), "output_schema") {
		t.Errorf("plain tool: %s", plain)
	}
	if !strings.Contains(string(rich), `"interactive":true`) || !strings.Contains(string(rich), `"output_schema":{"type":"object"}`) {
		t.Errorf("rich tool: %s", rich)
	}
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

// fakeZot stands for zot in a test: e's frames arrive on frames, and send
// hands e a line as if zot had written it.
type fakeZot struct {
	t      *testing.T
	e      *Extension
	frames chan []byte
}

// connect makes e talk to a fake zot for the test; newer sets whether zot
// is newer than 0.1.62 (NewerHost).
func connect(t *testing.T, e *Extension, newer bool) *fakeZot {
	zot := &fakeZot{t, e, make(chan []byte, 1024)}
	out, wasNewer := e.out, e.newerHost
	e.out, e.newerHost = zot, newer
	t.Cleanup(func() { e.out, e.newerHost = out, wasNewer })
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
