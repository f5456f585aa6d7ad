package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sessionrt/sessionrt/api/wire"
)

// StreamEvent is one Server-Sent Event.
type StreamEvent struct {
	ID    string     // the SSE id: the durable seq on a session stream
	Name  string     // the SSE event name (the event type)
	Event wire.Event // the decoded data
}

// Stream reads one SSE response. Next is not safe for concurrent use;
// Close may be called from any goroutine.
type Stream struct {
	body io.ReadCloser
	r    *bufio.Reader
}

func newReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, 64<<10) }

// Close ends the stream.
func (s *Stream) Close() error { return s.body.Close() }

// Next returns the next event; io.EOF when the server ended the stream.
// Comment lines (heartbeats) are skipped.
func (s *Stream) Next() (StreamEvent, error) {
	var ev StreamEvent
	var data strings.Builder
	hasData := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" && !hasData {
				return ev, io.EOF
			}
			if err == io.EOF {
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if !hasData {
				continue // a comment block or a stray blank line
			}
			if err := json.Unmarshal([]byte(data.String()), &ev.Event); err != nil {
				return ev, fmt.Errorf("event %s: decode data: %w", ev.ID, err)
			}
			return ev, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID = value
		case "event":
			ev.Name = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		}
	}
}

func (c *Client) stream(ctx context.Context, p string, q url.Values, lastEventID string) (*Stream, error) {
	req, err := c.newRequest(ctx, http.MethodGet, p, q, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", p, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, readError(resp)
	}
	return &Stream{body: resp.Body, r: newReader(resp.Body)}, nil
}

// Events opens a session's durable event stream: every event with seq >
// after, then new ones as they commit (until ctx ends or Close).
func (c *Client) Events(ctx context.Context, id string, after int64) (*Stream, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	return c.stream(ctx, sessionPath(id, "event"), q, "")
}

// EventsFrom reopens a session's stream the way an EventSource reconnects:
// with Last-Event-ID set to the last seq seen.
func (c *Client) EventsFrom(ctx context.Context, id string, lastEventID int64) (*Stream, error) {
	return c.stream(ctx, sessionPath(id, "event"), nil, strconv.FormatInt(lastEventID, 10))
}

// GlobalEvents opens the live stream of every session (or of one when
// sessionID is set): durable events as they commit and live-only deltas.
// It has no replay; its last event is "server.cut" (wire.Cut) when the
// server cut this reader for being too slow.
func (c *Client) GlobalEvents(ctx context.Context, sessionID string) (*Stream, error) {
	q := url.Values{}
	set(q, "sessionID", sessionID)
	return c.stream(ctx, "/api/event", q, "")
}

// Follow calls fn for each durable event of a session with seq > after, in
// order and exactly once, reconnecting from the last seq when the
// connection drops (not when the server refuses or reports a stream
// error: those return). It
// returns when ctx ends (nil) or fn returns an error (that error).
func (c *Client) Follow(ctx context.Context, id string, after int64, fn func(wire.Event) error) error {
	backoff := 100 * time.Millisecond
	for {
		st, err := c.Events(ctx, id, after)
		if err != nil {
			var apiErr *Error
			if ctx.Err() != nil {
				return nil
			}
			if errors.As(err, &apiErr) {
				return err
			}
		} else {
			for {
				ev, err := st.Next()
				if err != nil {
					break
				}
				if ev.Event.Type == wire.EventError { // the server cannot read on: retrying would loop
					st.Close()
					return fmt.Errorf("event stream of %s after seq %d: %s", id, after, ev.Event.Data)
				}
				if ev.Event.Durable == nil || ev.Event.Durable.Seq <= after {
					continue
				}
				if err := fn(ev.Event); err != nil {
					st.Close()
					return err
				}
				after = ev.Event.Durable.Seq
				backoff = 100 * time.Millisecond
			}
			st.Close()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
