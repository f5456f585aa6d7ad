package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"

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
	PromptsAcknowledged int            `json:"prompts_acknowledged"`
	PromptsLost         int            `json:"prompts_lost"`
	ToolCalls           int            `json:"tool_calls"`
	ToolsRun            int            `json:"tools_run"`
	ToolsDuplicated     int            `json:"tools_duplicated"`
	ToolsInterrupted    int            `json:"tools_interrupted_failed_durably"`
	ToolsLeftOpen       int            `json:"tools_left_open"`
	Events              int            `json:"events"`
	SeqGaps             int            `json:"seq_gaps"`
	VerifyDifferences   int            `json:"verify_differences"`
	Problems            []string       `json:"problems,omitempty"`
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
	fmt.Fprintf(&b, "  prompts acknowledged            %d\n", r.PromptsAcknowledged)
	fmt.Fprintf(&b, "  prompts lost                    %d\n", r.PromptsLost)
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

// check fills r from the journal and the side-effect file. acked maps each
// session to the prompt IDs whose admission was acknowledged.
func check(ctx context.Context, j *persistence.Journal, loc string, acked map[string][]string, r *Report) error {
	r.Sessions = len(acked)
	markers, err := countMarkers(loc)
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
		promoted := map[string]bool{}
		for _, e := range envs {
			switch ev := e.Event.(type) {
			case messages.PromptPromoted:
				for _, id := range ev.MessageIDs {
					promoted[id] = true
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
			if !promoted[id] {
				r.PromptsLost++
				r.problem("session %s: acknowledged prompt %s never promoted", sid, id)
			}
		}
		open, err := j.ToolCalls(ctx, sid, persistence.ToolPending, persistence.ToolRunning)
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
