package persistence_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

func roles(ms []messages.Message) string {
	s := ""
	for _, m := range ms {
		switch m.Role {
		case messages.RoleUser:
			s += "U"
		case messages.RoleAssistant:
			s += "A"
		case messages.RoleSystem:
			s += "S"
		case messages.RoleCompaction:
			s += "C"
		}
	}
	return s
}

func TestPromotionMovesInboxRowsIntoHistoryInOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		last := mustAppend(t, j, "s1", 0, 0, created("/p"),
			messages.PromptAdmitted{MessageID: "m1", Prompt: messages.Prompt{Text: "one"}, Delivery: messages.Steer},
			messages.PromptAdmitted{MessageID: "m2", Prompt: messages.Prompt{Text: "two"}, Delivery: messages.Queue},
			messages.PromptAdmitted{MessageID: "m3", Prompt: messages.Prompt{Text: "three"}, Delivery: messages.Steer})
		inbox, _ := j.PendingInbox(ctx, "s1")
		if len(inbox) != 3 || inbox[0].MessageID != "m1" || inbox[1].Delivery != messages.Queue || inbox[2].AdmittedSeq != 4 {
			t.Fatalf("inbox %+v", inbox)
		}
		last = mustAppend(t, j, "s1", last, 0, messages.PromptPromoted{MessageIDs: []string{"m1", "m3"}})
		inbox, _ = j.PendingInbox(ctx, "s1")
		if len(inbox) != 1 || inbox[0].MessageID != "m2" {
			t.Fatalf("inbox after promotion %+v", inbox)
		}
		h, _ := j.ModelHistory(ctx, "s1")
		if len(h) != 2 || h[0].ID != "m1" || h[1].ID != "m3" || h[0].Seq != last || h[1].Index != 1 || h[1].Prompt.Text != "three" {
			t.Fatalf("history %+v", h)
		}
		s, _ := j.Session(ctx, "s1")
		if s.Status != persistence.StatusBusy {
			t.Fatalf("status %s after promotion", s.Status)
		}
		// A promoted prompt is still read by its ID, with its delivery.
		if a, err := j.Admission(ctx, "s1", "m3"); err != nil || a.Prompt.Text != "three" || a.Delivery != messages.Steer || a.AdmittedSeq != 4 || a.PromotedSeq != last {
			t.Fatalf("admission of m3 %+v %v", a, err)
		}
		if _, err := j.Admission(ctx, "s2", "m3"); !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("admission of m3 in another session: %v", err)
		}
		// Promoting twice is refused.
		if _, err := j.Append(ctx, "s1", last, 0, messages.PromptPromoted{MessageIDs: []string{"m1"}}); err == nil {
			t.Fatal("double promotion accepted")
		}
	})
}

