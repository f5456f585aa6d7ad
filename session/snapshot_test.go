package session

import (
	"slices"
	"testing"

	"github.com/sessionrt/sessionrt/contextsources"
)

func mustSnapshot(t testing.TB, doc string) contextsources.Snapshot {
	t.Helper()
	s, err := contextsources.DecodeSnapshot([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The snapshot the core encoded for an event is taken as is once that event's bytes are
// the epoch's; bytes it did not encode (equal or not) are decoded.
func TestEpochSnapshotAdoptsTheSnapshotItEncoded(t *testing.T) {
	c := &Core{}
	mine := mustSnapshot(t, `{"version":1,"sources":{"core/a":{"value":1}}}`)
	enc, err := c.encodeSnapshot(mine)
	if err != nil {
		t.Fatal(err)
	}
	// The stand-in says which path ran: decoding these bytes would give core/b.
	other := []byte(`{"version":1,"sources":{"core/b":{"value":2}}}`)
	c.snapshot.next.enc = other
	c.State.Epoch = &Epoch{Snapshot: other, UpdatedSeq: 3}
	if got := c.epochSnapshot().Keys(); !slices.Equal(got, []string{"core/a"}) {
		t.Fatalf("epoch of the encoded bytes: keys %v, want the encoded snapshot's", got)
	}
	c.State.Epoch = &Epoch{Snapshot: append([]byte(nil), other...), UpdatedSeq: 4}
	if got := c.epochSnapshot().Keys(); !slices.Equal(got, []string{"core/b"}) {
		t.Fatalf("epoch of a copy: keys %v, want the decoded ones", got)
	}
	c.State.Epoch = &Epoch{Snapshot: enc, UpdatedSeq: 5}
	if got := c.epochSnapshot().Keys(); !slices.Equal(got, []string{"core/a"}) {
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
// epoch: Reconcile needs the snapshot the core has just written.
func BenchmarkEpochSnapshotAfterEncode(b *testing.B) {
	snap := mustSnapshot(b, benchSnapshot)
	c := &Core{}
	b.ReportAllocs()
	for i := range b.N {
		enc, err := c.encodeSnapshot(snap)
		if err != nil {
			b.Fatal(err)
		}
		c.State.Epoch = &Epoch{Snapshot: enc, UpdatedSeq: int64(i + 1)}
		if len(c.epochSnapshot().Keys()) != 3 {
			b.Fatal("keys")
		}
	}
}
