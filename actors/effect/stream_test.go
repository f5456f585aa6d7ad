package effect

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/session"
)

// posted collects what an executor posts, as a mailbox would.
type posted chan any

func (p posted) post(msg any) { p <- msg }

// next is the next message posted, within a bounded wait.
func (p posted) next(t *testing.T) any {
	t.Helper()
	select {
	case m := <-p:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("nothing posted within 10s")
		return nil
	}
}

func scriptedProvider(t *testing.T, turns ...scripted.Turn) *scripted.Provider {
	t.Helper()
	p, err := scripted.New(scripted.Config{Script: &scripted.Script{Turns: turns}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStreamPostsDecodedPartsInOrderThenEnd: every part the provider
// streams is posted, decoded for the core, in the provider's order and
// tagged with the turn's token, then one StreamEnded; a part the core has
// no use for is posted with Kind 0 (the shell's fault point counts it).
func TestStreamPostsDecodedPartsInOrderThenEnd(t *testing.T) {
	usage := &provider.Usage{InputTokens: 7, OutputTokens: 3}
	prov := scriptedProvider(t, scripted.Turn{Parts: []scripted.Part{
		{Kind: "reasoning", Text: "think"},
		{Kind: "metadata", Key: "reasoning.signature", Text: "sig"},
		{Kind: "metadata", Key: "response.id", Text: "resp_1"},
		{Kind: "text", Text: "hel"},
		{Kind: "text", Text: "lo"},
		{Kind: "tool-input-start", ID: "call_1", Name: "bash"},
		{Kind: "tool-input-delta", ID: "call_1", Text: `{"command":`},
		{Kind: "tool-call", ID: "call_1", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)},
		{Kind: "usage", Usage: usage},
		{Kind: "finish", Finish: provider.FinishToolCalls},
		{Kind: "text", Text: "after the finish: never read"},
	}})
	ch := make(posted, 64)
	Stream(context.Background(), prov, testRequest(), 42, ch.post)
	want := []session.StreamPart{
		{Kind: session.PartReasoning, Text: "think"},
		{Kind: session.PartReasoningMeta, Key: "reasoning.signature", Text: "sig"},
		{},
		{Kind: session.PartText, Text: "hel"},
		{Kind: session.PartText, Text: "lo"},
		{Kind: session.PartToolInput, CallID: "call_1"},
		{Kind: session.PartToolInput, CallID: "call_1", Text: `{"command":`},
		{Kind: session.PartToolCall, CallID: "call_1", Tool: "bash", Args: []byte(`{"command":"ls"}`)},
		{Kind: session.PartUsage, Usage: messages.Usage{InputTokens: 7, OutputTokens: 3}},
		{Kind: session.PartFinish, Finish: string(provider.FinishToolCalls)},
	}
	for i, w := range want {
		m, ok := ch.next(t).(*StreamPart)
		if !ok {
			t.Fatalf("message %d: %T, want *StreamPart", i, m)
		}
		if m.Token != 42 || !reflect.DeepEqual(m.Part, w) {
			t.Fatalf("message %d: token %d part %+v, want token 42 part %+v", i, m.Token, m.Part, w)
		}
	}
	end, ok := ch.next(t).(*StreamEnded)
	if !ok || end.Token != 42 || end.Err != nil {
		t.Fatalf("end: %#v, want StreamEnded token 42 without error", end)
	}
	if len(ch) != 0 {
		t.Fatalf("%d messages after StreamEnded", len(ch))
	}
}

// TestStreamCancelledEndsWithTheProvidersError: cancelling the stream's
// context (an interrupt) ends a stream that waits for its provider; its
// end carries the provider's classified error (interrupted), after the
// parts that came before.
func TestStreamCancelledEndsWithTheProvidersError(t *testing.T) {
	prov := scriptedProvider(t, scripted.Turn{Text: "partial", Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(posted, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Stream(ctx, prov, testRequest(), 7, ch.post)
	}()
	if m, ok := ch.next(t).(*StreamPart); !ok || m.Part.Kind != session.PartText || m.Part.Text != "partial" {
		t.Fatalf("first message %#v, want the text part", m)
	}
	cancel()
	end, ok := ch.next(t).(*StreamEnded)
	if !ok || end.Token != 7 {
		t.Fatalf("%#v, want StreamEnded token 7", end)
	}
	if provider.KindOf(end.Err) != provider.KindInterrupted {
		t.Fatalf("end error %v (kind %v), want an interrupted provider error", end.Err, provider.KindOf(end.Err))
	}
	<-done
}

// TestStreamFailureIsItsEnd: a provider that refuses the request, fails
// mid-stream or panics posts StreamEnded with that error; nothing panics.
func TestStreamFailureIsItsEnd(t *testing.T) {
	one := 1
	for _, tc := range []struct {
		name  string
		prov  provider.Provider
		parts int
		kind  provider.Kind
	}{
		{"refused", scriptedProvider(t, scripted.Turn{Error: &scripted.ErrorSpec{Kind: "rate_limited"}}), 0, provider.KindRateLimited},
		{"mid-stream", scriptedProvider(t, scripted.Turn{Text: "a", Error: &scripted.ErrorSpec{Kind: "malformed", AfterParts: &one}}), 1, provider.KindMalformed},
		{"panics", panicking{}, 0, provider.KindUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := make(posted, 64)
			Stream(context.Background(), tc.prov, testRequest(), 1, ch.post)
			for i := range tc.parts {
				if _, ok := ch.next(t).(*StreamPart); !ok {
					t.Fatalf("message %d is no part", i)
				}
			}
			end, ok := ch.next(t).(*StreamEnded)
			if !ok || end.Err == nil || provider.KindOf(end.Err) != tc.kind || end.In != (session.StreamEnded{Err: end.Err.Error(), Kind: tc.kind}) {
				t.Fatalf("%#v, want StreamEnded with a %v error, for the core too", end, tc.kind)
			}
		})
	}
}

type panicking struct{}

func (panicking) Stream(context.Context, *provider.Request) (provider.Stream, error) {
	panic("adapter bug")
}

// TestGoPostsAPanicAsItsResult: a panicking effect posts onPanic's result
// instead of taking the process down.
func TestGoPostsAPanicAsItsResult(t *testing.T) {
	ch := make(posted, 1)
	Go(ch.post, func() any { panic("boom") }, func(err error) any { return err })
	err, ok := ch.next(t).(error)
	if !ok || err.Error() != "panic: boom" {
		t.Fatalf("posted %v, want the panic as an error", err)
	}
	Go(ch.post, func() any { return "ok" }, func(err error) any { return errors.New("unexpected") })
	if m := ch.next(t); m != "ok" {
		t.Fatalf("posted %v, want the work's result", m)
	}
}

func testRequest() *provider.Request {
	return &provider.Request{Model: provider.ModelRef{Provider: scripted.Kind, Model: "test"}}
}
