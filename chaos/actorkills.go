package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/cluster/clustertest"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/node"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/toolactors"
)

// ActorConfig configures an in-process run that kills actors.
type ActorConfig struct {
	// Data is a fresh directory for the run. Required.
	Data string
	// Sessions run concurrently; default 8.
	Sessions int
	// Prompts per session; default 6.
	Prompts int
	// Kills is the number of Session actor kills, spread over the fault
	// points; default 210 (30 per point). ToolKills more stop running tool
	// call actors; default 30.
	Kills, ToolKills int
	// Seed makes the fault choices repeatable; 0 picks one.
	Seed uint64
	// Timeout bounds the whole run, a backstop only; default 10 minutes.
	Timeout time.Duration
	Logger  *slog.Logger
}

func (c *ActorConfig) defaults() {
	if c.Sessions <= 0 {
		c.Sessions = 8
	}
	if c.Prompts <= 0 {
		c.Prompts = 6
	}
	if c.Kills <= 0 {
		c.Kills = 210
	}
	if c.ToolKills <= 0 {
		c.ToolKills = 30
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// injector decides, per fault point, whether to kill; each point has an
// equal share of the budget.
type injector struct {
	mu     sync.Mutex
	rng    *rand.Rand
	budget map[actors.FaultPoint]int
	done   map[string]int
}

func newInjector(kills int, seed uint64) *injector {
	in := &injector{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), budget: map[actors.FaultPoint]int{}, done: map[string]int{}}
	per := (kills + len(actors.FaultPoints) - 1) / len(actors.FaultPoints)
	for _, p := range actors.FaultPoints {
		in.budget[p] = per
	}
	return in
}

func (in *injector) fault(p actors.FaultPoint, _ string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.budget[p] <= 0 || in.rng.Float64() > 0.3 {
		return false
	}
	in.budget[p]--
	in.done[string(p)]++
	return true
}

func (in *injector) remaining() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for _, b := range in.budget {
		n += b
	}
	return n
}

// RunActorKills drives sessions while killing Session actors at every fault
// point and stopping running tool actors, then checks the invariants on a
// freshly opened journal.
func RunActorKills(ctx context.Context, cfg ActorConfig) (Report, error) {
	cfg.defaults()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	rep := Report{Mode: "actor-kills", Faults: map[string]int{}}
	loc := filepath.Join(cfg.Data, "project")
	if err := os.MkdirAll(loc, 0o755); err != nil {
		return rep, err
	}
	prov, err := newProvider(fmt.Sprintf("p%d", cfg.Seed%1000000))
	if err != nil {
		return rep, err
	}
	inj := newInjector(cfg.Kills, cfg.Seed)
	n, err := node.Start(ctx, node.Config{
		Data:         filepath.Join(cfg.Data, "data"),
		Providers:    func(messages.ModelRef) (provider.Provider, error) { return prov, nil },
		DefaultModel: Model,
		Logger:       cfg.Logger,
		Faults:       inj.fault,
		NoSpanStore:  true,
	})
	if err != nil {
		return rep, err
	}
	defer n.Stop(context.Background())

	toolKills := 0
	stopKiller := make(chan struct{})
	killerDone := make(chan struct{})
	go func() { // stops running tool call actors while the sessions work
		defer close(killerDone)
		tools, err := n.Locations.Child(ctx, loc, actors.ToolRegistryName)
		if err != nil {
			return
		}
		tick := time.NewTicker(3 * time.Millisecond)
		defer tick.Stop()
		for toolKills < cfg.ToolKills {
			select {
			case <-stopKiller:
				return
			case <-tick.C:
			}
			res, err := n.System.Root.RequestFuture(tools, &toolactors.ListCalls{}, 5*time.Second).Result()
			if err != nil {
				continue
			}
			if calls := res.(*toolactors.Calls).Calls; len(calls) > 0 {
				c := calls[0]
				_ = n.System.Root.StopFuture(c.Actor).Wait()
				toolKills++
			}
		}
	}()

	acked := make(map[string][]string)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Sessions)
	for i := 0; i < cfg.Sessions; i++ {
		sid := fmt.Sprintf("ses_chaos_%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Keep prompting until every planned kill has happened.
			more := func(k int) bool { return k < cfg.Prompts || (inj.remaining() > 0 && k < 40*cfg.Prompts) }
			ids, err := driveSession(ctx, n, sid, loc, more, i)
			mu.Lock()
			acked[sid] = ids
			mu.Unlock()
			if err != nil {
				errs <- fmt.Errorf("session %s: %w", sid, err)
			}
		}()
	}
	wg.Wait()
	close(stopKiller)
	<-killerDone
	close(errs)
	for err := range errs {
		return rep, err
	}
	for k, v := range inj.done {
		rep.Faults[k] = v
		rep.ActorKills += v
	}
	rep.Faults["tool-actor-stop"] = toolKills
	if err := n.Stop(ctx); err != nil {
		return rep, err
	}
	// The checks run on a fresh journal: only what is durable counts.
	j, err := persistence.OpenURL(ctx, filepath.Join(cfg.Data, "data", "journal"), "", true, persistence.Config{})
	if err != nil {
		return rep, err
	}
	defer j.Close()
	err = check(ctx, j, loc, acked, &rep)
	return rep, err
}

