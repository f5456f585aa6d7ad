package compaction

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// lower mirrors the Session actor's lowering of projected history
// (actors/request.go), which this package cannot import: a compaction
// message becomes one user message with the Checkpoint text.
func lower(model provider.ModelRef, baseline string, tools []provider.Tool, hist []messages.Message) *provider.Request {
	req := &provider.Request{Model: model, System: baseline, Tools: tools}
	for _, m := range hist {
		switch m.Role {
		case messages.RoleUser:
			req.Messages = append(req.Messages, provider.Message{Role: provider.RoleUser, Text: m.Prompt.Text})
		case messages.RoleSystem:
			req.Messages = append(req.Messages, provider.Message{Role: provider.RoleSystem, Text: m.Text})
		case messages.RoleCompaction:
			req.Messages = append(req.Messages, provider.Message{Role: provider.RoleUser, Text: Checkpoint(m.Text, m.RecentContext)})
		case messages.RoleAssistant:
			a := provider.Message{Role: provider.RoleAssistant}
			var results []provider.Message
			for _, p := range m.Parts {
				switch p.Kind {
				case messages.PartText:
					a.Text += p.Text
				case messages.PartTool:
					a.ToolCalls = append(a.ToolCalls, provider.ToolCall{ID: p.Tool.CallID, Name: p.Tool.Tool, Args: p.Tool.Input})
					results = append(results, provider.Message{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: p.Tool.CallID, Name: p.Tool.Tool, Output: p.Tool.Output}})
				}
			}
			req.Messages = append(append(req.Messages, a), results...)
		}
	}
	return req
}

// session is the simulated drain: a durable transcript and its model-visible
// suffix starting at the latest compaction, as the journal projects them.
type session struct {
	transcript []messages.Message
	boundary   int // index of the latest compaction message in transcript
	seq        int64
}

func (s *session) history() []messages.Message { return s.transcript[s.boundary:] }

func (s *session) append(m messages.Message) {
	s.seq++
	m.Seq = s.seq
	s.transcript = append(s.transcript, m)
}

type simResult struct {
	transcript  []messages.Message
	requests    []provider.Request
	compactions int
	updates     int
	steps       int
}

const (
	simWindow    = 24_000
	simAllowance = 2_000
	simTurns     = 500
)

var simCfg = Config{Auto: true, Buffer: 6_000, Keep: 3_000}