func TestTurnWithToolsProjectsAssistantMessageAndToolStates(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		last := mustAppend(t, j, "s1", 0, 0, created("/p"),
			messages.PromptAdmitted{MessageID: "u1", Prompt: messages.Prompt{Text: "go"}, Delivery: messages.Steer},
			messages.PromptPromoted{MessageIDs: []string{"u1"}},
			messages.TurnStarted{AssistantMessageID: "a1", Agent: "build", Model: model},
			messages.ReasoningEnded{AssistantMessageID: "a1", Text: "hmm", ProviderMetadata: []byte("sig")},
			messages.TextEnded{AssistantMessageID: "a1", Text: "running"},
			messages.ToolInputStarted{AssistantMessageID: "a1", CallID: "c1", Tool: "bash"},
			messages.ToolCalled{AssistantMessageID: "a1", CallID: "c1", Tool: "bash", Input: []byte(`{}`), Agent: "build"},
			messages.ToolCalled{AssistantMessageID: "a1", CallID: "c2", Tool: "read", Input: []byte(`{}`), Agent: "build"},
			messages.ToolInputStarted{AssistantMessageID: "a1", CallID: "c3", Tool: "bash"},
			messages.TurnEnded{AssistantMessageID: "a1", FinishReason: "tool-calls", Usage: messages.Usage{InputTokens: 7}})
		running, _ := j.ToolCalls(ctx, "s1", messages.ToolStatePending, messages.ToolStateRunning)
		if len(running) != 3 || running[0].State != messages.ToolStateRunning || running[2].State != messages.ToolStatePending {
			t.Fatalf("unsettled calls %+v", running)
		}
		last = mustAppend(t, j, "s1", last, 0,
			messages.ToolProgress{AssistantMessageID: "a1", CallID: "c1", Title: "ls"},
			messages.ToolSucceeded{AssistantMessageID: "a1", CallID: "c1", Output: "ok", ManagedPath: "/m/tool_c1", Lossy: false},
			messages.ToolFailed{AssistantMessageID: "a1", CallID: "c2", Error: "Tool execution interrupted"},
			messages.ToolFailed{AssistantMessageID: "a1", CallID: "c3", Error: "Tool execution interrupted"})
		if left, _ := j.ToolCalls(ctx, "s1", messages.ToolStatePending, messages.ToolStateRunning); len(left) != 0 {
			t.Fatalf("unsettled after recovery %+v", left)
		}
		if _, err := j.Append(ctx, "s1", last, 0, messages.ToolSucceeded{AssistantMessageID: "a1", CallID: "c1"}); err == nil {
			t.Fatal("a tool settled twice")
		}
		h, _ := j.ModelHistory(ctx, "s1")
		if roles(h) != "UA" {
			t.Fatalf("history roles %s", roles(h))
		}
		a := h[1]
		if !a.Finished || a.FinishReason != "tool-calls" || a.Usage.InputTokens != 7 || len(a.Parts) != 4 {
			t.Fatalf("assistant %+v", a)
		}
		kinds := []messages.PartKind{a.Parts[0].Kind, a.Parts[1].Kind, a.Parts[2].Kind, a.Parts[3].Kind}
		if !reflect.DeepEqual(kinds, []messages.PartKind{messages.PartReasoning, messages.PartText, messages.PartTool, messages.PartTool}) {
			t.Fatalf("parts %v", kinds)
		}
		c1, c2 := a.Parts[2].Tool, a.Parts[3].Tool
		if c1.State != messages.ToolStateCompleted || c1.Output != "ok" || c1.Title != "ls" || c1.ManagedPath != "/m/tool_c1" || c1.Agent != "build" {
			t.Fatalf("c1 %+v", c1)
		}
		if c2.State != messages.ToolStateFailed || c2.Error != "Tool execution interrupted" {
			t.Fatalf("c2 %+v", c2)
		}
	})
}

func TestSameCallIDInTwoTurnsSettlesAgainstItsOwnMessage(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		mustAppend(t, j, "s1", 0, 0, created("/p"),
			messages.TurnStarted{AssistantMessageID: "a1"},
			messages.ToolCalled{AssistantMessageID: "a1", CallID: "call_0", Tool: "bash"},
			messages.ToolSucceeded{AssistantMessageID: "a1", CallID: "call_0", Output: "first"},
			messages.TurnEnded{AssistantMessageID: "a1"},
			messages.TurnStarted{AssistantMessageID: "a2"},
			messages.ToolCalled{AssistantMessageID: "a2", CallID: "call_0", Tool: "bash"},
			messages.ToolSucceeded{AssistantMessageID: "a2", CallID: "call_0", Output: "second"},
			messages.TurnEnded{AssistantMessageID: "a2"})
		h, _ := j.ModelHistory(ctx, "s1")
		if len(h) != 2 || h[0].Parts[0].Tool.Output != "first" || h[1].Parts[0].Tool.Output != "second" {
			t.Fatalf("history %+v", h)
		}
	})
}

