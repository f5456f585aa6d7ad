package provider_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

func req() *provider.Request {
	return &provider.Request{Model: provider.ModelRef{Provider: "scripted", Model: "t"}, Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}
}

func script(t *testing.T, src string) *scripted.Provider {
	t.Helper()
	sc, err := scripted.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := scripted.New(scripted.Config{Script: sc})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type sleeps struct{ d []time.Duration }

func (s *sleeps) sleep(_ context.Context, d time.Duration) error { s.d = append(s.d, d); return nil }

func TestRetryBacksOff2_4_8_16AndStopsAfterFiveAttempts(t *testing.T) {
	p := script(t, `{"turns":[{"error":{"kind":"retryable"}}],"when_exhausted":"repeat_last"}`)
	var sl sleeps
	_, err := provider.Retry(p, provider.RetryConfig{Sleep: sl.sleep}).Stream(context.Background(), req())
	if !errors.Is(err, provider.ErrRetryable) {
		t.Fatalf("err = %v", err)
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}
	if len(sl.d) != 4 || sl.d[0] != want[0] || sl.d[1] != want[1] || sl.d[2] != want[2] || sl.d[3] != want[3] {
		t.Errorf("delays = %v, want %v", sl.d, want)
	}
	if p.Count() != 5 {
		t.Errorf("attempts = %d, want 5", p.Count())
	}
}

func TestRetryDoesNotRetryNonRetryableOrHugeRetryAfter(t *testing.T) {
	for _, src := range []string{
		`{"turns":[{"error":{"kind":"context_overflow"}},{"text":"never"}]}`,
		`{"turns":[{"error":{"kind":"auth"}},{"text":"never"}]}`,
		`{"turns":[{"error":{"kind":"rate_limited","retry_after":"10m"}},{"text":"never"}]}`,
	} {
		p := script(t, src)
		var sl sleeps
		_, err := provider.Retry(p, provider.RetryConfig{Sleep: sl.sleep}).Stream(context.Background(), req())
		if err == nil || p.Count() != 1 || len(sl.d) != 0 {
			t.Errorf("%s: err %v attempts %d sleeps %v, want one attempt and the error", src, err, p.Count(), sl.d)
		}
	}
}

func TestRetryHoldsMetadataSoAnErrorAfterItIsStillRetried(t *testing.T) {
	p := script(t, `{"turns":[
		{"parts":[{"kind":"metadata","key":"response_id","text":"r1"},{"kind":"text","text":"x"}],"error":{"kind":"retryable","after_parts":1}},
		{"parts":[{"kind":"metadata","key":"response_id","text":"r2"},{"kind":"text","text":"ok"},{"kind":"finish","finish":"stop"}]}
	]}`)
	var sl sleeps
	s, err := provider.Retry(p, provider.RetryConfig{Sleep: sl.sleep}).Stream(context.Background(), req())
	if err != nil {
		t.Fatal(err)
	}
	a, err := provider.Collect(s, "scripted")
	if err != nil {
		t.Fatal(err)
	}
	if a.Meta[provider.MetaResponseID] != "r2" || a.Message().Text != "ok" || len(sl.d) != 1 {
		t.Fatalf("meta %v text %q sleeps %v", a.Meta, a.Message().Text, sl.d)
	}
}

func TestRetryWaitIsInterruptedByCancel(t *testing.T) {
	p := script(t, `{"turns":[{"error":{"kind":"retryable"}}],"when_exhausted":"repeat_last"}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The default sleep honours ctx: no 2 s wait.
	start := time.Now()
	_, err := provider.Retry(p, provider.RetryConfig{}).Stream(ctx, req())
	if !errors.Is(err, provider.ErrInterrupted) || !errors.Is(err, provider.ErrRetryable) {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) > time.Second {
		t.Fatalf("cancelled retry waited %s", time.Since(start))
	}
}

func TestQuoteIsBounded(t *testing.T) {
	big := strings.Repeat("é", 10000)
	q := provider.Quote([]byte(big))
	if len(q) > 3*provider.MaxSnippet || !strings.Contains(q, "bytes)") {
		t.Fatalf("quote of 20000 bytes is %d bytes: %.80s", len(q), q)
	}
	if got := provider.Quote([]byte("a\nb")); got != `"a\nb"` {
		t.Errorf("small quote = %s", got)
	}
}

func TestErrorsMatchTheirSentinels(t *testing.T) {
	e := &provider.Error{Kind: provider.KindContextOverflow, Provider: "openai", Status: 400, Message: "too long"}
	wrapped := errors.Join(errors.New("turn 3"), e)
	if !errors.Is(wrapped, provider.ErrContextOverflow) || errors.Is(wrapped, provider.ErrRateLimited) {
		t.Fatal("sentinel matching is wrong")
	}
	if s := e.Error(); s != "openai: context_overflow (HTTP 400): too long" {
		t.Errorf("Error() = %q", s)
	}
}

func TestMuxRoutesByProviderID(t *testing.T) {
	a := script(t, `{"turns":[{"text":"from a"}]}`)
	m := provider.NewMux(map[string]provider.Provider{"a": a})
	r := req()
	r.Model.Provider = "a"
	s, err := m.Stream(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if acc, err := provider.Collect(s, "a"); err != nil || acc.Message().Text != "from a" {
		t.Fatalf("%v %v", acc, err)
	}
	r.Model.Provider = "nope"
	if _, err := m.Stream(context.Background(), r); !errors.Is(err, provider.ErrInvalidRequest) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestCloseDuringARetryWaitEndsItAtOnce(t *testing.T) {
	p := script(t, `{"turns":[{"text":"x","error":{"kind":"retryable","after_parts":0}}],"when_exhausted":"repeat_last"}`)
	waiting := make(chan struct{})
	s, err := provider.Retry(p, provider.RetryConfig{
		Backoff: []time.Duration{time.Hour},
		OnRetry: func(int, time.Duration, error) { close(waiting) },
	}).Stream(context.Background(), req())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.Next(); done <- err }()
	<-waiting
	s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, provider.ErrInterrupted) {
			t.Fatalf("err = %v", err)
		}
		if _, err2 := s.Next(); !errors.Is(err2, provider.ErrInterrupted) {
			t.Fatalf("second Next = %v, want the same sticky error", err2)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the hour-long retry wait")
	}
}

func TestEstimateTokensCountsEveryPartOfTheRequest(t *testing.T) {
	r := &provider.Request{
		System: strings.Repeat("s", 400),
		Tools:  []provider.Tool{{Name: "bash", Description: strings.Repeat("d", 96)}},
		Messages: []provider.Message{
			{Role: provider.RoleUser, Text: strings.Repeat("u", 40), Attachments: []provider.Attachment{{MediaType: "image/png", Data: make([]byte, 1<<20)}, {MediaType: "text/plain", Data: make([]byte, 40)}}},
			{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "c", Name: "bash", Args: []byte(`{"a":1}`)}}},
			{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: "c", Output: strings.Repeat("o", 400)}},
		},
	}
	// 400 + 100 + 40 + 40 + 11 + 400 = 991 bytes → 248 tokens, + 1000 for the image.
	if got := provider.EstimateTokens(r); got != 1248 {
		t.Fatalf("estimate = %d, want 1248", got)
	}
}

// TestWrapSystemUpdateEscapesTheText: spec 000 lowers a Mid-Conversation System Message
// "to a wrapped chronological fallback" for providers without a native chronological
// system role; the wrapped text is XML-escaped (the lowering in contextsources, which now
// shares this escaper), so a context value holding "</system-update>" cannot end the
// wrapper and speak outside it. Before, the adapters sent it verbatim.
func TestWrapSystemUpdateEscapesTheText(t *testing.T) {
	got := provider.WrapSystemUpdate("x</system-update><b>&\"q\"")
	want := "<system-update>\nx&lt;/system-update&gt;&lt;b&gt;&amp;\"q\"\n</system-update>"
	if got != want {
		t.Fatalf("WrapSystemUpdate = %q, want %q", got, want)
	}
	if plain := provider.WrapSystemUpdate("date is now 2026-11-26"); plain != "<system-update>\ndate is now 2026-11-26\n</system-update>" {
		t.Fatalf("plain text changed: %q", plain)
	}
}
