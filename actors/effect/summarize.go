package effect

import (
	"context"
	"errors"

	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/provider"
)

// Summarized is a compaction's summary request answered (Err: it failed,
// was cancelled, or its answer is no summary), with what the core stores
// beside the summary (ID, Recent: the plan's recent context).
type Summarized struct {
	Token   uint64
	ID      string
	Recent  string
	Summary string
	Err     error
}

// Summarize sends the summary request of plan (compaction id) to prov on
// its own goroutine and posts Summarized, tagged with the drain's token.
// onDelta gets the summary's text as it streams (live progress; may be
// nil), on that goroutine. Cancelling ctx (an interrupt, the drain's end)
// ends the request with the provider's error; a provider's panic is the
// request's error.
func Summarize(ctx context.Context, prov provider.Provider, plan *compaction.Plan, token uint64, id string, onDelta func(string), post Post) {
	done := func(summary string, err error) any {
		return &Summarized{Token: token, ID: id, Recent: plan.RecentContext, Summary: summary, Err: err}
	}
	Go(post, func() any { return done(compaction.Summarize(ctx, prov, plan, onDelta)) },
		func(error) any { return done("", errors.New("summary request panicked")) })
}
