package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
)

// sse writes one Server-Sent Events stream. Every write has a deadline, so a
// reader that stops reading is disconnected instead of holding a goroutine.
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
}

func (s *Server) startSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	st := &sse{w: w, rc: http.NewResponseController(w), timeout: s.cfg.WriteTimeout}
	_ = st.flush()
	return st
}

func (st *sse) deadline() {
	// ErrNotSupported (a wrapped writer) leaves the server's own timeouts.
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.timeout))
}

// head starts a frame in the stream's own buffer, reused for every event;
// id may be empty.
func (st *sse) head(id, typ string) []byte {
	b := st.buf[:0]
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	b = append(b, "event: "...)
	b = append(b, typ...)
	return append(b, "\ndata: "...) // JSON has no raw newlines
}

// write ends a frame begun by head and writes it with one Write.
func (st *sse) write(b []byte) error {
	b = append(b, "\n\n"...)
	if cap(b) <= 64<<10 {
		st.buf = b
	}
	st.deadline()
	_, err := st.w.Write(b)
	return err
}

// event writes one event; id may be empty.
func (st *sse) event(id string, ev wire.Event) error {
	b, err := appendEvent(st.head(id, ev.Type), ev)
	if err != nil {
		return fmt.Errorf("encode event %s: %w", ev.Type, err)
	}
	return st.write(b)
}

// durable writes toEvent(env, now) without building it.
func (st *sse) durable(id string, env messages.Envelope, now time.Time) error {
	return st.write(appendDurableEvent(st.head(id, eventName(env.Type)), env, now))
}

func (st *sse) comment(text string) error {
	st.deadline()
	_, err := st.w.Write([]byte(": " + text + "\n\n"))
	return err
}

func (st *sse) flush() error {
	st.deadline()
	return st.rc.Flush()
}

// streamContext ends with the request or when the server closes.
func (s *Server) streamContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.base, cancel)
	return ctx, func() { stop(); cancel() }
}

// journalBatch is the events the journal had at once, then maybe the error
// that ended the stream.
type journalBatch struct {
	envs []messages.Envelope
	err  error
}

// sessionEvents streams a session's durable events: every event with seq
// greater than the cursor (Last-Event-ID when the client reconnects, else
// ?after=, else 0) in seq order, then each new one as it commits. The SSE
// id of an event is its seq, so a reconnecting EventSource resumes with no
// gap and no duplicate.
func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) {
	after, ok := parseSeq(w, "after", r.URL.Query().Get("after"))
	if !ok {
		return
	}
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		if after, ok = parseSeq(w, "Last-Event-ID", last); !ok {
			return
		}
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()

	// The journal's iterator blocks while it tails; a goroutine feeds it
	// to this loop so that heartbeats and shutdown interleave. It hands
	// over whatever the journal had at once, written with one flush.
	items := make(chan journalBatch, 4)
	go func() {
		defer close(items)
		for envs, err := range s.cfg.Journal.EventBatches(ctx, sess.ID, after) {
			select {
			case items <- journalBatch{envs, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()

	st := s.startSSE(w)
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	open := blocks{}
	admitted := admissions{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			if st.comment("ping") != nil || st.flush() != nil {
				return
			}
		case it, more := <-items:
			if !more {
				return
			}
			now := time.Now()
			for _, env := range it.envs {
				env, err := s.withPrompt(ctx, admitted, env)
				if err != nil {
					it.err = cmp.Or(it.err, err)
					break
				}
				for _, ev := range open.beforeDurable(env, now) {
					if st.event("", ev) != nil {
						return
					}
				}
				if st.durable(strconv.FormatInt(env.Seq, 10), env, now) != nil {
					return
				}
			}
			if it.err != nil {
				if ctx.Err() == nil {
					s.cfg.Logger.Error("api event stream failed", "session", sess.ID, "err", it.err)
					data, _ := json.Marshal(map[string]string{"sessionID": sess.ID, "message": it.err.Error()})
					_ = st.event("", wire.Event{ID: messages.NewID("evt"), Type: wire.EventError, Data: data})
					_ = st.flush()
				}
				return
			}
			if len(items) == 0 { // one flush for what is queued
				if st.flush() != nil {
					return
				}
			}
		}
	}
}

// globalEvents streams the live bus: every session's durable events as
// they commit and the live-only deltas, optionally for one session
// (?sessionID=). A subscriber whose buffer fills is cut by the bus; it gets
// a last "server.cut" event with the last seq it saw per session, from
// which the per-session streams resume.
func (s *Server) globalEvents(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Bus == nil {
		writeError(w, http.StatusServiceUnavailable, wire.Error{Tag: wire.TagServiceUnavailable, Service: "live bus",
			Message: "this server has no live bus; use GET /api/session/{id}/event"})
		return
	}
	only := r.URL.Query().Get("sessionID")
	if only != "" {
		if _, err := s.cfg.Journal.Session(r.Context(), only); err != nil {
			s.fail(w, r, only, err)
			return
		}
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	sub := s.cfg.Bus.Subscribe(only, s.cfg.EventBuffer)
	defer sub.Close()

	st := s.startSSE(w)
	if st.event("", wire.Event{ID: messages.NewID("evt"), Type: wire.EventConnected, Data: json.RawMessage("{}")}) != nil || st.flush() != nil {
		return
	}
	lastSeq := map[string]int64{}
	open := blocks{}
	admitted := admissions{}
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			if st.comment("ping") != nil || st.flush() != nil {
				return
			}
		case item, more := <-sub.C():
			if !more {
				if errors.Is(sub.Err(), actors.ErrSlowSubscriber) {
					data, _ := json.Marshal(wire.Cut{Message: sub.Err().Error(), LastSeq: lastSeq})
					_ = st.event("", wire.Event{ID: messages.NewID("evt"), Type: wire.EventCut, Data: data})
					_ = st.flush()
				}
				return
			}
			var err error
			now := time.Now()
			switch {
			case item.Event != nil:
				env, perr := s.withPrompt(ctx, admitted, *item.Event)
				if perr != nil {
					if ctx.Err() == nil {
						s.cfg.Logger.Error("api global event stream failed", "session", item.SessionID, "err", perr)
						data, _ := json.Marshal(map[string]string{"sessionID": item.SessionID, "message": perr.Error()})
						_ = st.event("", wire.Event{ID: messages.NewID("evt"), Type: wire.EventError, Data: data})
						_ = st.flush()
					}
					return
				}
				for _, ev := range open.beforeDurable(env, now) {
					if err = st.event("", ev); err != nil {
						return
					}
				}
				err = st.durable("", env, now)
				lastSeq[item.SessionID] = max(lastSeq[item.SessionID], item.Event.Seq)
			case item.Delta != nil:
				for _, ev := range open.beforeDelta(*item.Delta, now) {
					if err = st.event("", ev); err != nil {
						return
					}
				}
				err = st.event("", toDelta(*item.Delta, now))
			case item.Status != nil:
				err = st.event("", toStatus(item.SessionID, *item.Status))
			default:
				continue
			}
			if err != nil {
				return
			}
			if len(sub.C()) == 0 {
				if st.flush() != nil {
					return
				}
			}
		}
	}
}
