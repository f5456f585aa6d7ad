package actors

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// smallWindow gives the test model a window of w tokens and a small reserve.
func smallWindow(w int, cfg compaction.Config) harnessOption {
	return func(c *Config) {
		c.ModelLimits = func(messages.ModelRef) (int, int) { return w, 500 }
		c.Compaction = &cfg
	}
}

// summarizer answers summary requests with a numbered summary and every other
// request with a long answer that grows the history.
type summarizer struct {
	mu        sync.Mutex
	summaries []provider.Request
	answer    func(req *provider.Request, n int) (scripted.Turn, error)
}

func (s *summarizer) turn(req *provider.Request, n int) (scripted.Turn, error) {
	if req.System == compaction.SummarySystem {
		s.mu.Lock()
		s.summaries = append(s.summaries, *req)
		k := len(s.summaries)
		s.mu.Unlock()
		return scripted.Turn{Text: fmt.Sprintf("## Goal\nSUMMARY %d", k)}, nil
	}
	if s.answer != nil {
		return s.answer(req, n)
	}
	return scripted.Turn{Text: strings.Repeat("lorem ipsum dolor sit amet ", 120)}, nil
}

func (s *summarizer) count() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.summaries) }

func compactCfg(buffer, keep int) compaction.Config {
	c := compaction.DefaultConfig()
	c.Buffer, c.Keep = buffer, keep
	return c
}

func TestS46_OverBudgetRequestCompactsThenRunsThePendingTurn(t *testing.T) {
	s := &summarizer{}
	h := newHarness(t, s.turn, smallWindow(6000, compactCfg(1000, 600)))
	id := h.create("")
	var asked string
	for i := 0; i < 12 && s.count() == 0; i++ {
		asked = fmt.Sprintf("question %d.", i)
		h.ask(id, asked)
	}
	if s.count() == 0 {
		t.Fatal("the history outgrew the budget without a compaction")
	}
	if len(s.summaries[0].Tools) != 0 {
		t.Fatal("the summary request offered tools")
	}
	req := h.lastRequest()
	if req.System == compaction.SummarySystem || !strings.Contains(req.Messages[0].Text, "<conversation-summary>") || !strings.Contains(req.Messages[0].Text, "SUMMARY 1") {
		t.Fatalf("the pending turn after compaction starts with %q", req.Messages[0].Text)
	}
	// The prompt the compaction ran for is promoted with its turn, after
	// the summary: it is neither summarized nor kept as recent context.
	if strings.Contains(s.summaries[0].Messages[0].Text, asked) || strings.Contains(req.Messages[0].Text, asked) {
		t.Fatalf("the pending prompt %q was compacted", asked)
	}
	if m := req.Messages[len(req.Messages)-1]; m.Role != provider.RoleUser || m.Text != asked {
		t.Fatalf("the turn after the compaction ends with %+v, want the prompt %q", m, asked)
	}
	if est := compaction.Estimate(&req); est > 6000-1000 {
		t.Fatalf("request after compaction estimated at %d tokens, over the budget", est)
	}
	if n := h.countEvents(id, "context.epoch.replaced"); n != 1 {
		t.Fatalf("%d baseline replacements after one compaction", n)
	}
	h.checkReplay()
}

func TestS47_SecondCompactionUpdatesThePreviousSummary(t *testing.T) {
	s := &summarizer{}
	h := newHarness(t, s.turn, smallWindow(6000, compactCfg(1000, 600)))
	id := h.create("")
	for i := 0; i < 30 && s.count() < 2; i++ {
		h.ask(id, fmt.Sprintf("question %d", i))
	}
	if s.count() < 2 {
		t.Fatalf("%d compactions in 30 turns, want 2", s.count())
	}
	if !strings.Contains(s.summaries[1].Messages[0].Text, "SUMMARY 1") {
		t.Fatalf("second summary request does not carry the previous summary: %.300q", s.summaries[1].Messages[0].Text)
	}
	h.checkReplay()
}

