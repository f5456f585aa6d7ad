package persistence

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

// The cache entry an append leaves: tagged with its head, the newest
// assistant messages with their calls, whether all their calls are known;
// and nothing once another append (or a failed one) moved past it.
func TestSessionCacheKeepsTheNewestTurnsAtTheHead(t *testing.T) {
	e, err := boltsql.Open(t.TempDir(), boltsql.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	j, err := Open(ctx, Config{DB: e.DB()})
	if err != nil {
		t.Fatal(err)
	}
	last, err := j.Append(ctx, "s", 0, 0, messages.SessionCreated{Location: "/p"},
		messages.TurnStarted{AssistantMessageID: "a1"}, messages.ToolCalled{AssistantMessageID: "a1", CallID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	describe := func(e *cacheEntry) string {
		if e == nil {
			return "none"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "head %d %s:", e.head, e.status)
		for _, m := range e.msgs {
			fmt.Fprintf(&b, " %s@%d all=%v", m.id, m.seq, m.allTools)
		}
		for _, k := range [][2]string{{"a1", "c1"}, {"a2", "c1"}, {"a3", "c1"}} {
			if t, ok := e.tools[k]; ok {
				fmt.Fprintf(&b, " %s/%s=%s", k[0], k[1], t.state)
			}
		}
		return b.String()
	}
	check := func(want string) {
		t.Helper()
		if got := describe(j.cache.get("s", last)); got != want {
			t.Fatalf("cache at %d:\n got %s\nwant %s", last, got, want)
		}
	}
	check("head 3 busy: a1@2 all=true a1/c1=running")
	if last, err = j.Append(ctx, "s", last, 0, messages.TurnStarted{AssistantMessageID: "a2"},
		messages.ToolCalled{AssistantMessageID: "a2", CallID: "c1"}); err != nil {
		t.Fatal(err)
	}
	check("head 5 busy: a1@2 all=true a2@4 all=true a1/c1=running a2/c1=running")
	if last, err = j.Append(ctx, "s", last, 0, messages.TurnStarted{AssistantMessageID: "a3"},
		messages.ToolSucceeded{AssistantMessageID: "a1", CallID: "c1"}); err != nil {
		t.Fatal(err)
	}
	// a1 was changed but a2 and a3 are newer: a1 and its call go.
	check("head 7 busy: a2@4 all=true a3@6 all=true a2/c1=running")
	if last, err = j.Append(ctx, "s", last, 0, messages.Idle{}); err != nil {
		t.Fatal(err)
	}
	check("head 8 idle: a2@4 all=true a3@6 all=true a2/c1=running")
	// A refused append forgets the session.
	if _, err := j.Append(ctx, "s", last, 0, messages.ToolSucceeded{AssistantMessageID: "a3", CallID: "nope"}); err == nil {
		t.Fatal("accepted")
	}
	check("none")
	if last, err = j.Append(ctx, "s", last, 0, messages.TextEnded{AssistantMessageID: "a2", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	// Read back from the database: its calls are not all known.
	check("head 9 : a2@4 all=false")
}
