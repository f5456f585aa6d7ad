package effect

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/render"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors"
)

// testAgent serves one model with prov and the given limits; any other
// model has no provider.
func testAgent(prov provider.Provider, lim session.Limits) Agent {
	return Agent{
		Provider: func(m messages.ModelRef) (provider.Provider, error) {
			if m.ID != "test" {
				return nil, errors.New("no provider for " + m.ID)
			}
			return prov, nil
		},
		Limits: func(messages.ModelRef) session.Limits { return lim },
	}
}

// TestBuiltTurnIsTheCoresTurnBuilt: a turn built with the drain's agent
// is handed to the core (at once, without snapshots) with its model's
// limits and its request's size, then to the stream once; a model without
// a provider builds nothing and asks for no history, and a history that
// cannot be read builds nothing either: the drain ends; no turn built is
// an internal error, not a panic.
func TestBuiltTurnIsTheCoresTurnBuilt(t *testing.T) {
	prov := scriptedProvider(t)
	x := &Drain{Agent: testAgent(prov, session.Limits{Window: 1000, Output: 100})}
	x.Agent.Request.Controls.MaxOutputTokens = 50
	model := messages.ModelRef{Provider: scripted.Kind, ID: "test"}
	history := []messages.Message{{ID: "m1", Role: messages.RoleUser, Text: "hi"}}
	in, ok := x.StartTurn("build", render.Turn{Model: model, Baseline: "<ctx>"}, func() ([]messages.Message, error) { return history, nil }).(session.TurnBuilt)
	if !ok || in.Started.AssistantMessageID == "" || in.Started.Agent != "build" || in.Started.Model != model || in.Started.Snapshot != "" ||
		in.Limits != (session.Limits{Window: 1000, Output: 100}) || in.MaxOutput != 50 || in.Estimate == 0 {
		t.Fatalf("TurnBuilt %+v", in)
	}
	b := x.takeBuilt()
	if b == nil || b.Prov != prov || b.Started.AssistantMessageID != in.Started.AssistantMessageID || b.Started.Snapshot != "" ||
		len(b.Turn.History) != 1 || b.Req.Controls.MaxOutputTokens != 50 || x.takeBuilt() != nil {
		t.Fatalf("built %+v, want the turn once", b)
	}
	if in, ok := x.turnBuilt("").(session.Abort); !ok || in.Outcome.Kind != session.Internal {
		t.Fatalf("%#v, want an internal error without a built turn", in)
	}

	in2 := x.StartTurn("build", render.Turn{Model: messages.ModelRef{ID: "gone"}}, func() ([]messages.Message, error) {
		t.Fatal("history read for a model without a provider")
		return nil, nil
	})
	if out, ok := in2.(session.Abort); !ok || out.Outcome.Kind != session.Model || x.Built() != nil {
		t.Fatalf("%#v, want the drain's end with the model's error", in2)
	}
	in2 = x.StartTurn("build", render.Turn{Model: model}, func() ([]messages.Message, error) { return nil, errors.New("journal down") })
	if out, ok := in2.(session.Abort); !ok || out.Outcome != (session.Outcome{Kind: session.Internal, Err: "load history: journal down"}) || x.Built() != nil {
		t.Fatalf("%#v, want the drain's end with the history's error", in2)
	}
}

