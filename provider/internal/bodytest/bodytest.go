// Package bodytest holds the HTTP adapters' shared request-body lifetime tests
// and turn benchmark. It is imported only by the adapters' tests: both put
// their bodies in internal/reqbody's pooled buffers, so one set of scenarios
// checks that neither returns a buffer while something can still read it.
package bodytest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/provider"
)

// Adapter is what the body tests need of an adapter: a turn, and the exact
// bytes it sends for a request.
type Adapter interface {
	provider.Provider
	Encode(req *provider.Request) ([]byte, error)
}

// Case is one adapter's side of the body tests.
type Case struct {
	Transcript string                   // path of an SSE transcript of a short text answer
	Request    func() *provider.Request // a fresh TurnRequest; churn edits its copy
	// Open returns the adapter under test, sending every request through rt
	// instead of the network.
	Open func(t testing.TB, rt http.RoundTripper) Adapter
}

// RoundTripFunc is an http.RoundTripper written inline.
type RoundTripFunc func(*http.Request) (*http.Response, error)

func (f RoundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// SSEResponse answers with a testdata transcript, as a server would.
func SSEResponse(b []byte) *http.Response {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(b))}
}

// TurnRequest extends req into a mid-session request: a system prompt, a few
// exchanges with a tool call (whose id is in the adapter's own form), and five
// tool schemas.
func TurnRequest(req *provider.Request, callID string) *provider.Request {
	req.System = strings.Repeat("You are a coding agent. Be precise. ", 60)
	req.Messages = append(req.Messages,
		provider.Message{Role: provider.RoleAssistant, Text: "Let me look.", ToolCalls: []provider.ToolCall{{ID: callID, Name: "read", Args: []byte(`{"path":"main.go"}`)}}},
		provider.Message{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: callID, Output: strings.Repeat("package main\n", 40)}},
		provider.Message{Role: provider.RoleAssistant, Text: "It is a Go program."},
		provider.Message{Role: provider.RoleUser, Text: "Now run the tests please."},
	)
	for _, name := range []string{"read", "bash", "apply_patch", "glob", "grep"} {
		req.Tools = append(req.Tools, provider.Tool{Name: name, Description: strings.Repeat("Does "+name+". ", 20),
			Schema: []byte(`{"type":"object","properties":{"path":{"type":"string","description":"The path"},"limit":{"type":"integer","minimum":1,"maximum":2000}},"required":["path"],"additionalProperties":false}`)})
	}
	return req
}

// StreamTurn benchmarks one provider turn through the adapter: encode the
// request, send it (to a transport that reads and closes the body), decode a
// short text answer.
func StreamTurn(b *testing.B, c Case) {
	a := Reading(b, c)
	req, ctx := c.Request(), context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := a.Stream(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := s.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
		s.Close()
	}
}

// Reading returns the adapter sending through a transport that reads and
// closes every body, as a server that answers after the whole request would;
// it reuses pooled buffers at once.
func Reading(t testing.TB, c Case) Adapter {
	t.Helper()
	transcript, err := os.ReadFile(c.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	return c.Open(t, RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		return SSEResponse(transcript), nil
	}))
}

// churn runs turns whose bodies (as large as the case's request's) would
// overwrite a buffer returned to the pool too early.
func churn(t *testing.T, c Case) {
	t.Helper()
	a, req := Reading(t, c), c.Request()
	req.Messages[0].Text = strings.Repeat("x", len(req.Messages[0].Text))
	for range 20 {
		s, err := a.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
}

// BodyStaysIntactUntilTheTransportClosesIt: the transport may still be writing
// a body after Do returned (a server may answer before reading it all): until
// it closes the body, no later request reuses its bytes.
func BodyStaysIntactUntilTheTransportClosesIt(t *testing.T, c Case) {
	t.Helper()
	var held io.ReadCloser
	a := c.Open(t, RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		held = r.Body
		return SSEResponse(nil), nil
	}))
	req := c.Request()
	want, err := a.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	churn(t, c)
	got, _ := io.ReadAll(held)
	held.Close()
	if !bytes.Equal(got, want) {
		t.Fatalf("held body changed after later requests:\n got %.200s\nwant %.200s", got, want)
	}
}

// GetBodyAfterCloseResendsTheSameBytes: a transport that resends on a fresh
// connection closes the first body and asks GetBody for another: that one must
// carry the same bytes, whatever ran in between.
func GetBodyAfterCloseResendsTheSameBytes(t *testing.T, c Case) {
	t.Helper()
	var again []byte
	a := c.Open(t, RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		r.Body.Close()
		churn(t, c)
		b, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		again, _ = io.ReadAll(b)
		b.Close()
		if n := r.ContentLength; n != int64(len(again)) {
			t.Errorf("ContentLength %d, body %d bytes", n, len(again))
		}
		return SSEResponse(nil), nil
	}))
	req := c.Request()
	want, _ := a.Encode(req)
	s, err := a.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !bytes.Equal(again, want) {
		t.Fatalf("resent body differs:\n got %.200s\nwant %.200s", again, want)
	}
}