// driveSession creates the session, admits its prompts (retrying each with
// its ID until acknowledged: a kill can lose the receipt, never the
// admission) and waits until every prompt is answered, without ever asking
// for a run: what a kill left is the runtime's to resume.
func driveSession(ctx context.Context, n *node.Node, sid, loc string, more func(int) bool, salt int) ([]string, error) {
	return driveSessionAcked(ctx, n, sid, loc, more, salt, nil)
}

// driveSessionAcked is driveSession telling ack about each acknowledged prompt.
func driveSessionAcked(ctx context.Context, n *node.Node, sid, loc string, more func(int) bool, salt int, ack func(string)) ([]string, error) {
	if err := retry(ctx, func() error {
		_, err := n.Sessions.Create(ctx, sid, actors.Create{Location: loc})
		return err
	}); err != nil {
		return nil, err
	}
	var ids []string
	for k := 0; more(k); k++ {
		id := fmt.Sprintf("msg_%s_%d", sid, k)
		d := messages.Steer
		if (k+salt)%3 == 0 {
			d = messages.Queue
		}
		err := retry(ctx, func() error {
			_, err := n.Sessions.Prompt(ctx, sid, actors.Prompt{MessageID: id, Prompt: messages.Prompt{Text: "prompt " + id}, Delivery: d, Resume: true})
			return err
		})
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
		if ack != nil {
			ack(id)
		}
		if k%4 == 3 {
			_, _ = n.Sessions.WaitIdle(ctx, sid) // let turns run between bursts
		}
	}
	return ids, awaitSettled(ctx, n, sid)
}

// awaitSettled waits, without asking for a run (WaitIdle starts nothing),
// until the session has answered everything; it fails once its journal has
// shown no new event for settleStall (memberkill.go) while it is not
// settled: the bound is by progress, not by wall time.
func awaitSettled(ctx context.Context, n *node.Node, sid string) error {
	var last int64 = -1
	moved := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("session %s did not settle: %w (%s)", sid, err, describe(n.Journal, sid))
		}
		_, _ = n.Sessions.WaitIdle(ctx, sid)
		done, err := clustertest.Settled(ctx, n.Journal, sid)
		if err != nil || done {
			return err
		}
		s, err := n.Journal.Session(ctx, sid)
		if err != nil {
			return err
		}
		if s.LastSeq != last {
			last, moved = s.LastSeq, time.Now()
		} else if time.Since(moved) > settleStall {
			return fmt.Errorf("session %s: no event for %v and not settled, and no run is asked for: %s", sid, settleStall, describe(n.Journal, sid))
		}
		// An actor a fault killed restarts and resumes by itself; poll
		// its journal until it does.
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// retry repeats an idempotent command until it succeeds: a kill can lose
// its reply, never its effect.
func retry(ctx context.Context, f func() error) error {
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = f(); err == nil {
			return nil
		}
		if errors.Is(err, actors.ErrConflict) || errors.Is(err, actors.ErrInvalid) || errors.Is(err, actors.ErrBacklog) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return err
}

// describe summarizes a session's durable state for a failure message.
func describe(j *persistence.Journal, sid string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := j.Session(ctx, sid)
	if err != nil {
		return err.Error()
	}
	pending, _ := j.PendingInbox(ctx, sid)
	open, _ := j.ToolCalls(ctx, sid, messages.ToolStatePending, messages.ToolStateRunning)
	envs, _ := j.ReadEvents(ctx, sid, max(0, s.LastSeq-12), 100)
	var tail []string
	for _, e := range envs {
		tail = append(tail, fmt.Sprintf("%d:%s", e.Seq, e.Type.Name))
	}
	return fmt.Sprintf("status %s, %d pending, %d open tools, last events %v", s.Status, len(pending), len(open), tail)
}
