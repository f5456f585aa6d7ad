package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// ExampleJournal shows the calls a Session actor makes, on the embedded engine.
func ExampleJournal() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "journal-example")
	defer os.RemoveAll(dir)
	j, err := persistence.OpenURL(ctx, dir, "", false, persistence.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()

	own, _ := j.Acquire(ctx, "ses_1", "node-a")
	s, created, _ := j.CreateSession(ctx, "ses_1", own.Epoch, messages.SessionCreated{Location: "/work/project", Agent: "build"})
	last := s.LastSeq
	r, _ := j.AdmitPrompt(ctx, "ses_1", last, own.Epoch,
		messages.PromptAdmitted{MessageID: "msg_1", Prompt: messages.Prompt{Text: "hello"}, Delivery: messages.Steer}, 100)
	last = r.LastSeq
	last, _ = j.Append(ctx, "ses_1", last, own.Epoch,
		messages.ContextEpochInitialized{Revision: 1, Baseline: "You are in /work/project.", Location: "/work/project"},
		messages.PromptPromoted{MessageIDs: []string{"msg_1"}},
		messages.TurnStarted{AssistantMessageID: "msg_2", Agent: "build"},
		messages.TextEnded{AssistantMessageID: "msg_2", Text: "hi!"},
		messages.TurnEnded{AssistantMessageID: "msg_2", FinishReason: "stop"},
		messages.Idle{})

	// A stale writer is refused and told where the head is.
	_, err = j.Append(ctx, "ses_1", 1, own.Epoch, messages.Idle{})
	var ce *persistence.ConflictError
	fmt.Println(created, errors.As(err, &ce), ce.Last == last)

	history, _ := j.ModelHistory(ctx, "ses_1")
	for _, m := range history {
		fmt.Println(m.Role, m.ID)
	}
	// Output:
	// true true true
	// user msg_1
	// assistant msg_2
}