func TestEpochLifecycleAndHistoryBoundaries(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		last := mustAppend(t, j, "s1", 0, 0, created("/p"),
			messages.ContextEpochInitialized{Revision: 1, Baseline: "base\x00 \n", Snapshot: []byte{1}, Location: "/p"},
			messages.PromptAdmitted{MessageID: "u1", Delivery: messages.Steer},
			messages.PromptPromoted{MessageIDs: []string{"u1"}},
			messages.ContextUpdated{Text: "changed", Snapshot: []byte{2}},
			messages.PromptAdmitted{MessageID: "u2", Delivery: messages.Steer},
			messages.PromptPromoted{MessageIDs: []string{"u2"}})
		ep, ok, _ := j.Epoch(ctx, "s1")
		if !ok || ep.Baseline != "base\x00 \n" || ep.Revision != 2 || !reflect.DeepEqual(ep.Snapshot, []byte{2}) || ep.BaselineSeq != 2 || ep.UpdatedSeq != 5 {
			t.Fatalf("epoch %+v", ep)
		}
		h, _ := j.ModelHistory(ctx, "s1")
		if roles(h) != "USU" || h[1].Text != "changed" || h[1].ID != "ctx_5" {
			t.Fatalf("history %s %+v", roles(h), h)
		}
		// A stale revision is refused; a compaction then a fresh baseline cut history.
		if _, err := j.Append(ctx, "s1", last, 0, messages.ContextEpochReplaced{Revision: 2, Location: "/p"}); err == nil {
			t.Fatal("stale revision accepted")
		}
		last = mustAppend(t, j, "s1", last, 0,
			messages.CompactionStarted{CompactionID: "k1"},
			messages.CompactionEnded{CompactionID: "k1", Summary: "sum", RecentContext: "recent"},
			messages.ContextUpdated{Text: "before new baseline", Snapshot: []byte{3}},
			messages.ContextEpochReplaced{Revision: 9, Baseline: "fresh", Snapshot: []byte{9}, Location: "/p"},
			messages.PromptAdmitted{MessageID: "u3", Delivery: messages.Steer},
			messages.PromptPromoted{MessageIDs: []string{"u3"}})
		h, _ = j.ModelHistory(ctx, "s1")
		if roles(h) != "CU" || h[0].Text != "sum" || h[0].RecentContext != "recent" {
			t.Fatalf("history after compaction %s", roles(h))
		}
		all, _ := j.Messages(ctx, "s1", persistence.Cursor{}, 100)
		if roles(all.Messages) != "USUCSU" || all.More {
			t.Fatalf("full history %s more=%v", roles(all.Messages), all.More)
		}
		// A move clears the epoch; the old Location cannot re-initialize it.
		last = mustAppend(t, j, "s1", last, 0, messages.Moved{From: "/p", To: "/q"})
		if _, ok, _ := j.Epoch(ctx, "s1"); ok {
			t.Fatal("epoch survived the move")
		}
		if _, err := j.Append(ctx, "s1", last, 0, messages.ContextEpochInitialized{Revision: 1, Location: "/p"}); err == nil {
			t.Fatal("old Location recreated the epoch")
		}
		mustAppend(t, j, "s1", last, 0, messages.ContextEpochInitialized{Revision: 1, Baseline: "q", Location: "/q"})
		s, _ := j.Session(ctx, "s1")
		if s.Location != "/q" {
			t.Fatalf("location %q", s.Location)
		}
	})
}

