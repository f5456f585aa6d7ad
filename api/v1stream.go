package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
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

// v1Stream writes V1 events ("data: {json}" frames, as OpenCode's server
// writes them) for the sessions whose directory passes keep.
//
// A session's durable events come from a journal tail, not from the live
// bus: in a cluster the session's actor may run on another member, whose
// bus this process never sees, and after a failover on this one. A stream
// tails a session from the moment it sees it (on the bus, or touched
// through this server's V1 routes, see v1Watch) until it goes idle; the bus
// still brings the live-only deltas of the sessions running here. Before a
// batch from a tail, the deltas already queued on the bus are written, so a
// block's deltas never follow its durable end.
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
	watcher := s.v1Watchers.add(keep)
	defer s.v1Watchers.remove(watcher)
	watch := watcher.hints
	tr := newV1Translator(func(id string) (v1Sess, bool) { return s.v1Lookup(ctx, id) })
	tr.info = func(id string) (v1Session, bool) {
		sess, err := s.cfg.Journal.Session(ctx, id)
		if err != nil {
			return v1Session{}, false
		}
		return s.v1SessionInfo(ctx, sess), true
	}
	tr.deleted = func(id string) (v1Session, bool) {
		sess, err := s.cfg.Journal.DeletedSession(ctx, id)
		if err != nil {
			return v1Session{}, false
		}
		return s.v1Info(ctx, sess), true
	}

	type tailBatch struct {
		id   string
		envs []messages.Envelope
		err  error
	}
	batches := make(chan tailBatch, 16)
	tails := map[string]context.CancelFunc{}
	// written is the last seq this stream wrote of each session, kept after
	// the session goes idle and the translator forgets it: the next tail
	// continues from there. Starting it from the seq of whatever brings the
	// session back (a bus event, a route's hint: the two race in the select
	// below) skipped the events between, such as a new prompt's admission.
	written := map[string]int64{}
	defer func() {
		for _, stop := range tails {
			stop()
		}
	}()
	// follow starts tailing a session after seq (its last seq this stream
	// wrote, else after): once per session until it goes idle.
	follow := func(id string, after int64) {
		if _, ok := tails[id]; ok || !keep(tr.directory(id)) {
			return
		}
		if w, ok := written[id]; ok {
			after = w
		}
		after = max(after, tr.session(id).lastSeq)
		tctx, stop := context.WithCancel(ctx)
		tails[id] = stop
		go func() {
			for envs, err := range s.cfg.Journal.EventBatches(tctx, id, after) {
				select {
				case batches <- tailBatch{id, envs, err}:
				case <-tctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
	}

	st := s.startSSE(w)
	write := func(dir string, ev v1Event) error {
		b, err := json.Marshal(wrap(dir, ev))
		if err != nil {
			return err
		}
		return st.write(append(append(st.buf[:0], "data: "...), b...))
	}
	emit := func(item actors.Live) error {
		evs := tr.translate(item, time.Now())
		if len(evs) == 0 {
			return nil
		}
		dir := tr.directory(item.SessionID)
		if !keep(dir) {
			return nil
		}
		for _, ev := range evs {
			if err := write(dir, ev); err != nil {
				return err
			}
		}
		return nil
	}
	// live handles one bus item: deltas are written, a durable event only
	// starts the session's tail (which writes it).
	live := func(item actors.Live) error {
		if item.Event != nil {
			// A route's hint is sent before its admission is appended, so it
			// is queued before the admission's bus event; select picks among
			// ready channels at random, so take the hints first, or the bus
			// event would start the tail past the admission.
			for len(watch) > 0 {
				w := <-watch
				follow(w.id, w.after)
			}
			follow(item.SessionID, item.Event.Seq-1)
			return nil
		}
		if _, ok := tails[item.SessionID]; !ok {
			if sess, err := s.cfg.Journal.Session(ctx, item.SessionID); err == nil {
				follow(item.SessionID, sess.LastSeq)
			}
		}
		return emit(item)
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
		case w := <-watch:
			follow(w.id, w.after)
		case item, open := <-sub.C():
			if !open {
				// Cut for falling behind: the client reconnects and re-reads
				// the sessions' messages, as after any reconnect.
				return
			}
			if live(item) != nil {
				return
			}
			if len(sub.C()) == 0 && st.flush() != nil {
				return
			}
		case b := <-batches:
			for queued := len(sub.C()); queued > 0; queued-- {
				if item, open := <-sub.C(); !open || live(item) != nil {
					return
				}
			}
			for i := range b.envs {
				if emit(actors.Live{SessionID: b.id, Event: &b.envs[i]}) != nil {
					return
				}
				written[b.id] = max(written[b.id], b.envs[i].Seq)
				switch b.envs[i].Event.(type) {
				case messages.Idle, messages.Interrupted:
					// Idle: stop polling it and forget it (the next sight
					// follows it again from the seq that brings it back).
					if stop, ok := tails[b.id]; ok {
						stop()
						delete(tails, b.id)
						tr.forget(b.id)
					}
				}
			}
			if b.err != nil && ctx.Err() == nil {
				s.cfg.Logger.Error("api V1 event stream: journal tail failed", "session", b.id, "err", b.err)
				delete(tails, b.id)
			}
			if st.flush() != nil {
				return
			}
			s.v1Watchers.flushed(watcher, b.id, written[b.id])
		}
	}
}

// v1Watchers tells the open V1 streams about sessions the V1 routes touch,
// so that a stream follows a session whose actor runs on another member,
// and tells a synchronous prompt when the streams have written its drain.
type v1Watchers struct {
	mu   sync.Mutex
	subs map[*v1Watcher]struct{}
	// wrote is closed and replaced whenever a stream has flushed events:
	// the wake-up of delivered's waiters.
	wrote chan struct{}
}

// v1Watcher is one open V1 stream as the routes see it.
type v1Watcher struct {
	hints chan v1Watch
	keep  func(dir string) bool
	// written is the last seq the stream has flushed of each session it
	// followed (guarded by v1Watchers.mu).
	written map[string]int64
}

// v1Watch names a session and the seq it had when a route touched it: the
// stream follows it from there.
type v1Watch struct {
	id    string
	after int64
}

func (w *v1Watchers) add(keep func(dir string) bool) *v1Watcher {
	s := &v1Watcher{hints: make(chan v1Watch, 64), keep: keep, written: map[string]int64{}}
	w.mu.Lock()
	if w.subs == nil {
		w.subs = map[*v1Watcher]struct{}{}
	}
	w.subs[s] = struct{}{}
	w.mu.Unlock()
	return s
}

func (w *v1Watchers) remove(s *v1Watcher) {
	w.mu.Lock()
	delete(w.subs, s)
	w.wake()
	w.mu.Unlock()
}

// wake releases delivered's waiters; w.mu is held.
func (w *v1Watchers) wake() {
	if w.wrote != nil {
		close(w.wrote)
		w.wrote = nil
	}
}

// flushed records that s has written the events of session id up to seq
// to its client.
func (w *v1Watchers) flushed(s *v1Watcher, id string, seq int64) {
	w.mu.Lock()
	if seq > s.written[id] {
		s.written[id] = seq
		w.wake()
	}
	w.mu.Unlock()
}

// notify never blocks: a stream that is behind misses the hint, and sees
// the session when it next reads its messages or meets it on the bus.
func (w *v1Watchers) notify(sess persistence.Session) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for s := range w.subs {
		select {
		case s.hints <- v1Watch{sess.ID, sess.LastSeq}:
		default:
		}
	}
}

