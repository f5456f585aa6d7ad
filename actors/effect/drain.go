package effect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/render"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// Agent is the session's agent as a drain's executors use it, as its
// Location's configuration gives it at the drain's start and at every
// boundary (a changed configuration takes effect at a boundary).
type Agent struct {
	TurnLimit int
	Rules     []permission.Rule              // what a catalog lists and the turn's calls run under
	Context   []contextsources.SystemContext // an observation's extra sources
	Request   render.Settings                // the turn's request settings
	// Provider returns the provider serving a model in the Location, and
	// Limits the model's limits (zero: unknown).
	Provider func(messages.ModelRef) (provider.Provider, error)
	Limits   func(messages.ModelRef) session.Limits
}

// Drain is what one drain's executors keep between the core's effects, so
// that the actor keeps none of it: the Location's registries (once
// located), the agent as of the last boundary, the catalog listed ahead of
// the turn, the turn built for the core's decision, the turn in flight
// (turn.go), and the compaction planned or running. Every result it posts
// carries Token (a stream's, its turn's); Take turns one into the core's
// input. Its methods run on the actor's goroutine; the work they start
// runs off it.
type Drain struct {
	Token    uint64
	Session  string // the session's ID
	Location string // the drain's, which its calls run in
	Post     Post
	// ReplyTo is the session's actor, which its calls' settlements go to.
	ReplyTo *actor.PID
	// Snapshots returns the file snapshot store of a Location (nil: this
	// server keeps none), for the snapshots of its turns and calls; nil
	// takes none. Log tells why one could not be taken.
	Snapshots func(dir string) (Snapshots, error)
	Log       *slog.Logger
	// Publish hands a live item to the session's subscribers (nil: none
	// listen): a compaction's summary as it streams.
	Publish func(protocol.Live)
	// Config reads the session's agent (its name, as the session has it
	// now) from the Location's configuration: at the drain's start and at
	// every boundary, a changed configuration taking effect there. It
	// blocks: the executors call it off the mailbox.
	Config func(agent string) (Agent, error)
	// Registries: System, Timeout and Metrics from the start, the PIDs
	// once the Location is resolved (Located).
	Registries
	Agent Agent

	busy       bool               // a Result is outstanding (Busy)
	catalog    *Catalog           // listed for the turn the core is about to start
	next       *Built             // the turn built for the core's decision (TurnBuilt)
	turn       *flight            // the turn in flight (Stream), nil: none
	summarizer provider.Provider  // the planned compaction's (CompactionFacts), until it starts
	compacting context.CancelFunc // cancels the compaction's summary request
}

// Result is an executor's result for the drain whose token Of gives.
type Result interface {
	Of() uint64
	take(x *Drain) session.Input
}

// Take keeps what r brings for the effects that follow (the Location's
// registries, the agent, the catalog) and returns the core's input it
// makes; nil when r is another drain's (stale: it changes nothing).
func (x *Drain) Take(r Result) session.Input {
	if r.Of() != x.Token {
		return nil
	}
	x.busy = false
	return r.take(x)
}

// Busy reports that the drain waits for an executor's Result (the
// Location, an observation, a catalog, a turn's snapshot, a summary),
// which an interrupt waits for too (session.Interrupt.Waiting). A stream
// is its turn's: it is not one.
func (x *Drain) Busy() bool { return x.busy }

func (m *Located) Of() uint64    { return m.Token }
func (m *Observed) Of() uint64   { return m.Token }
func (m *Catalog) Of() uint64    { return m.Token }
func (m *Summarized) Of() uint64 { return m.Token }

func (m *Located) take(x *Drain) session.Input {
	in := session.LocationResolved{TurnLimit: m.Agent.TurnLimit}
	switch {
	case m.Err != nil:
		in.Err = m.Err.Error()
	case m.ConfigErr != nil:
		in.ConfigErr = m.ConfigErr.Error()
	default:
		x.Context, x.Tools, x.Agent = m.Context, m.Tools, m.Agent
	}
	return in
}

func (m *Observed) take(x *Drain) session.Input {
	if m.In.ConfigErr == "" && m.In.Err == "" {
		x.Agent = m.Agent
	}
	if m.Catalog != nil {
		x.catalog = m.Catalog
	}
	return m.In
}

