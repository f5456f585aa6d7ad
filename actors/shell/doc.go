// Package shell is the Session actor: the loop around the session core.
//
// A Session is one protoactor actor per session ID; its mailbox serializes the
// drain (one provider turn at a time). The drain's decisions — what to promote
// at a safe provider-turn boundary, whether to call the provider, when the turn
// limit is hit — are the session core's (session.Core.Step), tested without actors. The actor
// is the thin shell around it: it appends each fact to the journal before it
// acts on it, streams provider turns off the mailbox, and runs tool calls as
// children of the Location's tool registry. Facts decided together are
// written in one append (a promotion with the TurnStarted of the request
// that carries it; a turn's last results with its TurnEnded and Idle), and
// the model-visible history is kept in memory between turns, advanced by
// the actor's own appends, instead of being read back for every request.
//
// The actor's own code is the loop, in the style of etcd raft's rawnode
// (mailbox -> session.Core.Step -> write Ready.Append -> effects to the
// executors of actors/effect -> answer waiters):
// a message becomes an input to the session core (session.Core.Step), the
// Ready's Append is written, its effects are handed to the executors in
// actors/effect (the Location's resolution, the context observation and
// tool catalog, the provider stream, tool calls and their permission asks,
// file snapshots, the title), and its waiters are answered. An executor
// does its I/O off the mailbox with the dependencies it is given and posts
// its result back, tagged with the drain's or turn's token; it knows
// nothing of the actor. What a drain's executors keep between effects
// (the Location's registries, the agent, the catalog, the turn built and
// the turn in flight with its stream, the compaction in flight, the
// result it waits for) is effect.Drain's, which also turns each result
// into the core's input (Take), so most results take one generic path
// (onDrainMessage), and checks a stream's token (TurnToken). The drains'
// spans, metrics and log lines are an observe.Observer's (actors/observe),
// fed what the actor knows (a drain or turn started and ended, the Ready's
// settled calls and turn end); the permission asks of running calls wait
// in an effect.PermissionWaits. The shell keeps the Step calls, and the
// chaos fault points, which are panics on the actor's goroutine.
//
// The session's journal as this activation owns it (the ownership epoch
// that fences every write, the last seq, what a failed call means) is an
// effect.Journal: the actor folds what it wrote into the core's state,
// publishes it and fires the chaos faults it stands for, and when the
// journal stops the activation (stale, or failed) it stops (stop), in one
// place.
//
// Everything the actor uses of its process (the journal, the live bus,
// the activation registry, the journal waits, the Location's configuration
// and registries, the runtime's settings and counters) is in Deps, which
// the facade (package actors) fills in: this package never imports the
// facade. What the actor is asked and answers (its commands, answers,
// errors, live items, fault points) is actors/protocol's, which the facade
// re-exports under the same names (aliases.go). Panic recovery, the
// live-incarnation gauge and idle tracking wrap the actor as receiver
// middleware (actors/middleware, composed by Middleware).
package shell
