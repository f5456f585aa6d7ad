package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/sessionrt/sessionrt/cluster/clustertest"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// Report is what a chaos run did and what the journal shows afterwards.
type Report struct {
	Mode                string         `json:"mode"`
	Sessions            int            `json:"sessions"`
	Faults              map[string]int `json:"faults_injected"`
	ActorKills          int            `json:"actor_kills"`
	ProcessKills        int            `json:"process_kills"`
	PromptsAcknowledged int            `json:"prompts_acknowledged"` // the ledger's receipts
	PromptsPromotedOnce int            `json:"prompts_promoted_once"`
	PromptsPromotedMore int            `json:"prompts_promoted_more_than_once"`
	PromptsLost         int            `json:"prompts_lost"` // acknowledged, never promoted
	// KillsAfterReceipt counts the kills placed on purpose right after a
	// receipt; UnpromotedAtKill the acknowledged prompts the journal held
	// unpromoted after a worker died (each a receipt whose drain had not
	// promoted it: only start-up recovery can act on it, as no client asks
	// again), counted once each.
	KillsAfterReceipt int      `json:"kills_after_receipt,omitempty"`
	UnpromotedAtKill  int      `json:"unpromoted_at_kill,omitempty"`
	ToolCalls         int      `json:"tool_calls"`
	ToolsRun          int      `json:"tools_run"`
	ToolsDuplicated   int      `json:"tools_duplicated"`
	ToolsInterrupted  int      `json:"tools_interrupted_failed_durably"`
	ToolsLeftOpen     int      `json:"tools_left_open"`
	Events            int      `json:"events"`
	SeqGaps           int      `json:"seq_gaps"`
	VerifyDifferences int      `json:"verify_differences"`
	Problems          []string `json:"problems,omitempty"`
}

// Err is nil when every invariant held.
func (r Report) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	return fmt.Errorf("chaos: %d invariant violations: %s", len(r.Problems), strings.Join(r.Problems, "; "))
}

// String prints the counts, one per line.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mode %s: %d sessions\n", r.Mode, r.Sessions)
	points := make([]string, 0, len(r.Faults))
	for p := range r.Faults {
		points = append(points, p)
	}
	sort.Strings(points)
	for _, p := range points {
		fmt.Fprintf(&b, "  faults injected at %-18s %d\n", p, r.Faults[p])
	}
	fmt.Fprintf(&b, "  actor kills                     %d\n", r.ActorKills)
	fmt.Fprintf(&b, "  process kills (SIGKILL)         %d\n", r.ProcessKills)
	fmt.Fprintf(&b, "  ledger: receipts                %d\n", r.PromptsAcknowledged)
	fmt.Fprintf(&b, "  ledger: promoted once           %d\n", r.PromptsPromotedOnce)
	fmt.Fprintf(&b, "  ledger: promoted more than once %d\n", r.PromptsPromotedMore)
	fmt.Fprintf(&b, "  ledger: lost                    %d\n", r.PromptsLost)
	if r.ProcessKills > 0 {
		fmt.Fprintf(&b, "  kills right after a receipt     %d\n", r.KillsAfterReceipt)
		fmt.Fprintf(&b, "  receipts unpromoted after a kill %d\n", r.UnpromotedAtKill)
	}
	fmt.Fprintf(&b, "  tool calls recorded             %d\n", r.ToolCalls)
	fmt.Fprintf(&b, "  tools run (side effects)        %d\n", r.ToolsRun)
	fmt.Fprintf(&b, "  tools duplicated                %d\n", r.ToolsDuplicated)
	fmt.Fprintf(&b, "  tools interrupted, failed       %d\n", r.ToolsInterrupted)
	fmt.Fprintf(&b, "  tools left pending/running      %d\n", r.ToolsLeftOpen)
	fmt.Fprintf(&b, "  events checked                  %d\n", r.Events)
	fmt.Fprintf(&b, "  seq gaps                        %d\n", r.SeqGaps)
	fmt.Fprintf(&b, "  journal verify differences      %d\n", r.VerifyDifferences)
	if len(r.Problems) > 0 {
		fmt.Fprintf(&b, "  PROBLEMS: %s\n", strings.Join(r.Problems, "; "))
	}
	return b.String()
}

func (r *Report) problem(format string, args ...any) {
	if len(r.Problems) < 20 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// check fills r from the journal and the side-effect file. acked is the
// client-side ledger: each session's prompt IDs whose admission was
// acknowledged; each must have been promoted exactly once.
func check(ctx context.Context, j *persistence.Journal, loc string, acked map[string][]string, r *Report) error {
	r.Sessions = len(acked)
	markers, err := clustertest.Markers(loc)
	if err != nil {
		return err
	}
	r.ToolsRun = len(markers)
	for m, n := range markers {
		if n > 1 {
			r.ToolsDuplicated++
			r.problem("tool %s ran %d times", m, n)
		}
	}
	for sid, prompts := range acked {
		r.PromptsAcknowledged += len(prompts)
		envs, err := j.ReadEvents(ctx, sid, 0, 1<<30)
		if err != nil {
			return fmt.Errorf("read events of %s: %w", sid, err)
		}
		r.Events += len(envs)
		for i, e := range envs {
			if e.Seq != int64(i+1) {
				r.SeqGaps++
				r.problem("session %s: event %d has seq %d", sid, i+1, e.Seq)
				break
			}
		}
		promoted := map[string]int{}
		for _, e := range envs {
			switch ev := e.Event.(type) {
			case messages.PromptPromoted:
				for _, id := range ev.MessageIDs {
					promoted[id]++
				}
			case messages.ToolCalled:
				r.ToolCalls++
			case messages.ToolFailed:
				if ev.Error == "Tool execution interrupted" {
					r.ToolsInterrupted++
				}
			}
		}
		for _, id := range prompts {
			switch n := promoted[id]; {
			case n == 1:
				r.PromptsPromotedOnce++
			case n == 0:
				r.PromptsLost++
				r.problem("session %s: acknowledged prompt %s never promoted", sid, id)
			default:
				r.PromptsPromotedMore++
				r.problem("session %s: acknowledged prompt %s promoted %d times", sid, id, n)
			}
		}
		open, err := j.ToolCalls(ctx, sid, messages.ToolStatePending, messages.ToolStateRunning)
		if err != nil {
			return err
		}
		r.ToolsLeftOpen += len(open)
		for _, c := range open {
			r.problem("session %s: tool %s left %s", sid, c.CallID, c.State)
		}
	}
	rep, err := j.Verify(ctx)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	r.VerifyDifferences = len(rep.Differences)
	for _, d := range rep.Differences {
		r.problem("verify: %s", d)
	}
	return nil
}
