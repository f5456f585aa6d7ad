package actors

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// TestInMemoryHistoryMatchesTheJournal drives one session through tool
// calls, a steer admitted mid-turn, context updates, reasoning across a
// model switch, a failing tool, automatic compactions and a restart. The
// harness compares, at every provider turn, the history the actor keeps in
// memory with the journal's ModelHistory and the request sent with the one
// the journal's history builds (checkTurn); this test makes sure all of
// that happened, and that the journal was read only once per activation.
func TestInMemoryHistoryMatchesTheJournal(t *testing.T) {
	var (
		mu      sync.Mutex
		h       *harness
		id      string
		steered bool
	)
	s := &summarizer{}
	s.answer = func(req *provider.Request, n int) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == provider.RoleTool {
			return scripted.Turn{Reasoning: "thinking about " + last.ToolResult.Output, Text: strings.Repeat("tool answered ", 40)}, nil
		}
		switch {
		case strings.Contains(last.Text, "steer me"):
			mu.Lock()
			first := !steered
			steered = true
			mu.Unlock()
			if first {
				// A steer admitted while this turn streams is promoted at
				// the next boundary, with the tool's result.
				if _, err := h.sessions.Prompt(context.Background(), id, Prompt{Prompt: messages.Prompt{Text: "steered in"}, Delivery: messages.Steer}); err != nil {
					return scripted.Turn{}, err
				}
			}
			return bashEcho("steer"), nil
		case strings.Contains(last.Text, "tool"):
			return scripted.Turn{ToolCalls: []scripted.ToolCall{
				{Name: "bash", Args: []byte(`{"command":"echo one","description":"x"}`)},
				{Name: "no_such_tool", Args: []byte(`{}`)},
			}}, nil
		}
		return scripted.Turn{Reasoning: "plain", Text: strings.Repeat("lorem ipsum dolor sit amet ", 60)}, nil
	}
	h = newHarness(t, s.turn, smallWindow(6000, compactCfg(1000, 600)))
	id = h.create("")
	for i := 0; i < 14 || (i < 40 && s.count() < 2); i++ {
		switch i {
		case 3:
			h.sources["env"].set(contextsources.Present(fmt.Sprintf("env v%d", i)))
		case 6:
			if _, err := h.sessions.SwitchModel(h.ctx(), id, messages.ModelRef{Provider: "scripted", ID: "other-model"}); err != nil {
				t.Fatal(err)
			}
		case 9:
			h.sources["rules"].set(contextsources.Present("rules v2"))
		}
		text := fmt.Sprintf("question %d", i)
		switch i % 3 {
		case 1:
			text += " with a tool"
		case 2:
			text += " steer me"
		}
		h.ask(id, text)
		mu.Lock()
		steered = false
		mu.Unlock()
	}
	if s.count() < 2 {
		t.Fatalf("%d compactions, want at least 2", s.count())
	}
	if n := h.countEvents(id, "context.updated"); n < 2 {
		t.Fatalf("%d context updates, want at least 2", n)
	}
	if n := h.countEvents(id, "tool.failed"); n < 3 {
		t.Fatalf("%d failed tools, want at least 3", n)
	}
	// The activation that created the session folded its history from
	// the first event: it never needed to read it.
	if loads := h.sessions.rt.historyLoads.Load(); loads != 0 {
		t.Fatalf("the history was read from the journal %d times by the activation that created it, want never", loads)
	}
	checked := h.turnChecks.Load()
	if checked < 30 {
		t.Fatalf("%d provider turns checked, want at least 30", checked)
	}

	// A new process rebuilds the history from the journal and goes on.
	h.restart()
	h.ask(id, "after the restart with a tool")
	if n := h.turnChecks.Load() - checked; n < 2 {
		t.Fatalf("%d turns checked after the restart, want 2", n)
	}
	if loads := h.sessions.rt.historyLoads.Load(); loads != 1 {
		t.Fatalf("the history was read %d times after the restart, want once", loads)
	}
	h.checkReplay()
}
