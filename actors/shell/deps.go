package shell

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors/effect"
	"github.com/sessionrt/sessionrt/actors/middleware"
	"github.com/sessionrt/sessionrt/actors/observe"
	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/render"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/telemetry"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

// Deps is everything a Session actor uses of its process: the facade
// (package actors) fills it in once, and every actor of the process shares
// it. They are values and functions, never the facade itself: what the
// actor may reach is this list.
type Deps struct {
	Ctx     context.Context // cancelled when the process's sessions stop
	Journal *persistence.Journal
	Owner   string // this process in journal ownership records
	Logger  *slog.Logger
	// Publish hands an item to the live bus; nil publishes nothing.
	Publish func(protocol.Live)
	Metrics *metrics.Runtime                       // nil records nothing
	Tracer  *telemetry.Tracer                      // nil records nothing
	Faults  func(protocol.FaultPoint, string) bool // chaos runs only
	// Compaction, IdleAfter, InboxLimit, RequestTimeout, Recovery and
	// Titles are the runtime's configuration (actors.Config).
	Compaction     compaction.Config
	IdleAfter      time.Duration
	InboxLimit     int
	RequestTimeout time.Duration
	Recovery       protocol.Recovery
	Titles         bool
	// TakesSnapshots: the process keeps file snapshots; Snapshots returns
	// the store of a Location's (nil when none).
	TakesSnapshots bool
	Snapshots      func(dir string) (effect.Snapshots, error)
	// Stopping reports that the process shuts down: every drain ends at
	// its next safe boundary.
	Stopping *atomic.Bool
	// HistoryLoads and Appends count the histories read and the appends
	// made.
	HistoryLoads, Appends *atomic.Int64

	// The activation registry: Stopped from the actor's Stopped handler,
	// Forget when it leaves the facade (fenced, the journal failed),
	// TryPassivate when idle (true: stop now).
	Stopped      func(id string, pid *actor.PID)
	Forget       func(id string, pid *actor.PID)
	TryPassivate func(id string, pid *actor.PID) bool
	// WaitJournal hands a session to the journal waits (stopped: a drain
	// of this process stopped); DrainStopped reports one waiting so.
	WaitJournal  func(id string, err error, stopped bool)
	DrainStopped func(id string) bool

	// What a session starts with (Creation) and what a switch takes
	// (AgentSwitch, ModelSwitch) are resolved in the Location's
	// configuration. ResolveLocation returns the Location's context and
	// tool registries; DrainAgent a drain's agent; TitleModel the model
	// that names a session. The last three block: call them off the
	// mailbox.
	Creation        func(*protocol.Create) (messages.SessionCreated, error)
	AgentSwitch     func(location, agent string) (session.SwitchAgent, error)
	ModelSwitch     func(location string, model messages.ModelRef) (session.SwitchModel, error)
	ResolveLocation func(dir string) (context, tools *actor.PID, err error)
	DrainAgent      func(location, agent string) (effect.Agent, error)
	TitleModel      func(location string, model messages.ModelRef) (messages.ModelRef, provider.Provider, error)

	// CheckTurn, when set (tests), is called on the actor goroutine right
	// after each TurnStarted is durable, with the request that turn sends
	// and what it was built from.
	CheckTurn func(id string, seq int64, st *session.State, tr render.Turn, req *provider.Request)
}

// New returns the Session actor of id.
func New(id string, d *Deps) actor.Actor {
	return &sessionActor{id: id, rt: d, log: d.Logger,
		journal: effect.Journal{Ctx: d.Ctx, J: d.Journal, ID: id, Owner: d.Owner, Metrics: d.Metrics, Appends: d.Appends, HistoryLoads: d.HistoryLoads},
		idle:    middleware.NewIdleTimer(d.IdleAfter), core: session.Core{State: session.NewState(id), Config: session.Config{Compaction: d.Compaction}},
		obs: observe.Observer{SessionID: id, Tracer: d.Tracer, Metrics: d.Metrics, Log: d.Logger, Fail: commandError}}
}

// Middleware is the Session actor's receiver middleware (actors/middleware),
// outermost first: panic recovery (AnswerPanic), the active-session gauge
// (m nil: none), idle tracking (IdleFor). Its Receive is left with what a
// session does.
func Middleware(m *metrics.Runtime) []actor.ReceiverMiddleware {
	mw := []actor.ReceiverMiddleware{middleware.RecoverPanics}
	if m != nil {
		mw = append(mw, middleware.CountActive(m.SessionsActive))
	}
	return append(mw, middleware.TrackIdle)
}
