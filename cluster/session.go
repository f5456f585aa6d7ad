package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors"
)

// SessionGrainConfig configures SessionGrain.
type SessionGrainConfig struct {
	Sessions *actors.Sessions // this member's facade (required)
	Registry *Registry        // wire types; default SessionRegistry()
	Logger   *slog.Logger     // default slog.Default()
	// IdleAfter stops a grain that received nothing for this long; the next
	// call activates it again (Kind.IdleAfter). Default 10 minutes. (The
	// Session actor behind it passivates on its own IdleAfter.)
	IdleAfter time.Duration
}

// SessionGrain is the Session grain kind built on this member's Sessions
// facade: the cluster decides which member serves a session ID, and that
// member's facade runs the Session actor (which acquires a journal ownership
// epoch on activation and fences every append with it, so a duplicate
// activation elsewhere during a topology change can write nothing).
//
// The grain is a router, not the Session actor itself: actors does not yet
// export a producer for one session actor. Short commands run in the
// grain's mailbox, so one caller's commands keep their order; Run, WaitIdle
// and Interrupt wait for a drain and run off the mailbox so they do not
// block the session's other commands. Run, Wake, Interrupt and Move carry
// IDs (Member.Request assigns them): a repeated delivery gets the first
// one's answer and runs nothing.
func SessionGrain(cfg SessionGrainConfig) (Kind, error) {
	if cfg.Sessions == nil {
		return Kind{}, fmt.Errorf("%w: session grain needs the Sessions facade", ErrConfig)
	}
	if cfg.Registry == nil {
		cfg.Registry = SessionRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = 10 * time.Minute
	}
	return Kind{Name: SessionKind, IdleAfter: cfg.IdleAfter, Produce: func(id string) actor.Actor {
		return &sessionGrain{id: id, s: cfg.Sessions, reg: cfg.Registry, log: cfg.Logger}
	}}, nil
}

// longCommandLimit bounds a drain-waiting command run for a remote caller;
// the caller's own timeout is the real bound.
const longCommandLimit = 24 * time.Hour

type sessionGrain struct {
	id  string
	s   *actors.Sessions
	reg *Registry
	log *slog.Logger
	// recent deduplicates commands by ID (Run, Wake, Interrupt, Move).
	recent recentCommands
}

func (g *sessionGrain) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
		return
	}
	msg := ctx.Message()
	sender, system := ctx.Sender(), ctx.ActorSystem()
	id := commandID(msg)
	var first *commandResult
	if id != "" {
		c, isFirst := g.recent.begin(id)
		if !isFirst {
			// A repeated delivery: answer with the first one's result.
			go func() {
				<-c.done
				g.reply(system, sender, c.res)
			}()
			return
		}
		first = c
	}
	run := func() any {
		c, cancel := context.WithTimeout(context.Background(), longCommandLimit)
		defer cancel()
		res := g.call(c, msg)
		if first != nil {
			g.recent.finish(id, first, res)
		}
		return res
	}
	switch msg.(type) {
	case *actors.Run, *actors.WaitIdle, *actors.Interrupt, *actors.Compact:
		go func() { g.reply(system, sender, run()) }()
	default:
		res := run()
		if sender != nil {
			ctx.Respond(res)
		}
	}
}

// reply answers off the actor goroutine: the sender middleware does not run
// for the root context, so encode here for a remote sender.
func (g *sessionGrain) reply(system *actor.ActorSystem, to *actor.PID, res any) {
	if to == nil {
		return
	}
	if to.Address != system.Address() {
		enc, err := g.reg.Encode(res)
		if err != nil {
			g.log.Error("cluster: session reply not encodable", "session", g.id, "err", err)
			enc, _ = g.reg.Encode(&actors.CommandError{Code: actors.CodeInternal, Msg: err.Error()})
		}
		system.Root.Send(to, enc)
		return
	}
	system.Root.Send(to, res)
}

// call runs one command through the facade; errors become *CommandError
// values so they cross the wire.
func (g *sessionGrain) call(ctx context.Context, msg any) any {
	res, err := g.dispatch(ctx, msg)
	if err != nil {
		if ce, ok := err.(*actors.CommandError); ok {
			return ce
		}
		return &actors.CommandError{Code: actors.CodeInternal, Msg: err.Error()}
	}
	return res
}

func (g *sessionGrain) dispatch(ctx context.Context, msg any) (any, error) {
	s, id := g.s, g.id
	switch m := msg.(type) {
	case *actors.Create:
		return s.Create(ctx, id, *m)
	case *actors.Prompt:
		return s.Prompt(ctx, id, *m)
	case *actors.Run:
		return s.Run(ctx, id)
	case *actors.WaitIdle:
		return s.WaitIdle(ctx, id)
	case *actors.Wake:
		return &actors.Done{}, s.Wake(ctx, id)
	case *actors.Interrupt:
		return &actors.Done{}, s.Interrupt(ctx, id)
	case *actors.Compact:
		return s.Compact(ctx, id)
	case *actors.Move:
		return s.Move(ctx, id, m.To)
	case *actors.SwitchAgent:
		return s.SwitchAgent(ctx, id, m.Agent)
	case *actors.SwitchModel:
		return s.SwitchModel(ctx, id, m.Model)
	case *actors.ReplyPermission:
		return &actors.Done{}, s.ReplyPermission(ctx, id, *m)
	case *actors.Revert:
		return s.Revert(ctx, id, *m)
	default:
		return nil, &actors.CommandError{Code: actors.CodeInvalid, Msg: fmt.Sprintf("session %s: unknown command %T", id, msg)}
	}
}
