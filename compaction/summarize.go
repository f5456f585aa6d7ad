package compaction

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sessionrt/sessionrt/provider"
)

// Sentinel errors of Summarize (provider errors are wrapped as they come:
// errors.Is(err, provider.ErrInterrupted) for a cancelled context).
var (
	// ErrLengthFinish: the summary hit the output limit; a cut summary is
	// not stored.
	ErrLengthFinish = errors.New("summary cut at the output limit")
	// ErrEmptySummary: the model returned no summary text.
	ErrEmptySummary = errors.New("empty summary")
	// ErrBadFinish: the model stopped for a reason other than the end of its
	// answer (a content filter, a tool call it was not offered, a pause).
	ErrBadFinish = errors.New("summary did not finish")
)

// Summarize streams the plan's summary request and returns the summary.
// Text deltas are passed to onDelta (live-only progress; may be nil) as they
// arrive, on the calling goroutine. Any end other than a complete, non-empty
// answer with a stop finish is an error — a provider error, a cancelled ctx,
// a length finish, an empty summary — and then the caller stores nothing:
// the previous history boundary stays.
func Summarize(ctx context.Context, p provider.Provider, plan *Plan, onDelta func(string)) (string, error) {
	if plan == nil || plan.Request == nil {
		return "", errors.New("summarize: no plan")
	}
	if p == nil {
		return "", errors.New("summarize: no provider")
	}
	st, err := p.Stream(ctx, plan.Request)
	if err != nil {
		return "", fmt.Errorf("summary request to %s: %w", plan.Request.Model, err)
	}
	defer st.Close()
	var text strings.Builder
	var finish provider.FinishReason
	for {
		part, err := st.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("summary stream from %s after %d bytes: %w", plan.Request.Model, text.Len(), err)
		}
		switch part.Kind {
		case provider.PartText:
			text.WriteString(part.Text)
			if onDelta != nil && part.Text != "" {
				onDelta(part.Text)
			}
		case provider.PartToolInputStart, provider.PartToolCall:
			return "", fmt.Errorf("%w: the model called tool %q, but a summary request offers none", ErrBadFinish, part.Name)
		case provider.PartFinish:
			finish = part.Finish
		}
	}
	// A stream that ended cleanly after the context was cancelled still
	// counts as interrupted: the caller asked to stop.
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("summary from %s: %w", plan.Request.Model,
			&provider.Error{Kind: provider.KindInterrupted, Message: "compaction", Err: context.Cause(ctx)})
	}
	switch finish {
	case provider.FinishStop:
	case provider.FinishLength:
		return "", fmt.Errorf("%w (%d bytes received, max output %d tokens)", ErrLengthFinish, text.Len(), plan.Request.Controls.MaxOutputTokens)
	default:
		return "", fmt.Errorf("%w: finish reason %q", ErrBadFinish, finish)
	}
	s := strings.TrimSpace(text.String())
	if s == "" {
		return "", ErrEmptySummary
	}
	return s, nil
}
