package session

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
)

func TestRenameRefusesALongTitle(t *testing.T) {
	c := Core{State: NewState("ses_1")}
	if err := c.State.Apply(1, messages.SessionCreated{Location: "/p", Agent: "build"}); err != nil {
		t.Fatal(err)
	}
	rd := c.Step(Rename{Title: strings.Repeat("x", MaxTitle+1)})
	if rd.Refused == nil || rd.Refused.Kind != RefusedInvalid || len(rd.Append) > 0 {
		t.Fatalf("a title of %d bytes: %+v", MaxTitle+1, rd)
	}
	if rd := c.Step(Rename{Title: strings.Repeat("x", MaxTitle)}); rd.Refused != nil || len(rd.Append) != 1 {
		t.Fatalf("a title of %d bytes: %+v", MaxTitle, rd)
	}
}

// TestCommandDropsAHistoryAppliedAhead: the owner applied the carry to the
// history ahead of its append (a request was built from it); a rename
// written before the carry moves the carry's seqs, so the copy is dropped
// rather than kept with wrong seqs (its last carried event would be applied
// a second time when the carry lands).
func TestCommandDropsAHistoryAppliedAhead(t *testing.T) {
	c := pendingCore(t)
	c.Carry = []messages.Event{messages.PromptPromoted{MessageIDs: []string{"u1"}}, messages.ContextUpdated{MessageID: "ctx", Text: "s"}}
	c.State.ApplyAhead(4, c.Carry)
	if !c.State.History.Loaded || len(c.State.History.Msgs) != 2 {
		t.Fatalf("history applied ahead: %+v", c.State.History)
	}
	rd := c.Step(Rename{Title: "T"})
	if len(rd.Append) != 1 || len(c.Carry) != 2 {
		t.Fatalf("the rename is written alone and the carry stays: append %v, carry %v", rd.Append, c.Carry)
	}
	if c.State.History.Loaded {
		t.Fatalf("the history applied ahead at seqs 4, 5 is kept, though the carry now gets 5, 6")
	}
	// Without an ahead copy the history stays.
	c2 := Core{State: NewState("ses_2")}
	_ = c2.State.Apply(1, messages.SessionCreated{Location: "/p", Agent: "build"})
	c2.Step(Rename{Title: "T"})
	if !c2.State.History.Loaded {
		t.Fatalf("a history not applied ahead is dropped")
	}
}

// TestAdmission: a prompt is admitted as steer when it names no delivery,
// held unless resumed; an unknown delivery or a missing session is
// refused; the journal counts the inbox only at the limit.
func TestAdmission(t *testing.T) {
	c := Core{State: NewState("ses_1")}
	if _, _, r := c.Admission(Prompt{MessageID: "u1"}, 2); r == nil || r.Kind != RefusedNotFound {
		t.Fatalf("no session: %+v", r)
	}
	if err := c.State.Apply(1, messages.SessionCreated{Location: "/p", Agent: "build"}); err != nil {
		t.Fatal(err)
	}
	if _, _, r := c.Admission(Prompt{MessageID: "u1", Delivery: "later"}, 2); r == nil || r.Kind != RefusedInvalid || r.Err != `delivery "later": want steer or queue` {
		t.Fatalf("unknown delivery: %+v", r)
	}
	for i, resume := range []bool{true, false} {
		id := fmt.Sprintf("u%d", i+1)
		ev, limit, r := c.Admission(Prompt{MessageID: id, Prompt: messages.Prompt{Text: "hi"}, Resume: resume}, 2)
		want := messages.PromptAdmitted{MessageID: id, Prompt: messages.Prompt{Text: "hi"}, Delivery: messages.Steer, Held: !resume}
		if r != nil || limit != 0 || !reflect.DeepEqual(ev, want) {
			t.Fatalf("below the limit: %+v %d %+v, want %+v and no limit", ev, limit, r, want)
		}
		if err := c.State.Apply(int64(i+2), ev); err != nil {
			t.Fatal(err)
		}
	}
	if ev, limit, r := c.Admission(Prompt{MessageID: "u3", Delivery: messages.Queue}, 2); r != nil || limit != 2 || ev.Delivery != messages.Queue {
		t.Fatalf("at the limit: %+v %d %+v, want the journal to count", ev, limit, r)
	}
}