func TestSwitchesPermissionsAndMidDrainStatus(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		mustAppend(t, j, "idle", 0, 0, created("/p"))
		last := mustAppend(t, j, "s1", 0, 0, created("/p"),
			messages.AgentSwitched{Agent: "plan"},
			messages.ModelSwitched{Model: messages.ModelRef{Provider: "anthropic", ID: "claude"}},
			messages.TurnStarted{AssistantMessageID: "a1"},
			messages.PermissionAsked{RequestID: "p1", AssistantMessageID: "a1", CallID: "c1", Action: "bash", Resources: []string{"rm"}},
			messages.PermissionAsked{RequestID: "p2", AssistantMessageID: "a1", CallID: "c2", Action: "edit"},
			messages.PermissionReplied{RequestID: "p1", Reply: messages.ReplyAlways})
		s, _ := j.Session(ctx, "s1")
		if s.Agent != "plan" || s.Model.Provider != "anthropic" || s.Model.ID != "claude" || s.Status != persistence.StatusBusy {
			t.Fatalf("session %+v", s)
		}
		perms, _ := j.PendingPermissions(ctx, "s1")
		if len(perms) != 1 || perms[0].RequestID != "p2" || perms[0].Action != "edit" || perms[0].CallID != "c2" {
			t.Fatalf("pending permissions %+v", perms)
		}
		if _, err := j.Append(ctx, "s1", last, 0, messages.PermissionReplied{RequestID: "p1", Reply: messages.ReplyOnce}); err == nil {
			t.Fatal("answered twice")
		}
		mid, _ := j.MidDrain(ctx)
		if !reflect.DeepEqual(mid, []string{"s1"}) {
			t.Fatalf("mid-drain %v", mid)
		}
		mustAppend(t, j, "s1", last, 0, messages.TurnEnded{AssistantMessageID: "a1"}, messages.Idle{})
		if mid, _ := j.MidDrain(ctx); len(mid) != 0 {
			t.Fatalf("mid-drain after idle %v", mid)
		}
	})
}

func TestHistoryPagingIsExclusiveAndSaysExactlyWhetherMoreRemain(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		last := mustAppend(t, j, "s1", 0, 0, created("/p"))
		var ids []string
		for i := 0; i < 7; i++ {
			ids = append(ids, fmt.Sprint("m", i))
			last = mustAppend(t, j, "s1", last, 0, messages.PromptAdmitted{MessageID: ids[i], Delivery: messages.Steer})
		}
		// Three promoted by one event share a seq; the rest one by one.
		last = mustAppend(t, j, "s1", last, 0, messages.PromptPromoted{MessageIDs: ids[:3]})
		for _, id := range ids[3:] {
			last = mustAppend(t, j, "s1", last, 0, messages.PromptPromoted{MessageIDs: []string{id}})
		}
		for _, size := range []int{1, 2, 3, 7, 8} {
			var got []string
			cur := persistence.Cursor{}
			for pages := 0; ; pages++ {
				p, err := j.Messages(ctx, "s1", cur, size)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range p.Messages {
					got = append(got, m.ID)
				}
				wantMore := len(got) < 7
				if p.More != wantMore {
					t.Fatalf("size %d page %d: more=%v with %d of 7 read", size, pages, p.More, len(got))
				}
				cur = p.Next
				if !p.More {
					break
				}
			}
			if !reflect.DeepEqual(got, ids) {
				t.Fatalf("size %d: paged %v", size, got)
			}
		}
		p, _ := j.Messages(ctx, "s1", persistence.Cursor{Seq: last, Index: 0}, 5)
		if len(p.Messages) != 0 || p.More || p.Next != (persistence.Cursor{Seq: last}) {
			t.Fatalf("page after the end %+v", p)
		}
	})
}

