package persistence_test

import (
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

func TestBadAppendsAreRefusedWithAClearErrorAndWriteNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		mustAppend(t, j, "s1", 0, 0, created("/p"))
		for name, c := range map[string]struct {
			sid      string
			expected int64
			events   []messages.Event
			want     string
		}{
			"no events":      {"s1", 1, nil, "no events"},
			"empty session":  {"", 0, []messages.Event{created("/p")}, "empty session ID"},
			"negative seq":   {"s1", -1, []messages.Event{messages.Idle{}}, "negative expected seq"},
			"nil event":      {"s1", 1, []messages.Event{messages.Idle{}, nil}, "event 1"},
			"pointer event":  {"s1", 1, []messages.Event{&messages.Idle{}}, "*messages.Idle"},
			"bad delivery":   {"s1", 1, []messages.Event{messages.PromptAdmitted{MessageID: "m", Delivery: "later"}}, `delivery "later"`},
			"empty location": {"s2", 0, []messages.Event{created("")}, "empty location"},
		} {
			_, err := j.Append(ctx, c.sid, c.expected, 0, c.events...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: err = %v, want it to mention %q", name, err, c.want)
			}
		}
		if n := len(readAll(t, j, "s1")); n != 1 {
			t.Fatalf("%d events after refused appends", n)
		}
		if _, err := j.AdmitPrompt(ctx, "s1", 1, 0, messages.PromptAdmitted{Delivery: messages.Steer}, 0); err == nil || !strings.Contains(err.Error(), "empty message ID") {
			t.Fatalf("admit without ID: %v", err)
		}
		if _, err := j.AdmitPrompt(ctx, "s1", 1, 0, messages.PromptAdmitted{MessageID: "m", Delivery: "x"}, 0); err == nil || !strings.Contains(err.Error(), "neither steer nor queue") {
			t.Fatalf("admit with bad delivery: %v", err)
		}
		if _, err := j.Messages(ctx, "s1", persistence.Cursor{}, 0); err == nil {
			t.Fatal("page of size 0 accepted")
		}
	})
}
