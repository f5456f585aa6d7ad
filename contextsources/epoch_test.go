package contextsources

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

type srcState struct {
	key       string
	r         Result[string]
	removable bool
}

func ctxOf(t *testing.T, states []srcState) SystemContext {
	t.Helper()
	var srcs []Source
	for _, s := range states {
		srcs = append(srcs, strSource(t, s.key, &cell{r: s.r}, s.removable))
	}
	return mustNew(t, srcs...)
}

func p(k, v string) srcState             { return srcState{k, Present(v), true} }
func fixed(k, v string) srcState         { return srcState{k, Present(v), false} }
func absent(k string, rem bool) srcState { return srcState{k, Absent[string](), rem} }
func unavail(k string) srcState {
	return srcState{k, Unavailable[string](errors.New("offline")), true}
}

func TestReconcileRules(t *testing.T) {
	cases := []struct {
		name        string
		before      []srcState
		tamper      func([]byte) []byte // edits the stored snapshot document
		after       []srcState
		wantAction  Action
		wantMessage string
		wantChanges string
		wantKeys    string
	}{
		{name: "nothing changed",
			before: []srcState{p("a/x", "1"), p("b/y", "2")}, after: []srcState{p("a/x", "1"), p("b/y", "2")},
			wantAction: Unchanged, wantKeys: "a/x b/y"},
		{name: "S32 a changed source renders its newly effective value",
			before: []srcState{p("a/x", "1"), p("b/y", "2")}, after: []srcState{p("a/x", "1"), p("b/y", "3")},
			wantAction: Updated, wantMessage: "now b/y=3", wantChanges: "b/y:changed", wantKeys: "a/x b/y"},
		{name: "S33 two changes combine into one message in source order",
			before: []srcState{p("a/x", "1"), p("b/y", "2")}, after: []srcState{p("a/x", "9"), p("b/y", "8")},
			wantAction: Updated, wantMessage: "now a/x=9" + Separator + "now b/y=8",
			wantChanges: "a/x:changed b/y:changed", wantKeys: "a/x b/y"},
		{name: "S34 an absent removable source emits its stored removal text",
			before: []srcState{p("a/x", "1"), p("b/y", "2")}, after: []srcState{p("a/x", "1"), absent("b/y", true)},
			wantAction: Updated, wantMessage: "gone b/y (was 2)", wantChanges: "b/y:removed", wantKeys: "a/x"},
		{name: "S34 an unregistered source emits its stored removal text",
			before: []srcState{p("a/x", "1"), p("b/y", "2")}, after: []srcState{p("a/x", "1")},
			wantAction: Updated, wantMessage: "gone b/y (was 2)", wantChanges: "b/y:removed", wantKeys: "a/x"},
		{name: "S34 a newly registered source emits its baseline",
			before: []srcState{p("a/x", "1")}, after: []srcState{p("a/x", "1"), p("c/z", "new")},
			wantAction: Updated, wantMessage: "base c/z=new", wantChanges: "c/z:added", wantKeys: "a/x c/z"},
		{name: "a source absent at initialization announces itself when it appears",
			before: []srcState{p("a/x", "1"), absent("b/y", true)}, after: []srcState{p("a/x", "1"), p("b/y", "2")},
			wantAction: Updated, wantMessage: "base b/y=2", wantChanges: "b/y:added", wantKeys: "a/x b/y"},
		{name: "S35 an unavailable source emits nothing and keeps its value",
			before: []srcState{p("a/x", "1"), p("b/y", "2")}, after: []srcState{p("a/x", "1"), unavail("b/y")},
			wantAction: Unchanged, wantKeys: "a/x b/y"},
		{name: "an unavailable source never admitted stays omitted",
			before: []srcState{p("a/x", "1")}, after: []srcState{p("a/x", "1"), unavail("c/z")},
			wantAction: Unchanged, wantKeys: "a/x"},
		{name: "a non-removable absent source keeps what the model last saw",
			before: []srcState{fixed("a/x", "1")}, after: []srcState{absent("a/x", false)},
			wantAction: Unchanged, wantKeys: "a/x"},
		{name: "a non-removable unregistered source stays in the snapshot",
			before: []srcState{fixed("a/x", "1"), p("b/y", "2")}, after: []srcState{p("b/y", "2")},
			wantAction: Unchanged, wantKeys: "a/x b/y"},
		{name: "S36 a stored value that does not decode is re-announced",
			before:     []srcState{p("a/x", "1"), p("b/y", "2")},
			tamper:     func(b []byte) []byte { return bytes.Replace(b, []byte(`"value":"2"`), []byte(`"value":42`), 1) },
			after:      []srcState{p("a/x", "1"), p("b/y", "2")},
			wantAction: Updated, wantMessage: "base b/y=2", wantChanges: "b/y:reannounced", wantKeys: "a/x b/y"},
		{name: "S36 a stored entry that does not parse is re-announced, for that key only",
			before: []srcState{p("a/x", "1"), p("b/y", "2")},
			tamper: func(b []byte) []byte {
				return bytes.Replace(b, []byte(`{"value":"2","removal":"gone b/y (was 2)"}`), []byte(`[1,2]`), 1)
			},
			after:      []srcState{p("a/x", "1"), p("b/y", "2")},
			wantAction: Updated, wantMessage: "base b/y=2", wantChanges: "b/y:reannounced", wantKeys: "a/x b/y"},
		{name: "an equivalent stored encoding is not a change",
			before: []srcState{p("a/x", "1")},
			tamper: func(b []byte) []byte { return bytes.Replace(b, []byte(`"value":"1"`), []byte(`"value":"\u0031"`), 1) },
			after:  []srcState{p("a/x", "1")}, wantAction: Unchanged, wantKeys: "a/x"},
		{name: "removals of unregistered sources follow changes, in key order",
			before: []srcState{p("a/x", "1"), p("z/q", "2"), p("m/n", "3")}, after: []srcState{p("a/x", "5")},
			wantAction: Updated, wantMessage: "now a/x=5" + Separator + "gone m/n (was 3)" + Separator + "gone z/q (was 2)",
			wantChanges: "a/x:changed m/n:removed z/q:removed", wantKeys: "a/x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := mustInit(t, ctxOf(t, tc.before))
			stored, err := g.Snapshot.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if tc.tamper != nil {
				tampered := tc.tamper(stored)
				if bytes.Equal(tampered, stored) {
					t.Fatalf("tamper did not apply to %s", stored)
				}
				stored = tampered
			}
			snap, err := DecodeSnapshot(stored)
			if err != nil {
				t.Fatal(err)
			}
			d := Reconcile(observe(ctxOf(t, tc.after)), snap, ReconcileOptions{})
			if d.Action != tc.wantAction {
				t.Fatalf("action %v, want %v (message %q)", d.Action, tc.wantAction, d.Message)
			}
			if d.Message != tc.wantMessage {
				t.Fatalf("message %q, want %q", d.Message, tc.wantMessage)
			}
			var ch []string
			for _, c := range d.Changes {
				ch = append(ch, c.Key+":"+c.Kind.String())
			}
			if got := strings.Join(ch, " "); got != tc.wantChanges {
				t.Fatalf("changes %q, want %q", got, tc.wantChanges)
			}
			if got := strings.Join(d.Snapshot.Keys(), " "); got != tc.wantKeys {
				t.Fatalf("snapshot keys %q, want %q", got, tc.wantKeys)
			}
			// Admitting the update makes the same observation unchanged (no repeats).
			again := Reconcile(observe(ctxOf(t, tc.after)), roundTrip(t, d.Snapshot), ReconcileOptions{})
			if again.Action != Unchanged {
				t.Fatalf("second reconcile %v %q, want unchanged", again.Action, again.Message)
			}
		})
	}
}

