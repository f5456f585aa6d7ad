package actors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/actors/shell"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/telemetry"
)

// Sessions is the one door to Session actors: callers name a session by ID
// and never hold a PID, so the cluster can place the same actors as grains.
type Sessions struct {
	rt     *runtime
	cancel context.CancelFunc
}

// longWait bounds commands that wait for a drain (Run, WaitIdle); the
// caller's context is the real bound.
const longWait = 24 * time.Hour

// NewSessions starts the facade on system.
func NewSessions(system *actor.ActorSystem, cfg Config) (*Sessions, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	rt := &runtime{cfg: cfg, ctx: ctx, journal: cfg.Journal, bus: cfg.Bus, owner: cfg.Owner, system: system}
	rt.waits.rt = rt
	mw := actor.WithReceiverMiddleware(shell.Middleware(cfg.Metrics)...)
	rt.acts = newActivations(system, "session", func(id string) *actor.Props {
		return actor.PropsFromProducer(func() actor.Actor { return shell.New(id, rt.deps) }, mw)
	})
	rt.deps = rt.newDeps()
	rt.acts.spawner = system.Root.WithGuardian(sessionStrategy)
	return &Sessions{rt: rt, cancel: cancel}, nil
}

// sessionStrategy is the guardian of every Session actor. A panic restarts
// the actor, which rebuilds its state from the journal (the only truth) and
// fails whatever tool calls the dead incarnation left open. More than 5
// failures within 10 s stop it instead: the next command activates it
// afresh, and a poison command cannot spin the CPU.
var sessionStrategy = actor.NewOneForOneStrategy(5, 10*time.Second, func(any) actor.Directive { return actor.RestartDirective })

// Bus returns the live bus (nil when none was configured).
func (s *Sessions) Bus() *Bus { return s.rt.bus }

// Journal returns the journal the sessions write to.
func (s *Sessions) Journal() *persistence.Journal { return s.rt.journal }

func (s *Sessions) ask(ctx context.Context, id string, msg any, timeout time.Duration) (any, error) {
	return s.rt.ask(ctx, id, msg, timeout)
}

// Create makes a session (a new ID when id is empty) or returns the existing one.
func (s *Sessions) Create(ctx context.Context, id string, c Create) (*Info, error) {
	if id == "" {
		id = messages.NewID("ses")
	}
	res, err := s.ask(ctx, id, &c, s.rt.cfg.RequestTimeout)
	if err != nil {
		return nil, err
	}
	return res.(*Info), nil
}

// Prompt admits one input; the receipt carries the admitted seq and is
// durable before Prompt returns.
func (s *Sessions) Prompt(ctx context.Context, id string, p Prompt) (*Receipt, error) {
	if p.TraceParent == "" {
		p.TraceParent = telemetry.TraceParent(ctx)
	}
	res, err := s.ask(ctx, id, &p, s.rt.cfg.RequestTimeout)
	if err != nil {
		return nil, err
	}
	return res.(*Receipt), nil
}

// Run resumes the session explicitly and returns how the drain ended.
func (s *Sessions) Run(ctx context.Context, id string) (*Outcome, error) {
	res, err := s.ask(ctx, id, &Run{}, longWait)
	if err != nil {
		return nil, err
	}
	return res.(*Outcome), nil
}

// Wake reports new inbox work.
func (s *Sessions) Wake(ctx context.Context, id string) error {
	_, err := s.ask(ctx, id, &Wake{}, s.rt.cfg.RequestTimeout)
	return err
}

// WaitIdle blocks until the session has no drain and returns the last outcome.
func (s *Sessions) WaitIdle(ctx context.Context, id string) (*Outcome, error) {
	res, err := s.ask(ctx, id, &WaitIdle{}, longWait)
	if err != nil {
		return nil, err
	}
	return res.(*Outcome), nil
}