func (m *Catalog) take(x *Drain) session.Input {
	x.catalog = m
	var in session.CatalogLoaded
	if m.Err != nil {
		in.Err = m.Err.Error()
	}
	return in
}

func (m *Summarized) take(x *Drain) session.Input {
	x.CancelCompaction()
	in := session.CompactionDone{ID: m.ID, Summary: m.Summary, RecentContext: m.Recent}
	if m.Err != nil {
		in.Err = m.Err.Error()
	}
	return in
}

// TurnTools are the tools the request of the turn a StartTurn asks for
// carries: none without tools, else the catalog listed ahead of it (with
// the observation, or on its own). ok is false when none was: it is
// listed now, and its Catalog follows.
func (x *Drain) TurnTools(withTools bool) (tools []provider.Tool, ok bool) {
	cat := x.catalog
	x.catalog = nil
	switch {
	case !withTools:
		return nil, true
	case cat == nil:
		x.ListCatalog()
		return nil, false
	}
	return cat.Tools, true
}

// CompactionFacts are what the compaction the core decided (Ready.Compact)
// is planned from besides the history, which the core plans from its own
// copy of (history makes sure it is loaded: an Abort when it cannot be
// read): the model's limits and an ID, or the error of looking up the
// summary's provider, which is kept for Summarize.
func (x *Drain) CompactionFacts(model messages.ModelRef, history func() ([]messages.Message, error)) session.Input {
	if _, err := history(); err != nil {
		return session.Abort{Outcome: session.Outcome{Kind: session.Internal, Err: err.Error()}}
	}
	in := session.CompactionFacts{Limits: x.Agent.Limits(model)}
	prov, err := x.Agent.Provider(model)
	if err != nil {
		in.Err = err.Error()
		return in
	}
	in.ID, x.summarizer = messages.NewID("cmp"), prov
	return in
}

// Summarize runs the summary request of the compaction whose
// CompactionStarted the core wrote (Summarize), with the provider
// CompactionFacts looked up, its text published live as it streams
// (Publish); its Summarized follows. It fails when the compaction was not
// planned here.
func (x *Drain) Summarize(ctx context.Context, sm *session.Summarize) error {
	prov := x.summarizer
	x.summarizer = nil
	if prov == nil || sm.Plan == nil {
		return errors.New("compaction " + sm.ID + " was not planned")
	}
	var onDelta func(string)
	if publish, id := x.Publish, x.Session; publish != nil {
		onDelta = func(text string) {
			publish(protocol.Live{SessionID: id, Delta: &messages.Delta{SessionID: id, Kind: messages.CompactionDelta, Text: text}})
		}
	}
	ctx, x.compacting = context.WithCancel(ctx)
	x.busy = true
	Summarize(ctx, prov, sm.Plan, x.Token, sm.ID, onDelta, x.Post)
	return nil
}

// CancelCompaction cancels the compaction's summary request, if one runs:
// its Summarized still follows.
func (x *Drain) CancelCompaction() {
	if x.compacting != nil {
		x.compacting()
		x.compacting = nil
	}
}

// Built is a turn whose request is built, waiting for its file snapshot
// and the core's decision (TurnBuilt: open it, or compact first).
type Built struct {
	Started messages.TurnStarted // its TurnStarted, less the snapshot
	Rules   []permission.Rule    // the agent's when it was built: its calls run under them
	Turn    render.Turn          // what Req was built from
	Req     *provider.Request
	Prov    provider.Provider
}

// StartTurn builds the request of the turn a StartTurn asks for (agent,
// and tr less its history and settings) and returns the core's input for
// it: the drain's end (Abort) when it cannot be built, else its TurnBuilt
// with the drain's file snapshot (the TurnStarted's), which the core
// opens (Ready.Stream), compacts first, or finishes an interrupt with.
// The snapshot is taken off the mailbox (a first snapshot of a large
// project reads every file): StartTurn returns nil, and its
// TurnSnapshotted follows, which Take makes the TurnBuilt. Without
// snapshots (Snapshots nil) it is the TurnBuilt at once.
func (x *Drain) StartTurn(agent string, tr render.Turn, history func() ([]messages.Message, error)) session.Input {
	if out := x.buildTurn(agent, tr, history); out != nil {
		return session.Abort{Outcome: *out}
	}
	if x.Snapshots == nil {
		return x.turnBuilt("")
	}
	x.snapshotTurn()
	return nil
}

