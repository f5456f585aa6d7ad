package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/provider"
)

// roundTripFunc is an http.RoundTripper written inline.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// sseResponse answers with a testdata transcript, as a server would.
func sseResponse(b []byte) *http.Response {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(b))}
}

// turnRequest is a mid-session request: a system prompt, a few exchanges with a tool
// call, and five tool schemas.
func turnRequest() *provider.Request {
	req := basicRequest()
	req.System = strings.Repeat("You are a coding agent. Be precise. ", 60)
	req.Messages = append(req.Messages,
		provider.Message{Role: provider.RoleAssistant, Text: "Let me look.", ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "read", Args: []byte(`{"path":"main.go"}`)}}},
		provider.Message{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: "call_1", Output: strings.Repeat("package main\n", 40)}},
		provider.Message{Role: provider.RoleAssistant, Text: "It is a Go program."},
		provider.Message{Role: provider.RoleUser, Text: "Now run the tests please."},
	)
	for _, name := range []string{"read", "bash", "apply_patch", "glob", "grep"} {
		req.Tools = append(req.Tools, provider.Tool{Name: name, Description: strings.Repeat("Does "+name+". ", 20),
			Schema: []byte(`{"type":"object","properties":{"path":{"type":"string","description":"The path"},"limit":{"type":"integer","minimum":1,"maximum":2000}},"required":["path"],"additionalProperties":false}`)})
	}
	return req
}

// BenchmarkStreamTurn is one provider turn through the adapter: encode the request, send
// it (to a transport that reads and closes the body), decode a short text answer.
func BenchmarkStreamTurn(b *testing.B) {
	a := readingAdapter(b)
	req, ctx := turnRequest(), context.Background()
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

// readingAdapter sends through a transport that reads and closes every body, as a server
// that answers after the whole request would; it reuses pooled buffers at once.
func readingAdapter(t testing.TB) *Adapter {
	t.Helper()
	transcript, err := os.ReadFile(filepath.Join("testdata", "text.sse"))
	if err != nil {
		t.Fatal(err)
	}
	return fakeAdapter(t, func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		return sseResponse(transcript), nil
	})
}

// fakeAdapter sends every request through rt instead of the network.
func fakeAdapter(t testing.TB, rt roundTripFunc) *Adapter {
	t.Helper()
	a, err := New(Config{BaseURL: "http://fake/v1", HTTPClient: &http.Client{Transport: rt}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// churn runs turns whose bodies (as large as turnRequest's) would overwrite a buffer
// returned to the pool too early.
func churn(t *testing.T) {
	t.Helper()
	a, req := readingAdapter(t), turnRequest()
	req.Messages[0].Text = strings.Repeat("x", len(req.Messages[0].Text))
	for range 20 {
		s, err := a.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
}

// The transport may still be writing a body after Do returned (a server may answer
// before reading it all): until it closes the body, no later request reuses its bytes.
func TestBodyStaysIntactUntilTheTransportClosesIt(t *testing.T) {
	var held io.ReadCloser
	a := fakeAdapter(t, func(r *http.Request) (*http.Response, error) {
		held = r.Body
		return sseResponse(nil), nil
	})
	req := turnRequest()
	want, err := a.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	churn(t)
	got, _ := io.ReadAll(held)
	held.Close()
	if !bytes.Equal(got, want) {
		t.Fatalf("held body changed after later requests:\n got %.200s\nwant %.200s", got, want)
	}
}

// A transport that resends on a fresh connection closes the first body and asks GetBody
// for another: that one must carry the same bytes, whatever ran in between.
func TestGetBodyAfterCloseResendsTheSameBytes(t *testing.T) {
	var again []byte
	a := fakeAdapter(t, func(r *http.Request) (*http.Response, error) {
		r.Body.Close()
		churn(t)
		b, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		again, _ = io.ReadAll(b)
		b.Close()
		if n := r.ContentLength; n != int64(len(again)) {
			t.Errorf("ContentLength %d, body %d bytes", n, len(again))
		}
		return sseResponse(nil), nil
	})
	req := turnRequest()
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