// Interrupt stops the session's drain on this process and returns once its
// cleanup is done. An idle or unknown session is a no-op.
func (s *Sessions) Interrupt(ctx context.Context, id string) error {
	if !s.rt.acts.isLive(id) {
		return nil // nothing of it runs here
	}
	_, err := s.ask(ctx, id, &Interrupt{}, longWait)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Compact runs a manual compaction of an idle session and returns how it ended.
func (s *Sessions) Compact(ctx context.Context, id string) (*Outcome, error) {
	res, err := s.ask(ctx, id, &Compact{}, longWait)
	if err != nil {
		return nil, err
	}
	return res.(*Outcome), nil
}

// Move changes the session's Location.
func (s *Sessions) Move(ctx context.Context, id, to string) (*Info, error) {
	return s.info(ctx, id, &Move{To: to})
}

// Rename gives the session a title.
func (s *Sessions) Rename(ctx context.Context, id, title string) (*Info, error) {
	return s.info(ctx, id, &Rename{Title: title})
}

// Delete deletes an idle session (see the Delete command).
func (s *Sessions) Delete(ctx context.Context, id string) error {
	_, err := s.ask(ctx, id, &Delete{}, s.rt.cfg.RequestTimeout)
	return err
}

// SwitchAgent selects the agent for the next provider turn.
func (s *Sessions) SwitchAgent(ctx context.Context, id, agent string) (*Info, error) {
	return s.info(ctx, id, &SwitchAgent{Agent: agent})
}

// SwitchModel selects the model for the next provider turn.
func (s *Sessions) SwitchModel(ctx context.Context, id string, m messages.ModelRef) (*Info, error) {
	return s.info(ctx, id, &SwitchModel{Model: m})
}

func (s *Sessions) info(ctx context.Context, id string, msg any) (*Info, error) {
	res, err := s.ask(ctx, id, msg, s.rt.cfg.RequestTimeout)
	if err != nil {
		return nil, err
	}
	return res.(*Info), nil
}

// ReplyPermission answers a pending permission request.
func (s *Sessions) ReplyPermission(ctx context.Context, id string, r ReplyPermission) error {
	_, err := s.ask(ctx, id, &r, s.rt.cfg.RequestTimeout)
	return err
}

// Revert runs one revert command.
func (s *Sessions) Revert(ctx context.Context, id string, r Revert) (*RevertInfo, error) {
	res, err := s.ask(ctx, id, &r, s.rt.cfg.RequestTimeout)
	if err != nil {
		return nil, err
	}
	return res.(*RevertInfo), nil
}

// Recover finds the sessions that owe work (persistence.Journal.Owed): those
// mid-drain when their owner died, to which it applies the configured
// policy (resume once, or mark interrupted), and those holding admitted input
// no drain promoted (the server died between a prompt's receipt and its
// drain's start), whose drain it starts whatever their status: a receipt
// means the work happens without further help from the client.
// progress, when set, is called after each session.
func (s *Sessions) Recover(ctx context.Context, progress func(done, total int)) ([]string, error) {
	ids, err := s.rt.journal.Owed(ctx)
	if err != nil {
		return nil, fmt.Errorf("recover: list sessions that owe work: %w", err)
	}
	// One session failing does not hold the others back. A session the
	// journal refused (a full disk) waits for it and resumes by itself
	// (owedWhileJournalFails); the others are reported.
	var errs []error
	for i, id := range ids {
		if _, err := s.ask(ctx, id, &protocol.RecoverSession{Policy: s.rt.cfg.Recovery}, s.rt.cfg.RequestTimeout); err != nil {
			if ctx.Err() != nil {
				return ids[:i], fmt.Errorf("recover session %s: %w", id, err)
			}
			errs = append(errs, fmt.Errorf("recover session %s: %w", id, err))
		}
		if progress != nil {
			progress(i+1, len(ids))
		}
	}
	return ids, errors.Join(errs...)
}

// Active lists the sessions with a live activation in this process.
func (s *Sessions) Active() []string { return s.rt.acts.active() }

// Shutdown lets every drain reach its next safe boundary (the turn in
// flight finishes, no new turn starts), waits for that until ctx is done, then
// stops. Sessions cut short stay mid-drain in the journal and are resumed by
// Recover at the next start.
func (s *Sessions) Shutdown(ctx context.Context) {
	s.rt.stopping.Store(true)
	var wg sync.WaitGroup
	for _, id := range s.rt.acts.active() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = s.rt.acts.request(ctx, id, &WaitIdle{}, longWait)
		}()
	}
	wg.Wait()
	s.Stop()
}

// Stop stops every session actor (drains are abandoned without writing;
// their sessions are recovered at the next start) and cancels work in flight.
func (s *Sessions) Stop() {
	s.rt.acts.stopAll()
	s.cancel()
}
