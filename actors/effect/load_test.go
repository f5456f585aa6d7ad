package effect

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/journaltest"
	"github.com/sessionrt/sessionrt/session"
)

// stream writes one session's events to a real journal, as a test
// scripts them, and checks after each step that Load reads the state the
// fold of every event of the stream gives.
type stream struct {
	t    *testing.T
	j    *persistence.Journal
	id   string
	last int64
}

func (s *stream) add(evs ...messages.Event) {
	s.t.Helper()
	last, err := s.j.Append(context.Background(), s.id, s.last, 0, evs...)
	if err != nil {
		s.t.Fatalf("append %d events after seq %d: %v", len(evs), s.last, err)
	}
	s.last = last
}

// check fails the test unless the state loaded equals the fold of the
// stream; it returns the loaded state.
func (s *stream) check(what string) session.State {
	s.t.Helper()
	got, d := loadDiff(context.Background(), s.j, s.id)
	if d != "" {
		s.t.Fatalf("%s (seq %d): %s", what, s.last, d)
	}
	return got
}

// message finds a message of the model-visible history by ID.
func (s *stream) message(id string) messages.Message {
	s.t.Helper()
	h, err := History(context.Background(), s.j, s.id, s.last)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, m := range h.Msgs {
		if m.ID == id {
			return m
		}
	}
	s.t.Fatalf("no message %s in the history", id)
	return messages.Message{}
}

// replay folds every event of session id from seq 1 through
// session.State.Apply, as an activation that created the session keeps
// its state.
func replay(ctx context.Context, j *persistence.Journal, id string) (session.State, error) {
	st := session.NewState(id)
	var after int64
	for {
		evs, err := j.ReadEvents(ctx, id, after, 100)
		if err != nil || len(evs) == 0 {
			return st, err
		}
		for _, e := range evs {
			if err := st.Apply(e.Seq, e.Event); err != nil {
				return st, fmt.Errorf("fold: %w", err)
			}
			after = e.Seq
		}
	}
}

// loadDiff loads session id (Row, Load) and compares it with the fold of
// its stream ("" when equal). The fold keeps the whole history and its
// turns; Load reads them only when a call or a drain is open, and then
// they must equal the fold's.
func loadDiff(ctx context.Context, j *persistence.Journal, id string) (session.State, string) {
	want, err := replay(ctx, j, id)
	if err != nil {
		return session.State{}, err.Error()
	}
	row, found, err := Row(ctx, j, id)
	if err != nil {
		return session.State{}, err.Error()
	}
	if found != want.Exists {
		return session.State{}, fmt.Sprintf("found %v, the fold says exists %v", found, want.Exists)
	}
	if !found {
		return session.State{}, ""
	}
	got, err := Load(ctx, j, row)
	switch {
	case err != nil:
		return got, err.Error()
	case !got.Exists:
		return got, "loaded as not existing"
	case got.Row != want.Row:
		return got, fmt.Sprintf("row %+v loaded, %+v folded", got.Row, want.Row)
	case !equal(got.Pending, want.Pending):
		return got, fmt.Sprintf("inbox %+v loaded, %+v folded", got.Pending, want.Pending)
	case (got.Epoch == nil) != (want.Epoch == nil) || (got.Epoch != nil && !reflect.DeepEqual(*got.Epoch, *want.Epoch)):
		return got, fmt.Sprintf("epoch %+v loaded, %+v folded", got.Epoch, want.Epoch)
	case !reflect.DeepEqual(journaltest.NormReverts(got.Reverts), journaltest.NormReverts(want.Reverts)):
		return got, fmt.Sprintf("reverts %+v loaded, %+v folded", got.Reverts, want.Reverts)
	case !equal(got.Questions, want.Questions):
		return got, fmt.Sprintf("open questions %+v loaded, %+v folded", got.Questions, want.Questions)
	case !equal(got.Calls, want.Calls):
		return got, fmt.Sprintf("open calls %v loaded, %v folded", got.Calls, want.Calls)
	case !equal(got.Asks, want.Asks):
		return got, fmt.Sprintf("open permission requests %v loaded, %v folded", got.Asks, want.Asks)
	}
	open := len(want.Calls) > 0 || want.Row.Status == session.StatusBusy
	if !open {
		if got.History.Loaded || len(got.Turns) > 0 {
			return got, fmt.Sprintf("nothing open, yet the history (loaded %v) and turns %v were read", got.History.Loaded, got.Turns)
		}
		return got, ""
	}
	switch h := got.History; {
	case !h.Loaded || h.Complete || h.Through != want.Row.LastSeq:
		return got, fmt.Sprintf("history loaded %v complete %v through %d, want loaded through %d", h.Loaded, h.Complete, h.Through, want.Row.LastSeq)
	case !slices.Equal(got.Turns, want.Turns):
		return got, fmt.Sprintf("unfinished turns %v loaded, %v folded", got.Turns, want.Turns)
	case len(h.Msgs) != len(want.History.Msgs):
		return got, fmt.Sprintf("%d messages loaded, %d folded", len(h.Msgs), len(want.History.Msgs))
	}
	for i, g := range got.History.Msgs {
		w := want.History.Msgs[i]
		gb, err1 := msgpack.Marshal(&g)
		wb, err2 := msgpack.Marshal(&w)
		if g.ID != w.ID || g.Seq != w.Seq || g.Index != w.Index || g.Role != w.Role || err1 != nil || err2 != nil || !bytes.Equal(gb, wb) {
			return got, fmt.Sprintf("message %d: %+v loaded, %+v folded", i, g, w)
		}
	}
	return got, ""
}

