package actors

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"
)

// journalWaits holds the sessions whose drain a journal write failure
// stopped (stopJournalFailed: a full disk, a lost database) and resumes
// them once the journal accepts writes again, so that an admitted prompt
// is still acted on without help from the client.
//
// One loop serves every waiting session, with exponential backoff: the
// journal is one resource, so the first session that still fails ends the
// round (the others would fail the same way) and the next round waits
// twice as long, up to journalRetryMax. A session is resumed by waking it
// through the facade: the fresh activation takes ownership (itself a
// write), settles what the stopped drain left open and resumes it, as
// after a restart. Each attempt is logged, published on the live bus as a
// session status and counted in the runtime metrics.
type journalWaits struct {
	rt *runtime

	mu      sync.Mutex
	waiting map[string]*journalWait
	// resumed remembers each session resumed within journalOutage: a
	// resumption whose drain fails again at its next write (a disk still
	// full, where taking ownership fit in pages the journal file already
	// had) is the same wait going on, with its attempts and a longer
	// delay, not a new one that starts the backoff over.
	resumed  map[string]resumption
	running  bool
	delay    time.Duration // the next round's wait
	lastFail time.Time
}

type resumption struct {
	at, since time.Time
	attempts  int
}

type journalWait struct {
	since    time.Time
	attempts int
	err      string
	gen      int // counts add calls: a failure during an attempt that looked fine
	// stopped: the journal stopped a drain this process ran, which resumes
	// whatever the restart policy. Otherwise the journal refused the
	// activation that was to settle what a dead owner left (start-up
	// recovery, a takeover), and the restart policy still applies to it.
	stopped bool
}

const (
	journalRetryMin = 200 * time.Millisecond
	journalRetryMax = 10 * time.Second
	// journalOutage: failures closer together than this are one outage,
	// whose backoff keeps growing across resumptions that fail again.
	journalOutage = time.Minute
)

// add records that id waits for the journal after err (stopped: a drain
// of this process stopped; else an activation owed work was refused) and
// starts the loop if it is not running.
func (w *journalWaits) add(id string, err error, stopped bool) {
	now := time.Now()
	w.mu.Lock()
	if w.waiting == nil {
		w.waiting = map[string]*journalWait{}
	}
	e, ok := w.waiting[id]
	if !ok {
		e = &journalWait{since: now}
		if r, again := w.resumed[id]; again && now.Sub(r.at) < journalOutage {
			e.since, e.attempts = r.since, r.attempts
			w.delay = min(2*w.delay, journalRetryMax)
		}
		delete(w.resumed, id)
		w.waiting[id] = e
		if m := w.rt.cfg.Metrics; m != nil {
			m.JournalWaiting.Inc()
		}
	}
	e.err = err.Error()
	e.gen++
	e.stopped = e.stopped || stopped // a refused resumption is the same wait
	if now.Sub(w.lastFail) > journalOutage || w.delay == 0 {
		w.delay = journalRetryMin
	}
	w.lastFail = now
	start := !w.running
	w.running = true
	status := SessionStatus{Type: "retry", Attempt: e.attempts, Message: "journal refused a write: " + e.err, Next: now.Add(w.delay)}
	w.mu.Unlock()
	w.rt.publishStatus(id, status)
	if start {
		go w.loop()
	}
}

// drainStopped reports whether id waits for the journal because it
// stopped a drain of this process (not for a refused activation).
func (w *journalWaits) drainStopped(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.waiting[id]
	return ok && e.stopped
}

func (w *journalWaits) loop() {
	for {
		w.mu.Lock()
		if len(w.waiting) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		delay := w.delay
		w.mu.Unlock()
		t := time.NewTimer(delay)
		select {
		case <-w.rt.ctx.Done():
			t.Stop()
			w.mu.Lock()
			w.running = false
			w.mu.Unlock()
			return
		case <-t.C:
		}
		w.round()
	}
}

// round tries each waiting session, oldest first, until one fails.
func (w *journalWaits) round() {
	w.mu.Lock()
	ids := make([]string, 0, len(w.waiting))
	for id := range w.waiting {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return w.waiting[ids[i]].since.Before(w.waiting[ids[j]].since) })
	w.mu.Unlock()
	log, m := w.rt.cfg.Logger, w.rt.cfg.Metrics
	for _, id := range ids {
		if w.rt.stopping.Load() {
			return // shutting down: the next start resumes what is left
		}
		w.mu.Lock()
		gen := w.waiting[id].gen
		w.mu.Unlock()
		err := w.rt.resume(w.rt.ctx, id)
		w.mu.Lock()
		e := w.waiting[id]
		if err == nil && e.gen != gen {
			err = errors.New(e.err) // the resumed drain failed again at once
		}
		attempts := e.attempts
		if err == nil && w.rt.ctx.Err() == nil {
			delete(w.waiting, id)
			if w.resumed == nil {
				w.resumed = map[string]resumption{}
			}
			now := time.Now()
			for k, r := range w.resumed {
				if now.Sub(r.at) >= journalOutage {
					delete(w.resumed, k)
				}
			}
			w.resumed[id] = resumption{at: now, since: e.since, attempts: attempts + 1}
			w.mu.Unlock()
			if m != nil {
				m.JournalRetried("resumed")
				m.JournalWaiting.Dec()
			}
			log.Info("journal took the session back: drain resumed", "session", id, "waited", time.Since(e.since).Round(time.Millisecond), "attempts", attempts+1)
			w.rt.publishStatus(id, SessionStatus{Type: "busy"})
			continue
		}
		if err == nil {
			err = w.rt.ctx.Err()
		}
		e.attempts++
		if errors.Is(err, context.Canceled) && w.rt.ctx.Err() != nil {
			w.mu.Unlock()
			return
		}
		w.delay = min(2*w.delay, journalRetryMax)
		w.lastFail = time.Now()
		status := SessionStatus{Type: "retry", Attempt: e.attempts, Message: "journal refused a write: " + err.Error(), Next: time.Now().Add(w.delay)}
		n, delay, attempts := len(w.waiting), w.delay, e.attempts
		w.mu.Unlock()
		if m != nil {
			m.JournalRetried("failed")
		}
		log.Warn("journal still refuses writes; drains wait for it", "sessions", n, "session", id, "attempt", attempts, "next_in", delay, "err", err)
		w.rt.publishStatus(id, status)
		return
	}
}

func (rt *runtime) publishStatus(id string, s SessionStatus) {
	if rt.bus != nil {
		rt.bus.Publish(Live{SessionID: id, Status: &s})
	}
}

// resume wakes id through the facade: its activation settles and resumes
// a drain its previous owner left, or starts one for input owed a wake.
func (rt *runtime) resume(ctx context.Context, id string) error {
	_, err := rt.ask(ctx, id, &Wake{Owed: true}, rt.cfg.RequestTimeout)
	return err
}
