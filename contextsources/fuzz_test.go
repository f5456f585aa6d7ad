package contextsources

import (
	"testing"
)

// FuzzDecodeSnapshotThenReconcile: whatever the journal hands back, decoding and
// reconciling never panic, and what is encoded again decodes to the same bytes.
func FuzzDecodeSnapshotThenReconcile(f *testing.F) {
	f.Add([]byte(`{"version":1,"sources":{"a/x":{"value":"1","removal":"gone"}}}`))
	f.Add([]byte(`{"version":1,"sources":{"a/x":[1,2],"b/y":{"value":{"k":[1,null]}}}}`))
	f.Add([]byte(`{"version":1,"sources":null}`))
	f.Add([]byte(`nonsense`))
	sc := ctxOfF(f)
	obs := observe(sc)
	f.Fuzz(func(t *testing.T, b []byte) {
		snap, err := DecodeSnapshot(b)
		if err != nil {
			return
		}
		d := Reconcile(obs, snap, ReconcileOptions{})
		if d.Action == Updated && d.Message == "" {
			t.Fatal("update without a message")
		}
		enc, err := snap.Encode()
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		again, err := DecodeSnapshot(enc)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		enc2, _ := again.Encode()
		if string(enc) != string(enc2) {
			t.Fatalf("not stable:\n%s\n%s", enc, enc2)
		}
		_, _ = Replace(obs, snap, ReplaceOptions{})
	})
}

func ctxOfF(f *testing.F) SystemContext {
	a := strSource(f, "a/x", newCell("1"), true)
	b := strSource(f, "b/y", &cell{r: Unavailable[string](nil)}, true)
	sc, err := New(a, b)
	if err != nil {
		f.Fatal(err)
	}
	return sc
}