// TestTurnSnapshotIsTheTurnBuilts: the snapshot of the drain's Location,
// taken off the mailbox, comes back as the built turn's TurnBuilt with it
// (the drain waits for it meanwhile; another drain's result changes
// nothing); a snapshot that panicked is logged, and the turn goes on
// without one.
func TestTurnSnapshotIsTheTurnBuilts(t *testing.T) {
	var log bytes.Buffer
	ch := make(posted, 1)
	st, loc := openStore(t), t.TempDir()
	put(t, loc, map[string]string{"a.txt": "a"})
	x := &Drain{Token: 4, Session: "ses_1", Location: loc, Post: ch.post, Snapshots: func(string) (Snapshots, error) { return st, nil },
		Log: slog.New(slog.NewTextHandler(&log, nil)), Agent: testAgent(scriptedProvider(t), session.Limits{})}
	model := messages.ModelRef{Provider: scripted.Kind, ID: "test"}
	if in := x.StartTurn("build", render.Turn{Model: model}, func() ([]messages.Message, error) { return nil, nil }); in != nil {
		t.Fatalf("started %#v, want its snapshot taken first", in)
	}
	if !x.Busy() {
		t.Fatal("the drain does not wait for its turn's snapshot")
	}
	m := ch.next(t).(*TurnSnapshotted)
	if in := x.Take(&TurnSnapshotted{Token: 3, Snap: "snap_old"}); in != nil || !x.Busy() {
		t.Fatalf("another drain's snapshot made %#v", in)
	}
	if in, ok := x.Take(m).(session.TurnBuilt); !ok || m.Of() != 4 || m.Snap == "" || in.Started.Snapshot != m.Snap || x.Busy() {
		t.Fatalf("took %#v from %#v, want the TurnBuilt with the snapshot", in, m)
	}
	if has, err := st.Has(m.Snap); !has || err != nil {
		t.Fatalf("the store does not hold %s: %v", m.Snap, err)
	}
	x.Snapshots = func(string) (Snapshots, error) { return panicking{}, nil }
	x.snapshotTurn()
	m = ch.next(t).(*TurnSnapshotted)
	if in, ok := x.Take(m).(session.TurnBuilt); !ok || in.Started.Snapshot != "" ||
		!strings.Contains(log.String(), `level=WARN msg="file snapshot failed" session=ses_1 err="panic: unreadable"`) {
		t.Fatalf("took %#v from %#v, logged %q: want a TurnBuilt without a snapshot, and the panic logged", in, m, log.String())
	}
}

// panicking's Take panics, as a snapshot of an unreadable Location may.
func (panicking) Take(string) (string, error)                                { panic("unreadable") }
func (panicking) Has(string) (bool, error)                                   { return false, nil }
func (panicking) Changed(string, string) ([]string, error)                   { return nil, nil }
func (panicking) Diff(string, string, []string) ([]filesnap.FileDiff, error) { return nil, nil }
func (panicking) Restore(string, string, []string) error                     { return nil }

