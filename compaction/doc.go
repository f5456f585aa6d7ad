// Package compaction decides when a Session's model-visible history must be
// compacted and builds the compaction: the summary request, the serialized
// recent context kept after the boundary, and the streamed summary.
//
// A compaction replaces the active model history with one checkpoint: a
// structured rolling summary plus token-bounded recent context, both plain
// text. Provider-native assistant, reasoning and tool messages never survive
// the boundary (their signatures and encrypted reasoning would break when
// the prefix changes), so everything kept is serialized text.
//
// Start with decide.go: BeforeTurn (estimate over budget → compact) and
// OnOverflow (the provider said "too long" → compact and retry once, or a
// terminal error). Then plan.go: NewPlan picks what is summarized and what is
// kept and builds the summary request; Summarize (summarize.go) streams it.
// Estimate (estimate.go) counts the tokens of a complete provider request.
//
// Usage from the drain (the Session actor owns the events):
//
//	est := compaction.Estimate(req)
//	d := compaction.BeforeTurn(compaction.TurnState{Estimate: est, Window: w,
//		OutputAllowance: out, Compacted: compactedThisTurn}, cfg)
//	if d.Action == compaction.Compact {
//		plan, err := compaction.NewPlan(compaction.Input{History: hist,
//			Model: req.Model, Window: w, OutputAllowance: out, Config: cfg})
//		// errors.Is(err, ErrNothingToCompact): send the turn as it is.
//		// Otherwise append CompactionStarted, then
//		summary, err := compaction.Summarize(ctx, p, plan, sendDelta)
//		// on error append nothing more: the previous boundary stays.
//		// append CompactionEnded{Summary: summary, RecentContext: plan.RecentContext},
//		// reload the history and rebuild the request.
//	}
//
// and when the provider answers with provider.ErrContextOverflow:
//
//	d := compaction.OnOverflow(compaction.OverflowState{DurableOutput: out,
//		Compacted: compactedThisTurn}, cfg)
//	// Fail: end the turn with d.Err. Compact: as above (any error is then
//	// terminal), and send the rebuilt request once.
//
// Everything here is pure except Summarize, which performs one provider
// request. This package appends no events, holds no state between calls and
// must not import the actors, the journal implementation or an adapter.
package compaction
