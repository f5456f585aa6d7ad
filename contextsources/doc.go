// Package contextsources owns the System Context of a Session: Context Sources, their
// composition, the Location-scoped System Context Registry, and the pure Context Epoch
// logic (Initialize, Reconcile, Replace) plus the lowering of a Mid-Conversation System
// Message for a provider.
//
// The model is split in two halves:
//
//   - Observation is the only effectful step. SystemContext.Observe (or Registry.Observe)
//     calls every loader concurrently under one timeout. A loader that panics, times out
//     or whose value cannot be encoded counts as Unavailable for that boundary; nothing
//     escapes to the caller. (A loader that ignores its context keeps its goroutine
//     until it returns; Go cannot stop it, and its late result is dropped.)
//   - Initialize, Reconcile and Replace are pure functions of an Observation and the
//     stored Snapshot. They never touch a clock, a file or an actor, so every rule is a
//     table test.
//
// Typical use by the Session actor at a safe provider-turn boundary:
//
//	guidance, _ := skills.Context(skills.Config{Catalog: cat, Allowed: agentMaySee})
//	obs, err := registry.ObserveWith(ctx, guidance) // Location sources, then the agent's
//	if noEpoch { // before promoting any input
//		gen, err := contextsources.Initialize(obs) // errors.Is(err, ErrUnavailable): blocked
//		// journal gen.Baseline (the exact provider prefix) and gen.Snapshot.Encode()
//	}
//	snap, _ := contextsources.DecodeSnapshot(stored) // or the one kept in memory
//	d := contextsources.Reconcile(obs, snap, contextsources.ReconcileOptions{
//		ReplaceBaseline: compactedSinceEpochStart,
//	})
//	switch d.Action {
//	case contextsources.Updated: // append d.Message as one system message and store
//		// d.Snapshot in the same transaction
//	case contextsources.ReplacementReady: // new epoch: d.Generation
//	case contextsources.ReplacementBlocked: // d.Blocked names the sources
//	}
//	msg := contextsources.Lower(text, provider.HasChronologicalSystemRole)
//
// Rules (spec glossary 000, session.md 002):
//   - A source's value is compared through its codec's JSON encoding; the Snapshot stores
//     that encoding per key plus, for removable sources, a pre-rendered removal text.
//   - Unavailable keeps the prior value and emits nothing (omitted until first loaded).
//   - A successfully loaded absence emits the stored removal text and drops the key; a
//     source without a removal renderer is never "removed" from the model's view, so its
//     entry is kept.
//   - A source new to the Snapshot emits its baseline rendering once; a stored value that
//     no longer decodes is treated as new (re-announced), for that key only.
//   - All changes at one boundary form one combined message, in observation order, then
//     removals of sources no longer registered, in key order.
//   - An empty Observation means "no source registered": reconciling it against a
//     non-empty snapshot emits every removal. Never reconcile the zero Observation that
//     comes with an Observe error.
//   - Replace restates the last admitted value of an unavailable source (or blocks when
//     that value cannot be decoded, or always when ReplaceOptions.Strict is set).
//
// What it must not do: talk to actors, the journal or providers; wake sessions; keep
// package-level mutable state. Loaders of the built-in sources live in the
// subpackages environment, instructions and skills.
package contextsources