func TestS31_UnavailableFirstContextBlocksThenRetrySucceeds(t *testing.T) {
	c := &cell{r: Unavailable[string](errors.New("git busy"))}
	sc := mustNew(t, strSource(t, "core/env", newCell("linux"), false), strSource(t, "core/git", c, true))
	_, err := Initialize(observe(sc))
	var be *BlockedError
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &be) || len(be.Keys) != 1 || be.Keys[0] != "core/git" {
		t.Fatalf("first Initialize: %v", err)
	}
	if !strings.Contains(err.Error(), "git busy") {
		t.Fatalf("error does not say why: %v", err)
	}
	c.set(Present("clean"))
	g, err := Initialize(observe(sc))
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if g.Baseline != "base core/env=linux"+Separator+"base core/git=clean" {
		t.Fatalf("baseline %q", g.Baseline)
	}
}

func TestInitializeLeavesAbsentSourcesOut(t *testing.T) {
	g := mustInit(t, ctxOf(t, []srcState{p("a/x", "1"), absent("b/y", true), p("c/z", "3")}))
	if g.Baseline != "base a/x=1"+Separator+"base c/z=3" {
		t.Fatalf("baseline %q", g.Baseline)
	}
	if got := strings.Join(g.Snapshot.Keys(), " "); got != "a/x c/z" {
		t.Fatalf("keys %q", got)
	}
	if r, ok := g.Snapshot.Removal("a/x"); !ok || r != "gone a/x (was 1)" {
		t.Fatalf("pre-rendered removal %q %v", r, ok)
	}
	if _, ok := g.Snapshot.Removal("fixed/none"); ok {
		t.Fatal("removal for unknown key")
	}
}