// buildTurn builds the turn's request with the drain's agent: its
// provider, its request settings, and the history history gives (called
// once the provider is found). It runs on the caller's goroutine: the
// history is the actor's own memory, and the request is built from it
// before anything else can change it. out is how the drain ends when it
// cannot be built.
func (x *Drain) buildTurn(agent string, tr render.Turn, history func() ([]messages.Message, error)) (out *session.Outcome) {
	prov, err := x.Agent.Provider(tr.Model)
	if err != nil {
		return &session.Outcome{Kind: session.Model, Err: err.Error()}
	}
	if tr.History, err = history(); err != nil {
		return &session.Outcome{Kind: session.Internal, Err: "load history: " + err.Error()}
	}
	tr.Settings = x.Agent.Request
	x.next = &Built{Started: messages.TurnStarted{AssistantMessageID: messages.NewID("msg"), Agent: agent, Model: tr.Model},
		Rules: x.Agent.Rules, Turn: tr, Req: render.Request(tr), Prov: prov}
	return nil
}

// TurnSnapshotted is the file snapshot of the turn built (its
// TurnStarted's), taken by StartTurn: Snap "" when none could be taken.
type TurnSnapshotted struct {
	Token uint64
	Snap  string
}

func (m *TurnSnapshotted) Of() uint64                  { return m.Token }
func (m *TurnSnapshotted) take(x *Drain) session.Input { return x.turnBuilt(m.Snap) }

// snapshotTurn takes the built turn's file snapshot on its own goroutine
// and posts it (TurnSnapshotted).
func (x *Drain) snapshotTurn() {
	token := x.Token
	x.busy = true
	Go(x.Post, func() any { return &TurnSnapshotted{Token: token, Snap: x.snapshot()} },
		func(error) any { return &TurnSnapshotted{Token: token} }) // snapshot recovers
}

// snapshot takes the file snapshot of the drain's Location for a
// TurnStarted or a call's settlement: "" when its store cannot be had or
// the Location cannot be read, or taking it panicked (the turn goes on;
// only a revert to it loses its files). It blocks, and reads only what
// the drain was started with: it runs off the mailbox.
func (x *Drain) snapshot() (id string) {
	defer func() {
		if r := recover(); r != nil {
			id = ""
			x.Log.Warn("file snapshot failed", "session", x.Session, "err", fmt.Errorf("panic: %v", r))
		}
	}()
	st, err := x.Snapshots(x.Location)
	if err == nil && st != nil {
		id, err = st.Take(x.Location)
	}
	switch {
	case errors.Is(err, filesnap.ErrTooManyFiles):
		x.Log.Debug("no file snapshot", "session", x.Session, "err", err) // not a project: expected, every turn
	case err != nil:
		x.Log.Warn("file snapshot failed", "session", x.Session, "dir", x.Location, "err", err)
	}
	return id
}

// turnBuilt is the built turn as the core decides on it, with its file
// snapshot (snap): its TurnStarted, its model's limits, the request's
// estimated size and output cap.
func (x *Drain) turnBuilt(snap string) session.Input {
	b := x.next
	if b == nil {
		return session.Abort{Outcome: session.Outcome{Kind: session.Internal, Err: "no turn was built"}}
	}
	started := b.Started
	started.Snapshot = snap
	return session.TurnBuilt{Started: started, Limits: x.Agent.Limits(started.Model), Estimate: compaction.Estimate(b.Req),
		MaxOutput: b.Req.Controls.MaxOutputTokens}
}

// takeBuilt is the built turn whose TurnStarted the core wrote
// (Ready.Stream), for its stream; nil when none was built.
func (x *Drain) takeBuilt() *Built {
	b := x.next
	x.next = nil
	return b
}
