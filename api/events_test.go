package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api"
	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// readUntil reads events until one has seq >= last, returning the seqs seen.
// opening reports a derived event that opens a streamed block (text,
// reasoning, tool input) just before the durable event that ends it.
func opening(ev wire.Event) bool {
	switch ev.Type {
	case "session.next.text.started", "session.next.reasoning.started", "session.next.tool.input.started", "session.next.tool.input.ended":
		return ev.Durable == nil
	}
	return false
}

func readUntil(t *testing.T, st *client.Stream, last int64) []int64 {
	t.Helper()
	var seqs []int64
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("stream ended after %v: %v", seqs, err)
		}
		if opening(ev.Event) {
			if ev.ID != "" {
				t.Fatalf("opening event %s carries SSE id %q: a reconnect would skip the durable event it opens", ev.Event.Type, ev.ID)
			}
			continue
		}
		if ev.Event.Durable == nil {
			t.Fatalf("session stream item without a durable seq: %+v", ev)
		}
		if ev.ID != strconv.FormatInt(ev.Event.Durable.Seq, 10) {
			t.Fatalf("SSE id %q is not the seq %d", ev.ID, ev.Event.Durable.Seq)
		}
		seqs = append(seqs, ev.Event.Durable.Seq)
		if ev.Event.Durable.Seq >= last {
			return seqs
		}
	}
}

func contiguous(t *testing.T, seqs []int64, from, to int64) {
	t.Helper()
	if int64(len(seqs)) != to-from+1 {
		t.Fatalf("got %d events, want seqs %d..%d: %v", len(seqs), from, to, seqs)
	}
	for i, s := range seqs {
		if s != from+int64(i) {
			t.Fatalf("seq %d at position %d, want %d (gap or duplicate): %v", s, i, from+int64(i), seqs)
		}
	}
}

func TestSessionEventsReplayThenTail(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	prompt(t, c, s.ID, "before")
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	head, err := c.Session(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Events(ctx, s.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	contiguous(t, readUntil(t, st, head.LastSeq), 2, head.LastSeq) // replay after the cursor
	r := prompt(t, c, s.ID, "after")                               // tail
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	end, err := c.Session(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	tail := readUntil(t, st, end.LastSeq)
	contiguous(t, tail, head.LastSeq+1, end.LastSeq)
	if tail[0] != r.AdmittedSeq {
		t.Fatalf("first tailed event is seq %d, the prompt was admitted at %d", tail[0], r.AdmittedSeq)
	}
}

// The stream is cut and reopened with Last-Event-ID several times while
// prompts are admitted concurrently: the union is every seq exactly once.
func TestLastEventIDResumesWithNoGapOrDuplicateWhilePromptsRace(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)

	const writers, each = 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				resume := i%5 == 0 // some drains run too, adding turn events
				if _, err := c.Prompt(ctx, s.ID, wire.PromptRequest{Prompt: &wire.Prompt{Text: fmt.Sprintf("w%d-%d", w, i)}, Resume: &resume}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	var seqs []int64
	var last int64
	for reconnects := 0; ; reconnects++ {
		var st *client.Stream
		var err error
		if reconnects == 0 {
			st, err = c.Events(ctx, s.ID, 0)
		} else {
			st, err = c.EventsFrom(ctx, s.ID, last)
		}
		if err != nil {
			t.Fatal(err)
		}
		// The stream is read on its own goroutine, so that the writers'
		// end is seen even while no event comes: after the last admission
		// none may follow (no drain runs), and a read that waited for
		// one would wait for the test's deadline.
		next, failed := make(chan client.StreamEvent), make(chan error, 1)
		quit, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			for {
				ev, err := st.Next()
				if err != nil {
					failed <- err
					return
				}
				select {
				case next <- ev:
				case <-quit:
					return
				}
			}
		}()
		// Read a few events (or until the writers are done), then drop the connection.
		finished := false
		for n := 0; n < 7 && !finished; {
			select {
			case <-done:
				finished = true
			case err := <-failed:
				t.Fatal(err)
			case ev := <-next:
				if opening(ev.Event) {
					continue
				}
				seqs = append(seqs, ev.Event.Durable.Seq)
				last = ev.Event.Durable.Seq
				n++
			}
		}
		close(quit)
		st.Close()
		<-stopped
		if !finished {
			continue
		}
		// The writers are done: resume once more from the last seq read
		// and read up to the head.
		if err := c.Wait(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		head, err := c.Session(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if last < head.LastSeq {
			st, err := c.EventsFrom(ctx, s.ID, last)
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, readUntil(t, st, head.LastSeq)...)
			st.Close()
		}
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		contiguous(t, seqs, 1, head.LastSeq)
		if reconnects < 3 {
			t.Fatalf("only %d reconnects: the test did not exercise resumption", reconnects)
		}
		return
	}
}

// sseLines opens a raw SSE connection and returns a line reader over it.
func sseLines(t *testing.T, rt *apitest.Runtime, path string) (*bufio.Reader, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", rt.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+rt.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("%s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return bufio.NewReaderSize(resp.Body, 1<<16), func() { cancel(); resp.Body.Close() }
}

func TestGlobalStreamForwardsDurableEventsAndDeltas(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{Turns: func(*provider.Request, int) (scripted.Turn, error) {
		return scripted.Turn{Text: "streamed in pieces", Chunk: 4}, nil
	}})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	st, err := c.GlobalEvents(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	first, err := st.Next()
	if err != nil || first.Event.Type != wire.EventConnected {
		t.Fatalf("first global event: %+v %v", first, err)
	}
	prompt(t, c, s.ID, "go")
	var deltas strings.Builder
	sawAdmitted := false
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Event.Type {
		case "session.next.prompt.admitted":
			sawAdmitted = ev.Event.Durable != nil && ev.Event.Durable.AggregateID == s.ID
		case "session.next.text.delta":
			if ev.Event.Durable != nil {
				t.Fatalf("a delta carries a durable seq: %+v", ev.Event)
			}
			var d struct{ Delta string }
			_ = json.Unmarshal(ev.Event.Data, &d)
			deltas.WriteString(d.Delta)
		}
		if ev.Event.Type == "session.next.idle" {
			break
		}
	}
	if !sawAdmitted || deltas.String() != "streamed in pieces" {
		t.Fatalf("admitted seen %v, deltas %q", sawAdmitted, deltas.String())
	}
}

// A reader that stops reading fills its socket and then its buffer; the bus
// cuts it without waiting, and when it reads again it finds the items that
// were buffered followed by a last server.cut event with its cursors.
func TestGlobalStreamCutsASlowSubscriberAndSaysWhereToResume(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{API: func(c *api.Config) { c.EventBuffer = 8 }})
	c := newClient(t, rt)
	s := create(t, c, rt)
	r, stop := sseLines(t, rt, "/api/event")
	defer stop()
	line, err := r.ReadString('\n')
	for err == nil && !strings.HasPrefix(line, "data:") {
		line, err = r.ReadString('\n')
	}
	if err != nil || !strings.Contains(line, wire.EventConnected) {
		t.Fatalf("first event: %q %v", line, err)
	}
	// Publish far more than socket buffers hold while the reader sleeps:
	// one durable event of the session, then 64 MiB of deltas.
	bus := rt.Node.Bus
	bus.Publish(actors.Live{SessionID: s.ID, Event: &messages.Envelope{SessionID: s.ID, Seq: 1, Type: messages.SessionCreated{}.EventType(), Event: messages.SessionCreated{Location: rt.Loc}}})
	chunk := strings.Repeat("x", 64<<10)
	for i := 0; i < 1024; i++ {
		bus.Publish(actors.Live{SessionID: s.ID, Delta: &messages.Delta{SessionID: s.ID, Kind: messages.TextDelta, Text: chunk}})
	}
	// Now read everything: the stream must end with server.cut.
	var lastData string
	deltas := 0
	for {
		line, err := r.ReadString('\n')
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			lastData = line[len("data: "):]
			if strings.Contains(lastData, "text.delta") {
				deltas++
			}
		}
	}
	var ev wire.Event
	if err := json.Unmarshal([]byte(lastData), &ev); err != nil || ev.Type != wire.EventCut {
		t.Fatalf("last event: %.200s (%v), want server.cut", lastData, err)
	}
	var cut wire.Cut
	if err := json.Unmarshal(ev.Data, &cut); err != nil || cut.LastSeq[s.ID] != 1 || !strings.Contains(cut.Message, "resume") {
		t.Fatalf("cut data: %s %v", ev.Data, err)
	}
	if deltas == 0 || deltas >= 1024 {
		t.Fatalf("%d of 1024 deltas arrived before the cut; want some but not all", deltas)
	}
	// The session's own stream resumes from the cursor the cut named.
	st, err := c.Events(ctxT(t), s.ID, cut.LastSeq[s.ID]-1)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	contiguous(t, readUntil(t, st, 1), 1, 1)
}

