package filespan

import (
	"sort"

	"github.com/sessionrt/sessionrt/messages"
)

// Trees is what a span asks of the snapshot store.
type Trees interface {
	// Changed lists the paths that differ between two trees.
	Changed(from, to string) ([]string, error)
}

// ChangesFiles reports whether a tool may change the Location's files, so
// a snapshot is taken once it returns (OpenCode's tools that patch files,
// and bash).
func ChangesFiles(tool string) bool {
	switch tool {
	case "bash", "apply_patch", "write", "edit", "multiedit", "patch":
		return true
	}
	return false
}

// Span is what the journal says of the session's file changes from a seq
// on, folded one event at a time (Add).
type Span struct {
	// From is the snapshot of the first turn at or after the span's
	// start ("" when none).
	From string
	// To: of a bounded span, the snapshot of the first turn after the
	// next prompt promoted after the start ("" when none yet).
	To string

	trees   Trees
	start   int64
	bounded bool
	done    bool
	// waiting: a bounded span has seen no prompt promoted after its
	// first turn yet.
	waiting bool
	// prev is the latest snapshot of the span (a turn's or a tool's).
	prev  string
	tools map[string]string // call ID -> tool, of the span's turns
	paths map[string]bool
	// open is the snapshot before a tool that changes files and settled
	// without one: what it changed is known only from the next snapshot
	// on ("" when none is open).
	open string
}

// New starts a span at seq. A bounded span ends at the first turn after
// the next prompt promoted after seq; an unbounded one at the journal's
// end.
func New(trees Trees, seq int64, bounded bool) *Span {
	return &Span{trees: trees, start: seq, bounded: bounded, waiting: bounded, tools: map[string]string{}, paths: map[string]bool{}}
}

// Add folds the event at seq (the span's events in order, from its start
// on). done: a bounded span ended (To is set); later events change
// nothing.
func (sp *Span) Add(seq int64, ev messages.Event) (done bool, err error) {
	if sp.done || seq < sp.start {
		return sp.done, nil
	}
	switch e := ev.(type) {
	case messages.PromptPromoted:
		if seq > sp.start && sp.From != "" {
			sp.waiting = false
		}
	case messages.TurnStarted:
		if err := sp.Close(e.Snapshot); err != nil {
			return false, err
		}
		if sp.bounded && !sp.waiting && e.Snapshot != "" {
			sp.To, sp.done = e.Snapshot, true
			return true, nil
		}
		if sp.From == "" {
			sp.From = e.Snapshot
		}
		sp.prev = e.Snapshot
	case messages.ToolCalled:
		sp.tools[e.CallID] = e.Tool
	case messages.ToolSucceeded:
		return false, sp.settled(e.CallID, e.Snapshot)
	case messages.ToolFailed:
		return false, sp.settled(e.CallID, e.Snapshot)
	}
	return false, nil
}

// settled attributes what a tool changed, from the snapshot before it to
// the one taken once it returned.
func (sp *Span) settled(call, snap string) error {
	if sp.From == "" {
		return nil
	}
	if snap == "" {
		if ChangesFiles(sp.tools[call]) && sp.open == "" {
			sp.open = sp.prev
		}
		return nil
	}
	if err := sp.Close(snap); err != nil {
		return err
	}
	if sp.prev != "" && sp.prev != snap {
		if err := sp.add(sp.prev, snap); err != nil {
			return err
		}
	}
	sp.prev = snap
	return nil
}

// Close attributes to the session what changed from the open snapshot to
// snap (a tool that settled without a snapshot ran in between).
func (sp *Span) Close(snap string) error {
	if sp.open == "" || snap == "" {
		return nil
	}
	if err := sp.add(sp.open, snap); err != nil {
		return err
	}
	sp.open = ""
	return nil
}

func (sp *Span) add(from, to string) error {
	ch, err := sp.trees.Changed(from, to)
	if err != nil {
		return err
	}
	for _, p := range ch {
		sp.paths[p] = true
	}
	return nil
}

// Changed lists the files a revert from tree cur back to tree target
// restores: those that differ and that the session changed. It closes the
// span at cur.
func (sp *Span) Changed(target, cur string) ([]string, error) {
	if err := sp.Close(cur); err != nil {
		return nil, err
	}
	files, err := sp.trees.Changed(target, cur)
	if err != nil {
		return nil, err
	}
	kept := files[:0]
	for _, f := range files {
		if sp.paths[f] {
			kept = append(kept, f)
		}
	}
	return kept, nil
}

// Paths are the paths the session changed in the span so far, sorted.
func (sp *Span) Paths() []string {
	out := make([]string, 0, len(sp.paths))
	for p := range sp.paths {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
