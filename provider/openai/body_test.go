package openai

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/internal/bodytest"
)

// bodyCase is this adapter's side of the shared body tests: a mid-session
// request and the adapter on a fake transport.
var bodyCase = bodytest.Case{
	Transcript: filepath.Join("testdata", "text.sse"),
	Request:    func() *provider.Request { return bodytest.TurnRequest(basicRequest(), "call_1") },
	Open: func(t testing.TB, rt http.RoundTripper) bodytest.Adapter {
		t.Helper()
		a, err := New(Config{BaseURL: "http://fake/v1", HTTPClient: &http.Client{Transport: rt}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	},
}

// BenchmarkStreamTurn is one provider turn through the adapter: encode the request, send
// it (to a transport that reads and closes the body), decode a short text answer.
func BenchmarkStreamTurn(b *testing.B) { bodytest.StreamTurn(b, bodyCase) }

// The transport may still be writing a body after Do returned (a server may answer
// before reading it all): until it closes the body, no later request reuses its bytes.
func TestBodyStaysIntactUntilTheTransportClosesIt(t *testing.T) {
	bodytest.BodyStaysIntactUntilTheTransportClosesIt(t, bodyCase)
}

// A transport that resends on a fresh connection closes the first body and asks GetBody
// for another: that one must carry the same bytes, whatever ran in between.
func TestGetBodyAfterCloseResendsTheSameBytes(t *testing.T) {
	bodytest.GetBodyAfterCloseResendsTheSameBytes(t, bodyCase)
}