// delivered waits until every open stream that carries the session's
// directory has written its events up to seq, for at most limit.
//
// OpenCode's `run --attach` prints what its event stream brings and exits
// as soon as the synchronous prompt answers: answering before the streams
// have written the drain's last text loses the answer on the client's
// screen. The limit bounds the wait on a stream whose client stopped
// reading (or that missed the session's hint): the prompt still answers.
func (w *v1Watchers) delivered(ctx context.Context, dir, id string, seq int64, limit time.Duration) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		w.mu.Lock()
		behind := false
		for s := range w.subs {
			if s.keep(dir) && s.written[id] < seq {
				behind = true
				break
			}
		}
		if !behind {
			w.mu.Unlock()
			return
		}
		if w.wrote == nil {
			w.wrote = make(chan struct{})
		}
		wrote := w.wrote
		w.mu.Unlock()
		select {
		case <-wrote:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// v1Lookup reads what a stream needs of a session it has not seen created.
func (s *Server) v1Lookup(ctx context.Context, id string) (v1Sess, bool) {
	sess, err := s.cfg.Journal.Session(ctx, id)
	if errors.Is(err, persistence.ErrNotFound) {
		// Deleted (its stream then forwards session.deleted, in its
		// directory); it has no history to read any more.
		if sess, err = s.cfg.Journal.DeletedSession(ctx, id); err == nil {
			return v1Sess{directory: sess.Location, agent: sess.Agent, model: sess.Model}, true
		}
	}
	if err != nil {
		return v1Sess{}, false
	}
	out := v1Sess{directory: sess.Location, agent: sess.Agent, model: sess.Model}
	// The parent of the next assistant message: the last user message.
	if msgs, err := s.v1History(ctx, id); err == nil {
		for _, m := range msgs {
			if m.Role == messages.RoleUser {
				out.parent = m.ID
			}
		}
	}
	return out, true
}