// simulate runs turns logical turns of 1–4 provider steps each; tool outputs
// are up to 12 KB. Before every step it asks BeforeTurn and, when told to,
// plans, summarizes and replaces the history as the actor does.
func simulate(t *testing.T, turns int) simResult {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 11))
	model := provider.ModelRef{Provider: "scripted", Model: "small"}
	baseline := "You are a coding agent.\n" + strings.Repeat("Project rules: keep functions small. ", 100)
	tools := []provider.Tool{
		{Name: "read", Description: "Read a file.", Schema: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
		{Name: "bash", Description: "Run a command.", Schema: []byte(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
	}
	summaries := 0
	p, err := scripted.New(scripted.Config{Func: func(_ context.Context, req *provider.Request, n int) (scripted.Turn, error) {
		if req.System == SummarySystem {
			summaries++
			return scripted.Turn{Text: fmt.Sprintf("## Goal\nship feature (summary %d)\n## Progress\n### Done\n%s", summaries, strings.Repeat("- step done\n", 80)), Chunk: 64}, nil
		}
		return scripted.Turn{Text: "ok"}, nil // the turn's content is decided by the simulation below
	}})
	if err != nil {
		t.Fatal(err)
	}
	budget := Budget(simWindow, simAllowance, simCfg)
	s := &session{}
	var res simResult
	for turn := range turns {
		s.append(userMsg(0, fmt.Sprintf("turn %d: %s", turn, strings.Repeat("do the thing ", rng.IntN(200)))))
		compacted := false
		steps := 1 + rng.IntN(4)
		for step := range steps {
			req := lower(model, baseline, tools, s.history())
			d := BeforeTurn(TurnState{Estimate: Estimate(req), Window: simWindow, OutputAllowance: simAllowance, Compacted: compacted}, simCfg)
			if d.Action == Compact {
				plan, err := NewPlan(Input{History: s.history(), Model: model, Window: simWindow, OutputAllowance: simAllowance, Config: simCfg})
				if errors.Is(err, ErrNothingToCompact) {
					t.Fatalf("turn %d step %d: nothing to compact with a %d-token request", turn, step, Estimate(req))
				}
				if err != nil {
					t.Fatalf("turn %d step %d: plan: %v", turn, step, err)
				}
				summary, err := Summarize(context.Background(), p, plan, func(string) {})
				if err != nil {
					t.Fatalf("turn %d: summarize: %v", turn, err)
				}
				if plan.Update {
					res.updates++
				}
				s.append(compactionMsg(0, summary, plan.RecentContext))
				s.boundary = len(s.transcript) - 1
				compacted = true
				res.compactions++
				req = lower(model, baseline, tools, s.history())
				// Nothing provider-native crossed the boundary: the history
				// is the checkpoint alone, and its recent context holds the
				// newest message (the pending prompt, or the last tool result
				// when the drain is mid-turn).
				newest := fmt.Sprintf("[user]\nturn %d:", turn)
				if step > 0 {
					newest = fmt.Sprintf("[tool result bash c%d_%d: completed", turn, step-1)
				}
				if len(req.Messages) != 1 || req.Messages[0].Role != provider.RoleUser || !strings.Contains(req.Messages[0].Text, newest) {
					t.Fatalf("turn %d step %d: history after compaction is %d messages; want the checkpoint holding %q", turn, step, len(req.Messages), newest)
				}
			}
			if est := Estimate(req); est > budget {
				t.Fatalf("turn %d step %d: request of %d tokens sent over the budget %d (compacted this turn: %v)", turn, step, est, budget, compacted)
			}
			// The provider turn: its request is recorded, its answer simulated.
			st, err := p.Stream(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			st.Close()
			res.steps++
			if step < steps-1 {
				out := strings.Repeat(fmt.Sprintf("line %d of output\n", step), rng.IntN(700))
				s.append(assistantMsg(0, "", toolDone(fmt.Sprintf("c%d_%d", turn, step), "bash", `{"command":"make"}`, out)))
			} else {
				s.append(assistantMsg(0, fmt.Sprintf("turn %d finished", turn)))
			}
		}
	}
	res.transcript, res.requests = s.transcript, p.Requests()
	return res
}

func TestLongSessionCompactsRepeatedlyWithinBudgetAndNeverLoops(t *testing.T) {
	res := simulate(t, simTurns)
	budget := Budget(simWindow, simAllowance, simCfg)
	if res.compactions < 50 || res.updates != res.compactions-1 {
		t.Fatalf("%d compactions, %d updates over %d turns; want repeated compactions updating one summary", res.compactions, res.updates, simTurns)
	}
	// Never loops: one request per step plus one per compaction, and never
	// two compactions without a provider step between them.
	if len(res.requests) != res.steps+res.compactions {
		t.Fatalf("%d requests for %d steps and %d compactions", len(res.requests), res.steps, res.compactions)
	}
	for i, r := range res.requests {
		if est := Estimate(&r); est > budget {
			t.Fatalf("request %d is %d tokens, budget %d", i, est, budget)
		}
		if r.System == SummarySystem {
			if len(r.Tools) != 0 {
				t.Fatalf("summary request %d offered tools", i)
			}
			if i+1 < len(res.requests) && res.requests[i+1].System == SummarySystem {
				t.Fatalf("requests %d and %d are back-to-back compactions", i, i+1)
			}
		}
	}
	t.Logf("%d turns, %d provider steps, %d compactions, %d requests, budget %d", simTurns, res.steps, res.compactions, len(res.requests), budget)

	// Replay: the same inputs give the same transcript and the same requests,
	// and the model-visible history is the transcript from its last compaction.
	again := simulate(t, simTurns)
	if !reflect.DeepEqual(res.transcript, again.transcript) || !reflect.DeepEqual(res.requests, again.requests) {
		t.Fatal("a second run of the same session differs")
	}
	last := -1
	for i, m := range res.transcript {
		if m.Role == messages.RoleCompaction {
			last = i
		}
	}
	if last < 0 || res.transcript[last].Seq <= 0 {
		t.Fatal("no compaction in the transcript")
	}
}
