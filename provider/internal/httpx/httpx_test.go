package httpx

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// countingClient is NewClient with its dials counted.
func countingClient(dials *atomic.Int64) *http.Client {
	tr := NewTransport()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	return &http.Client{Transport: tr}
}

// Many sessions stream at once against one host; the next wave of turns must
// find their connections idle rather than dial again (net/http keeps 2 per host
// by default, the adapters used to keep 16).
func TestConcurrentWavesReuseTheirConnections(t *testing.T) {
	const n = 64
	var arrived sync.WaitGroup
	var mu sync.Mutex
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		mu.Lock()
		ch := release
		mu.Unlock()
		<-ch // all n are in flight at once, so n connections are open
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	var dials atomic.Int64
	client := countingClient(&dials)
	defer client.CloseIdleConnections()

	wave := func() {
		arrived.Add(n)
		mu.Lock()
		release = make(chan struct{})
		ch := release
		mu.Unlock()
		var done sync.WaitGroup
		for range n {
			done.Go(func() {
				resp, err := client.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		arrived.Wait()
		close(ch)
		done.Wait()
	}
	wave()
	if got := dials.Load(); got != n {
		t.Fatalf("first wave dialled %d times, want %d", got, n)
	}
	wave()
	if got := dials.Load(); got != n {
		t.Fatalf("second wave dialled %d more times, want 0", got-n)
	}
}

// A body whose end arrives after its last event keeps its connection when
// closed with DrainClose.
func TestDrainCloseKeepsTheConnection(t *testing.T) {
	lastRead := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: last\n\n")
		w.(http.Flusher).Flush()
		<-lastRead // the terminator comes after the client saw the event
	}))
	defer srv.Close()
	var dials atomic.Int64
	client := countingClient(&dials)
	defer client.CloseIdleConnections()
	for range 3 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len("data: last\n\n"))
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatal(err)
		}
		lastRead <- struct{}{}
		if err := DrainClose(resp.Body); err != nil {
			t.Fatal(err)
		}
	}
	if got := dials.Load(); got != 1 {
		t.Fatalf("%d dials for 3 sequential streams, want 1", got)
	}
}

// A server that holds the body open after the last event costs its connection
// but does not hold up DrainClose for longer than its bound.
func TestDrainCloseGivesUpOnABodyThatNeverEnds(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: last\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(stop)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = DrainClose(resp.Body) // returns: the test would hang otherwise
}
