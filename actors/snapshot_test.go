package actors

import (
	"slices"
	"testing"

	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/session"
)

func mustSnapshot(t testing.TB, doc string) contextsources.Snapshot {
	t.Helper()
	s, err := contextsources.DecodeSnapshot([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The snapshot the actor encoded for an event is taken as is once that event's bytes are
// the epoch's; bytes it did not encode (equal or not) are decoded.
func TestEpochSnapshotAdoptsTheSnapshotItEncoded(t *testing.T) {
	a := &sessionActor{}
	mine := mustSnapshot(t, `{"version":1,"sources":{"core/a":{"value":1}}}`)
	enc, err := a.encodeSnapshot(mine)
	if err != nil {
		t.Fatal(err)
	}
	// The stand-in says which path ran: decoding these bytes would give core/b.
	other := []byte(`{"version":1,"sources":{"core/b":{"value":2}}}`)
	a.snapshot.next.enc = other
	a.core.State.Epoch = &session.Epoch{Snapshot: other, UpdatedSeq: 3}
	if got := a.epochSnapshot().Keys(); !slices.Equal(got, []string{"core/a"}) {
		t.Fatalf("epoch of the encoded bytes: keys %v, want the encoded snapshot's", got)
	}
	a.core.State.Epoch = &session.Epoch{Snapshot: append([]byte(nil), other...), UpdatedSeq: 4}
	if got := a.epochSnapshot().Keys(); !slices.Equal(got, []string{"core/b"}) {
		t.Fatalf("epoch of a copy: keys %v, want the decoded ones", got)
	}
	a.core.State.Epoch = &session.Epoch{Snapshot: enc, UpdatedSeq: 5}
	if got := a.epochSnapshot().Keys(); !slices.Equal(got, []string{"core/a"}) {
		t.Fatalf("keys %v", got)
	}
}

// benchSnapshot is a snapshot like the built-in sources leave: environment facts, date
// and one instructions file.
const benchSnapshot = `{"version":1,"sources":{` +
	`"core/environment":{"value":{"workingDirectory":"/home/user/src/project","projectRoot":"/home/user/src/project","gitRepository":true,"platform":"linux/amd64","os":"Debian GNU/Linux 13 (trixie)","shell":"/bin/bash"}},` +
	`"core/date":{"value":"2026-11-26"},` +
	`"core/instructions":{"value":{"files":[{"path":"/home/user/src/project/AGENTS.md","scope":"project","content":"Run the tests before you commit. Keep functions small."}]},"removal":"All previously loaded AGENTS.md instructions no longer apply."}}}`

// BenchmarkEpochSnapshotAfterEncode is the boundary after a session initialized its
// epoch: Reconcile needs the snapshot the actor has just written.
func BenchmarkEpochSnapshotAfterEncode(b *testing.B) {
	snap := mustSnapshot(b, benchSnapshot)
	a := &sessionActor{}
	b.ReportAllocs()
	for i := range b.N {
		enc, err := a.encodeSnapshot(snap)
		if err != nil {
			b.Fatal(err)
		}
		a.core.State.Epoch = &session.Epoch{Snapshot: enc, UpdatedSeq: int64(i + 1)}
		if len(a.epochSnapshot().Keys()) != 3 {
			b.Fatal("keys")
		}
	}
}
