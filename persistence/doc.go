// Package persistence is the journal: durable session events (msgpack, typed
// by messages.Registry) and the projections derived from them, written in ONE
// SQL transaction, plus replay, tail, ownership fencing and verification.
//
// It speaks MySQL-dialect SQL through database/sql, so one code path serves
// the embedded engine (persistence/boltsql) and MySQL/MariaDB. Every table is
// keyed by a primary key that starts with session_id, every range query
// orders by the full key prefix, and no vendor-only feature is used.
//
// Model:
//   - A session's events form a stream with contiguous seqs 1..last_seq.
//     Append(ctx, id, expectedSeq, epoch, events) is optimistic: a stale
//     expectedSeq gives ErrConflict, an epoch older than the last Acquire
//     gives ErrFenced, and in both cases nothing is written.
//   - The projector (project.go) applies each event to the projection tables
//     inside the same transaction; an event that breaks a projection
//     invariant (promoting an unknown prompt, settling a tool twice, an epoch
//     for a stale Location, ...) fails with ErrProjection and rolls back the
//     whole append.
//   - Events(ctx, id, after) replays then tails with no gap and no duplicate:
//     the tailer subscribes before it reads, wake-ups are edge-triggered
//     dirty signals, and the rows carry the truth. In-process commits also
//     hand their rows to the tailers (used only when they continue the
//     cursor exactly; a gap or an overflow re-reads the database), and a
//     poll covers writers in other processes.
//   - Verify rebuilds every projection into scratch tables with the same
//     projector and diffs them against the stored ones.
//
// Cost: the embedded engine charges per statement (parse, plan, bind), so
// an Append issues a fixed handful whatever its size: the stream advance
// (expected seq and epoch checked by the UPDATE itself), one multi-row
// INSERT of the events, and per projection table at most one statement for
// new rows and one for changed ones (batch.go; texts are fixed per row
// count, so a plan cache keyed by text hits). A message's ID is a unique key
// of session_messages, so a new message is one row and a lookup one read.
// This Journal's previous append to a session leaves the status, the newest
// assistant messages and their tool calls in a bounded cache (sessionCache)
// tagged with the head it wrote; the next append at exactly that head uses
// them instead of reading (and does not rewrite an unchanged status); it
// also keeps the sessions row, the epoch's revision and the pending prompts
// it admitted, so checking a location or an epoch and promoting a prompt
// read nothing, and Session costs one read of the stream head. An
// 8-event provider turn is 4 statements in one append; as the actor writes
// it, one event per append, each is 3-4 with no read.
//
// API for the Session actor (see ExampleJournal):
//
//	j, _ := persistence.OpenURL(ctx, dataDir, journalURL, false, persistence.Config{})
//	own, _ := j.Acquire(ctx, sid, node)              // epoch + last seq; older owners now get ErrFenced
//	own, s, found, _ := j.AcquireSession(ctx, sid, node) // the same, with the session row read in its transaction
//	s, created, _ := j.CreateSession(ctx, sid, own.Epoch, messages.SessionCreated{...})
//	r, _ := j.AdmitPrompt(ctx, sid, last, own.Epoch, messages.PromptAdmitted{...}, backlogLimit)
//	last, _ = j.Append(ctx, sid, last, own.Epoch, events...) // *ConflictError{Last} / ErrFenced / ErrProjection
//	j.Session, j.PendingInbox, j.ModelHistory, j.Messages (paging), j.Epoch,
//	j.ToolCalls(ctx, sid, messages.ToolStatePending, messages.ToolStateRunning), j.PendingPermissions, j.MidDrain, j.Owed
//	for env, err := range j.Events(ctx, sid, after) { ... } // replay then tail
//	rep, _ := j.Verify(ctx)
//
// It must not: decide what a session does next (that is the Session actor's
// pure logic), hold per-session state in memory beyond tail subscriptions
// and the bounded sessionCache (an optimisation, only used when the stream
// head proves it current), or store live-only deltas (messages.Delta is not
// an Event).
package persistence
