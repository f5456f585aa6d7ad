package compaction

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// runTurn is the reference drain for one logical provider turn, as the
// Session actor is meant to run it: pre-turn check, send, and on a context
// overflow the OnOverflow rule (one compaction, one rebuilt attempt). It
// returns the history after the turn and the turn's terminal error.
func runTurn(t *testing.T, p provider.Provider, hist []messages.Message, window int, cfg Config) ([]messages.Message, error) {
	t.Helper()
	model := provider.ModelRef{Provider: "scripted", Model: "m"}
	baseline := strings.Repeat("Rules of the project. ", 180) // ~1000 tokens, as a real baseline has
	compacted := false
	compact := func() error {
		plan, err := NewPlan(Input{History: hist, Model: model, Window: window, OutputAllowance: 1000, Config: cfg})
		if err != nil {
			return err
		}
		summary, err := Summarize(context.Background(), p, plan, nil)
		if err != nil {
			return err // nothing appended: the previous boundary stays
		}
		hist = []messages.Message{compactionMsg(100, summary, plan.RecentContext)}
		compacted = true
		return nil
	}
	for {
		req := lower(model, baseline, nil, hist)
		if BeforeTurn(TurnState{Estimate: Estimate(req), Window: window, OutputAllowance: 1000, Compacted: compacted}, cfg).Action == Compact {
			if err := compact(); err != nil && !errors.Is(err, ErrNothingToCompact) {
				return hist, err
			}
			req = lower(model, baseline, nil, hist)
		}
		var acc provider.Accumulator
		st, err := p.Stream(context.Background(), req)
		for err == nil {
			var part provider.Part
			if part, err = st.Next(); err == nil {
				acc.Add(part)
			}
		}
		if errors.Is(err, io.EOF) {
			return append(hist, assistantMsg(200, "answer")), nil
		}
		if !errors.Is(err, provider.ErrContextOverflow) {
			return hist, err
		}
		d := OnOverflow(OverflowState{DurableOutput: acc.Output, Compacted: compacted}, cfg)
		if d.Action == Fail {
			return hist, d.Err
		}
		if err := compact(); err != nil {
			return hist, errors.Join(ErrOverflow, err)
		}
	}
}

func overflowHistory() []messages.Message {
	return append(twoTurns(), userMsg(7, "and now the docs"))
}

func overflow() scripted.Turn {
	return scripted.Turn{Error: &scripted.ErrorSpec{Kind: "context_overflow", Status: 400, Message: "prompt is too long"}}
}

func TestOverflowBeforeOutputCompactsOnceAndRetries(t *testing.T) {
	p := scriptedWith(t, overflow(), scripted.Turn{Text: summaryText}, scripted.Turn{Text: "answer"})
	hist, err := runTurn(t, p, overflowHistory(), 0, Config{Auto: true, Keep: 10})
	if err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if len(reqs) != 3 || reqs[1].System != SummarySystem {
		t.Fatalf("%d requests; want turn, summary, rebuilt turn", len(reqs))
	}
	if hist[0].Role != messages.RoleCompaction || hist[0].Text != summaryText || hist[0].RecentContext != "[user]\nand now the docs" {
		t.Fatalf("history after the retry starts with %+v", hist[0])
	}
	if len(reqs[2].Messages) != 1 || reqs[2].Messages[0].Text != Checkpoint(summaryText, "[user]\nand now the docs") {
		t.Fatalf("rebuilt attempt: %+v", reqs[2].Messages)
	}
}

func TestSecondOverflowIsTerminal(t *testing.T) {
	p := scriptedWith(t, overflow(), scripted.Turn{Text: summaryText}, overflow(), scripted.Turn{Text: "never sent"})
	_, err := runTurn(t, p, overflowHistory(), 0, Config{Auto: true, Keep: 10})
	if !errors.Is(err, ErrOverflow) || p.Count() != 3 {
		t.Fatalf("error %v after %d requests; want a terminal overflow after 3", err, p.Count())
	}
}

func TestOverflowAfterOutputIsNotRetried(t *testing.T) {
	one := 1
	p := scriptedWith(t, scripted.Turn{Text: "partial", Error: &scripted.ErrorSpec{Kind: "context_overflow", AfterParts: &one}}, scripted.Turn{Text: summaryText})
	_, err := runTurn(t, p, overflowHistory(), 0, Config{Auto: true, Keep: 10})
	if !errors.Is(err, ErrOverflow) || p.Count() != 1 {
		t.Fatalf("error %v after %d requests; want a terminal overflow and no compaction", err, p.Count())
	}
}

func TestOverflowWithAutoOffIsAnExplicitError(t *testing.T) {
	p := scriptedWith(t, overflow(), scripted.Turn{Text: summaryText})
	_, err := runTurn(t, p, overflowHistory(), 0, Config{Auto: false, Keep: 10})
	if !errors.Is(err, ErrOverflow) || p.Count() != 1 {
		t.Fatalf("error %v after %d requests", err, p.Count())
	}
}

func TestFailedCompactionKeepsThePreviousBoundary(t *testing.T) {
	// A length finish of the summary: the overflow becomes terminal and the
	// history is exactly what it was.
	before := overflowHistory()
	p := scriptedWith(t, overflow(), scripted.Turn{Text: "## Goal\ncut", Finish: provider.FinishLength})
	hist, err := runTurn(t, p, before, 0, Config{Auto: true, Keep: 10})
	if !errors.Is(err, ErrOverflow) || !errors.Is(err, ErrLengthFinish) {
		t.Fatalf("error %v", err)
	}
	if len(hist) != len(before) || hist[0].Role != messages.RoleUser {
		t.Fatal("a failed compaction changed the history")
	}
	// Overflow with nothing to compact is terminal too.
	p = scriptedWith(t, overflow())
	_, err = runTurn(t, p, []messages.Message{userMsg(1, "huge")}, 0, Config{Auto: true, Keep: 10})
	if !errors.Is(err, ErrOverflow) || !errors.Is(err, ErrNothingToCompact) {
		t.Fatalf("error %v", err)
	}
}

func TestPreTurnCompactionRunsThePendingTurnWithTheCheckpoint(t *testing.T) {
	// Scenario 46: over budget before the turn → compact, then the turn.
	var hist []messages.Message
	for i := range 30 {
		hist = append(hist, userMsg(int64(2*i+1), fmt.Sprintf("question %d", i)), assistantMsg(int64(2*i+2), "answer with some detail, repeated for length. answer with some detail."))
	}
	hist = append(hist, userMsg(99, "the pending prompt"))
	p := scriptedWith(t, scripted.Turn{Text: summaryText}, scripted.Turn{Text: "answer"})
	cfg := Config{Auto: true, Buffer: 1000, Keep: 10}
	out, err := runTurn(t, p, hist, 2600, cfg) // budget 1600 tokens; the request is ~1900
	if err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if len(reqs) != 2 || reqs[0].System != SummarySystem {
		t.Fatalf("%d requests; want summary then turn", len(reqs))
	}
	if got := reqs[1].Messages; len(got) != 1 || got[0].Text != Checkpoint(summaryText, "[user]\nthe pending prompt") {
		t.Fatalf("turn request history: %+v", got)
	}
	if len(out) != 2 || out[0].Role != messages.RoleCompaction {
		t.Fatalf("history after the turn: %d messages", len(out))
	}
}