// equal compares slices or maps, an empty one equal to nil.
func equal(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return (va.Len() == 0 && vb.Len() == 0) || reflect.DeepEqual(a, b)
}

// TestLoadReadsTheStateTheEventsFold: after every step of a session's
// life (pending input, a Context Epoch, a revert, a drain mid-turn with
// open calls, permission requests and a question, unfinished turns, a
// compaction, an interruption, deletion) Load reads from the journal's
// projections exactly the state session.State.Apply folds from every
// event of the stream; the history and turns only when work is open.
func TestLoadReadsTheStateTheEventsFold(t *testing.T) {
	s := &stream{t: t, j: journaltest.Embedded(t), id: "ses_load"}
	model := messages.ModelRef{Provider: "scripted", ID: "m1"}
	if _, found, err := Row(context.Background(), s.j, s.id); err != nil || found {
		t.Fatalf("a session never created: found %v, err %v", found, err)
	}
	s.add(messages.SessionCreated{Location: "/work/p", Agent: "build", Model: model, Title: "t"})
	s.check("created")

	s.add(messages.PromptAdmitted{MessageID: "m1", Prompt: messages.Prompt{Text: "one"}, Delivery: messages.Steer},
		messages.PromptAdmitted{MessageID: "m2", Prompt: messages.Prompt{Text: "two"}, Delivery: messages.Queue, Held: true})
	if st := s.check("pending input"); len(st.Pending) != 2 {
		t.Fatalf("pending %+v, want m1 and m2", st.Pending)
	}
	s.add(messages.ContextEpochInitialized{Revision: 1, Baseline: "base\n", Snapshot: []byte{1}, Location: "/work/p"},
		messages.ContextUpdated{Text: "<system-update>x</system-update>", Snapshot: []byte{2}})
	if st := s.check("epoch"); st.Epoch == nil || st.Epoch.Revision != 2 {
		t.Fatalf("epoch %+v, want revision 2", st.Epoch)
	}

	// A drain that ended, then a revert of its prompt.
	s.add(messages.PromptPromoted{MessageIDs: []string{"m1"}}, messages.TurnStarted{AssistantMessageID: "am1", Agent: "build", Model: model})
	if st := s.check("mid-turn"); !slices.Equal(st.Turns, []string{"am1"}) {
		t.Fatalf("turns %v, want am1", st.Turns)
	}
	s.add(messages.TextEnded{AssistantMessageID: "am1", Text: "hi"}, messages.TurnEnded{AssistantMessageID: "am1", FinishReason: "stop"}, messages.Idle{})
	s.check("idle")
	m1 := s.message("m1")
	s.add(messages.RevertStaged{MessageID: "m1", BoundarySeq: m1.Seq, BoundaryIndex: m1.Index, Snapshot: "snap", Current: "cur", Files: []string{"a.txt"}})
	s.check("revert staged")
	s.add(messages.RevertCommitted{MessageID: "m1"})
	if st := s.check("revert committed"); st.Reverts.Open == nil || !st.Reverts.Open.Committed {
		t.Fatalf("reverts %+v, want m1's committed", st.Reverts)
	}

	// A drain over the revert, mid-turn: open calls (one pending, two
	// running), permission requests (one of a running call, one of a
	// call never recorded), a question.
	s.add(messages.RevertFinalized{}, messages.PromptPromoted{MessageIDs: []string{"m2"}},
		messages.TurnStarted{AssistantMessageID: "am2", Agent: "build", Model: model},
		messages.ToolInputStarted{AssistantMessageID: "am2", CallID: "c1", Tool: "bash"},
		messages.ToolCalled{AssistantMessageID: "am2", CallID: "c2", Tool: "bash", Input: []byte(`{"command":"ls"}`), Agent: "build"},
		messages.PermissionAsked{RequestID: "per1", AssistantMessageID: "am2", CallID: "c2", Action: "bash", Resources: []string{"ls"}},
		messages.PermissionAsked{RequestID: "per2", AssistantMessageID: "am2", CallID: "nope", Action: "bash"},
		messages.ToolCalled{AssistantMessageID: "am2", CallID: "c3", Tool: session.QuestionTool, Input: []byte(`{}`), Agent: "build"},
		messages.QuestionAsked{RequestID: "que1", AssistantMessageID: "am2", CallID: "c3", Questions: []messages.Question{{Question: "which?", Options: []messages.QuestionOption{{Label: "a"}}}}})
	st := s.check("open calls, permission requests, a question")
	if len(st.Calls) != 3 || !st.Calls[session.CallKey{AssistantMessageID: "am2", CallID: "c1"}] || len(st.Asks) != 1 || len(st.Questions) != 1 {
		t.Fatalf("calls %v asks %v questions %v, want c1 pending, c2 and c3 running, per1, que1", st.Calls, st.Asks, st.Questions)
	}
	// The call settles: its request is no longer of an open call.
	s.add(messages.ToolSucceeded{AssistantMessageID: "am2", CallID: "c2", Output: "ok"})
	if st := s.check("a call settled"); len(st.Asks) != 0 {
		t.Fatalf("asks %v, want none", st.Asks)
	}

	// The turn fails, the next one is left unfinished by a dead owner.
	s.add(messages.ToolFailed{AssistantMessageID: "am2", CallID: "c1", Error: session.InterruptedToolError},
		messages.TurnFailed{AssistantMessageID: "am2", ErrorKind: "provider", Message: "boom"},
		messages.TurnStarted{AssistantMessageID: "am3", Agent: "build", Model: model},
		messages.TextEnded{AssistantMessageID: "am3", Text: "half"})
	if st := s.check("unfinished turn"); !slices.Equal(st.Turns, []string{"am3"}) {
		t.Fatalf("turns %v, want am3", st.Turns)
	}
	s.add(messages.CompactionStarted{CompactionID: "cmp1"}, messages.CompactionEnded{CompactionID: "cmp1", Summary: "sum", RecentContext: "recent"})
	if st := s.check("compacted"); len(st.Turns) != 0 {
		t.Fatalf("turns %v behind the boundary", st.Turns)
	}
	s.add(messages.QuestionReplied{RequestID: "que1", Answers: [][]string{{"a"}}})
	s.check("question answered")
	s.add(messages.PromptAdmitted{MessageID: "m3", Prompt: messages.Prompt{Text: "three"}, Delivery: messages.Steer}, messages.Interrupted{Reason: "client"})
	if st := s.check("interrupted"); st.Row.Status != session.StatusIdle || len(st.Pending) != 1 || !st.Pending[0].Held {
		t.Fatalf("status %s pending %+v, want idle with m3 held", st.Row.Status, st.Pending)
	}
	s.add(messages.SessionDeleted{})
	s.check("deleted")
}

