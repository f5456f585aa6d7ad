// Package filespan reads, from a session's journal, which files the
// session changed over a span of it: the snapshot of the span's first
// turn, and the paths the session's tools changed since. A revert
// restores only those (a file edited by hand between turns is in no such
// pair, so a revert leaves it alone), and a session's diff shows only
// those.
//
// Attribution: each tool that changes files (ChangesFiles) records the
// snapshot taken once it returned; what differs from the snapshot before
// it (its turn's, or the previous tool's) is its doing. A tool that
// settled without a snapshot (a journal from before tool snapshots, a
// crash while it ran, a snapshot that failed) leaves the span open: what
// it changed is read from the next snapshot on, the next turn's or the
// one the caller closes the span with.
//
//	sp := filespan.New(store, seq, false)
//	for each event from seq on, in order {
//		if done, err := sp.Add(env.Seq, env.Event); err != nil || done { … }
//	}
//	files, err := sp.Changed(sp.From, current) // what a revert to seq restores
//
// It folds events and asks a snapshot store (Trees) which paths differ
// between two trees; it reads no journal and takes no snapshot itself (the
// Session actor pages the journal and owns the store).
package filespan
