package driver

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestJudgeWordsEachOutcome(t *testing.T) {
	orphan := Proc{PID: 42, PGID: 42, Command: "/bin/sh -c until [ -e gate ]"}
	for _, c := range []struct {
		name                string
		o                   CrashObservation
		turn, tool, orphans string
	}{
		{"stream, turn failed at restart and the session goes on",
			CrashObservation{Point: MidStream, PromptKept: true, TurnFailed: true, TurnFailedAtStartup: true, NewPromptSent: true, NewPromptAnswered: true},
			"failed at start-up; next prompt answered", "n/a (no tool running)", "none"},
		{"stream, resumed by itself",
			CrashObservation{Point: MidStream, PromptKept: true, TurnResumed: true},
			"resumed by itself", "n/a (no tool running)", "none"},
		{"tool failed at start-up",
			CrashObservation{Point: MidTool, ToolStarted: true, ToolSettledAtStartup: true, ToolOutcome: "failed", TurnFailed: true},
			"failed", "at start-up (failed)", "none"},
		{"turn failed later, session stuck",
			CrashObservation{Point: MidStream, TurnFailed: true, NewPromptSent: true},
			"failed; next prompt not answered", "n/a (no tool running)", "none"},
		{"tool re-run at start-up",
			CrashObservation{Point: MidTool, ToolStarted: true, ToolSettledAtStartup: true, ToolRerun: true, ToolOutcome: "success", TurnResumed: true},
			"resumed by itself", "at start-up, re-run (success)", "none"},
		{"tool repaired only by the next prompt, orphan left",
			CrashObservation{Point: MidTool, ToolStarted: true, ToolSettledAfterPrompt: true, ToolOutcome: "failed", NewPromptSent: true, NewPromptAnswered: true, Orphans: []Proc{orphan}},
			"left unfinished; next prompt answered", "only after a new prompt (failed)", "1: pid 42 (pgid 42) /bin/sh -c until [ -e gate ]"},
		{"tool never settled, session stuck",
			CrashObservation{Point: MidTool, ToolStarted: true, NewPromptSent: true},
			"left unfinished; next prompt not answered", "never (still open)", "none"},
	} {
		v := Judge(c.o)
		if v.Turn != c.turn || v.Tool != c.tool || v.Orphans != c.orphans {
			t.Errorf("%s: got turn %q tool %q orphans %q; want %q %q %q", c.name, v.Turn, v.Tool, v.Orphans, c.turn, c.tool, c.orphans)
		}
	}
}

func TestJudgeKeepsTheErrorAndPromptState(t *testing.T) {
	v := Judge(CrashObservation{System: "x", Point: MidTool, Err: "the tool never started"})
	if v.PromptKept != "no" || !strings.Contains(v.Turn, "[error: the tool never started]") {
		t.Fatalf("%+v", v)
	}
	var out bytes.Buffer
	if err := PrintCrash(&out, []CrashObservation{{System: "sessionrt", Point: MidStream, PromptKept: true, RestartSeconds: 0.25}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "system") || !strings.Contains(lines[1], "sessionrt") || !strings.Contains(lines[1], "0.2s") {
		t.Fatalf("table %q", lines)
	}
}

func ev(seq int64, typ, data string) historyEvent {
	e := historyEvent{Type: typ, Data: json.RawMessage(data)}
	e.Durable.Seq = seq
	return e
}

// readFacts finds the prompt, the held call, its outcome, the reply and
// only the failures written after the crash.
func TestReadFactsFromHistory(t *testing.T) {
	evs := []historyEvent{
		ev(1, "session.next.step.failed", `{"error":{"message":"an older turn"}}`),
		ev(2, "session.next.prompt.admitted", `{"prompt":{"text":"Run echo hi with bash [run:hold-tool-x-1]"}}`),
		ev(3, "session.next.tool.called", `{"callID":"call_7","tool":"bash"}`),
	}
	f := readFacts(evs, "[run:hold-tool-x-1]", "", 0)
	if !f.promptKept || f.callID != "call_7" || f.toolOutcome != "" || f.replied || f.lastSeq != 3 || f.failedAfter != 1 {
		t.Fatalf("before the crash: %+v", f)
	}
	evs = append(evs,
		ev(4, "session.next.tool.failed", `{"callID":"call_other"}`),
		ev(5, "session.next.tool.failed", `{"callID":"call_7","error":{"message":"session restarted"}}`),
		ev(6, "session.next.step.failed", `{}`),
		ev(7, "session.next.text.ended", `{"text":"done [run:hold-tool-x-1]"}`))
	f = readFacts(evs, "[run:hold-tool-x-1]", "call_7", 3)
	if f.toolOutcome != "failed" || !f.replied || f.failedAfter != 1 || f.lastSeq != 7 {
		t.Fatalf("after the crash: %+v", f)
	}
	if f := readFacts(evs, "[run:other]", "", 0); f.promptKept || f.replied {
		t.Fatalf("another marker matched: %+v", f)
	}
}

// descendants finds a child by walking /proc; alive drops it once it is
// gone.
func TestDescendantsAndAlive(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep binary:", err)
	}
	defer cmd.Process.Kill()
	var found []Proc
	for _, p := range descendants(os.Getpid()) {
		if p.PID == cmd.Process.Pid {
			found = append(found, p)
		}
	}
	if len(found) != 1 || found[0].Command != "sleep 60" {
		t.Fatalf("child not found among descendants: %+v", found)
	}
	if len(alive(found)) != 1 {
		t.Fatal("a running child is not alive")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if a := alive(found); len(a) != 0 {
		t.Fatalf("a reaped child is still alive: %+v", a)
	}
	if g := gated([]Proc{{Command: "sh -c until [ -e '/g/hold-tool-1' ]"}, {Command: "sleep 1"}}, "/g/hold-tool-1"); len(g) != 1 {
		t.Fatalf("gated %+v", g)
	}
}