func TestS48_OverflowCompactsOnceAndRetriesOnce(t *testing.T) {
	overflow := func() (scripted.Turn, error) {
		return scripted.Turn{Error: &scripted.ErrorSpec{Kind: "context_overflow", Message: "prompt is too long"}}, nil
	}
	t.Run("one overflow then success", func(t *testing.T) {
		var mu sync.Mutex
		attempts := 0
		s := &summarizer{}
		s.answer = func(req *provider.Request, n int) (scripted.Turn, error) {
			if strings.Contains(req.Messages[len(req.Messages)-1].Text, "big") {
				mu.Lock()
				attempts++
				first := attempts == 1
				mu.Unlock()
				if first {
					return overflow()
				}
				return scripted.Turn{Text: "fits now"}, nil
			}
			return scripted.Turn{Text: strings.Repeat("long answer ", 150)}, nil
		}
		h := newHarness(t, s.turn, smallWindow(0, compactCfg(1000, 200)))
		id := h.create("")
		h.ask(id, "warm up")
		h.ask(id, "another")
		h.ask(id, "big one")
		if s.count() != 1 || attempts != 2 {
			t.Fatalf("%d compactions and %d attempts, want 1 and 2", s.count(), attempts)
		}
		if hist := h.history(id); hist[len(hist)-1] != "A:fits now" {
			t.Fatalf("history %v", hist)
		}
		h.checkReplay()
	})
	t.Run("second overflow is terminal", func(t *testing.T) {
		s := &summarizer{}
		s.answer = func(req *provider.Request, n int) (scripted.Turn, error) {
			if strings.Contains(req.Messages[len(req.Messages)-1].Text, "big") || strings.Contains(req.Messages[0].Text, "conversation-summary") {
				return overflow()
			}
			return scripted.Turn{Text: strings.Repeat("long answer ", 150)}, nil
		}
		h := newHarness(t, s.turn, smallWindow(0, compactCfg(1000, 200)))
		id := h.create("")
		h.ask(id, "warm up")
		h.ask(id, "another")
		h.prompt(id, "", "big one", "", true)
		out := h.waitIdle(id)
		if out.Kind != "overflow" || s.count() != 1 {
			t.Fatalf("outcome %+v after %d compactions: want one compaction then a terminal overflow", out, s.count())
		}
		h.checkReplay()
	})
	t.Run("overflow after output is not retried", func(t *testing.T) {
		two := 2
		s := &summarizer{}
		s.answer = func(req *provider.Request, n int) (scripted.Turn, error) {
			if strings.Contains(req.Messages[len(req.Messages)-1].Text, "big") {
				return scripted.Turn{Text: "partial", Error: &scripted.ErrorSpec{Kind: "context_overflow", Message: "too long", AfterParts: &two}}, nil
			}
			return scripted.Turn{Text: strings.Repeat("long answer ", 150)}, nil
		}
		h := newHarness(t, s.turn, smallWindow(0, compactCfg(1000, 200)))
		id := h.create("")
		h.ask(id, "warm up")
		h.prompt(id, "", "big one", "", true)
		out := h.waitIdle(id)
		if out.Kind != "overflow" || s.count() != 0 {
			t.Fatalf("outcome %+v, %d compactions: want a terminal overflow and none", out, s.count())
		}
		h.checkReplay()
	})
	t.Run("auto off gives an explicit error", func(t *testing.T) {
		s := &summarizer{}
		s.answer = func(req *provider.Request, n int) (scripted.Turn, error) { return overflow() }
		cfg := compactCfg(1000, 200)
		cfg.Auto = false
		h := newHarness(t, s.turn, smallWindow(0, cfg))
		id := h.create("")
		h.prompt(id, "", "big one", "", true)
		out := h.waitIdle(id)
		if out.Kind != "overflow" || !strings.Contains(out.Err, "compaction.auto is false") || s.count() != 0 {
			t.Fatalf("outcome %+v, %d compactions", out, s.count())
		}
	})
}

func TestS49_FailedCompactionKeepsTheBoundary(t *testing.T) {
	for _, failure := range []string{"error", "length"} {
		t.Run(failure, func(t *testing.T) {
			s := &summarizer{}
			h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
				if req.System == compaction.SummarySystem {
					if failure == "length" {
						return scripted.Turn{Text: "cut off", Finish: provider.FinishLength}, nil
					}
					return scripted.Turn{Error: &scripted.ErrorSpec{Kind: "invalid_request", Message: "no"}}, nil
				}
				return s.turn(req, n)
			}, smallWindow(6000, compactCfg(1000, 600)))
			id := h.create("")
			var out *Outcome
			for i := 0; i < 12; i++ {
				h.prompt(id, "", fmt.Sprintf("q%d", i), "", true)
				if out = h.waitIdle(id); out.Kind == "compaction" {
					break
				}
			}
			if out.Kind != "compaction" {
				t.Fatalf("no compaction attempt failed: %+v", out)
			}
			if h.countEvents(id, "compaction.started") == 0 || h.countEvents(id, "compaction.ended") != 0 {
				t.Fatal("a failed compaction was stored as completed")
			}
			if s, _ := h.journal.Session(h.ctx(), id); s.HistorySeq != 0 {
				t.Fatalf("history boundary moved to %d", s.HistorySeq)
			}
			// The prompt the compaction ran for was not promoted: no turn
			// answered it, so it stays pending for the next run.
			inbox, err := h.journal.PendingInbox(h.ctx(), id)
			if err != nil || len(inbox) != 1 {
				t.Fatalf("pending after the failed compaction: %+v, %v; want the prompt", inbox, err)
			}
			h.checkReplay()
		})
	}
}

