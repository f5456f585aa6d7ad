package effect

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/journaltest"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

// port is an activation's Journal of session id on j, counting its appends
// and history loads, recording into its own metrics registry.
func port(t *testing.T, j *persistence.Journal, id string) (*Journal, *metrics.Registry) {
	t.Helper()
	reg := metrics.NewRegistry()
	m, err := metrics.NewRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	return &Journal{Ctx: context.Background(), J: j, ID: id, Owner: "test", Metrics: m, Appends: new(atomic.Int64), HistoryLoads: new(atomic.Int64)}, reg
}

func metricsText(t *testing.T, reg *metrics.Registry) string {
	t.Helper()
	var b strings.Builder
	if err := reg.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// fault is err's JournalFault, failing the test when err is not a
// JournalError.
func fault(t *testing.T, err error) JournalFault {
	t.Helper()
	var je *JournalError
	if !errors.As(err, &je) {
		t.Fatalf("%v (%T) is not a JournalError", err, err)
	}
	return je.Fault
}

var created = messages.SessionCreated{Location: "/work/p", Agent: "build", Model: messages.ModelRef{Provider: "scripted", ID: "m1"}, Title: "t"}

// loadedState is what an activation keeps of the journal, as the journal's
// rows show it.
type loadedState struct {
	Exists  bool
	Sess    persistence.Session
	Seq     int64
	Pending []persistence.InboxEntry
	Epoch   *persistence.Epoch
	Hist    bool // the in-memory history is loaded
}

func stateOf(p *Journal, st *session.State) loadedState {
	s := loadedState{Exists: st.Exists, Seq: p.Seq(), Hist: st.History.Loaded}
	if st.Exists {
		r := st.Row
		s.Sess = persistence.Session{ID: r.ID, Location: r.Location, Agent: r.Agent, Model: r.Model, Title: r.Title, Status: persistence.Status(r.Status),
			CreatedSeq: r.CreatedSeq, HistorySeq: r.HistorySeq, LastSeq: r.LastSeq}
	}
	for _, e := range st.Pending {
		s.Pending = append(s.Pending, persistence.InboxEntry{SessionID: p.ID, MessageID: e.MessageID, AdmittedSeq: e.AdmittedSeq, Delivery: e.Delivery, Prompt: e.Prompt, Held: e.Held})
	}
	if e := st.Epoch; e != nil {
		s.Epoch = &persistence.Epoch{Revision: e.Revision, Baseline: e.Baseline, Snapshot: e.Snapshot, Location: e.Location, BaselineSeq: e.BaselineSeq, UpdatedSeq: e.UpdatedSeq}
	}
	return s
}

// reloaded is the state a reload from the journal gives, read here
// without the port's code: Session, PendingInbox and Epoch.
func reloaded(t *testing.T, j *persistence.Journal, id string) loadedState {
	t.Helper()
	ctx := context.Background()
	sess, err := j.Session(ctx, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return loadedState{}
	} else if err != nil {
		t.Fatal(err)
	}
	s := loadedState{Exists: true, Sess: sess, Seq: sess.LastSeq}
	if s.Pending, err = j.PendingInbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	if len(s.Pending) == 0 {
		s.Pending = nil
	}
	ep, ok, err := j.Epoch(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		s.Epoch = &ep
	}
	return s
}

// A fork's activation creates the session with its copied history: in
// memory as the fold of those events, as a reload finds it.
func TestCreatedForkStateIsTheReloadedState(t *testing.T) {
	j := journaltest.Embedded(t)
	p, _ := port(t, j, "s-fork")
	if _, err := p.Acquire(); err != nil {
		t.Fatal(err)
	}
	copied := messages.HistoryCopied{From: "s0", Messages: []messages.CopiedMessage{
		{ID: "u1", Role: messages.RoleUser, Body: messages.Message{Prompt: &messages.Prompt{Text: "one"}}}}}
	st, ok, err := p.Create(created, copied)
	if err != nil || !ok {
		t.Fatalf("create: created %v, %v", ok, err)
	}
	got, want := stateOf(p, &st), reloaded(t, j, p.ID)
	want.Hist = true
	hist, _ := j.ModelHistory(context.Background(), p.ID)
	if !reflect.DeepEqual(got, want) || want.Seq != 2 || len(hist) != 1 || !reflect.DeepEqual(st.History.Msgs, hist) {
		t.Fatalf("after create\n got %+v %+v\nwant %+v %+v", got, st.History.Msgs, want, hist)
	}
}

// A session an activation creates is in memory exactly as a reload would
// find it, though Create does not read it back; the next admission is
// written after it.
func TestCreatedSessionStateIsTheReloadedState(t *testing.T) {
	j := journaltest.Embedded(t)
	p, _ := port(t, j, "s-created")
	st, err := p.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	if st.Exists || p.Seq() != 0 || p.Epoch() == 0 {
		t.Fatalf("a new session's activation: exists %v seq %d epoch %d", st.Exists, p.Seq(), p.Epoch())
	}
	st, ok, err := p.Create(created)
	if err != nil || !ok {
		t.Fatalf("create: created %v, %v", ok, err)
	}
	got, want := stateOf(p, &st), reloaded(t, j, p.ID)
	want.Hist = true // the fold of SessionCreated: a complete, empty history
	if !reflect.DeepEqual(got, want) || len(st.History.Msgs) != 0 {
		t.Fatalf("after create\n got %+v\nwant %+v", got, want)
	}
	if want.Sess.Status != persistence.StatusIdle || want.Seq != 1 || want.Sess.LastSeq != 1 {
		t.Fatalf("the reload itself looks wrong: %+v", want)
	}
	// The next command works from that state: the admission is at seq 2,
	// and its fold is what a reload reads.
	ev := messages.PromptAdmitted{MessageID: "m1", Prompt: messages.Prompt{Text: "q"}, Delivery: messages.Queue}
	rec, err := p.AdmitPrompt(ev, 0)
	if err != nil || rec.AdmittedSeq != 2 || p.Seq() != 2 {
		t.Fatalf("prompt after create: %+v seq %d, %v", rec, p.Seq(), err)
	}
	if err := st.Apply(rec.AdmittedSeq, ev); err != nil {
		t.Fatal(err)
	}
	got, want = stateOf(p, &st), reloaded(t, j, p.ID)
	want.Hist = true
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after the prompt\n got %+v\nwant %+v", got, want)
	}

	// A second create of the ID creates nothing and reads the session.
	q, _ := port(t, j, p.ID)
	if _, err := q.Acquire(); err != nil {
		t.Fatal(err)
	}
	again, ok, err := q.Create(created)
	if err != nil || ok || !reflect.DeepEqual(stateOf(q, &again), reloaded(t, j, p.ID)) {
		t.Fatalf("a second create: created %v, %v, %+v", ok, err, stateOf(q, &again))
	}
}

