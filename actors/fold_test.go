package actors

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sessionrt/sessionrt/actors/effect"
	"github.com/sessionrt/sessionrt/actors/shell"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/journaltest"
	"github.com/sessionrt/sessionrt/session"
)

// foldDiff replays every event of the session from seq 1 through
// session.State.Apply, the fold the actor advances its state with, and
// compares the result with the journal's projector: the sessions row, the
// pending inbox, the Context Epoch, the open question requests and ModelHistory ("" when equal). The
// harness runs it for every session at every checkReplay, so every
// scenario checks the fold against the projector.
func foldDiff(ctx context.Context, j *persistence.Journal, id string) string {
	st := session.NewState(id)
	var after int64
	for {
		evs, err := j.ReadEvents(ctx, id, after, 500)
		if err != nil {
			return err.Error()
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if err := st.Apply(e.Seq, e.Event); err != nil {
				return "fold: " + err.Error()
			}
			after = e.Seq
		}
	}
	a := turnView{id, st.Row.LastSeq, &st}
	sess, err := j.Session(ctx, id)
	if err != nil {
		return err.Error()
	}
	if got := shell.Row(a.State()); got != sess {
		return fmt.Sprintf("row %+v folded, %+v projected", got, sess)
	}
	pending, err := j.PendingInbox(ctx, id)
	if err != nil {
		return err.Error()
	}
	if got := journalInbox(a); len(got) != len(pending) || (len(got) > 0 && !reflect.DeepEqual(got, pending)) {
		return fmt.Sprintf("inbox %+v folded, %+v projected", got, pending)
	}
	ep, ok, err := j.Epoch(ctx, id)
	if err != nil {
		return err.Error()
	}
	if got := journalEpoch(a); ok != (got != nil) || (ok && !reflect.DeepEqual(*got, ep)) {
		return fmt.Sprintf("epoch %+v folded, %+v (found %v) projected", got, ep, ok)
	}
	rv, err := j.Reverts(ctx, id)
	if err != nil {
		return err.Error()
	}
	if !reflect.DeepEqual(journaltest.NormReverts(st.Reverts), journaltest.NormReverts(rv)) {
		return fmt.Sprintf("reverts %+v folded, %+v projected", st.Reverts, rv)
	}
	qs, err := effect.Questions(ctx, j, id)
	if err != nil {
		return err.Error()
	}
	if len(st.Questions) != len(qs) || (len(qs) > 0 && !reflect.DeepEqual(st.Questions, qs)) {
		return fmt.Sprintf("open questions %+v folded, %+v projected", st.Questions, qs)
	}
	want, err := j.ModelHistory(ctx, id)
	if err != nil {
		return err.Error()
	}
	if d := openDiff(ctx, j, id, &st, want); d != "" {
		return d
	}
	got := st.History.Msgs
	if !st.History.Complete {
		return "the folded history is not complete"
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d messages folded, %d projected: %q vs %q", len(got), len(want), renderHistory(got), renderHistory(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		gb, err1 := msgpack.Marshal(&g)
		wb, err2 := msgpack.Marshal(&w)
		if g.ID != w.ID || g.Seq != w.Seq || g.Index != w.Index || g.Role != w.Role || err1 != nil || err2 != nil || !bytes.Equal(gb, wb) {
			return fmt.Sprintf("message %d: %+v folded, %+v projected", i, g, w)
		}
	}
	return ""
}

// openDiff compares the open work the state folds (its calls, requests
// and turns, which Leftovers decides on) with the projector's: the tool
// calls pending or running, the pending permission requests of those
// calls, the unfinished assistant messages of ModelHistory.
func openDiff(ctx context.Context, j *persistence.Journal, id string, st *session.State, history []messages.Message) string {
	calls, err := j.ToolCalls(ctx, id, messages.ToolStatePending, messages.ToolStateRunning)
	if err != nil {
		return err.Error()
	}
	projected := map[session.CallKey]bool{}
	for _, c := range calls {
		projected[session.CallKey{AssistantMessageID: c.AssistantMessageID, CallID: c.CallID}] = c.State == messages.ToolStatePending
	}
	if len(st.Calls) != len(projected) || (len(projected) > 0 && !reflect.DeepEqual(st.Calls, projected)) {
		return fmt.Sprintf("open calls %v folded, %v projected", st.Calls, projected)
	}
	perms, err := j.PendingPermissions(ctx, id)
	if err != nil {
		return err.Error()
	}
	asks := map[string]session.CallKey{}
	for _, p := range perms {
		if k := (session.CallKey{AssistantMessageID: p.AssistantMessageID, CallID: p.CallID}); hasCall(projected, k) {
			asks[p.RequestID] = k
		}
	}
	if len(st.Asks) != len(asks) || (len(asks) > 0 && !reflect.DeepEqual(st.Asks, asks)) {
		return fmt.Sprintf("open permission requests %v folded, %v projected", st.Asks, asks)
	}
	var turns []string
	for _, m := range history {
		if m.Role == messages.RoleAssistant && !m.Finished {
			turns = append(turns, m.ID)
		}
	}
	if !slices.Equal(st.Turns, turns) {
		return fmt.Sprintf("unfinished turns %v folded, %v projected", st.Turns, turns)
	}
	return ""
}

func hasCall(m map[session.CallKey]bool, k session.CallKey) bool {
	_, ok := m[k]
	return ok
}
