// Package effect holds the Session actor's effect executors: the I/O the
// session core (session.Core.Step) asks for in a Ready, each a function
// with explicit dependencies that does its work off the actor's mailbox
// and posts its result back as a message, tagged with the token of the
// drain or turn that asked for it (a stale result is the actor's to drop).
//
// An executor knows nothing of the actor: it gets what it needs as
// arguments (a context, a provider and its request, a registry's PID) and
// a Post to hand its result to. The actor (actors/shell) is the loop:
// receive a message, Step the core, write the Ready's Append, dispatch the
// Ready's effects to the executors here, answer its waiters. So an
// executor is tested without a Session actor (the _test.go file beside
// each).
//
// Drain is one drain's executor state (drain.go): what its executors keep
// between the core's effects, so that the actor keeps none of it, and the
// glue from a result to the core's input: a result (Located, Observed,
// Catalog, TurnSnapshotted, Summarized) is a Result, and Drain.Take keeps
// what it brings for the effects that follow and returns the input the
// actor steps (none for another drain's); while one is outstanding, the
// drain is Busy. A turn's request is built on the actor's goroutine
// (StartTurn: the history it renders is the actor's memory), not off it.
// The turn in flight is the Drain's too (turn.go): Stream sends its
// request, StartTool runs its calls under the rules it was built with,
// Interrupt and Stop cancel it, and the actor drops a stream's part or end
// whose token is not TurnToken.
//
// A tool call's settlement comes from the Location's tool registry
// (RunTool); SettleTool makes it the core's ToolSettled, at once or, after
// a tool that changes files, once the file snapshot taken after it is
// posted with it (ToolSnapshotted, whose In is the input).
//
// Load (and Row, History, Questions, Ended) read a session's state from
// its journal: what an activation starts from, as session.State.Apply
// folds it from the session's events (load_test.go checks the two agree).
// They do not post: the activation must finish before any queued message,
// so the actor calls them and waits.
//
// Journal (journal.go) is one activation's port to its session's journal:
// it holds the ownership epoch and the last seq, so every write is fenced
// and expects the seq the activation knows, and it classifies what a write's
// failure means to the activation (JournalError: stale, the journal
// failed, a duplicate, a full inbox, refused), so the actor decides once
// whether it stops and what its client hears. Its calls block, as Load's.
//
// The revert executors (revert.go: a span's snapshot facts, a session's
// diff, a restore) are plain calls that return their result: the actor
// runs them on its mailbox between a revert command's steps, so that no
// drain can start while a revert reads or restores the files.
//
// What travels per stream part is one message (the hot path: a turn
// streams hundreds): Stream decodes each provider part into the core's
// session.StreamPart on the stream's own goroutine and posts it; no extra
// goroutine or channel sits between the provider and the mailbox.
package effect
