// Package chaos is the fault-injection suite of the runtime.
//
// A run drives many sessions through prompts whose turns call a side-effecting
// bash tool, while it kills Session actors at every named fault point
// (actors.FaultPoints) or kills the whole process (SIGKILL of a worker
// subprocess). Afterwards it lets every session finish and checks the
// invariants the journal must hold whatever was killed:
//
//   - no admitted prompt is lost: each acknowledged prompt is promoted;
//   - no tool runs twice: each call's side effect appears at most once;
//   - every tool a death interrupted is failed durably (none left running);
//   - each session's seqs are contiguous from 1;
//   - every projection equals a replay of the events (journal verify).
//
// The member-kill mode (RunMemberKills, `sessionrt chaos --mode
// member-kill`) runs cluster member processes (clustertest.Member) on one
// shared MySQL/MariaDB journal, SIGKILLs one while its sessions' tools run, and
// checks the same invariants plus: every session completes on a survivor,
// and (with Rejoin) the appends of activations superseded by a rejoining
// member are refused. RunMemberMove checks that tools follow a session's
// Location to the member holding it.
//
// The checks read only the journal and the side-effect file, never the
// runtime's memory, so they hold the runtime to what survives a crash.
package chaos