// An existing session's activation (the sessions row comes from the
// ownership transaction) loads what a reload does, after a restart and
// after another owner wrote it; the later acquire's epoch is above.
func TestActivationOfAnExistingSessionLoadsWhatAReloadDoes(t *testing.T) {
	j := journaltest.Embedded(t)
	id := "s-existing"
	s := &stream{t: t, j: j, id: id}
	s.add(created)
	s.add(messages.PromptAdmitted{MessageID: "m1", Prompt: messages.Prompt{Text: "first"}, Delivery: messages.Steer},
		messages.ContextEpochInitialized{Revision: 1, Baseline: "base\n", Snapshot: []byte{1}, Location: "/work/p"},
		messages.PromptPromoted{MessageIDs: []string{"m1"}}, messages.TurnStarted{AssistantMessageID: "am1", Agent: "build", Model: created.Model},
		messages.TextEnded{AssistantMessageID: "am1", Text: "answer"}, messages.TurnEnded{AssistantMessageID: "am1", FinishReason: "stop"}, messages.Idle{})
	s.add(messages.PromptAdmitted{MessageID: "m2", Prompt: messages.Prompt{Text: "later"}, Delivery: messages.Queue})

	a, _ := port(t, j, id)
	st, err := a.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	got, want := stateOf(a, &st), reloaded(t, j, id)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after activation\n got %+v\nwant %+v", got, want)
	}
	if !got.Exists || got.Epoch == nil || len(got.Pending) != 1 || got.Seq != got.Sess.LastSeq || got.Seq < 5 {
		t.Fatalf("the scenario left too little to compare: %+v", got)
	}

	// Another owner appends; activating here again takes its ownership and
	// sees its event.
	b, _ := port(t, j, id)
	if _, err := b.Acquire(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(messages.ModelSwitched{Model: messages.ModelRef{Provider: "p2", ID: "m2"}}); err != nil {
		t.Fatal(err)
	}
	if st, err = a.Acquire(); err != nil {
		t.Fatal(err)
	}
	got, want = stateOf(a, &st), reloaded(t, j, id)
	if !reflect.DeepEqual(got, want) || got.Sess.Model.ID != "m2" {
		t.Fatalf("after the other owner's append\n got %+v\nwant %+v", got, want)
	}
	if a.Epoch() <= b.Epoch() {
		t.Fatalf("ownership %d not above the other owner's %d", a.Epoch(), b.Epoch())
	}
}

