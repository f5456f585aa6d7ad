package driver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// client speaks the V2 session routes both systems serve.
type client struct {
	base string
	hc   *http.Client
	loc  string // the Location directory sessions are created in
	// model, when set, is named in every POST /api/session.
	model *ModelRef

	watch watcher
}

func newClient(base, loc string) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 4096
	tr.MaxIdleConnsPerHost = 4096
	return &client{base: strings.TrimRight(base, "/"), hc: &http.Client{Transport: tr}, loc: loc}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

// do sends body (when not nil) as JSON and decodes a 2xx answer into out.
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode %q: %w", method, path, truncate(b, 200), err)
		}
	}
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// healthy asks once, briefly: a server still starting may accept the
// connection and answer nothing.
func (c *client) healthy(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.do(ctx, http.MethodGet, "/api/health", nil, nil) == nil
}

// modelListed asks once whether GET /api/model lists c.model: OpenCode
// answers /api/health before its catalog holds the configured providers,
// and a session run before then fails "Model unavailable".
func (c *client) modelListed(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var out struct {
		Data []ModelRef `json:"data"`
	}
	if c.do(ctx, http.MethodGet, "/api/model", nil, &out) != nil {
		return false
	}
	for _, m := range out.Data {
		if m == *c.model {
			return true
		}
	}
	return false
}

func (c *client) createSession(ctx context.Context) (string, error) {
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	body := map[string]any{"location": map[string]string{"directory": c.loc}}
	if c.model != nil {
		body["model"] = c.model
	}
	if err := c.do(ctx, http.MethodPost, "/api/session", body, &out); err != nil {
		return "", err
	}
	if out.Data.ID == "" {
		return "", errors.New("POST /api/session: no session ID in the answer")
	}
	return out.Data.ID, nil
}

// turn admits one prompt carrying marker and returns once the session's
// durable event stream shows the reply naming it: a text.ended holding the
// marker, then the step.ended closing that step.
func (c *client) turn(ctx context.Context, id, marker string) error {
	body := map[string]any{"prompt": map[string]string{"text": "Run echo hi with bash " + marker}}
	if err := c.do(ctx, http.MethodPost, "/api/session/"+id+"/prompt", body, nil); err != nil {
		return err
	}
	return c.awaitReply(ctx, id, marker)
}

func (c *client) awaitReply(ctx context.Context, id, marker string) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil) // ends the stream
	path := "/api/session/" + id + "/event"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	// A drain that dies without writing an event would leave the stream
	// silent forever: watch /api/session/active beside it.
	go c.watchIdle(ctx, cancel, id)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	// The stream replays the session from its start: a failure counts only
	// once this prompt is in (a session may carry an earlier failed turn).
	answered, admitted := false, false
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		var ev struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(data, &ev) != nil {
			continue // not an event (a keep-alive or a stream failure note)
		}
		switch ev.Type {
		case "session.next.prompt.admitted", "session.next.prompted":
			admitted = admitted || bytes.Contains(data, []byte(marker))
		case "session.next.text.ended":
			answered = answered || bytes.Contains(data, []byte(marker))
		case "session.next.step.ended":
			if answered {
				return nil
			}
		case "session.next.step.failed":
			if !admitted {
				continue
			}
			return fmt.Errorf("session %s: a step failed: %s", id, truncate(data, 500))
		}
	}
	if ctx.Err() != nil && context.Cause(ctx) == errNoDrain {
		return fmt.Errorf("session %s: %w before replying to %s", id, errNoDrain, marker)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("session %s events: %w", id, err)
	}
	return fmt.Errorf("session %s: the event stream ended before the reply to %s", id, marker)
}

var errNoDrain = errors.New("the session stopped running")

// watcher polls /api/session/active once a second for every session a turn
// waits on (one request for all of them, so it does not load the server)
// and cancels the wait of a session that was listed and then absent at
// endedChecks checks in a row, or was never listed for neverSeenChecks checks.
type watcher struct {
	mu      sync.Mutex
	waiting map[string]*waiter
	running bool
}

type waiter struct {
	cancel context.CancelCauseFunc
	absent int
	seen   bool // listed as active once: its drain started
}

// A session never listed may still wait for its drain to start on a loaded
// server; it gets neverSeenChecks seconds.
const neverSeenChecks = 30

// A drain that ended normally has written its last event, but on an
// overloaded machine the event stream that carries it to the driver can lag
// the active list by seconds (two checks, as before, failed a turn whose
// reply was in the journal); a drain that died is still caught within
// endedChecks seconds.
const endedChecks = 5

func (c *client) watchIdle(ctx context.Context, cancel context.CancelCauseFunc, id string) {
	w := &c.watch
	w.mu.Lock()
	if w.waiting == nil {
		w.waiting = map[string]*waiter{}
	}
	w.waiting[id] = &waiter{cancel: cancel}
	if !w.running {
		w.running = true
		go c.pollActive()
	}
	w.mu.Unlock()
	<-ctx.Done()
	w.mu.Lock()
	delete(w.waiting, id)
	w.mu.Unlock()
}

func (c *client) pollActive() {
	w := &c.watch
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for range t.C {
		w.mu.Lock()
		if len(w.waiting) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		var out struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.do(ctx, http.MethodGet, "/api/session/active", nil, &out)
		cancel()
		if err != nil {
			continue
		}
		w.mu.Lock()
		for id, wt := range w.waiting {
			if _, ok := out.Data[id]; ok {
				wt.absent, wt.seen = 0, true
			} else if wt.absent++; (wt.seen && wt.absent >= endedChecks) || wt.absent >= neverSeenChecks {
				wt.cancel(errNoDrain)
			}
		}
		w.mu.Unlock()
	}
}
