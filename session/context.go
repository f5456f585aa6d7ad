package session

import (
	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/messages"
)

// initialize makes the epoch's first baseline from an observation. Its
// Revision is the seq it gets: it is written first in the next Append,
// after what is carried but a promotion.
func (c *Core) initialize(obs contextsources.Observation) (messages.Event, *Outcome) {
	gen, err := contextsources.Initialize(obs)
	if err != nil {
		return nil, &Outcome{Kind: ContextBlocked, Err: err.Error()}
	}
	snap, err := c.encodeSnapshot(gen.Snapshot)
	if err != nil {
		return nil, &Outcome{Kind: Internal, Err: err.Error()}
	}
	return messages.ContextEpochInitialized{Revision: c.nextSeq(), Baseline: gen.Baseline, Snapshot: snap, Location: c.Drain.Location}, nil
}

// reconcile makes what changed since the epoch's snapshot: an update, or
// a fresh baseline once a compaction moved the history boundary past the
// epoch's; nil when nothing changed.
func (c *Core) reconcile(in ContextObserved) (messages.Event, *Outcome) {
	ep := c.State.Epoch
	replace := c.State.Row.HistorySeq > ep.BaselineSeq
	dec := contextsources.Reconcile(in.Observation, c.epochSnapshot(), contextsources.ReconcileOptions{ReplaceBaseline: replace})
	switch dec.Action {
	case contextsources.Updated:
		snap, err := c.encodeSnapshot(dec.Snapshot)
		if err != nil {
			return nil, &Outcome{Kind: Internal, Err: err.Error()}
		}
		return messages.ContextUpdated{MessageID: in.UpdateID, Text: dec.Message, Snapshot: snap}, nil
	case contextsources.ReplacementReady:
		snap, err := c.encodeSnapshot(dec.Generation.Snapshot)
		if err != nil {
			return nil, &Outcome{Kind: Internal, Err: err.Error()}
		}
		return messages.ContextEpochReplaced{Revision: c.nextSeq(), Baseline: dec.Generation.Baseline, Snapshot: snap, Location: c.Drain.Location}, nil
	case contextsources.ReplacementBlocked:
		why := "context replacement blocked"
		if dec.Blocked != nil {
			why = dec.Blocked.Error()
		}
		return nil, &Outcome{Kind: ContextBlocked, Err: why}
	}
	return nil, nil
}

// nextSeq is the seq the next event appended now gets: it is written
// after what is carried but a promotion, which waits for its turn's
// TurnStarted.
func (c *Core) nextSeq() int64 {
	return c.State.Row.LastSeq + 1 + int64(len(withoutPromotion(c.Carry)))
}

// epochSnapshot is the current epoch's snapshot, decoded once per version
// (its UpdatedSeq) rather than at every provider turn: Reconcile never
// changes the snapshot it is given. A corrupt snapshot decodes to what it
// can, and re-announces the rest per key.
func (c *Core) epochSnapshot() contextsources.Snapshot {
	ep, sc := c.State.Epoch, &c.snapshot
	if !sc.valid || sc.seq != ep.UpdatedSeq {
		s := sc.next.snap
		if !sc.next.is(ep.Snapshot) {
			s, _ = contextsources.DecodeSnapshot(ep.Snapshot)
		}
		*sc = snapshotCache{valid: true, seq: ep.UpdatedSeq, snap: s}
	}
	return sc.snap
}

// snapshotCache is the decoded snapshot of one epoch version.
type snapshotCache struct {
	valid bool
	seq   int64 // the epoch's UpdatedSeq it was decoded at
	snap  contextsources.Snapshot
	// next is the last snapshot the core encoded for an event: when that
	// event's bytes become the epoch's, the snapshot is taken as is
	// instead of decoded again.
	next encodedSnapshot
}

// encodedSnapshot is a snapshot with the bytes Encode gave for it.
type encodedSnapshot struct {
	enc  []byte
	snap contextsources.Snapshot
}

// is reports whether b are these very bytes (not equal ones: the same
// array, which nothing modifies once encoded), so snap is what decoding b
// would give.
func (e encodedSnapshot) is(b []byte) bool {
	return len(b) > 0 && len(b) == len(e.enc) && &b[0] == &e.enc[0]
}

// encodeSnapshot encodes s for an event and remembers it for
// epochSnapshot.
func (c *Core) encodeSnapshot(s contextsources.Snapshot) ([]byte, error) {
	b, err := s.Encode()
	if err == nil {
		c.snapshot.next = encodedSnapshot{enc: b, snap: s}
	}
	return b, err
}
