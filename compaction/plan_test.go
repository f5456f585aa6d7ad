package compaction

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
)

var summaryModel = provider.ModelRef{Provider: "scripted", Model: "demo"}

// twoTurns is a first turn with a tool call and a short second turn.
func twoTurns() []messages.Message {
	return []messages.Message{
		userMsg(1, "fix the bug in main.go"),
		assistantMsg(2, "Looking.", toolDone("c1", "read", `{"path":"main.go"}`, "package main")),
		userMsg(5, "now run the tests"),
		assistantMsg(6, "All tests pass."),
	}
}

func TestPlanFirstCompactionRequestShape(t *testing.T) {
	plan, err := NewPlan(Input{History: twoTurns(), Model: summaryModel, Window: 100_000, OutputAllowance: 4096,
		Config: Config{Auto: true, Keep: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Update || plan.PreviousSummary != "" || plan.Start != 0 || plan.Compacted != 2 || plan.Kept != 2 {
		t.Fatalf("plan: update %v prev %q start %d compacted %d kept %d", plan.Update, plan.PreviousSummary, plan.Start, plan.Compacted, plan.Kept)
	}
	if want := "[user]\nnow run the tests\n\n[assistant]\nAll tests pass."; plan.RecentContext != want {
		t.Fatalf("recent context:\n%q\nwant\n%q", plan.RecentContext, want)
	}
	wantPrompt := `Summarize the conversation below.

<conversation>
[user]
fix the bug in main.go

[assistant]
Looking.
[tool call read c1] {"path":"main.go"}
[tool result read c1: completed, 12 bytes]
package main
</conversation>

Write the summary with exactly these sections, in this order (write "(none)" under a section with nothing to say):

## Goal
## Constraints & Preferences
## Progress
### Done
### In Progress
### Blocked
## Key Decisions
## Next Steps
## Critical Context
## Relevant Files`
	want := &provider.Request{
		Model:    summaryModel,
		System:   SummarySystem,
		Messages: []provider.Message{{Role: provider.RoleUser, Text: wantPrompt}},
		Controls: provider.Controls{MaxOutputTokens: 4096},
	}
	if !reflect.DeepEqual(plan.Request, want) {
		t.Fatalf("summary request:\n%#v\nwant\n%#v\nprompt:\n%s", plan.Request, want, plan.Request.Messages[0].Text)
	}
	if len(plan.Request.Tools) != 0 || plan.Request.ToolChoice != provider.ToolChoiceAuto {
		t.Fatal("a summary request offers no tools")
	}
	if err := plan.Request.Validate(); err != nil {
		t.Fatalf("summary request is invalid: %v", err)
	}
	if plan.Estimate != Estimate(plan.Request) {
		t.Fatalf("estimate %d, want %d", plan.Estimate, Estimate(plan.Request))
	}
}

func TestPlanUpdatesThePreviousSummaryWithItsRecentContextAndNewMessages(t *testing.T) {
	hist := append([]messages.Message{compactionMsg(10, "## Goal\nfix the bug", "[user]\nfix the bug in main.go")}, twoTurns()...)
	plan, err := NewPlan(Input{History: hist, Model: summaryModel, Window: 100_000, OutputAllowance: 4096, Config: Config{Auto: true, Keep: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Update || plan.PreviousSummary != "## Goal\nfix the bug" || plan.Start != 1 || plan.Compacted != 2 || plan.Kept != 2 {
		t.Fatalf("plan: update %v prev %q start %d compacted %d kept %d", plan.Update, plan.PreviousSummary, plan.Start, plan.Compacted, plan.Kept)
	}
	wantPrompt := `Update the previous summary with the messages that followed it. Keep what still holds, revise what changed, move finished work to Done, and drop nothing the work still needs.

<previous-summary>
## Goal
fix the bug
</previous-summary>

<new-messages>
[user]
fix the bug in main.go

[user]
fix the bug in main.go

[assistant]
Looking.
[tool call read c1] {"path":"main.go"}
[tool result read c1: completed, 12 bytes]
package main
</new-messages>

Write the summary with exactly these sections, in this order (write "(none)" under a section with nothing to say):

` + SummarySections
	want := &provider.Request{
		Model:    summaryModel,
		System:   SummarySystem,
		Messages: []provider.Message{{Role: provider.RoleUser, Text: wantPrompt}},
		Controls: provider.Controls{MaxOutputTokens: 4096},
	}
	if !reflect.DeepEqual(plan.Request, want) {
		t.Fatalf("summary request prompt:\n%s\nwant\n%s", plan.Request.Messages[0].Text, wantPrompt)
	}
}

func TestPlanKeepsNewestWholeTurnsWithinKeep(t *testing.T) {
	var hist []messages.Message
	for i := range 40 {
		hist = append(hist,
			userMsg(int64(3*i+1), fmt.Sprintf("turn %d: %s", i, strings.Repeat("please ", i%7*10))),
			assistantMsg(int64(3*i+2), "", toolDone(fmt.Sprintf("c%d", i), "bash", `{"command":"ls"}`, strings.Repeat("file.go\n", 20+i*3))),
			assistantMsg(int64(3*i+3), fmt.Sprintf("done %d", i)))
	}
	const keep = 1500
	plan, err := NewPlan(Input{History: hist, Model: summaryModel, Window: 200_000, OutputAllowance: 8000, Config: Config{Auto: true, Keep: keep}})
	if err != nil {
		t.Fatal(err)
	}
	if got := TextTokens(plan.RecentContext); got > keep {
		t.Fatalf("recent context is %d tokens, keep is %d", got, keep)
	}
	if plan.Kept < 3 || plan.Kept%3 != 0 {
		t.Fatalf("kept %d messages, want whole turns of 3", plan.Kept)
	}
	if plan.Compacted+plan.Kept != len(hist) {
		t.Fatalf("compacted %d + kept %d != %d", plan.Compacted, plan.Kept, len(hist))
	}
	if !strings.HasPrefix(plan.RecentContext, "[user]\nturn ") || !strings.HasSuffix(plan.RecentContext, "done 39") {
		t.Fatalf("recent context does not span whole newest turns: %q…%q", plan.RecentContext[:20], plan.RecentContext[len(plan.RecentContext)-20:])
	}
	// Maximal: the turn before the kept ones would not have fit.
	var b strings.Builder
	for i := plan.Compacted - 3; i < plan.Compacted; i++ {
		serialize(&b, &hist[i], bounds{Item: recentItemTokens})
		b.WriteString(separator)
	}
	if TextTokens(b.String())+TextTokens(plan.RecentContext) <= keep {
		t.Fatalf("one more turn (%d tokens) would still fit in keep %d next to %d", TextTokens(b.String()), keep, TextTokens(plan.RecentContext))
	}
	// Nothing of the kept turns is in the summary transcript.
	transcript := plan.Request.Messages[0].Text
	if strings.Contains(transcript, "done 39") || !strings.Contains(transcript, "turn 0:") {
		t.Fatal("summary transcript must hold exactly the compacted turns")
	}
}

func TestPlanKeepsTheCurrentTurnsNewestMessagesWhenTheTurnExceedsKeep(t *testing.T) {
	hist := []messages.Message{userMsg(1, "refactor everything")}
	for i := range 10 {
		hist = append(hist, assistantMsg(int64(i+2), "", toolDone(fmt.Sprintf("c%d", i), "read", `{}`, strings.Repeat("x", 6000))))
	}
	plan, err := NewPlan(Input{History: hist, Model: summaryModel, Config: Config{Auto: true, Keep: 1200}})
	if err != nil {
		t.Fatal(err)
	}
	// Each kept tool result is cut to 4000 bytes (~1000 tokens + framing).
	if plan.Kept != 1 || plan.Compacted != 10 {
		t.Fatalf("kept %d compacted %d, want 1 and 10", plan.Kept, plan.Compacted)
	}
	if !strings.HasPrefix(plan.RecentContext, "[assistant]\n[tool call read c9]") {
		t.Fatalf("recent context: %.60q", plan.RecentContext)
	}
	if !strings.Contains(plan.Request.Messages[0].Text, "[user]\nrefactor everything") {
		t.Fatal("the turn's prompt must be summarized")
	}
}

func TestPlanCutsAnOversizedNewestMessageToKeep(t *testing.T) {
	hist := append(twoTurns(), userMsg(9, "paste: "+strings.Repeat("line of log\n", 5000)+"END"))
	plan, err := NewPlan(Input{History: hist, Model: summaryModel, Config: Config{Auto: true, Keep: 500}})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Kept != 1 || plan.Compacted != 4 {
		t.Fatalf("kept %d compacted %d", plan.Kept, plan.Compacted)
	}
	rc := plan.RecentContext
	if TextTokens(rc) > 500 || !strings.HasPrefix(rc, "[user]\npaste: line of log") || !strings.HasSuffix(rc, "END") || !strings.Contains(rc, " bytes omitted …]") {
		t.Fatalf("recent context (%d tokens): %.80q … %q", TextTokens(rc), rc, rc[len(rc)-20:])
	}
}

func TestPlanSerializesAttachmentsAndToolResultsWithTheirBounds(t *testing.T) {
	img := pngOf(t, 640, 480, 100_000)
	bounded := []messages.Message{
		userMsg(1, "look at this",
			messages.Attachment{Kind: "image", Name: "shot.png", MediaType: "image/png", Data: img},
			messages.Attachment{Kind: "file", Name: "notes.txt", MediaType: "text/plain", Data: []byte("remember the milk")},
			messages.Attachment{Kind: "file", Name: "spec.pdf", MediaType: "application/pdf", URI: "file:///tmp/spec.pdf"}),
		{ID: "a", Seq: 2, Role: messages.RoleAssistant, Model: testModel, Finished: true, Parts: []messages.Part{
			{Kind: messages.PartReasoning, Text: "secret thinking"},
			{Kind: messages.PartText, Text: "Running."},
			{Kind: messages.PartTool, Tool: &messages.ToolPart{CallID: "c1", Tool: "bash", Input: []byte(`{"command":"make"}`),
				State: messages.ToolStateCompleted, Output: strings.Repeat("a", 10000) + strings.Repeat("z", 10000), ManagedPath: "/tmp/tool_c1"}},
			{Kind: messages.PartTool, Tool: &messages.ToolPart{CallID: "c2", Tool: "edit", Input: []byte(`{}`), State: messages.ToolStateFailed, Error: "no such file"}},
			{Kind: messages.PartTool, Tool: &messages.ToolPart{CallID: "c3", Tool: "bash", Input: []byte(`{}`), State: messages.ToolStateRunning}},
		}},
		systemMsg(3, "AGENTS.md changed"),
	}
	check := func(t *testing.T, text string, omitted int) {
		t.Helper()
		for _, want := range []string{
			"[user]\nlook at this\n[image \"shot.png\" image/png 640x480, 97.7 KiB: not shown after compaction]\n" +
				"[file \"notes.txt\" text/plain, 17 bytes]\nremember the milk\n[end of \"notes.txt\"]\n" +
				"[file \"spec.pdf\" application/pdf file:///tmp/spec.pdf: not inlined]",
			"[assistant]\nRunning.\n[tool call bash c1] {\"command\":\"make\"}\n[tool result bash c1: completed, 19.5 KiB]\naaaa",
			fmt.Sprintf("aaaa\n[… %d bytes omitted; full text in /tmp/tool_c1 …]\nzzzz", omitted),
			"zzzz\n[tool call edit c2] {}\n[tool result edit c2: failed]\nno such file\n[tool call bash c3] {}\n[tool result bash c3: interrupted]",
			"[system update]\nAGENTS.md changed",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("missing %q in\n%s", want, text)
			}
		}
		if strings.Contains(text, "\x89PNG") || strings.Contains(text, "secret thinking") {
			t.Error("raw image bytes or reasoning survived the boundary")
		}
	}
	t.Run("summarized", func(t *testing.T) {
		hist := append(append([]messages.Message{}, bounded...), userMsg(9, "next"))
		plan, err := NewPlan(Input{History: hist, Model: summaryModel, Config: Config{Auto: true, Keep: 10}})
		if err != nil {
			t.Fatal(err)
		}
		check(t, plan.Request.Messages[0].Text, 20000-transcriptItemTokens*4)
	})
	t.Run("kept", func(t *testing.T) {
		hist := append(twoTurns(), bounded...)
		keep := 0 // exactly the bounded messages: the older turns do not fit
		for i := range bounded {
			var b strings.Builder
			serialize(&b, &bounded[i], bounds{Item: recentItemTokens})
			keep += TextTokens(b.String()) + TextTokens(separator)
		}
		plan, err := NewPlan(Input{History: hist, Model: summaryModel, Config: Config{Auto: true, Keep: keep}})
		if err != nil {
			t.Fatal(err)
		}
		if plan.Kept != len(bounded) {
			t.Fatalf("kept %d, want %d", plan.Kept, len(bounded))
		}
		check(t, plan.RecentContext, 20000-recentItemTokens*4)
	})
}

func TestPlanRefusesWhenNothingIsOlderThanTheRecentContext(t *testing.T) {
	_, err := NewPlan(Input{History: twoTurns(), Model: summaryModel, Config: DefaultConfig()})
	if !errors.Is(err, ErrNothingToCompact) {
		t.Fatalf("error %v, want ErrNothingToCompact", err)
	}
	_, err = NewPlan(Input{History: nil, Model: summaryModel, Config: DefaultConfig()})
	if !errors.Is(err, ErrNothingToCompact) {
		t.Fatalf("empty history: error %v, want ErrNothingToCompact", err)
	}
	// Right after a compaction the previous recent context can still be folded in.
	plan, err := NewPlan(Input{History: []messages.Message{compactionMsg(4, "sum", "[user]\nold")}, Model: summaryModel, Config: DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Compacted != 0 || plan.Kept != 0 || plan.RecentContext != "" || !strings.Contains(plan.Request.Messages[0].Text, "<new-messages>\n[user]\nold\n</new-messages>") {
		t.Fatalf("plan %+v", plan)
	}
}

func TestPlanRefusesASummaryRequestThatDoesNotFit(t *testing.T) {
	var hist []messages.Message
	for i := range 30 {
		hist = append(hist, userMsg(int64(2*i+1), strings.Repeat("words ", 200)), assistantMsg(int64(2*i+2), strings.Repeat("reply ", 200)))
	}
	_, err := NewPlan(Input{History: hist, Model: summaryModel, Window: 25_000, OutputAllowance: 4000, Config: Config{Auto: true, Keep: 100}})
	if !errors.Is(err, ErrDoesNotFit) || !strings.Contains(err.Error(), "budget is 5000 (window 25000 minus reserve 20000)") {
		t.Fatalf("error %v, want ErrDoesNotFit with the numbers", err)
	}
	if _, err := NewPlan(Input{History: hist, Model: summaryModel, Window: 50_000, OutputAllowance: 4000, Config: Config{Auto: true, Keep: 100}}); err != nil {
		t.Fatalf("a window that fits: %v", err)
	}
}

func TestPlanRefusesANegativeConfig(t *testing.T) {
	if _, err := NewPlan(Input{History: twoTurns(), Config: Config{Keep: -1}}); err == nil || !strings.Contains(err.Error(), "keep -1 is negative") {
		t.Fatalf("error %v", err)
	}
}

func TestPlanCutsTheTranscriptTighterBeforeRefusing(t *testing.T) {
	hist := []messages.Message{userMsg(1, "build it")}
	for i := range 6 {
		hist = append(hist, assistantMsg(int64(i+2), "", toolDone(fmt.Sprintf("c%d", i), "bash", `{}`, strings.Repeat("y", 40000))))
	}
	hist = append(hist, userMsg(20, "next"))
	// Six results at 2000 tokens do not fit 8000; at 500 they do.
	plan, err := NewPlan(Input{History: hist, Model: summaryModel, Window: 30_000, OutputAllowance: 1000, Config: Config{Auto: true, Buffer: 22_000, Keep: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("[… %d bytes omitted …]", 40000-500*4); !strings.Contains(plan.Request.Messages[0].Text, want) || plan.Estimate > 8000 {
		t.Fatalf("estimate %d; transcript lacks %q", plan.Estimate, want)
	}
}
