package cluster

import (
	"sync"
	"testing"

	"github.com/sessionrt/sessionrt/actors"
)

func TestWithCommandIDGivesEveryCommandAnIDOnceAndKeepsTheCallersMessage(t *testing.T) {
	p := &actors.Prompt{}
	got := withCommandID(p).(*actors.Prompt)
	if got.MessageID == "" || p.MessageID != "" {
		t.Fatalf("prompt: got ID %q, caller's %q: want a new ID on a copy", got.MessageID, p.MessageID)
	}
	if again := withCommandID(got).(*actors.Prompt); again != got {
		t.Fatal("a prompt with an ID was copied")
	}
	for _, m := range []any{&actors.Run{}, &actors.Wake{}, &actors.Interrupt{}, &actors.Move{To: "/x"}} {
		withID := withCommandID(m)
		if commandID(withID) == "" || commandID(m) != "" {
			t.Fatalf("%T: got ID %q, caller's %q", m, commandID(withID), commandID(m))
		}
		if withCommandID(withID) != withID {
			t.Fatalf("%T with an ID was replaced", m)
		}
	}
	if mv := withCommandID(&actors.Move{To: "/x"}).(*actors.Move); mv.To != "/x" {
		t.Fatalf("move lost its target: %+v", mv)
	}
	if commandID(&actors.WaitIdle{}) != "" || commandID(&actors.Create{}) != "" {
		t.Fatal("commands idempotent by content got an ID")
	}
}

func TestRecentCommandsAnswerARepeatWithTheFirstResultAndForgetFailures(t *testing.T) {
	var r recentCommands
	c, first := r.begin("cmd_1")
	if !first {
		t.Fatal("first delivery not first")
	}
	var wg sync.WaitGroup
	var repeated any
	wg.Add(1)
	go func() {
		defer wg.Done()
		c2, first := r.begin("cmd_1")
		if first {
			t.Error("a repeat was taken for a first delivery")
			return
		}
		<-c2.done
		repeated = c2.res
	}()
	want := &actors.Outcome{LastSeq: 7}
	r.finish("cmd_1", c, want)
	wg.Wait()
	if repeated != want {
		t.Fatalf("repeat answered %v, want the first result", repeated)
	}

	c, _ = r.begin("cmd_2")
	r.finish("cmd_2", c, &actors.CommandError{Code: actors.CodeInternal})
	if _, first := r.begin("cmd_2"); !first {
		t.Fatal("a failed command's retry was not run again")
	}

	for i := range recentLimit + 1 {
		c, _ := r.begin(string(rune('a'+i%26)) + string(rune(i)))
		r.finish("", c, &actors.Done{})
	}
	if len(r.byID) > recentLimit || len(r.order) > recentLimit {
		t.Fatalf("remembers %d commands, limit %d", len(r.byID), recentLimit)
	}
}
