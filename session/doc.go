// Package session holds a Session as pure state: State, and the one fold
// State.Apply that turns its durable events into that state. The same fold
// serves replay (from the journal, at activation or in a simulator) and the
// live events an owner appends, so the two cannot drift; it changes exactly
// what the journal's projector changes in the rows it mirrors.
//
// Start with state.go (State, Apply), then history.go (the model-visible
// history, which requests are built from), then core.go: Core.Step takes an
// input (AtBoundary, StreamPart, StreamEnded, CloseTurn) and returns a Ready whose
// Append the owner writes in one journal transaction before it runs any
// effect (Observe, StartTurn, Stop; an Outcome's Append holds the drain's
// last events, Idle among them); Core.Carry holds what
// waits for the next append, and carry.go says until when (Flush: what
// the owner writes before its next input). decide.go is the boundary rule itself;
// question.go the question tool's requests (open in State until the
// client's QuestionReply or a promotion closes them); commands.go and
// revert.go a client's commands (a reply to a question or permission
// request is one, Reply; a prompt's admission is Core.Admission's; a
// revert's file I/O is the owner's: Ready.Revert asks for it). A new owner steps
// Leftovers first (what a dead owner left open: State.Calls, Asks, Turns;
// Ready.KillTools before their closing Append), then Recover.
// testdata/ holds the scenario scripts (interaction_test.go), sim/ the
// deterministic simulator (sessionrt chaos --mode sim).
//
//	st := session.NewState(id)
//	for seq, ev := range events { // from seq 1
//		if err := st.Apply(seq, ev); err != nil { … }
//	}
//	// st.Pending, st.Epoch, st.History.Msgs are what the journal projects.
//
// This package does no I/O and reads no clock: it imports no actor system,
// storage or telemetry, and never asks the time (deps_test.go holds it to
// that). Its owner (the Session actor) does the I/O and feeds the results
// in.
package session