// TestOwedListsMidDrainAndUnpromotedSessions: Owed is what start-up
// recovery wakes: a busy session, and an idle one holding admitted input no
// drain promoted (killed between receipt and drain start); not an idle
// session whose input was all promoted, nor one that never had input.
func TestOwedListsMidDrainAndUnpromotedSessions(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		mustAppend(t, j, "empty", 0, 0, created("/p"))
		mustAppend(t, j, "waiting", 0, 0, created("/p"),
			messages.PromptAdmitted{MessageID: "w1", Prompt: messages.Prompt{Text: "one"}, Delivery: messages.Steer},
			messages.PromptAdmitted{MessageID: "w2", Prompt: messages.Prompt{Text: "two"}, Delivery: messages.Queue})
		mustAppend(t, j, "done", 0, 0, created("/p"),
			messages.PromptAdmitted{MessageID: "d1", Prompt: messages.Prompt{Text: "one"}, Delivery: messages.Steer},
			messages.PromptPromoted{MessageIDs: []string{"d1"}},
			messages.TurnStarted{AssistantMessageID: "a1"},
			messages.TurnEnded{AssistantMessageID: "a1"}, messages.Idle{})
		last := mustAppend(t, j, "busy", 0, 0, created("/p"),
			messages.PromptAdmitted{MessageID: "b1", Prompt: messages.Prompt{Text: "one"}, Delivery: messages.Steer},
			messages.PromptPromoted{MessageIDs: []string{"b1"}},
			messages.TurnStarted{AssistantMessageID: "a2"})
		owed, err := j.Owed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(owed, []string{"busy", "waiting"}) {
			t.Fatalf("owed %v, want [busy waiting]", owed)
		}
		// Busy with input admitted mid-drain: listed once.
		mustAppend(t, j, "busy", last, 0, messages.PromptAdmitted{MessageID: "b2", Prompt: messages.Prompt{Text: "two"}, Delivery: messages.Queue})
		if owed, _ = j.Owed(ctx); !reflect.DeepEqual(owed, []string{"busy", "waiting"}) {
			t.Fatalf("owed %v, want [busy waiting]", owed)
		}
	})
}

// TestOwedLeavesHeldInput: a prompt the client admitted without a drain
// (resume:false, V1 noReply: PromptAdmitted.Held) is not owed work, so
// start-up recovery leaves it for the client's wake; a session holding
// held input beside input admitted for a drain is owed (its drain promotes
// both, as it would have live), and so is a busy one. Held input promoted
// later is owed nothing. Before the flag Owed listed "held" too, and
// recovery ran what the client had held back.
func TestOwedLeavesHeldInput(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		admit := func(id string, held bool) messages.PromptAdmitted {
			return messages.PromptAdmitted{MessageID: id, Prompt: messages.Prompt{Text: id}, Delivery: messages.Steer, Held: held}
		}
		last := mustAppend(t, j, "held", 0, 0, created("/p"), admit("h1", true), admit("h2", true))
		mustAppend(t, j, "mixed", 0, 0, created("/p"), admit("m1", true), admit("m2", false))
		mustAppend(t, j, "owed", 0, 0, created("/p"), admit("o1", false))
		mustAppend(t, j, "busy", 0, 0, created("/p"), admit("b1", false),
			messages.PromptPromoted{MessageIDs: []string{"b1"}}, admit("b2", true))
		owed, err := j.Owed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"busy", "mixed", "owed"}; !reflect.DeepEqual(owed, want) {
			t.Fatalf("owed %v, want %v", owed, want)
		}
		inbox, err := j.PendingInbox(ctx, "held")
		if err != nil || len(inbox) != 2 {
			t.Fatalf("held inbox %+v, %v: held input stays pending", inbox, err)
		}
		// The client wakes it later: promoted, idle, owed nothing.
		mustAppend(t, j, "held", last, 0, messages.PromptPromoted{MessageIDs: []string{"h1", "h2"}},
			messages.TurnStarted{AssistantMessageID: "a1"}, messages.TurnEnded{AssistantMessageID: "a1"}, messages.Idle{})
		if owed, _ = j.Owed(ctx); !reflect.DeepEqual(owed, []string{"busy", "mixed", "owed"}) {
			t.Fatalf("owed %v after the held input ran", owed)
		}
		envs := readAll(t, j, "mixed")
		if a, ok := envs[1].Event.(messages.PromptAdmitted); !ok || !a.Held {
			t.Fatalf("read back %+v: the hold is part of the event", envs[1].Event)
		}
		if rep, err := j.Verify(ctx); err != nil || !rep.Clean() {
			t.Fatalf("verify: %v %v", err, rep.Differences)
		}
	})
}

