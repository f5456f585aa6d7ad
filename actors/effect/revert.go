package effect

import (
	"errors"
	"fmt"

	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/filespan"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
)

// The revert executors: the file I/O a revert command's Ready.Revert asks
// for (session/revert.go). They block on the disk (or, through a store of
// another member, the network); the Session actor runs them on its
// mailbox, so that no drain starts between a revert's steps (a stage,
// commit or clear runs only while none does; a diff only reads, and may
// run beside one).

// Snapshots is a Location's file snapshot store as the revert executors
// use it (the actor's SnapshotStore; nil: this server keeps none).
type Snapshots interface {
	// Take snapshots dir and returns the tree's ID.
	Take(dir string) (string, error)
	// Has reports whether the store holds tree id.
	Has(id string) (bool, error)
	// Changed lists the paths that differ between two trees.
	Changed(from, to string) ([]string, error)
	// Diff returns the files that differ between two trees, with patches
	// (only the paths in only when it is not nil).
	Diff(from, to string, only []string) ([]filesnap.FileDiff, error)
	// Restore makes each of paths under dir what it is in tree id.
	Restore(dir, id string, paths []string) error
}

// Events reads the session's events after seq after, at most limit of
// them, in order (the journal's ReadEvents).
type Events func(after int64, limit int) ([]messages.Envelope, error)

// ErrNoSnapshots: a file restore is owed but this server keeps no
// snapshots.
var ErrNoSnapshots = errors.New("a file restore is owed but this server keeps no snapshots")

// FileSpan folds the session's events from seq on, through last (up to
// the end of the span when bounded), into the files its tools changed
// (filespan).
func FileSpan(trees filespan.Trees, events Events, seq, last int64, bounded bool) (*filespan.Span, error) {
	sp := filespan.New(trees, seq, bounded)
	for after := seq - 1; after < last; {
		evs, err := events(after, 500)
		if err != nil {
			return nil, fmt.Errorf("read events: %w", err)
		}
		if len(evs) == 0 {
			break
		}
		for _, env := range evs {
			after = env.Seq
			if done, err := sp.Add(env.Seq, env.Event); err != nil || done {
				return sp, err
			}
		}
	}
	return sp, nil
}

// ReadSnapshots reads the facts a session.RevertRead asks for, of the
// Location dir whose snapshots st holds, from the session's events
// through seq last: of a stage, the snapshot of the first turn at or
// after r.Seq, whether st holds it, the Location now (a Take: it reads
// every file) and the paths the session's tools changed between the two;
// of a diff, the files the session changed (returned for the answer). A
// tree st lacks is a fact (FromMissing, Lost) the core refuses on; what
// else fails (the journal, the store) is the error. Without a store there
// are no facts: a stage reverts the history alone, a diff is empty.
func ReadSnapshots(st Snapshots, events Events, dir string, last int64, r session.RevertRead) (session.SnapshotFacts, []filesnap.FileDiff, error) {
	var f session.SnapshotFacts
	if st == nil {
		return f, nil, nil
	}
	sp, err := FileSpan(st, events, r.Seq, last, r.Bounded)
	if err != nil {
		return lost(f, err)
	}
	if r.Diff {
		return sessionDiff(st, dir, sp)
	}
	if f.From = sp.From; f.From == "" {
		return f, nil, nil
	}
	ok, err := st.Has(f.From)
	if err != nil {
		return f, nil, err
	}
	if !ok {
		f.FromMissing = true
		return f, nil, nil
	}
	if f.Current, err = st.Take(dir); err != nil {
		return f, nil, fmt.Errorf("snapshot %s: %w", dir, err)
	}
	if f.Files, err = sp.Changed(f.From, f.Current); err != nil {
		return lost(f, err)
	}
	return f, nil, nil
}

// sessionDiff is what the session changed in its files over sp: from its
// first snapshot to the end of a bounded span, or to the Location now;
// only the files its tools changed.
func sessionDiff(st Snapshots, dir string, sp *filespan.Span) (session.SnapshotFacts, []filesnap.FileDiff, error) {
	var f session.SnapshotFacts
	if sp.From == "" {
		return f, nil, nil
	}
	to := sp.To
	if to == "" {
		var err error
		if to, err = st.Take(dir); err != nil {
			return f, nil, fmt.Errorf("snapshot %s: %w", dir, err)
		}
	}
	if err := sp.Close(to); err != nil {
		return lost(f, err)
	}
	only := sp.Paths()
	if len(only) == 0 {
		return f, nil, nil
	}
	files, err := st.Diff(sp.From, to, only)
	if err != nil {
		return lost(f, err)
	}
	return f, files, nil
}

// lost makes err a fact when it says a tree is not in the store.
func lost(f session.SnapshotFacts, err error) (session.SnapshotFacts, []filesnap.FileDiff, error) {
	if errors.Is(err, filesnap.ErrNotFound) {
		f.Lost = err.Error()
		return f, nil, nil
	}
	return f, nil, err
}

// RevertFiles is what committing o changes: its files, from the snapshot
// taken when it was staged back to its Snapshot (none without a store).
func RevertFiles(st Snapshots, o *messages.Revert) ([]filesnap.FileDiff, error) {
	if st == nil || o == nil || o.Snapshot == "" || len(o.Files) == 0 {
		return nil, nil
	}
	return st.Diff(o.Current, o.Snapshot, o.Files)
}

// Restore runs a file restore a revert owes: r's Files under dir become
// what they are in tree r.Tree. It is idempotent, so a crash anywhere in
// it is repaired by running it again. between, when set, runs once the
// first of several files is restored and the others not (a fault point).
func Restore(st Snapshots, dir string, r messages.Restore, between func()) error {
	if st == nil {
		return ErrNoSnapshots
	}
	files := r.Files
	if len(files) > 1 && between != nil {
		if err := st.Restore(dir, r.Tree, files[:1]); err != nil {
			return fmt.Errorf("restore files: %w", err)
		}
		between()
		files = files[1:]
	}
	if err := st.Restore(dir, r.Tree, files); err != nil {
		return fmt.Errorf("restore files: %w", err)
	}
	return nil
}
