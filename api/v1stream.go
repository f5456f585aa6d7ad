package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/persistence"
)

// v1Heartbeat is the interval of server.heartbeat events on the V1 buses
// (OpenCode's clients expect one every 10 s).
const v1Heartbeat = 10 * time.Second

// v1Events is GET /event: the V1 bus of one directory (?directory= or the
// x-opencode-directory header; every session's events without either).
func (s *Server) v1Events(w http.ResponseWriter, r *http.Request) {
	dir := v1Directory(r)
	s.v1Stream(w, r, func(d string) bool { return dir == "" || d == dir }, func(_ string, ev v1Event) any { return ev })
}

// v1GlobalEvents is GET /global/event: every session's V1 events, each
// wrapped with the session's directory.
func (s *Server) v1GlobalEvents(w http.ResponseWriter, r *http.Request) {
	s.v1Stream(w, r, func(string) bool { return true }, func(dir string, ev v1Event) any {
		if dir == "" {
			return struct {
				Payload v1Event `json:"payload"`
			}{ev}
		}
		return v1GlobalEvent{Directory: dir, Project: projectID(dir), Payload: ev}
	})
}

// v1Stream subscribes to the live bus and writes each item as V1 events
// ("data: {json}" frames, as OpenCode's server writes them) for the sessions
// whose directory passes keep.
func (s *Server) v1Stream(w http.ResponseWriter, r *http.Request, keep func(dir string) bool, wrap func(dir string, ev v1Event) any) {
	if s.cfg.Bus == nil {
		writeError(w, http.StatusServiceUnavailable, wire.Error{Tag: wire.TagServiceUnavailable, Service: "live bus",
			Message: "this server has no live bus"})
		return
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	sub := s.cfg.Bus.Subscribe("", s.cfg.EventBuffer)
	defer sub.Close()
	tr := newV1Translator(func(id string) (v1Sess, bool) { return s.v1Lookup(ctx, id) })

	st := s.startSSE(w)
	write := func(dir string, ev v1Event) error {
		b, err := json.Marshal(wrap(dir, ev))
		if err != nil {
			return err
		}
		return st.write(append(append(st.buf[:0], "data: "...), b...))
	}
	if write("", newV1Event("server.connected", struct{}{})) != nil || st.flush() != nil {
		return
	}
	beat := time.NewTicker(min(s.cfg.Heartbeat, v1Heartbeat))
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			if write("", newV1Event("server.heartbeat", struct{}{})) != nil || st.flush() != nil {
				return
			}
		case item, open := <-sub.C():
			if !open {
				// Cut for falling behind: the client reconnects and re-reads
				// the sessions' messages, as after any reconnect.
				return
			}
			evs := tr.translate(item, time.Now())
			if len(evs) == 0 {
				continue
			}
			dir := tr.directory(item.SessionID)
			if !keep(dir) {
				continue
			}
			for _, ev := range evs {
				if write(dir, ev) != nil {
					return
				}
			}
			if len(sub.C()) == 0 {
				if st.flush() != nil {
					return
				}
			}
		}
	}
}

// v1Lookup reads what a stream needs of a session it has not seen created.
func (s *Server) v1Lookup(ctx context.Context, id string) (v1Sess, bool) {
	sess, err := s.cfg.Journal.Session(ctx, id)
	if err != nil {
		return v1Sess{}, false
	}
	out := v1Sess{directory: sess.Location, agent: sess.Agent, model: sess.Model}
	// The parent of the next assistant message: the last user message.
	if msgs, err := s.v1History(ctx, id); err == nil {
		for _, m := range msgs {
			if m.Role == persistence.RoleUser {
				out.parent = m.ID
			}
		}
	}
	return out, true
}
