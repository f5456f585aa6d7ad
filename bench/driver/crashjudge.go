package driver

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Crash points: where in a turn the server is killed.
const (
	MidStream = "mid-stream" // the model's first chunk is in, the stream held open
	MidTool   = "mid-tool"   // the bash tool is running (it waits on a gate file)
)

// Proc is one process seen under the server.
type Proc struct {
	PID     int    `json:"pid"`
	PGID    int    `json:"pgid"`
	Command string `json:"command"`
}

func (p Proc) String() string { return fmt.Sprintf("pid %d (pgid %d) %s", p.PID, p.PGID, p.Command) }

// CrashObservation is what one kill -9 and restart showed; CrashMode fills
// it, Judge reads it.
type CrashObservation struct {
	System string `json:"system"`
	Point  string `json:"point"`
	// Err is set when the scenario could not be run to the end; the other
	// fields hold what was seen until then.
	Err            string  `json:"error,omitempty"`
	RestartSeconds float64 `json:"restart_to_ready_s"`
	// Orphans are the killed server's descendants still alive after it died.
	Orphans    []Proc `json:"orphans"`
	PromptKept bool   `json:"prompt_kept"`
	// ToolStarted: the interrupted turn had a tool call running (MidTool).
	ToolStarted bool `json:"tool_started"`
	// ToolSettledAtStartup: the interrupted call got a result or an error
	// within the start-up window, before the gate opened or a new prompt.
	ToolSettledAtStartup bool `json:"tool_settled_at_startup"`
	// ToolRerun: the restarted server ran the tool command again.
	ToolRerun bool `json:"tool_rerun"`
	// ToolSettledAfterPrompt: the call settled only once a new prompt came.
	ToolSettledAfterPrompt bool `json:"tool_settled_after_prompt"`
	// ToolOutcome is "success" or "failed" once settled, else "".
	ToolOutcome string `json:"tool_outcome"`
	// TurnResumed: the interrupted prompt got its reply with no new prompt.
	TurnResumed bool `json:"turn_resumed"`
	// TurnFailed: the restarted server wrote a step.failed for it;
	// TurnFailedAtStartup: within the start-up window.
	TurnFailed          bool `json:"turn_failed"`
	TurnFailedAtStartup bool `json:"turn_failed_at_startup"`
	// NewPromptSent / NewPromptAnswered: a follow-up prompt after restart.
	NewPromptSent     bool `json:"new_prompt_sent"`
	NewPromptAnswered bool `json:"new_prompt_answered"`
}

// Verdict is one observation in words, for the table.
type Verdict struct {
	System, Point, PromptKept, Turn, Tool, Orphans, Restart string
}

// Judge words an observation.
func Judge(o CrashObservation) Verdict {
	v := Verdict{System: o.System, Point: o.Point, PromptKept: yesNo(o.PromptKept), Restart: fmt.Sprintf("%.1fs", o.RestartSeconds)}
	switch {
	case o.TurnResumed:
		v.Turn = "resumed by itself"
	case o.TurnFailed:
		v.Turn = "failed"
		if o.TurnFailedAtStartup {
			v.Turn += " at start-up"
		}
		if o.NewPromptAnswered {
			v.Turn += "; next prompt answered"
		} else if o.NewPromptSent {
			v.Turn += "; next prompt not answered"
		}
	case o.NewPromptAnswered:
		v.Turn = "left unfinished; next prompt answered"
	case o.NewPromptSent:
		v.Turn = "left unfinished; next prompt not answered"
	default:
		v.Turn = "left unfinished"
	}
	outcome := ""
	if o.ToolOutcome != "" {
		outcome = " (" + o.ToolOutcome + ")"
	}
	switch {
	case !o.ToolStarted:
		v.Tool = "n/a (no tool running)"
	case o.ToolSettledAtStartup && o.ToolRerun:
		v.Tool = "at start-up, re-run" + outcome
	case o.ToolSettledAtStartup:
		v.Tool = "at start-up" + outcome
	case o.ToolRerun:
		v.Tool = "re-run at start-up, settled later" + outcome
	case o.ToolSettledAfterPrompt:
		v.Tool = "only after a new prompt" + outcome
	case o.ToolOutcome != "":
		v.Tool = "later, without a prompt" + outcome
	default:
		v.Tool = "never (still open)"
	}
	if len(o.Orphans) == 0 {
		v.Orphans = "none"
	} else {
		parts := make([]string, len(o.Orphans))
		for i, p := range o.Orphans {
			parts[i] = p.String()
		}
		v.Orphans = fmt.Sprintf("%d: %s", len(o.Orphans), strings.Join(parts, "; "))
	}
	if o.Err != "" {
		v.Turn += " [error: " + o.Err + "]"
	}
	return v
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// PrintCrash writes one row per observation.
func PrintCrash(w io.Writer, obs []CrashObservation) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "system\tkilled\tprompt kept\tinterrupted turn\ttool repaired\torphans left\trestart to ready")
	for _, o := range obs {
		v := Judge(o)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.System, v.Point, v.PromptKept, v.Turn, v.Tool, v.Orphans, v.Restart)
	}
	return tw.Flush()
}

// historyEvent is one durable event of GET /api/session/{id}/history.
type historyEvent struct {
	Type    string `json:"type"`
	Durable struct {
		Seq int64 `json:"seq"`
	} `json:"durable"`
	Data json.RawMessage `json:"data"`
}

// history facts the crash judge needs, read from a session's events.
type historyFacts struct {
	lastSeq     int64
	promptKept  bool   // an admitted/prompted event names the marker
	callID      string // the first tool.called's call ID
	toolOutcome string // "success" / "failed" for callID
	replied     bool   // a text.ended names the marker
	failedAfter int    // step.failed events past the given seq
}

// readFacts scans events for marker, callID (when known) and failures
// after seq.
func readFacts(evs []historyEvent, marker, callID string, after int64) historyFacts {
	f := historyFacts{callID: callID}
	for _, e := range evs {
		f.lastSeq = max(f.lastSeq, e.Durable.Seq)
		data := string(e.Data)
		switch e.Type {
		case "session.next.prompt.admitted", "session.next.prompted":
			f.promptKept = f.promptKept || strings.Contains(data, marker)
		case "session.next.tool.called":
			if f.callID == "" {
				f.callID = jsonString(e.Data, "callID")
			}
		case "session.next.tool.success", "session.next.tool.failed":
			if f.callID != "" && jsonString(e.Data, "callID") == f.callID {
				f.toolOutcome = strings.TrimPrefix(e.Type, "session.next.tool.")
			}
		case "session.next.text.ended":
			f.replied = f.replied || strings.Contains(data, marker)
		case "session.next.step.failed":
			if e.Durable.Seq > after {
				f.failedAfter++
			}
		}
	}
	return f
}

func jsonString(raw json.RawMessage, field string) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	v, _ := m[field].(string)
	return v
}
