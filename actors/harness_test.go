package actors

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
	"github.com/sessionrt/sessionrt/persistence/journaltest"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/render"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/supervisor"
	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/managed"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// testModel is the model every harness session starts with.
var testModel = messages.ModelRef{Provider: "scripted", ID: "test-model"}

// source is a context source whose value a test sets: present, absent or unavailable.
type source struct {
	mu   sync.Mutex
	r    contextsources.Result[string]
	hold *gate // when set, every load waits for it (an observation held open)
}

func (s *source) set(r contextsources.Result[string]) { s.mu.Lock(); s.r = r; s.mu.Unlock() }

// holdOn makes the loads from now on wait for g (nil: none).
func (s *source) holdOn(g *gate) { s.mu.Lock(); s.hold = g; s.mu.Unlock() }

func (s *source) load(ctx context.Context) contextsources.Result[string] {
	s.mu.Lock()
	g := s.hold
	s.mu.Unlock()
	if g != nil {
		if err := g.wait(ctx, 0); err != nil {
			return contextsources.Unavailable[string](err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r
}

// harness is one process of the runtime: a real embedded journal, the real
// actor tree (Locations with context and tool registries, Session actors)
// and a scripted provider driven by the test.
type harness struct {
	t        *testing.T
	data     string
	loc      string
	engine   *boltsql.Engine
	maria    *testdb.Database
	db       *sql.DB             // the journal's database, behind faults
	faults   *journaltest.Faults // storage failures a test turns on
	journal  *persistence.Journal
	system   *actor.ActorSystem
	locs     *supervisor.Locations
	sessions *Sessions
	prov     *scripted.Provider
	bus      *Bus
	sources  map[string]*source

	mu    sync.Mutex
	turns func(req *provider.Request, n int) (scripted.Turn, error)

	// turnChecks counts provider turns whose in-memory history and
	// request were checked against the journal (checkTurn).
	turnChecks atomic.Int64
}

type harnessOption func(*Config)

func newHarness(t *testing.T, turns func(req *provider.Request, n int) (scripted.Turn, error), opts ...harnessOption) *harness {
	t.Helper()
	h := &harness{t: t, data: t.TempDir(), loc: t.TempDir(), turns: turns, sources: map[string]*source{}, faults: &journaltest.Faults{}}
	for _, k := range []string{"env", "rules"} {
		h.sources[k] = &source{r: contextsources.Present(k + " v1")}
	}
	h.start(opts...)
	if replayFresh.Load() {
		// Registered after the first start's stop, so it runs before it
		// (and after any restart's): the last process is stopped, then
		// replayed by a fresh one.
		t.Cleanup(h.replayInAFreshProcess)
	}
	return h
}

func (h *harness) start(opts ...harnessOption) {
	t := h.t
	t.Helper()
	var err error
	var db *sql.DB
	// The journal's storage is reached through faults a test can turn on
	// (a full disk, failWrites), on either backend.
	var conn driver.Connector
	if os.Getenv("SESSIONRT_SCENARIO_JOURNAL") == "mariadb" {
		// The same scenarios on the second backend.
		if h.maria == nil {
			d := testdb.MariaDB(t)
			h.maria = &d
		}
		if conn, err = h.maria.Connector(); err != nil {
			t.Fatal(err)
		}
	} else {
		h.engine, err = boltsql.Open(filepath.Join(h.data, "journal"), boltsql.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		conn = h.engine.Connector()
	}
	db = h.faults.DB(conn)
	db.SetMaxOpenConns(32) // as the engine's own DB and the server pool do
	db.SetMaxIdleConns(32)
	h.db = db
	h.journal, err = persistence.Open(context.Background(), persistence.Config{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	if os.Getenv("SESSIONRT_TEST_LOG") != "" {
		quiet = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	h.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	out, err := managed.New(managed.Config{Dir: filepath.Join(h.data, "tool-output")})
	if err != nil {
		t.Fatal(err)
	}
	var contributions []supervisor.ContextContribution
	for _, k := range []string{"env", "rules"} {
		src := h.sources[k]
		key := "test/" + k
		contributions = append(contributions, supervisor.ContextContribution{Key: k, Sources: func(string) (contextsources.SystemContext, error) {
			s, err := contextsources.Make(contextsources.Spec[string]{
				Key:      key,
				Load:     src.load,
				Baseline: func(v string) string { return key + ": " + v },
				Removal:  func(string) string { return key + " no longer applies" },
			})
			if err != nil {
				return contextsources.SystemContext{}, err
			}
			return contextsources.New(s)
		}})
	}
	h.locs, err = supervisor.New(h.system, supervisor.Config{Logger: quiet, Children: []supervisor.ChildSpec{
		supervisor.ContextRegistryChild(contextsources.RegistryConfig{}, contributions),
		{Name: ToolRegistryName, Props: func(dir string) *actor.Props {
			p, err := toolactors.Props(toolactors.Config{Dir: dir, Output: out, Logger: quiet})
			if err != nil {
				panic(err)
			}
			return p
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	h.prov, err = scripted.New(scripted.Config{Func: func(ctx context.Context, req *provider.Request, n int) (scripted.Turn, error) {
		h.mu.Lock()
		f := h.turns
		h.mu.Unlock()
		return f(req, n)
	}})
	if err != nil {
		t.Fatal(err)
	}
	h.bus = NewBus()
	cfg := Config{
		Journal:      h.journal,
		Locations:    h.locs,
		Providers:    func(messages.ModelRef) (provider.Provider, error) { return h.prov, nil },
		DefaultModel: testModel,
		Bus:          h.bus,
		Logger:       quiet,
		checkTurn:    h.checkTurn,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h.sessions, err = NewSessions(h.system, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.stop)
}

// stop shuts the process down (idempotent).
func (h *harness) stop() {
	if h.sessions == nil {
		return
	}
	h.sessions.Stop()
	h.locs.Stop()
	h.journal.Close()
	h.db.Close()
	if h.engine != nil {
		h.engine.Close()
	}
	h.sessions = nil
}

// restart simulates a new process on the same data directory.
func (h *harness) restart(opts ...harnessOption) {
	h.stop()
	h.start(opts...)
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

func (h *harness) create(id string) string {
	h.t.Helper()
	info, err := h.sessions.Create(h.ctx(), id, Create{Location: h.loc})
	if err != nil {
		h.t.Fatal(err)
	}
	return info.Session.ID
}

func (h *harness) prompt(id, msgID, text string, d messages.Delivery, resume bool) *Receipt {
	h.t.Helper()
	r, err := h.sessions.Prompt(h.ctx(), id, Prompt{MessageID: msgID, Prompt: messages.Prompt{Text: text}, Delivery: d, Resume: resume})
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func (h *harness) run(id string) *Outcome {
	h.t.Helper()
	out, err := h.sessions.Run(h.ctx(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

func (h *harness) waitIdle(id string) *Outcome {
	h.t.Helper()
	out, err := h.sessions.WaitIdle(h.ctx(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// events returns the session's durable event type names in order.
func (h *harness) events(id string) []string {
	h.t.Helper()
	envs, err := h.journal.ReadEvents(h.ctx(), id, 0, 100000)
	if err != nil {
		h.t.Fatal(err)
	}
	out := make([]string, len(envs))
	for i, e := range envs {
		out[i] = strings.TrimPrefix(e.Type.Name, "session.")
	}
	return out
}

// history renders the model-visible history compactly: U(text), A(text), S(text), T(call=output).
func (h *harness) history(id string) []string {
	h.t.Helper()
	msgs, err := h.journal.ModelHistory(h.ctx(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return renderHistory(msgs)
}

func renderHistory(msgs []messages.Message) []string {
	var out []string
	for _, m := range msgs {
		switch m.Role {
		case messages.RoleUser:
			out = append(out, "U:"+m.Prompt.Text)
		case messages.RoleSystem:
			out = append(out, "S:"+m.Text)
		case messages.RoleCompaction:
			out = append(out, "C:"+m.Text)
		case messages.RoleAssistant:
			var b strings.Builder
			b.WriteString("A:")
			for _, p := range m.Parts {
				switch p.Kind {
				case messages.PartText:
					b.WriteString(p.Text)
				case messages.PartTool:
					b.WriteString("[" + p.Tool.Tool + ":" + string(p.Tool.State) + "]")
				}
			}
			out = append(out, b.String())
		}
	}
	return out
}

// requestRoles renders a provider request's messages as role:text.
func requestRoles(req provider.Request) []string {
	var out []string
	for _, m := range req.Messages {
		s := string(m.Role) + ":" + m.Text
		for _, c := range m.ToolCalls {
			s += "[call " + c.Name + "]"
		}
		if m.ToolResult != nil {
			s += m.ToolResult.Output
		}
		out = append(out, s)
	}
	return out
}

// checkTurn runs on the actor right after each TurnStarted is durable: the
// history the actor keeps in memory must be the journal's ModelHistory
// message for message (same IDs, positions and encoded bodies), and the
// request it sent must be the one the journal's history builds. Every
// scenario therefore checks the in-memory history at every turn.
func (h *harness) checkTurn(id string, seq int64, st *session.State, tr render.Turn, req *provider.Request) {
	a := turnView{id, seq, st}
	h.turnChecks.Add(1)
	if diff := historyDiff(h.ctx(), h.journal, a); diff != "" {
		h.t.Errorf("session %s at seq %d: in-memory history differs from the journal's: %s", a.ID(), a.Seq(), diff)
		return
	}
	if diff := stateDiff(h.ctx(), h.journal, a); diff != "" {
		h.t.Errorf("session %s at seq %d: in-memory state differs from the journal's: %s", a.ID(), a.Seq(), diff)
		return
	}
	want, _ := h.journal.ModelHistory(h.ctx(), a.ID())
	tr.History = want
	if rebuilt := render.Request(tr); !reflect.DeepEqual(rebuilt, req) {
		got, _ := json.Marshal(req)
		exp, _ := json.Marshal(rebuilt)
		h.t.Errorf("session %s at seq %d: request from the in-memory history\n%s\nfrom the journal\n%s", a.ID(), a.Seq(), got, exp)
	}
}

// actorView is what the checks read of a Session actor: a running one's
// at a turn (turnView).
type actorView interface {
	ID() string
	Seq() int64
	State() *session.State
}

type turnView struct {
	id  string
	seq int64
	st  *session.State
}

func (v turnView) ID() string            { return v.id }
func (v turnView) Seq() int64            { return v.seq }
func (v turnView) State() *session.State { return v.st }

// historyDiff compares the actor's in-memory history with the journal's
// ModelHistory; "" when they are the same.
func historyDiff(ctx context.Context, j *persistence.Journal, a actorView) string {
	if !a.State().History.Loaded {
		return "the in-memory history is not loaded"
	}
	want, err := j.ModelHistory(ctx, a.ID())
	if err != nil {
		return err.Error()
	}
	got := a.State().History.Msgs
	if len(got) != len(want) {
		return fmt.Sprintf("%d messages in memory, %d in the journal: %q vs %q", len(got), len(want), renderHistory(got), renderHistory(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Seq != w.Seq || g.Index != w.Index || g.Role != w.Role {
			return fmt.Sprintf("message %d is %s/%d/%d/%s in memory, %s/%d/%d/%s in the journal", i, g.ID, g.Seq, g.Index, g.Role, w.ID, w.Seq, w.Index, w.Role)
		}
		gb, err1 := msgpack.Marshal(&g)
		wb, err2 := msgpack.Marshal(&w)
		if err1 != nil || err2 != nil || !bytes.Equal(gb, wb) {
			return fmt.Sprintf("message %d (%s) body differs: %+v vs %+v", i, w.ID, g, w)
		}
	}
	return ""
}

// checkReplay rebuilds every projection from the event log and asserts no
// difference (scenario 60 holds for every scenario).
func (h *harness) checkReplay() {
	h.t.Helper()
	rep, err := h.journal.Verify(h.ctx())
	if err != nil {
		h.t.Fatal(err)
	}
	if !rep.Clean() {
		h.t.Fatalf("projections differ from a replay of the events: %v", rep.Differences)
	}
	ids, err := h.journal.SessionIDs(h.ctx())
	if err != nil {
		h.t.Fatal(err)
	}
	for _, id := range ids {
		if diff := foldDiff(h.ctx(), h.journal, id); diff != "" {
			h.t.Fatalf("session %s: the events folded by session.State.Apply differ from the projections: %s", id, diff)
		}
	}
}

func text(s string) func(*provider.Request, int) (scripted.Turn, error) {
	return func(*provider.Request, int) (scripted.Turn, error) { return scripted.Turn{Text: s}, nil }
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

var allowAll = []permission.Rule{{Action: "*", Resource: "*", Effect: permission.Allow}}

type actorPID = actor.PID

const requestWait = 30 * time.Second