// TestAnsweredQuestionIsOwedADrain: a question's drain ends idle with the
// call open; the reply settles the call and makes the session busy (a drain
// is owed: the model continues from the answer), so a server that dies
// before that drain writes anything leaves the session for start-up
// recovery (Owed) rather than idle with the answer unread; a rejection owes
// nothing.
func TestAnsweredQuestionIsOwedADrain(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		asked := func(sid string) int64 {
			return mustAppend(t, j, sid, 0, 0, created("/p"),
				messages.PromptAdmitted{MessageID: "m_" + sid, Prompt: messages.Prompt{Text: "ask me"}, Delivery: messages.Steer},
				messages.PromptPromoted{MessageIDs: []string{"m_" + sid}},
				messages.TurnStarted{AssistantMessageID: "a1"},
				messages.ToolCalled{AssistantMessageID: "a1", CallID: "q1", Tool: "question", Input: []byte(`{}`), Agent: "build"},
				messages.QuestionAsked{RequestID: "que1", AssistantMessageID: "a1", CallID: "q1", Questions: []messages.Question{{Question: "Which?"}}},
				messages.TurnEnded{AssistantMessageID: "a1"}, messages.Idle{})
		}
		last := asked("answered")
		mustAppend(t, j, "answered", last, 0, messages.QuestionReplied{RequestID: "que1", Answers: [][]string{{"blue"}}},
			messages.ToolSucceeded{AssistantMessageID: "a1", CallID: "q1", Output: "blue"})
		last = asked("rejected")
		mustAppend(t, j, "rejected", last, 0, messages.QuestionRejected{RequestID: "que1", Reason: "no"},
			messages.ToolFailed{AssistantMessageID: "a1", CallID: "q1", Error: "rejected"})
		if owed, err := j.Owed(ctx); err != nil || !reflect.DeepEqual(owed, []string{"answered"}) {
			t.Fatalf("owed %v %v, want [answered]", owed, err)
		}
		if s, _ := j.Session(ctx, "answered"); s.Status != persistence.StatusBusy {
			t.Fatalf("status after the answer %s, want busy", s.Status)
		}
		// The metrics' sessions_awaiting{on="question"}: only a session whose
		// question is still open counts.
		if n, err := j.SessionsAwaitingQuestion(ctx); err != nil || n != 0 {
			t.Fatalf("awaiting a question after both settled: %d %v, want 0", n, err)
		}
		asked("open")
		if n, err := j.SessionsAwaitingQuestion(ctx); err != nil || n != 1 {
			t.Fatalf("awaiting a question with one open: %d %v, want 1", n, err)
		}
	})
}

// session.deleted (migration 12's deleted_seq): the session is not found
// by any read, nor listed as mid-drain, while its row and events stay for
// DeletedSession and Verify.
func TestDeletedSessionIsNotFoundButKept(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		mustAppend(t, j, "kept", 0, 0, created("/p"))
		last := mustAppend(t, j, "s1", 0, 0, created("/p"), messages.SessionRenamed{Title: "old"})
		if _, err := j.Session(ctx, "s1"); err != nil {
			t.Fatalf("before the delete: %v", err)
		}
		mustAppend(t, j, "s1", last, 0, messages.SessionDeleted{})
		if s, err := j.Session(ctx, "s1"); !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("deleted session read: %+v %v, want ErrNotFound", s, err)
		}
		if s, err := j.DeletedSession(ctx, "s1"); err != nil || !s.Deleted || s.Location != "/p" || s.Title != "old" {
			t.Fatalf("DeletedSession: %+v %v", s, err)
		}
		if s, err := j.DeletedSession(ctx, "kept"); err != nil || s.Deleted {
			t.Fatalf("DeletedSession of a live session: %+v %v", s, err)
		}
		if rep, err := j.Verify(ctx); err != nil || !rep.Clean() {
			t.Fatalf("verify: %v %v", rep.Differences, err)
		}
	})
}

