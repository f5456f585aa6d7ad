package compaction

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
)

// Sentinel errors of NewPlan.
var (
	// ErrNothingToCompact: every message after the boundary fits in the
	// recent context, so a compaction would summarize nothing. Before a turn
	// the caller runs the turn as is; after an overflow it is terminal.
	ErrNothingToCompact = errors.New("nothing to compact: no complete turns older than the recent context")
	// ErrDoesNotFit: the summary request itself exceeds the model's budget.
	// A compaction that does not fit is a terminal error.
	ErrDoesNotFit = errors.New("compaction request does not fit the context window")
)

// Input is what a compaction is planned from.
type Input struct {
	// History is the model-visible history as the journal projects it
	// (persistence.Journal.ModelHistory): it starts at the latest completed
	// compaction, if any, whose summary is the one to update.
	History []messages.Message
	// Model is the model the summary request is sent to (the turn's).
	Model provider.ModelRef
	// Window is the model's context window in tokens (0 unknown: no fit check).
	Window int
	// OutputAllowance is the model's output reserve (see OutputAllowance); it
	// also caps the summary's length.
	OutputAllowance int
	Config          Config
}

// Plan is one planned compaction.
type Plan struct {
	// Request is the summary request: no tools, one user message.
	Request *provider.Request
	// Estimate is Estimate(Request).
	Estimate int
	// Update is true when a previous summary is being updated.
	Update bool
	// PreviousSummary is the summary being updated ("" for the first).
	PreviousSummary string
	// Compacted is how many messages after the previous boundary are
	// summarized (History[Start : Start+Compacted]); the previous recent
	// context, when there is one, is summarized too.
	Start, Compacted int
	// Kept is how many of the newest messages the recent context serializes.
	Kept int
	// RecentContext is the serialized recent context to store in
	// CompactionEnded, at most Config.Keep tokens.
	RecentContext string
}

// SummarySystem is the system text of every summary request.
const SummarySystem = "You write the working summary of an AI coding session so that the work can continue from the summary alone, without the conversation. " +
	"Write only the summary, in Markdown, with exactly the sections you are given. " +
	"Keep facts exact: file paths, commands, identifiers, error messages, numbers, and the user's own wording of requirements and preferences. " +
	"Leave out pleasantries and anything the work no longer needs. Do not call tools."

// SummarySections is the structure every summary must have.
const SummarySections = `## Goal
## Constraints & Preferences
## Progress
### Done
### In Progress
### Blocked
## Key Decisions
## Next Steps
## Critical Context
## Relevant Files`

const sectionsInstruction = "Write the summary with exactly these sections, in this order (write \"(none)\" under a section with nothing to say):\n\n" + SummarySections

// FirstPrompt is the user message of a first compaction.
func FirstPrompt(transcript string) string {
	return "Summarize the conversation below.\n\n<conversation>\n" + transcript + "\n</conversation>\n\n" + sectionsInstruction
}

// UpdatePrompt is the user message of a later compaction: the previous
// summary and the messages compacted since.
func UpdatePrompt(previous, transcript string) string {
	return "Update the previous summary with the messages that followed it. Keep what still holds, revise what changed, " +
		"move finished work to Done, and drop nothing the work still needs.\n\n<previous-summary>\n" + previous +
		"\n</previous-summary>\n\n<new-messages>\n" + transcript + "\n</new-messages>\n\n" + sectionsInstruction
}

// Checkpoint is the model-visible text of a completed compaction (the
// actor's lowering of a compaction message renders exactly this).
func Checkpoint(summary, recentContext string) string {
	s := "<conversation-summary>\n" + summary + "\n</conversation-summary>"
	if recentContext != "" {
		s += "\n<recent-context>\n" + recentContext + "\n</recent-context>"
	}
	return s
}

const separator = "\n\n"

