// Package conntest holds the HTTP adapters' shared connection-reuse test. It
// is imported only by the adapters' tests: both stream through the same
// httpx transport and end a stream the same way, so one scenario checks both.
package conntest

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/internal/httpx"
)

// Reuse is one adapter's side of TurnsReuseTheConnection.
type Reuse struct {
	Transcript string            // path of an SSE transcript of a whole turn
	Request    *provider.Request // sent on every turn
	// Open returns the adapter under test, talking to baseURL through client.
	Open func(t *testing.T, baseURL string, client *http.Client) provider.Provider
	// Drained returns the channel a closed stream closes once its background
	// drain is done, or nil when Close did not drain (the stream type is the
	// adapter's own, so only it can tell).
	Drained func(provider.Stream) <-chan struct{}
}

// TurnsReuseTheConnection runs three turns as the session's pump reads them:
// up to the finish part, then Close, while the server holds the body open
// (so the chunked terminator has not arrived yet). Every turn after the
// first must reuse the first turn's connection: one dial in all.
func TurnsReuseTheConnection(t *testing.T, c Reuse) {
	t.Helper()
	transcript, err := os.ReadFile(c.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // answer after the whole request, as an API does
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(transcript)
		w.(http.Flusher).Flush()
		<-finished // the body ends only once the client saw the finish part
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(finished) }) // runs first: a failed turn must not hang srv.Close
	client, dials := countingClient()
	defer client.CloseIdleConnections()
	a := c.Open(t, srv.URL, client)

	for turn := range 3 {
		readTurn(t, a, c, turn, finished)
	}
	if got := dials.Load(); got != 1 {
		t.Fatalf("%d dials for 3 turns, want 1", got)
	}
}

// countingClient is a client on the adapters' default transport that counts
// the connections it dials.
func countingClient() (*http.Client, *atomic.Int64) {
	dials := new(atomic.Int64)
	tr := httpx.NewTransport()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	return &http.Client{Transport: tr}, dials
}

// readTurn reads one turn up to its finish part, lets the server end the
// body, closes the stream and waits for its drain to hand the connection back.
func readTurn(t *testing.T, a provider.Provider, c Reuse, turn int, finished chan<- struct{}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := a.Stream(ctx, c.Request)
	if err != nil {
		t.Fatal(err)
	}
	for {
		p, err := s.Next()
		if err == io.EOF {
			t.Fatalf("turn %d: EOF before the finish part", turn)
		}
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		if p.Kind == provider.PartFinish {
			break
		}
	}
	finished <- struct{}{}
	s.Close()
	if d := c.Drained(s); d != nil {
		<-d // the connection is back in the pool (or closed)
	}
}