// TestASnapshotThatCannotBeTakenIsNone: a Location the store refuses (a
// failure or a panic: a warning; too many files to be a project: a debug
// line, as it is expected every turn) or has no store for gets no
// snapshot, and the
// call settles without one; without Snapshots a call that changes files
// settles at once.
func TestASnapshotThatCannotBeTakenIsNone(t *testing.T) {
	var log bytes.Buffer
	ch := make(posted, 1)
	loc := t.TempDir()
	put(t, loc, map[string]string{"a.txt": "a", "b.txt": "b"})
	small, err := filesnap.Open(filesnap.Config{Dir: t.TempDir(), MaxFiles: 1})
	if err != nil {
		t.Fatal(err)
	}
	x := &Drain{Session: "ses_1", Location: loc, Post: ch.post, Log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	write := &toolactors.ToolSettled{AssistantMessageID: "msg_1", CallID: "call_1", Tool: "write", Output: &toolactors.ToolOutput{Text: "ok"}}
	for _, tc := range []struct {
		name  string
		store func(string) (Snapshots, error)
		log   string
	}{
		{"failing", func(string) (Snapshots, error) { return nil, errors.New("disk gone") }, `level=WARN msg="file snapshot failed" session=ses_1 dir=` + loc + ` err="disk gone"`},
		{"too many files", func(string) (Snapshots, error) { return storeOf{small}, nil }, `level=DEBUG msg="no file snapshot" session=ses_1 err=`},
		{"no store", func(string) (Snapshots, error) { return nil, nil }, ""},
		{"panicking", func(string) (Snapshots, error) { return panicking{}, nil }, `level=WARN msg="file snapshot failed" session=ses_1 err="panic: unreadable"`},
	} {
		log.Reset()
		x.Snapshots = tc.store
		if _, now := x.SettleTool(write); now {
			t.Fatalf("%s: a write settled before its snapshot", tc.name)
		}
		m := ch.next(t).(*ToolSnapshotted)
		if m.Err != nil || m.Snap != "" || !strings.Contains(log.String(), tc.log) || (tc.log == "" && log.Len() > 0) {
			t.Fatalf("%s: posted %+v, logged %q, want no snapshot and %q", tc.name, m, log.String(), tc.log)
		}
	}
	x.Snapshots = nil
	if in, now := x.SettleTool(write); !now || in.Result.(messages.ToolSucceeded).Snapshot != "" {
		t.Fatalf("settled %+v %v without snapshots, want it at once", in, now)
	}
}

// TestTurnToolsComeFromTheCatalogListedAhead: a turn without tools needs
// none; a turn with tools takes the catalog listed ahead once.
func TestTurnToolsComeFromTheCatalogListedAhead(t *testing.T) {
	x := &Drain{Token: 2}
	cat := &Catalog{Token: 2, Tools: []provider.Tool{{Name: "bash"}}}
	if in := x.Take(cat); in != (session.CatalogLoaded{}) {
		t.Fatalf("took %#v", in)
	}
	if tools, ok := x.TurnTools(false); !ok || tools != nil {
		t.Fatalf("%v %v, want no tools", tools, ok)
	}
	x.catalog = cat
	if tools, ok := x.TurnTools(true); !ok || len(tools) != 1 || x.catalog != nil {
		t.Fatalf("%v %v, want the catalog's tools, taken", tools, ok)
	}
}

// TestCompactionSummarizesWithTheProviderItsFactsFound: the facts carry
// the model's limits and an ID, and the summary runs with the provider
// looked up for them, its text published live as it streams, and comes
// back as the core's CompactionDone; without
// a provider the facts carry its error, a summary nobody planned fails
// without a request, and a history that cannot be read is the drain's
// end.
func TestCompactionSummarizesWithTheProviderItsFactsFound(t *testing.T) {
	prov := scriptedProvider(t, scripted.Turn{Text: "summary"})
	ch, live := make(posted, 1), make(posted, 4)
	x := &Drain{Token: 8, Session: "ses_1", Post: ch.post, Publish: func(l protocol.Live) { live <- l }, Agent: testAgent(prov, session.Limits{Window: 500})}
	loaded := func() ([]messages.Message, error) { return nil, nil }
	facts := x.CompactionFacts(messages.ModelRef{ID: "test"}, loaded).(session.CompactionFacts)
	if facts.Err != "" || facts.ID == "" || facts.Limits.Window != 500 {
		t.Fatalf("facts %+v", facts)
	}
	plan := &compaction.Plan{Request: testRequest(), RecentContext: "<recent>"}
	if err := x.Summarize(context.Background(), &session.Summarize{ID: facts.ID, Plan: plan}); err != nil {
		t.Fatal(err)
	}
	if !x.Busy() {
		t.Fatal("the drain does not wait for its summary")
	}
	if l := live.next(t).(protocol.Live); l.SessionID != "ses_1" || l.Event != nil ||
		*l.Delta != (messages.Delta{SessionID: "ses_1", Kind: messages.CompactionDelta, Text: "summary"}) {
		t.Fatalf("published %+v, want the summary's text live", l)
	}
	m := ch.next(t).(*Summarized)
	if in := x.Take(m).(session.CompactionDone); in.ID != facts.ID || in.Summary != "summary" || in.RecentContext != "<recent>" || in.Err != "" || x.compacting != nil {
		t.Fatalf("took %+v, want the summary (cancel released)", in)
	}
	if err := x.Summarize(context.Background(), &session.Summarize{ID: "cmp_x", Plan: plan}); err == nil {
		t.Fatal("a compaction nobody planned ran")
	}
	if facts := x.CompactionFacts(messages.ModelRef{ID: "gone"}, loaded).(session.CompactionFacts); facts.Err == "" || facts.ID != "" {
		t.Fatalf("facts %+v, want the provider's error", facts)
	}
	unreadable := func() ([]messages.Message, error) { return nil, errors.New("journal down") }
	if in, ok := x.CompactionFacts(messages.ModelRef{ID: "test"}, unreadable).(session.Abort); !ok ||
		in.Outcome != (session.Outcome{Kind: session.Internal, Err: "journal down"}) {
		t.Fatalf("%#v, want the drain's end with the history's error", in)
	}
}