// NewPlan decides what a compaction summarizes and what it keeps, and
// builds the summary request.
//
// The newest messages are kept as serialized recent context up to
// Config.Keep tokens, whole turns (from a user message on) where they fit;
// when even the current turn does not fit, its newest messages are kept and
// the newest one alone is cut to the budget. Everything older since the
// previous boundary, with the previous recent context, goes to the summary.
func NewPlan(in Input) (*Plan, error) {
	cfg := in.Config.withDefaults()
	if err := in.Config.Validate(); err != nil {
		return nil, err
	}
	p := &Plan{}
	hist := in.History
	var prevRecent string
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Role == messages.RoleCompaction {
			p.Update, p.PreviousSummary, prevRecent = true, hist[i].Text, hist[i].RecentContext
			p.Start = i + 1
			break
		}
	}
	msgs := hist[p.Start:]

	// Serialize once, newest first, until the keep budget is spent.
	recent := make([]string, len(msgs))
	s, used := len(msgs), 0
	for s > 0 {
		var b strings.Builder
		serialize(&b, &msgs[s-1], bounds{Item: recentItemTokens})
		t := TextTokens(b.String()) + TextTokens(separator)
		if used+t > cfg.Keep && s < len(msgs) {
			break
		}
		recent[s-1], used = b.String(), used+t
		s--
	}
	// Start at a turn boundary unless the current turn alone overflows keep.
	lastUser := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == messages.RoleUser {
			lastUser = i
			break
		}
	}
	if s < len(msgs) && s <= lastUser && msgs[s].Role != messages.RoleUser {
		for s < lastUser && msgs[s].Role != messages.RoleUser {
			s++
		}
	}
	p.Compacted, p.Kept = s, len(msgs)-s
	if p.Compacted == 0 && prevRecent == "" {
		return nil, fmt.Errorf("%w (%d messages since the last boundary, all within keep=%d tokens)", ErrNothingToCompact, len(msgs), cfg.Keep)
	}
	rc := strings.Join(recent[s:], separator)
	if TextTokens(rc) > cfg.Keep {
		rc = cutToTokens(rc, cfg.Keep)
	}
	p.RecentContext = rc

	// The summary request, with the transcript cut tighter until it fits.
	budget := Budget(in.Window, in.OutputAllowance, cfg)
	for _, bd := range transcriptLevels() {
		p.Request = summaryRequest(in, p, prevRecent, msgs[:s], bd)
		p.Estimate = Estimate(p.Request)
		if in.Window <= 0 || p.Estimate <= budget {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w: the summary request of %d messages is about %d tokens even with every item cut to %d tokens; the budget is %d (window %d minus reserve %d)",
		ErrDoesNotFit, p.Compacted, p.Estimate, transcriptLevels()[2].Item, budget, in.Window, in.Window-budget)
}

func summaryRequest(in Input, p *Plan, prevRecent string, compacted []messages.Message, bd bounds) *provider.Request {
	var t strings.Builder
	t.WriteString(prevRecent)
	for i := range compacted {
		if t.Len() > 0 {
			t.WriteString(separator)
		}
		serialize(&t, &compacted[i], bd)
	}
	prompt := FirstPrompt(t.String())
	if p.Update {
		prompt = UpdatePrompt(p.PreviousSummary, t.String())
	}
	return &provider.Request{
		Model:    in.Model,
		System:   SummarySystem,
		Messages: []provider.Message{{Role: provider.RoleUser, Text: prompt}},
		Controls: provider.Controls{MaxOutputTokens: in.OutputAllowance},
	}
}

// cutToTokens cuts text (head and tail, marker between) until its estimate
// is at most tokens.
func cutToTokens(s string, tokens int) string {
	limit := tokens * 4
	for range 8 {
		c := cut(s, limit, "")
		if TextTokens(c) <= tokens {
			return c
		}
		// Wide runes count more than 4 bytes a token: shrink by the excess.
		limit = limit * tokens / (TextTokens(c) + 1)
	}
	return cut(s, 0, "")
}