// An append advances the last seq and is counted and measured; one that
// another activation fenced is classified stale, leaves the last seq
// alone and is counted as fenced; so is one whose seq another wrote.
func TestAppendsAreFencedByTheOwnership(t *testing.T) {
	j := journaltest.Embedded(t)
	a, reg := port(t, j, "s-append")
	if _, err := a.Acquire(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Create(created); err != nil {
		t.Fatal(err)
	}
	first, err := a.Append(messages.SessionRenamed{Title: "one"}, messages.SessionRenamed{Title: "two"})
	if err != nil || first != 2 || a.Seq() != 3 || a.Appends.Load() != 1 {
		t.Fatalf("append: first %d seq %d appends %d, %v", first, a.Seq(), a.Appends.Load(), err)
	}
	if m := metricsText(t, reg); !strings.Contains(m, metrics.NameJournalAppend+"_count 1") || !strings.Contains(m, metrics.NameJournalEvents+"_sum 2") {
		t.Fatalf("the append is not measured:\n%s", m)
	}
	if first, err := a.Append(); err != nil || first != 4 || a.Appends.Load() != 1 {
		t.Fatalf("an empty append writes nothing: first %d appends %d, %v", first, a.Appends.Load(), err)
	}

	b, _ := port(t, j, a.ID)
	if _, err := b.Acquire(); err != nil {
		t.Fatal(err)
	}
	_, err = a.Append(messages.SessionRenamed{Title: "fenced"})
	if f := fault(t, err); f != JournalStale || !errors.Is(err, persistence.ErrFenced) || !strings.Contains(err.Error(), "ownership moved to another activation") || a.Seq() != 3 || a.Appends.Load() != 1 {
		t.Fatalf("a fenced append: fault %d seq %d appends %d, %v", f, a.Seq(), a.Appends.Load(), err)
	}
	if m := metricsText(t, reg); !strings.Contains(m, metrics.NameJournalFenced+" 1") || !strings.Contains(m, metrics.NameJournalAppend+"_count 2") {
		t.Fatalf("the fenced append is not counted:\n%s", m)
	}

	// b writes; a stale seq at b's own epoch (a second port of b's) conflicts.
	if _, err := b.Append(messages.SessionRenamed{Title: "b"}); err != nil {
		t.Fatal(err)
	}
	c := *b
	c.seq--
	if _, err := c.Append(messages.SessionRenamed{Title: "stale"}); fault(t, err) != JournalStale || !errors.Is(err, persistence.ErrConflict) || c.Seq() != b.Seq()-1 {
		t.Fatalf("a conflicting append: seq %d, %v", c.Seq(), err)
	}
}

// An admission is idempotent by message ID: a retry is a duplicate that
// writes nothing, the same ID with another prompt is refused as a
// duplicate, and a full inbox as full.
func TestAdmissionsAreClassified(t *testing.T) {
	j := journaltest.Embedded(t)
	p, _ := port(t, j, "s-admit")
	if _, err := p.Acquire(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Create(created); err != nil {
		t.Fatal(err)
	}
	ev := messages.PromptAdmitted{MessageID: "m1", Prompt: messages.Prompt{Text: "q"}, Delivery: messages.Queue}
	if rec, err := p.AdmitPrompt(ev, 1); err != nil || rec.Duplicate || rec.AdmittedSeq != 2 {
		t.Fatalf("admit: %+v, %v", rec, err)
	}
	rec, err := p.AdmitPrompt(ev, 1)
	if err != nil || !rec.Duplicate || rec.AdmittedSeq != 2 || p.Seq() != 2 {
		t.Fatalf("a retry: %+v seq %d, %v", rec, p.Seq(), err)
	}
	other := ev
	other.Prompt.Text = "other"
	if _, err := p.AdmitPrompt(other, 1); fault(t, err) != JournalDuplicate || !errors.Is(err, persistence.ErrPromptConflict) || p.Seq() != 2 {
		t.Fatalf("the ID with another prompt: seq %d, %v", p.Seq(), err)
	}
	if _, err := p.AdmitPrompt(messages.PromptAdmitted{MessageID: "m2", Prompt: messages.Prompt{Text: "q"}, Delivery: messages.Queue}, 1); fault(t, err) != JournalFull || p.Seq() != 2 {
		t.Fatalf("past the limit: seq %d, %v", p.Seq(), err)
	}
}

// A deleted session's ID is not reused: its create is refused as a
// duplicate.
func TestCreateOfADeletedSessionIsRefused(t *testing.T) {
	j := journaltest.Embedded(t)
	p, _ := port(t, j, "s-deleted")
	if _, err := p.Acquire(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Create(created); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(messages.SessionDeleted{}); err != nil {
		t.Fatal(err)
	}
	q, _ := port(t, j, p.ID)
	st, err := q.Acquire()
	if err != nil || st.Exists {
		t.Fatalf("a deleted session's activation: exists %v, %v", st.Exists, err)
	}
	_, ok, err := q.Create(created)
	if fault(t, err) != JournalDuplicate || ok || !errors.Is(err, persistence.ErrDeleted) || !strings.Contains(err.Error(), "cannot be reused") {
		t.Fatalf("create of a deleted session: created %v, %v", ok, err)
	}
}

// A write the journal itself fails (a full disk) is classified failed, so
// the activation waits for the journal; the last seq stays, and once the
// journal heals the same append goes through.
func TestJournalFailuresAreClassifiedFailed(t *testing.T) {
	j, faults := journaltest.EmbeddedWithFaults(t)
	p, _ := port(t, j, "s-failed")
	if _, err := p.Acquire(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Create(created); err != nil {
		t.Fatal(err)
	}
	faults.FailWrites(nil)
	if _, err := p.Append(messages.SessionRenamed{Title: "x"}); fault(t, err) != JournalFailed || p.Seq() != 1 {
		t.Fatalf("append on a full disk: seq %d, %v", p.Seq(), err)
	}
	if _, err := p.AdmitPrompt(messages.PromptAdmitted{MessageID: "m1", Prompt: messages.Prompt{Text: "q"}, Delivery: messages.Queue}, 0); fault(t, err) != JournalFailed {
		t.Fatalf("admission on a full disk: %v", err)
	}
	q, _ := port(t, j, p.ID)
	if _, err := q.Acquire(); fault(t, err) != JournalFailed || !strings.Contains(err.Error(), "acquire") {
		t.Fatalf("acquire on a full disk: %v", err)
	}
	faults.Heal()
	if _, err := p.Append(messages.SessionRenamed{Title: "x"}); err != nil || p.Seq() != 2 {
		t.Fatalf("append once healed: seq %d, %v", p.Seq(), err)
	}
	// A cancelled process's call is refused, not failed: nobody waits.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.Ctx = ctx
	if _, err := p.Append(messages.SessionRenamed{Title: "y"}); fault(t, err) != JournalRefused {
		t.Fatalf("append after the process stopped: %v", err)
	}
}

// The activation's reads are its session's: a message's position (nil for
// one the session lacks), its events, how its last drain ended.
func TestReadsAreTheSessions(t *testing.T) {
	j := journaltest.Embedded(t)
	s := &stream{t: t, j: j, id: "s-reads"}
	s.add(created, messages.PromptAdmitted{MessageID: "m1", Prompt: messages.Prompt{Text: "q"}, Delivery: messages.Steer},
		messages.PromptPromoted{MessageIDs: []string{"m1"}}, messages.DrainFailed{Kind: "provider", Message: "boom"}, messages.Idle{})
	p, _ := port(t, j, s.id)
	if _, err := p.Acquire(); err != nil {
		t.Fatal(err)
	}
	at, err := p.Message("m1")
	if want := s.message("m1"); err != nil || at == nil || at.Seq != want.Seq || at.Index != want.Index || at.Role != messages.RoleUser {
		t.Fatalf("m1 at %+v, %v", at, err)
	}
	if at, err := p.Message("nope"); at != nil || err != nil {
		t.Fatalf("an unknown message at %+v, %v", at, err)
	}
	if evs, err := p.Events(1, 2); err != nil || len(evs) != 2 || evs[0].Seq != 2 {
		t.Fatalf("events after 1: %+v, %v", evs, err)
	}
	if msg, kind, ok := p.Ended(); !ok || msg != "boom" || kind != "provider" {
		t.Fatalf("ended: %q %q %v", msg, kind, ok)
	}
}
