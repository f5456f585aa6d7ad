package actors

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/sessionrt/sessionrt/actors/shell"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/journaltest"
)

// loadedState is what an activation keeps of the journal: the fields
// reload sets.
type loadedState struct {
	Exists  bool
	Sess    persistence.Session
	Seq     int64
	Pending []persistence.InboxEntry
	Epoch   *persistence.Epoch
	Hist    bool // the in-memory history is loaded
}

func stateOf(a actorView) loadedState {
	s := loadedState{Exists: a.State().Exists, Seq: a.Seq(), Epoch: journalEpoch(a), Hist: a.State().History.Loaded}
	if a.State().Exists {
		s.Sess = shell.Row(a.State())
	}
	s.Pending = journalInbox(a)
	return s
}

// journalInbox is the actor's pending inbox as the journal's rows show it.
func journalInbox(a actorView) []persistence.InboxEntry {
	var out []persistence.InboxEntry
	for _, p := range a.State().Pending {
		out = append(out, persistence.InboxEntry{SessionID: a.ID(), MessageID: p.MessageID, AdmittedSeq: p.AdmittedSeq, Delivery: p.Delivery, Prompt: p.Prompt, Held: p.Held})
	}
	return out
}

// journalEpoch is the actor's Context Epoch as the journal's row shows it.
func journalEpoch(a actorView) *persistence.Epoch {
	e := a.State().Epoch
	if e == nil {
		return nil
	}
	return &persistence.Epoch{Revision: e.Revision, Baseline: e.Baseline, Snapshot: e.Snapshot, Location: e.Location, BaselineSeq: e.BaselineSeq, UpdatedSeq: e.UpdatedSeq}
}

// reloaded is the state a reload from the journal gives, read here
// without the actor's code: Session, PendingInbox and Epoch.
func reloaded(t *testing.T, rt *runtime, id string) loadedState {
	t.Helper()
	ctx, j := context.Background(), rt.cfg.Journal
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

func (h *harness) detachedActor(id string) *shell.Detached {
	return shell.NewDetached(id, h.sessions.rt.deps)
}

// A session this actor creates is in memory exactly as a reload would find
// it, though create no longer reads it back.
func TestCreatedSessionStateIsTheReloadedState(t *testing.T) {
	h := newHarness(t, text("hi"))
	a := h.detachedActor("s-created")
	if err := a.Activate(); err != nil {
		t.Fatal(err)
	}
	if a.State().Exists || a.Seq() != 0 {
		t.Fatalf("a new session's activation: exists %v seq %d", a.State().Exists, a.Seq())
	}
	res, ok := a.Create(&Create{Location: h.loc}).(*Info)
	if !ok || !res.Created {
		t.Fatalf("create: %#v", res)
	}
	got, want := stateOf(a), reloaded(t, h.sessions.rt, a.ID())
	want.Hist = true // the fold of SessionCreated: a complete, empty history
	if !reflect.DeepEqual(got, want) || len(a.State().History.Msgs) != 0 {
		t.Fatalf("after create\n got %+v\nwant %+v", got, want)
	}
	if want.Sess.Status != persistence.StatusIdle || want.Seq != 1 || want.Sess.LastSeq != 1 {
		t.Fatalf("the reload itself looks wrong: %+v", want)
	}
	// The next command works from that state: the admission is at seq 2.
	rec, ok := a.Prompt(&Prompt{MessageID: "m1", Prompt: messages.Prompt{Text: "q"}, Delivery: messages.Queue}).(*Receipt)
	if !ok || rec.AdmittedSeq != 2 {
		t.Fatalf("prompt after create: %#v", rec)
	}
	got, want = stateOf(a), reloaded(t, h.sessions.rt, a.ID())
	want.Hist = true
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after the prompt\n got %+v\nwant %+v", got, want)
	}
}

// An existing session's activation (one statement fewer: the sessions row
// comes from the ownership transaction) loads what a reload does, after a
// restart and after another owner wrote it.
func TestActivationOfAnExistingSessionLoadsWhatAReloadDoes(t *testing.T) {
	h := newHarness(t, text("answer"))
	id := h.create("s-existing")
	h.ask(id, "first")
	h.prompt(id, "queued", "later", messages.Queue, false)
	h.restart()

	a := h.detachedActor(id)
	if err := a.Activate(); err != nil {
		t.Fatal(err)
	}
	got, want := stateOf(a), reloaded(t, h.sessions.rt, id)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after activation\n got %+v\nwant %+v", got, want)
	}
	if !got.Exists || got.Epoch == nil || len(got.Pending) != 1 || got.Seq != got.Sess.LastSeq || got.Seq < 5 {
		t.Fatalf("the scenario left too little to compare: %+v", got)
	}

	// Another owner appends; activating here again takes its ownership and
	// sees its event.
	b := h.detachedActor(id)
	if err := b.Activate(); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(messages.ModelSwitched{Model: messages.ModelRef{Provider: "p2", ID: "m2"}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Activate(); err != nil {
		t.Fatal(err)
	}
	got, want = stateOf(a), reloaded(t, h.sessions.rt, id)
	if !reflect.DeepEqual(got, want) || got.Sess.Model.ID != "m2" {
		t.Fatalf("after the other owner's append\n got %+v\nwant %+v", got, want)
	}
	if a.Ownership() <= b.Ownership() {
		t.Fatalf("ownership %d not above the other owner's %d", a.Ownership(), b.Ownership())
	}
}

// stateDiff compares, at a provider turn, what the actor keeps of the
// journal with what the journal holds ("" when equal), status included:
// the one fold keeps it as the projector does.
func stateDiff(ctx context.Context, j *persistence.Journal, a actorView) string {
	sess, err := j.Session(ctx, a.ID())
	if err != nil {
		return err.Error()
	}
	pending, err := j.PendingInbox(ctx, a.ID())
	if err != nil {
		return err.Error()
	}
	ep, ok, err := j.Epoch(ctx, a.ID())
	if err != nil {
		return err.Error()
	}
	if got := shell.Row(a.State()); !a.State().Exists || got != sess || a.Seq() != sess.LastSeq {
		return fmt.Sprintf("session %+v seq %d in memory, %+v in the journal", got, a.Seq(), sess)
	}
	if got := journalInbox(a); len(pending) != len(got) || (len(pending) > 0 && !reflect.DeepEqual(pending, got)) {
		return fmt.Sprintf("inbox %+v in memory, %+v in the journal", got, pending)
	}
	if got := journalEpoch(a); ok != (got != nil) || (ok && !reflect.DeepEqual(ep, *got)) {
		return fmt.Sprintf("context epoch %+v in memory, %+v (found %v) in the journal", got, ep, ok)
	}
	rv, err := j.Reverts(ctx, a.ID())
	if err != nil {
		return err.Error()
	}
	if !reflect.DeepEqual(journaltest.NormReverts(a.State().Reverts), journaltest.NormReverts(rv)) {
		return fmt.Sprintf("reverts %+v in memory, %+v in the journal", a.State().Reverts, rv)
	}
	return ""
}