// TestLoadReadsTheStateAWorkloadFolds: on a random but valid workload
// over several sessions (every event type the projector knows), after
// every batch the session's loaded state equals the fold of its stream.
func TestLoadReadsTheStateAWorkloadFolds(t *testing.T) {
	ctx := context.Background()
	j := journaltest.Embedded(t)
	for seed := uint64(1); seed <= 3; seed++ {
		w := journaltest.New(seed, 4, fmt.Sprintf("w%d_", seed))
		for b := 0; b < 150; b++ {
			id, expected, batch := w.Next()
			last, err := j.Append(ctx, id, expected, 0, batch...)
			if err != nil {
				t.Fatalf("seed %d batch %d: %v", seed, b, err)
			}
			w.Done(id, last)
			if _, d := loadDiff(ctx, j, id); d != "" {
				t.Fatalf("seed %d batch %d, session %s at seq %d: %s", seed, b, id, last, d)
			}
		}
	}
}

// TestEndedReadsHowTheLastDrainEnded: a DrainFailed or an Interrupted
// just before the last Idle is how the drain ended; a normal end, or a
// stream too short, is not.
func TestEndedReadsHowTheLastDrainEnded(t *testing.T) {
	ctx := context.Background()
	s := &stream{t: t, j: journaltest.Embedded(t), id: "ses_ended"}
	ended := func() string {
		msg, kind, ok := Ended(ctx, s.j, s.id, s.last)
		return fmt.Sprintf("%v %q %q", ok, msg, kind)
	}
	s.add(messages.SessionCreated{Location: "/work/p", Agent: "build"})
	if got := ended(); got != `false "" ""` {
		t.Fatalf("one event: %s", got)
	}
	s.add(messages.PromptAdmitted{MessageID: "m1", Delivery: messages.Steer}, messages.PromptPromoted{MessageIDs: []string{"m1"}},
		messages.DrainFailed{Kind: "turn_limit", Message: "too many turns"}, messages.Idle{})
	if got := ended(); got != `true "too many turns" "turn_limit"` {
		t.Fatalf("failed: %s", got)
	}
	s.add(messages.PromptAdmitted{MessageID: "m2", Delivery: messages.Steer}, messages.PromptPromoted{MessageIDs: []string{"m2"}}, messages.Interrupted{}, messages.Idle{})
	if got := ended(); got != `true "interrupted" "interrupted"` {
		t.Fatalf("interrupted: %s", got)
	}
	s.add(messages.PromptAdmitted{MessageID: "m3", Delivery: messages.Steer}, messages.PromptPromoted{MessageIDs: []string{"m3"}}, messages.Idle{})
	if got := ended(); got != `false "" ""` {
		t.Fatalf("completed: %s", got)
	}
	s.add(messages.PromptAdmitted{MessageID: "m4", Delivery: messages.Steer}, messages.PromptPromoted{MessageIDs: []string{"m4"}}, messages.DrainFailed{Kind: "provider", Message: "x"})
	if got := ended(); got != `false "" ""` {
		t.Fatalf("no Idle yet: %s", got)
	}
}