// An interrupt while a compaction's summary streams: the drain ends
// interrupted, the previous compaction's boundary stays, no second
// completed compaction is written, and the next turn still starts from the
// first summary.
func TestS49_InterruptedCompactionKeepsThePreviousBoundary(t *testing.T) {
	summarizing := make(chan struct{}, 1)
	var mu sync.Mutex
	summaries := 0
	var summaryReqs []provider.Request
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		if req.System == compaction.SummarySystem {
			mu.Lock()
			summaries++
			k := summaries
			summaryReqs = append(summaryReqs, *req)
			mu.Unlock()
			if k != 2 {
				return scripted.Turn{Text: fmt.Sprintf("## Goal\nSUMMARY %d", k)}, nil
			}
			summarizing <- struct{}{}
			return scripted.Turn{Text: "## Goal\npartial SUMMARY 2", Hang: true}, nil // streams until cancelled
		}
		return scripted.Turn{Text: strings.Repeat("lorem ipsum dolor sit amet ", 120)}, nil
	}, smallWindow(6000, compactCfg(1000, 600)))
	id := h.create("")
	var boundary int64
	for i := 0; ; i++ {
		if i == 40 {
			t.Fatal("no second compaction in 40 turns")
		}
		h.prompt(id, "", fmt.Sprintf("q%d", i), "", true)
		done := make(chan *Outcome, 1)
		go func() {
			out, err := h.sessions.WaitIdle(h.ctx(), id)
			if err != nil {
				out = &Outcome{Kind: "wait", Err: err.Error()}
			}
			done <- out
		}()
		select {
		case out := <-done:
			if out.Err != "" {
				t.Fatalf("drain of q%d: %+v", i, out)
			}
			if boundary == 0 {
				s, err := h.journal.Session(h.ctx(), id)
				if err != nil {
					t.Fatal(err)
				}
				boundary = s.HistorySeq
			}
			continue
		case <-summarizing:
		case <-time.After(30 * time.Second):
			t.Fatalf("the drain of q%d neither ended nor compacted", i)
		}
		if boundary == 0 {
			t.Fatal("the second compaction came before the first was stored")
		}
		if err := h.sessions.Interrupt(h.ctx(), id); err != nil {
			t.Fatal(err)
		}
		if out := <-done; out.Kind != "interrupted" {
			t.Fatalf("outcome %+v, want interrupted", out)
		}
		break
	}
	if n, m := h.countEvents(id, "compaction.started"), h.countEvents(id, "compaction.ended"); n != 2 || m != 1 {
		t.Fatalf("%d compactions started and %d completed, want 2 and 1 (the interrupted one not stored)", n, m)
	}
	if s, _ := h.journal.Session(h.ctx(), id); s.HistorySeq != boundary {
		t.Fatalf("history boundary moved from %d to %d", boundary, s.HistorySeq)
	}
	if hist := h.history(id); !strings.HasPrefix(hist[0], "C:## Goal\nSUMMARY 1") {
		t.Fatalf("history starts with %q, want the first summary", hist[0])
	}
	// The next turn (over budget again) compacts from the first summary:
	// nothing of the interrupted one survives.
	h.ask(id, "after")
	mu.Lock()
	defer mu.Unlock()
	if len(summaryReqs) != 3 {
		t.Fatalf("%d summary requests, want 3", len(summaryReqs))
	}
	if prev := summaryReqs[2].Messages[0].Text; !strings.Contains(prev, "SUMMARY 1") || strings.Contains(prev, "SUMMARY 2") {
		t.Fatalf("the compaction after the interrupt starts from %.300q, want the first summary", prev)
	}
	h.checkReplay()
}

func TestManualCompaction(t *testing.T) {
	s := &summarizer{}
	h := newHarness(t, s.turn, smallWindow(0, compactCfg(1000, 200)))
	id := h.create("")
	for i := 0; i < 4; i++ {
		h.ask(id, fmt.Sprintf("q%d", i))
	}
	out, err := h.sessions.Compact(h.ctx(), id)
	if err != nil || out.Err != "" || s.count() != 1 {
		t.Fatalf("compact: %+v %v (%d summaries)", out, err, s.count())
	}
	h.ask(id, "after")
	if req := h.lastRequest(); !strings.Contains(req.Messages[0].Text, "SUMMARY 1") {
		t.Fatalf("next turn starts with %q", req.Messages[0].Text)
	}
	h.checkReplay()
}

func TestLongSessionCompactsRepeatedlyWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("500 turns")
	}
	const window, buffer = 8000, 1500
	var mu sync.Mutex
	over := 0
	s := &summarizer{}
	s.answer = func(req *provider.Request, n int) (scripted.Turn, error) {
		if compaction.Estimate(req) > window-buffer {
			mu.Lock()
			over++
			mu.Unlock()
		}
		return scripted.Turn{Text: strings.Repeat("word ", 60+n%40)}, nil
	}
	h := newHarness(t, s.turn, smallWindow(window, compactCfg(buffer, 800)))
	id := h.create("")
	for i := 0; i < 500; i++ {
		h.ask(id, fmt.Sprintf("turn %d %s", i, strings.Repeat("detail ", i%30)))
	}
	if over > 0 {
		t.Fatalf("%d requests went out over the budget", over)
	}
	if s.count() < 10 {
		t.Fatalf("only %d compactions in 500 turns", s.count())
	}
	t.Logf("500 turns, %d compactions, %d requests", s.count(), h.prov.Count())
	before := h.history(id)
	h.restart()
	if after := h.history(id); strings.Join(after, "|") != strings.Join(before, "|") {
		t.Fatal("replay after restart gives another history")
	}
	h.checkReplay()
}