// A fork's copied history (messages.HistoryCopied) is projected as the
// session's own messages, from its creation's append only: a copy
// starting with a compaction is the history boundary, and a copy that is
// not history yet (an open turn, an unsettled call) or comes later is
// refused. Verify replays it.
func TestCopiedHistoryIsTheNewSessionsOwn(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		user := func(id, text string) messages.CopiedMessage {
			return messages.CopiedMessage{ID: id, Role: messages.RoleUser, Body: messages.Message{Prompt: &messages.Prompt{Text: text}}}
		}
		answer := messages.CopiedMessage{ID: "a1", Role: messages.RoleAssistant, Body: messages.Message{Agent: "build", Finished: true,
			Parts: []messages.Part{{Kind: messages.PartText, Seq: 9, Text: "hi"}}}}
		s, made, err := j.CreateSession(ctx, "s1", 0, created("/p"),
			messages.HistoryCopied{From: "s0", Messages: []messages.CopiedMessage{user("u1", "one"), answer}},
			messages.HistoryCopied{From: "s0", Messages: []messages.CopiedMessage{{ID: "c1", Role: messages.RoleCompaction, Body: messages.Message{Text: "sum"}}, user("u2", "two")}})
		if err != nil || !made || s.LastSeq != 3 || s.HistorySeq != 3 {
			t.Fatalf("create with a copy: %+v %v %v, want seq 3 the boundary", s, made, err)
		}
		page, _ := j.Messages(ctx, "s1", persistence.Cursor{}, 10)
		if roles(page.Messages) != "UACU" || page.Messages[1].Seq != 2 || page.Messages[1].Index != 1 || page.Messages[1].Parts[0].Seq != 2 {
			t.Fatalf("messages %+v, want the copies at (2, i) with their parts at 2", page.Messages)
		}
		if h, _ := j.ModelHistory(ctx, "s1"); roles(h) != "CU" || h[1].Prompt.Text != "two" {
			t.Fatalf("model history %+v, want from the copied compaction on", h)
		}
		for _, bad := range []struct {
			what string
			evs  []messages.Event
		}{
			{"an open turn", []messages.Event{created("/p"), messages.HistoryCopied{Messages: []messages.CopiedMessage{{ID: "a", Role: messages.RoleAssistant}}}}},
			{"a running call", []messages.Event{created("/p"), messages.HistoryCopied{Messages: []messages.CopiedMessage{{ID: "a", Role: messages.RoleAssistant,
				Body: messages.Message{Finished: true, Parts: []messages.Part{{Kind: messages.PartTool, Tool: &messages.ToolPart{CallID: "c", State: messages.ToolStateRunning}}}}}}}}},
			{"a compaction inside", []messages.Event{created("/p"), messages.HistoryCopied{Messages: []messages.CopiedMessage{user("x", "x"), {ID: "c", Role: messages.RoleCompaction}}}}},
			{"a copy after the creation's append", []messages.Event{messages.HistoryCopied{Messages: []messages.CopiedMessage{user("y", "y")}}}},
			{"a copy after another event", []messages.Event{messages.Idle{}, messages.HistoryCopied{Messages: []messages.CopiedMessage{user("z", "z")}}}},
		} {
			sid, expected := "s2", int64(0)
			if _, ok := bad.evs[0].(messages.SessionCreated); !ok {
				sid, expected = "s1", 3
			}
			if _, err := j.Append(ctx, sid, expected, 0, bad.evs...); !errors.Is(err, persistence.ErrProjection) {
				t.Fatalf("%s: %v, want refused", bad.what, err)
			}
		}
		rep, err := j.Verify(ctx)
		if err != nil || !rep.Clean() {
			t.Fatalf("verify: %+v %v", rep, err)
		}
	})
}