// TestLoadReadsAForkAsItsEventsFold: a session created with a copied
// history (a fork of a compacted session: one HistoryCopied before the
// compaction, one from it on) loads as the fold of its events, and so
// does its history once a drain makes Load read it.
func TestLoadReadsAForkAsItsEventsFold(t *testing.T) {
	s := &stream{t: t, j: journaltest.Embedded(t), id: "ses_fork"}
	model := messages.ModelRef{Provider: "scripted", ID: "m1"}
	call := func(id string) messages.Part {
		return messages.Part{Kind: messages.PartTool, Tool: &messages.ToolPart{CallID: id, Tool: "bash", Agent: "build", Input: []byte(`{}`), State: messages.ToolStateCompleted, Output: "ok"}}
	}
	user := func(id, text string) messages.CopiedMessage {
		return messages.CopiedMessage{ID: id, Role: messages.RoleUser, Body: messages.Message{Prompt: &messages.Prompt{Text: text}, Delivery: messages.Steer}}
	}
	s.add(messages.SessionCreated{Location: "/work/p", Agent: "build", Model: model, Title: "t (fork #1)"},
		messages.HistoryCopied{From: "ses_src", Messages: []messages.CopiedMessage{user("msg_a", "one"),
			{ID: "msg_b", Role: messages.RoleAssistant, Body: messages.Message{Agent: "build", Model: model, Finished: true, FinishReason: "tool_calls",
				Parts: []messages.Part{call("c1"), call("c2"), {Kind: messages.PartText, Text: "done"}}}}}},
		messages.HistoryCopied{From: "ses_src", Messages: []messages.CopiedMessage{
			{ID: "cmp_c", Role: messages.RoleCompaction, Body: messages.Message{Text: "sum", RecentContext: "recent"}}, user("msg_d", "two")}})
	if st := s.check("forked"); st.Row.HistorySeq != 3 || st.Row.Status != session.StatusIdle {
		t.Fatalf("row %+v, want idle with the compaction's copy (seq 3) the boundary", st.Row)
	}
	s.add(messages.PromptAdmitted{MessageID: "m1", Prompt: messages.Prompt{Text: "three"}, Delivery: messages.Steer},
		messages.PromptPromoted{MessageIDs: []string{"m1"}}, messages.TurnStarted{AssistantMessageID: "am1", Agent: "build", Model: model})
	st := s.check("a drain of the fork")
	var ids []string
	for _, m := range st.History.Msgs {
		ids = append(ids, m.ID)
	}
	if want := []string{"cmp_c", "msg_d", "m1", "am1"}; !slices.Equal(ids, want) {
		t.Fatalf("history %v, want %v", ids, want)
	}
}
