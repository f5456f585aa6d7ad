package anthropic

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/internal/httpx"
)

// The session's pump stops at the finish part and closes the stream, often
// before the body's chunked terminator arrived; the stream must still hand
// its connection back for the next turn instead of closing it.
func TestTurnsAfterAFinishedStreamReuseTheConnection(t *testing.T) {
	transcript, err := os.ReadFile(filepath.Join("testdata", "text.sse"))
	if err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(transcript)
		w.(http.Flusher).Flush()
		<-finished // the body ends only once the client saw the finish part
	})
	var dials atomic.Int64
	tr := httpx.NewTransport()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	client := &http.Client{Transport: tr}
	defer client.CloseIdleConnections()
	a, err := New(Config{BaseURL: srv.URL, APIKey: "sk-ant-test", HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}

	for turn := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := a.Stream(ctx, basicRequest())
		if err != nil {
			t.Fatal(err)
		}
		for { // as actors' pump reads: up to the finish part, then Close
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
		if d := s.(*stream).drained; d != nil {
			<-d // the connection is back in the pool (or closed)
		}
		cancel()
	}
	if got := dials.Load(); got != 1 {
		t.Fatalf("%d dials for 3 turns, want 1", got)
	}
}