func TestS35_UnavailableKeepsLastValueUntilItLoadsAgain(t *testing.T) {
	c := newCell("v1")
	sc := mustNew(t, strSource(t, "a/x", c, true))
	g := mustInit(t, sc)
	c.set(Unavailable[string](errors.New("timeout")))
	d := Reconcile(observe(sc), g.Snapshot, ReconcileOptions{})
	if d.Action != Unchanged {
		t.Fatalf("unavailable: %v %q", d.Action, d.Message)
	}
	if v, _ := d.Snapshot.Value("a/x"); string(v) != `"v1"` {
		t.Fatalf("kept value %s", v)
	}
	c.set(Present("v1"))
	if d := Reconcile(observe(sc), d.Snapshot, ReconcileOptions{}); d.Action != Unchanged {
		t.Fatalf("back with same value: %v %q", d.Action, d.Message)
	}
	c.set(Present("v2"))
	if d := Reconcile(observe(sc), d.Snapshot, ReconcileOptions{}); d.Action != Updated || d.Message != "now a/x=v2" {
		t.Fatalf("back with new value: %v %q", d.Action, d.Message)
	}
}

func TestS37_ReplaceAfterCompactionRendersFreshBaselineFromCurrentContext(t *testing.T) {
	c := newCell("v1")
	sc := mustNew(t, strSource(t, "a/x", c, true), strSource(t, "b/y", newCell("same"), false))
	g := mustInit(t, sc)
	c.set(Present("v2"))
	upd := Reconcile(observe(sc), g.Snapshot, ReconcileOptions{})
	if upd.Action != Updated {
		t.Fatalf("update %v", upd.Action)
	}
	d := Reconcile(observe(sc), upd.Snapshot, ReconcileOptions{ReplaceBaseline: true})
	if d.Action != ReplacementReady {
		t.Fatalf("action %v", d.Action)
	}
	if want := "base a/x=v2" + Separator + "base b/y=same"; d.Generation.Baseline != want {
		t.Fatalf("fresh baseline %q, want %q", d.Generation.Baseline, want)
	}
	if Reconcile(observe(sc), d.Generation.Snapshot, ReconcileOptions{}).Action != Unchanged {
		t.Fatal("fresh generation is not in step with current context")
	}
}

func TestReplaceDropsSourcesNoLongerRegistered(t *testing.T) {
	g := mustInit(t, ctxOf(t, []srcState{p("a/x", "1"), p("b/y", "2")}))
	ng, err := Replace(observe(ctxOf(t, []srcState{p("a/x", "1")})), g.Snapshot, ReplaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ng.Baseline != "base a/x=1" || strings.Join(ng.Snapshot.Keys(), " ") != "a/x" {
		t.Fatalf("generation %q %v", ng.Baseline, ng.Snapshot.Keys())
	}
}

func TestDecodeSnapshotRejectsMalformedDocuments(t *testing.T) {
	for _, in := range []string{`not json`, `[]`, `{"version":2,"sources":{}}`} {
		s, err := DecodeSnapshot([]byte(in))
		if !errors.Is(err, ErrCorruptSnapshot) || s.Len() != 0 {
			t.Fatalf("DecodeSnapshot(%q): %v, len %d", in, err, s.Len())
		}
	}
	if s, err := DecodeSnapshot(nil); err != nil || s.Len() != 0 {
		t.Fatalf("empty input: %v", err)
	}
	// A corrupt entry is kept byte for byte so nothing is lost.
	in := `{"version":1,"sources":{"a/x":[1,2],"b/y":{"value":"ok"}}}`
	s, err := DecodeSnapshot([]byte(in))
	if err != nil || !s.Corrupt("a/x") || s.Corrupt("b/y") {
		t.Fatalf("per-key corruption: %v", err)
	}
	if out, _ := s.Encode(); string(out) != in {
		t.Fatalf("re-encoded %s, want %s", out, in)
	}
}
