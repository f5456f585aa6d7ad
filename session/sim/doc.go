// Package sim is a deterministic simulator for the session core: seeded
// runs drive many sessions through the real session.Core and the real fold
// (session.State.Apply) over an in-memory, fenced journal, with a shell
// that plays the actor's part (append first, then effects) and a fake
// provider and tools whose outcomes come from the seed. It injects
// crashes (carried events lost, state rebuilt by replay, leftovers failed
// as interrupted), stale owners' appends, interrupts, duplicate tool
// settlements, provider errors and content-filter stops, and checks after
// every step: no admitted prompt lost or promoted twice, queued prompts
// promoted alone and only once the activity settled, no tool call started
// twice, every started tool settled exactly once (and handed to observers,
// Ready.Settled, exactly once, as it was written), revert commands
// (refused while busy, writing nothing when refused, their file restores
// finished before they answer, or at activation when a crash interrupted
// one), the live state equal to a replay of the journal, the turn
// allowance never exceeded, stale appends refused. A failure names its seed and the command that replays it.
//
// The drain's phases still in the actor (context reconciliation,
// compaction, permissions, moves mid-turn) are not simulated yet.
package sim
