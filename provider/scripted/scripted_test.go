package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/provider"
)

func req(text string) *provider.Request {
	return &provider.Request{
		Model:    provider.ModelRef{Provider: "scripted", Model: "test"},
		System:   "BASE",
		Messages: []provider.Message{{Role: provider.RoleUser, Text: text}},
		Tools:    []provider.Tool{{Name: "bash"}, {Name: "read"}},
	}
}

func run(t *testing.T, p provider.Provider, r *provider.Request) ([]provider.Part, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := p.Stream(ctx, r)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var parts []provider.Part
	for {
		pt, err := s.Next()
		if errors.Is(err, io.EOF) {
			return parts, nil
		}
		if err != nil {
			return parts, err
		}
		parts = append(parts, pt)
	}
}

func acc(parts []provider.Part) *provider.Accumulator {
	a := &provider.Accumulator{}
	for _, p := range parts {
		a.Add(p)
	}
	return a
}

func TestJSONScriptReplaysTurnsErrorsAndRecordsRequests(t *testing.T) {
	sc, err := Load("testdata/tool_loop.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Script: sc})
	if err != nil {
		t.Fatal(err)
	}
	// Turn 0: reasoning, text and two tool calls, chunked by 4 runes.
	parts, err := run(t, p, req("what is here?"))
	if err != nil {
		t.Fatal(err)
	}
	a := acc(parts)
	m := a.Message()
	if m.Text != "Let me look." || m.Reasoning[0].Text != "List the files first." || len(m.ToolCalls) != 2 {
		t.Fatalf("message = %+v", m)
	}
	if m.ToolCalls[0].ID != "call_ls" || m.ToolCalls[1].ID != "call_0_1" || string(m.ToolCalls[1].Args) != `{"path": "go.mod"}` {
		t.Errorf("calls = %+v", m.ToolCalls)
	}
	if a.Finish != provider.FinishToolCalls {
		t.Errorf("finish = %q", a.Finish)
	}
	texts := 0
	for _, pt := range parts {
		if pt.Kind == provider.PartText {
			texts++
			if len([]rune(pt.Text)) > 4 {
				t.Errorf("chunk %q longer than 4 runes", pt.Text)
			}
		}
	}
	if texts != 3 {
		t.Errorf("text deltas = %d, want 3", texts)
	}
	// Turn 1: overflow before the stream, like an HTTP 400.
	if _, err := run(t, p, req("more")); !errors.Is(err, provider.ErrContextOverflow) || !strings.Contains(err.Error(), "prompt is too long") {
		t.Fatalf("turn 1 err = %v", err)
	}
	// Turn 2: one part, then a retryable error.
	parts, err = run(t, p, req("again"))
	if !errors.Is(err, provider.ErrRetryable) || len(parts) != 1 || parts[0].Text != "partial" {
		t.Fatalf("turn 2 = %v, %v", parts, err)
	}
	// Turn 3: explicit usage.
	parts, err = run(t, p, req("last"))
	if err != nil || acc(parts).Usage.InputTokens != 100 || acc(parts).Message().Text != "Done: two files." {
		t.Fatalf("turn 3 = %v, %v", parts, err)
	}
	// Exhausted.
	if _, err := run(t, p, req("one more")); !errors.Is(err, provider.ErrInvalidRequest) || !strings.Contains(err.Error(), "exhausted") {
		t.Fatalf("exhausted err = %v", err)
	}
	rs := p.Requests()
	if len(rs) != 5 || rs[0].Messages[0].Text != "what is here?" || rs[4].Messages[0].Text != "one more" || rs[0].System != "BASE" {
		t.Errorf("recorded requests = %+v", rs)
	}
}

func TestRetryWrapperRetriesScriptedErrorsOnlyBeforeOutput(t *testing.T) {
	sc, err := Parse([]byte(`{"turns":[
		{"error":{"kind":"rate_limited","retry_after":"3s"}},
		{"error":{"kind":"retryable","after_parts":0}},
		{"text":"ok"},
		{"text":"x","error":{"kind":"retryable","after_parts":1}}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := New(Config{Script: sc})
	var delays []time.Duration
	var attempts []int
	r := provider.Retry(p, provider.RetryConfig{
		Sleep:   func(_ context.Context, d time.Duration) error { delays = append(delays, d); return nil },
		OnRetry: func(a int, _ time.Duration, _ error) { attempts = append(attempts, a) },
	})
	parts, err := run(t, r, req("hi"))
	if err != nil || acc(parts).Message().Text != "ok" {
		t.Fatalf("parts %v err %v", parts, err)
	}
	if fmt.Sprint(delays) != "[3s 4s]" || fmt.Sprint(attempts) != "[2 3]" {
		t.Errorf("delays %v attempts %v, want retry-after 3s then the second backoff step 4s", delays, attempts)
	}
	// After output: no retry, the error passes through.
	parts, err = run(t, r, req("hi"))
	if !errors.Is(err, provider.ErrRetryable) || len(parts) != 1 || p.Count() != 4 {
		t.Fatalf("after-output error: parts %v err %v count %d", parts, err, p.Count())
	}
}

func TestFuncScriptReactsToTheRequest(t *testing.T) {
	p, err := New(Config{Func: func(_ context.Context, r *provider.Request, n int) (Turn, error) {
		last := r.Messages[len(r.Messages)-1]
		if last.Role == provider.RoleTool {
			return Turn{Text: "tool said " + last.ToolResult.Output}, nil
		}
		return Turn{ToolCalls: []ToolCall{{Name: "bash", Args: json.RawMessage(`{"command":"echo hi"}`)}}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := run(t, p, req("go"))
	if err != nil {
		t.Fatal(err)
	}
	m := acc(parts).Message()
	r := req("go")
	r.Messages = append(r.Messages, m, provider.Message{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: m.ToolCalls[0].ID, Output: "hi"}})
	parts, err = run(t, p, r)
	if err != nil || acc(parts).Message().Text != "tool said hi" {
		t.Fatalf("parts %v err %v", parts, err)
	}
}

func TestHangingTurnEndsOnCancelAsInterrupted(t *testing.T) {
	p, _ := New(Config{Script: &Script{Turns: []Turn{{Text: "working", Hang: true}}}})
	ctx, cancel := context.WithCancel(context.Background())
	s, err := p.Stream(ctx, req("x"))
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := s.Next(); err != nil || pt.Text != "working" {
		t.Fatalf("%v %v", pt, err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.Next(); done <- err }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, provider.ErrInterrupted) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("hang did not end on cancel")
	}
}

func TestVerbatimPartsCanScriptATruncatedStream(t *testing.T) {
	sc, err := Parse([]byte(`{"turns":[{"parts":[{"kind":"text","text":"cut"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := New(Config{Script: sc})
	s, _ := p.Stream(context.Background(), req("x"))
	if _, err := provider.Collect(s, Kind); !errors.Is(err, provider.ErrMalformed) {
		t.Fatalf("Collect of a stream without finish = %v, want malformed", err)
	}
}

func TestBadScriptsAreRefusedWithTheirTurn(t *testing.T) {
	cases := map[string]string{
		`{"turns":[{"text":"a"},{"finish":"banana"}]}`:         "turn 1: unknown finish",
		`{"turns":[{"tool_calls":[{"name":"x","args":"{"}]}]}`: "turn 0",
		`{"turns":[{"error":{"kind":"oops"}}]}`:                "unknown error kind",
		`{"turns":[{"txt":"typo"}]}`:                           "unknown field",
		`{"turns":[{"parts":[{"kind":"sparkle"}]}]}`:           "unknown kind",
		`{"turns":[{"delay":"soon"}]}`:                         "duration",
		`{"turns":[],"when_exhausted":"cycle"}`:                "needs at least one turn",
		`{"turns":[{"tool_calls":[{"args":{}}]}]}`:             "has no name",
	}
	for src, want := range cases {
		if _, err := Parse([]byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %q", src, err, want)
		}
	}
}

func TestCycleAndConcurrentRecording(t *testing.T) {
	p, _ := New(Config{Script: &Script{Turns: []Turn{{Text: "a"}, {Text: "b"}}, WhenExhausted: "cycle"}})
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := p.Stream(context.Background(), req("x"))
			if err != nil {
				t.Error(err)
				return
			}
			provider.Collect(s, Kind)
		}()
	}
	wg.Wait()
	if p.Count() != 20 || len(p.Requests()) != 20 {
		t.Fatalf("count = %d", p.Count())
	}
}

func TestDemoAnswersAndDrivesTheBashTool(t *testing.T) {
	d := Demo()
	parts, err := run(t, d, req("hello there"))
	if err != nil || !strings.Contains(acc(parts).Message().Text, "offline demo") || !strings.Contains(acc(parts).Message().Text, "hello there") {
		t.Fatalf("demo reply = %q, %v", acc(parts).Message().Text, err)
	}
	parts, err = run(t, d, req("run: ls -la"))
	m := acc(parts).Message()
	if err != nil || len(m.ToolCalls) != 1 || m.ToolCalls[0].Name != "bash" || !strings.Contains(string(m.ToolCalls[0].Args), `"ls -la"`) {
		t.Fatalf("demo tool turn = %+v, %v", m, err)
	}
	r := req("run: ls -la")
	r.Messages = append(r.Messages, m, provider.Message{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: m.ToolCalls[0].ID, Output: "go.mod\nmain.go"}})
	parts, err = run(t, d, r)
	if err != nil || !strings.Contains(acc(parts).Message().Text, "go.mod") {
		t.Fatalf("demo after tool = %q, %v", acc(parts).Message().Text, err)
	}
}

// TestDemoKeepsOnlyItsLatestRequests: the offline demo serves a server for as long as it
// runs; it held a copy of every request (RSS 76 → 355 MB after 870 prompts).
func TestDemoKeepsOnlyItsLatestRequests(t *testing.T) {
	d := Demo()
	for i := range 100 {
		if _, err := run(t, d, req(fmt.Sprintf("prompt %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	kept := d.Requests()
	if d.Count() != 100 || len(kept) != DemoKeep {
		t.Fatalf("count %d, kept %d requests; want 100 and %d", d.Count(), len(kept), DemoKeep)
	}
	for i, r := range kept {
		if want := fmt.Sprintf("prompt %d", 100-DemoKeep+i); r.Messages[len(r.Messages)-1].Text != want {
			t.Fatalf("kept request %d is %q, want %q", i, r.Messages[len(r.Messages)-1].Text, want)
		}
	}
}

func TestPanickingScriptFunctionFailsTheTurnNotTheProcess(t *testing.T) {
	p, _ := New(Config{Func: func(context.Context, *provider.Request, int) (Turn, error) { panic("oops") }})
	if _, err := p.Stream(context.Background(), req("x")); !errors.Is(err, provider.ErrInvalidRequest) || !strings.Contains(err.Error(), "panicked: oops") {
		t.Fatalf("err = %v", err)
	}
}

func TestFirstDelayIsWaitedOnceAndHonoursCancel(t *testing.T) {
	p, _ := New(Config{Script: &Script{Turns: []Turn{{Text: "late", FirstDelay: Duration(time.Hour)}}}})
	ctx, cancel := context.WithCancel(context.Background())
	s, err := p.Stream(ctx, req("x"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.Next(); done <- err }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, provider.ErrInterrupted) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("first delay ignored the cancel")
	}
}
