package actors

import (
	"context"
	"fmt"
	"reflect"

	"github.com/sessionrt/sessionrt/actors/shell"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/journaltest"
)

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
