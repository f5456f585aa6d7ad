package compaction

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

func testPlan(t *testing.T) *Plan {
	t.Helper()
	plan, err := NewPlan(Input{History: twoTurns(), Model: summaryModel, Window: 100_000, OutputAllowance: 4096, Config: Config{Auto: true, Keep: 20}})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func scriptedWith(t *testing.T, turns ...scripted.Turn) *scripted.Provider {
	t.Helper()
	p, err := scripted.New(scripted.Config{Script: &scripted.Script{Turns: turns}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const summaryText = "## Goal\nFix the bug in main.go.\n## Constraints & Preferences\n(none)"

func TestSummarizeStreamsDeltasAndReturnsTheSummary(t *testing.T) {
	p := scriptedWith(t, scripted.Turn{Text: summaryText + "\n\n", Chunk: 7})
	plan := testPlan(t)
	var deltas []string
	got, err := Summarize(context.Background(), p, plan, func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if got != summaryText {
		t.Fatalf("summary %q", got)
	}
	if len(deltas) < 5 || strings.Join(deltas, "") != summaryText+"\n\n" {
		t.Fatalf("deltas %q", deltas)
	}
	reqs := p.Requests()
	if len(reqs) != 1 || !reflect.DeepEqual(&reqs[0], plan.Request) {
		t.Fatalf("the provider got %d requests; want exactly the plan's", len(reqs))
	}
	if len(reqs[0].Tools) != 0 {
		t.Fatal("summary request offered tools")
	}
}

func TestSummarizeRefusesALengthFinish(t *testing.T) {
	p := scriptedWith(t, scripted.Turn{Text: "## Goal\nFix the", Finish: provider.FinishLength})
	got, err := Summarize(context.Background(), p, testPlan(t), nil)
	if !errors.Is(err, ErrLengthFinish) || got != "" {
		t.Fatalf("summary %q error %v, want ErrLengthFinish and nothing", got, err)
	}
}

func TestSummarizeReportsProviderErrors(t *testing.T) {
	after := 2
	cases := []struct {
		name string
		turn scripted.Turn
		is   error
	}{
		{"before the stream", scripted.Turn{Error: &scripted.ErrorSpec{Kind: "rate_limited", Status: 429}}, provider.ErrRateLimited},
		{"overflow of the summary request", scripted.Turn{Error: &scripted.ErrorSpec{Kind: "context_overflow", Status: 400}}, provider.ErrContextOverflow},
		{"mid-stream", scripted.Turn{Text: "## Goal\nabc", Chunk: 3, Error: &scripted.ErrorSpec{Kind: "retryable", AfterParts: &after}}, provider.ErrRetryable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var deltas int
			got, err := Summarize(context.Background(), scriptedWith(t, c.turn), testPlan(t), func(string) { deltas++ })
			if !errors.Is(err, c.is) || got != "" {
				t.Fatalf("summary %q error %v, want %v", got, err, c.is)
			}
			if c.turn.Error.AfterParts != nil && deltas != *c.turn.Error.AfterParts {
				t.Fatalf("%d deltas before the error, want %d", deltas, *c.turn.Error.AfterParts)
			}
		})
	}
}

func TestSummarizeStopsWhenCancelled(t *testing.T) {
	p := scriptedWith(t, scripted.Turn{Text: "## Goal\npartial", Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got, err := Summarize(ctx, p, testPlan(t), func(string) { cancel() })
	if !errors.Is(err, provider.ErrInterrupted) || got != "" {
		t.Fatalf("summary %q error %v, want interrupted and nothing", got, err)
	}
	// Cancelled before the request: nothing is sent.
	got, err = Summarize(ctx, scriptedWith(t, scripted.Turn{Text: summaryText}), testPlan(t), nil)
	if !errors.Is(err, provider.ErrInterrupted) || got != "" {
		t.Fatalf("pre-cancelled: summary %q error %v", got, err)
	}
}

func TestSummarizeRefusesEmptyOrToolAnswers(t *testing.T) {
	if got, err := Summarize(context.Background(), scriptedWith(t, scripted.Turn{Text: " \n "}), testPlan(t), nil); !errors.Is(err, ErrEmptySummary) || got != "" {
		t.Fatalf("blank summary: %q %v", got, err)
	}
	tool := scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "bash"}}}
	if got, err := Summarize(context.Background(), scriptedWith(t, tool), testPlan(t), nil); !errors.Is(err, ErrBadFinish) || got != "" {
		t.Fatalf("tool call: %q %v", got, err)
	}
	filtered := scripted.Turn{Text: "## Goal", Finish: provider.FinishContentFilter}
	if got, err := Summarize(context.Background(), scriptedWith(t, filtered), testPlan(t), nil); !errors.Is(err, ErrBadFinish) || got != "" {
		t.Fatalf("content filter: %q %v", got, err)
	}
	if _, err := Summarize(context.Background(), nil, testPlan(t), nil); err == nil {
		t.Fatal("nil provider accepted")
	}
	if _, err := Summarize(context.Background(), scriptedWith(t, scripted.Turn{Text: "x"}), nil, nil); err == nil {
		t.Fatal("nil plan accepted")
	}
}