func TestCloseEndsOpenStreams(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	s := create(t, c, rt)
	ctx := ctxT(t)
	sessionStream, err := c.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sessionStream.Close()
	global, err := c.GlobalEvents(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer global.Close()
	if _, err := sessionStream.Next(); err != nil {
		t.Fatal(err)
	}
	rt.API.Close()
	for _, st := range []*client.Stream{sessionStream, global} {
		for {
			_, err := st.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("stream ended with %v, want a clean end", err)
			}
		}
	}
	// New streams end at once too.
	st, err := c.Events(ctx, s.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("a stream opened after Close: %v, want EOF", err)
	}
}

func TestFollowReconnectsAndDeliversEachEventOnce(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	s := create(t, c, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prompt(t, c, s.ID, "one")
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	head, err := c.Session(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	dropped := false
	stop := errors.New("enough")
	err = c.Follow(ctx, s.ID, 0, func(ev wire.Event) error {
		seqs = append(seqs, ev.Durable.Seq)
		if ev.Durable.Seq == 2 && !dropped {
			dropped = true
			rt.Server.CloseClientConnections() // the connection drops mid-stream
		}
		if ev.Durable.Seq == head.LastSeq {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatal(err)
	}
	contiguous(t, seqs, 1, head.LastSeq)
}

func TestIdleStreamsCarryHeartbeats(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{API: func(c *api.Config) { c.Heartbeat = 20 * time.Millisecond }})
	c := newClient(t, rt)
	s := create(t, c, rt)
	for _, path := range []string{"/api/session/" + s.ID + "/event?after=1", "/api/event"} {
		r, stop := sseLines(t, rt, path)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v before a heartbeat", path, err)
			}
			if line == ": ping\n" {
				break
			}
		}
		stop()
	}
}

func TestGlobalStreamOfAnUnknownSessionIs404(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	if code, e := raw(t, rt, "GET", "/api/event?sessionID=ses_missing", "", false); code != 404 || e.SessionID != "ses_missing" {
		t.Fatalf("%d %+v", code, e)
	}
}
