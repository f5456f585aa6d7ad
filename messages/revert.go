package messages

import "fmt"

// The revert state of a session, folded from the revert events by
// Reverts.Apply: the one fold both the session core (session.State) and
// the journal's projection (session_reverts) use, so they cannot drift.

// Revert is a staged or committed revert of the session (RevertStaged).
type Revert struct {
	MessageID     string   `msgpack:"id"`
	BoundarySeq   int64    `msgpack:"bs"`
	BoundaryIndex int      `msgpack:"bi"`
	Snapshot      string   `msgpack:"sn"`  // the file snapshot the Files go back to
	Current       string   `msgpack:"cur"` // the snapshot a clear restores the Files to
	Files         []string `msgpack:"f"`   // paths relative to the Location
	Committed     bool     `msgpack:"c"`
	StagedSeq     int64    `msgpack:"ss"`
}

// Hides reports whether the revert (once committed) hides message m.
func (r *Revert) Hides(m Message) bool {
	return r != nil && r.Committed && !before(m, Message{Seq: r.BoundarySeq, Index: r.BoundaryIndex})
}

// Restore is a file restore a revert event owes (its Files to Tree),
// durable from the RevertCommitted or RevertCleared that decided it until
// the RevertRestored that says it finished: an activation that finds one
// runs it again (it is idempotent) before anything else.
type Restore struct {
	Tree  string   `msgpack:"t"`
	Files []string `msgpack:"f"`
}

// HiddenRange is a range of the stream [From, To) whose messages a
// finalized revert took out of the history for good.
type HiddenRange struct {
	FromSeq   int64 `msgpack:"fs"`
	FromIndex int   `msgpack:"fi"`
	ToSeq     int64 `msgpack:"ts"`
}

// Hides reports whether the range holds m.
func (h HiddenRange) Hides(m Message) bool {
	return !before(m, Message{Seq: h.FromSeq, Index: h.FromIndex}) && m.Seq < h.ToSeq
}

// Reverts is the revert projection of a session: the open revert, the
// owed restore and the ranges finalized reverts hid.
type Reverts struct {
	Open    *Revert       `msgpack:"o"`
	Restore *Restore      `msgpack:"r"`
	Hidden  []HiddenRange `msgpack:"h"`
}

// Empty reports whether there is nothing to keep.
func (r *Reverts) Empty() bool { return r.Open == nil && r.Restore == nil && len(r.Hidden) == 0 }

// Hides reports whether m is out of the model-visible history because of
// a committed or finalized revert.
func (r *Reverts) Hides(m Message) bool {
	if r.Open.Hides(m) {
		return true
	}
	for _, h := range r.Hidden {
		if h.Hides(m) {
			return true
		}
	}
	return false
}

// Boundary is the first message the revert hides, as a position.
func (r *Revert) Boundary() Message { return Message{Seq: r.BoundarySeq, Index: r.BoundaryIndex} }

// before orders messages by their position in the stream.
func before(a, b Message) bool {
	return a.Seq < b.Seq || (a.Seq == b.Seq && a.Index < b.Index)
}

// IsRevertEvent reports whether ev is one of the revert events Apply folds.
func IsRevertEvent(ev Event) bool {
	switch ev.(type) {
	case RevertStaged, RevertCommitted, RevertCleared, RevertRestored, RevertFinalized:
		return true
	}
	return false
}

// Apply folds one revert event at seq (others are ignored). An error says
// the event does not fit the state; the state is then unchanged.
func (r *Reverts) Apply(sessionID string, seq int64, ev Event) error {
	switch e := ev.(type) {
	case RevertStaged:
		if r.Restore != nil {
			return fmt.Errorf("session %s seq %d: revert staged while a file restore is owed", sessionID, seq)
		}
		if r.Open != nil && r.Open.Committed {
			return fmt.Errorf("session %s seq %d: revert staged over a committed one (clear it first)", sessionID, seq)
		}
		r.Open = &Revert{MessageID: e.MessageID, BoundarySeq: e.BoundarySeq, BoundaryIndex: e.BoundaryIndex,
			Snapshot: e.Snapshot, Current: e.Current, Files: e.Files, StagedSeq: seq}
	case RevertCommitted:
		if r.Open == nil || r.Open.MessageID != e.MessageID {
			return fmt.Errorf("session %s seq %d: commit of revert %s, which is not staged", sessionID, seq, e.MessageID)
		}
		r.Open.Committed = true
		if r.Open.Snapshot != "" && len(r.Open.Files) > 0 {
			r.Restore = &Restore{Tree: r.Open.Snapshot, Files: r.Open.Files}
		}
	case RevertCleared:
		if r.Open != nil && r.Open.Committed && r.Open.Current != "" && len(r.Open.Files) > 0 {
			r.Restore = &Restore{Tree: r.Open.Current, Files: r.Open.Files}
		}
		r.Open = nil
	case RevertRestored:
		r.Restore = nil
	case RevertFinalized:
		if o := r.Open; o != nil && o.Committed {
			r.Hidden = append(r.Hidden, HiddenRange{FromSeq: o.BoundarySeq, FromIndex: o.BoundaryIndex, ToSeq: seq})
		}
		// A restore still owed (it failed) is given up: running it after
		// the new drain changed files would undo the new work.
		r.Open, r.Restore = nil, nil
	}
	return nil
}
