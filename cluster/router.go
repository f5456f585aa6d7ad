package cluster

import (
	"context"
	"fmt"
	"github.com/sessionrt/sessionrt/telemetry"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/messages"
)

// Router is the Sessions facade of a cluster: the same methods as
// actors.Sessions, each sent to the session's grain wherever disthash
// places it (this member or another). A server in cluster mode gives its
// API a Router instead of its local facade, so a command entering any
// member reaches the one activation that owns the session.
type Router struct {
	m *Member
	// Short bounds commands that answer at once (create, prompt, switches);
	// default 30 s. Commands that wait for a drain are bounded by ctx.
	Short time.Duration
}

// NewRouter routes through m.
func NewRouter(m *Member) *Router { return &Router{m: m, Short: 30 * time.Second} }

// drainWait bounds drain-waiting commands when ctx has no deadline.
const drainWait = 24 * time.Hour

func (r *Router) call(ctx context.Context, id string, msg any, long bool) (any, error) {
	if id == "" {
		return nil, &actors.CommandError{Code: actors.CodeInvalid, Msg: "empty session ID"}
	}
	t := r.Short
	if long {
		t = drainWait
	}
	return r.m.Request(ctx, id, SessionKind, msg, CallOptions{Timeout: t})
}

func as[T any](res any, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	v, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("cluster: session answered %T, want %T", res, zero)
	}
	return v, nil
}

// Create makes the session (a new ID when id is empty) or returns it.
func (r *Router) Create(ctx context.Context, id string, c actors.Create) (*actors.Info, error) {
	if id == "" {
		id = messages.NewID("ses")
	}
	return as[*actors.Info](r.call(ctx, id, &c, false))
}

// Prompt admits one input (its message ID makes a retry admit it once).
func (r *Router) Prompt(ctx context.Context, id string, p actors.Prompt) (*actors.Receipt, error) {
	if p.TraceParent == "" {
		p.TraceParent = telemetry.TraceParent(ctx)
	}
	return as[*actors.Receipt](r.call(ctx, id, &p, false))
}

// Run resumes the session and returns how the drain ended.
func (r *Router) Run(ctx context.Context, id string) (*actors.Outcome, error) {
	return as[*actors.Outcome](r.call(ctx, id, &actors.Run{}, true))
}

// Wake reports new inbox work.
func (r *Router) Wake(ctx context.Context, id string) error {
	_, err := r.call(ctx, id, &actors.Wake{}, false)
	return err
}

// WaitIdle blocks until the session has no drain.
func (r *Router) WaitIdle(ctx context.Context, id string) (*actors.Outcome, error) {
	return as[*actors.Outcome](r.call(ctx, id, &actors.WaitIdle{}, true))
}

// Interrupt stops the session's drain wherever it runs.
func (r *Router) Interrupt(ctx context.Context, id string) error {
	_, err := r.call(ctx, id, &actors.Interrupt{}, true)
	return err
}

// Compact runs a manual compaction of an idle session.
func (r *Router) Compact(ctx context.Context, id string) (*actors.Outcome, error) {
	return as[*actors.Outcome](r.call(ctx, id, &actors.Compact{}, true))
}

// Move changes the session's Location.
func (r *Router) Move(ctx context.Context, id, to string) (*actors.Info, error) {
	return as[*actors.Info](r.call(ctx, id, &actors.Move{To: to}, false))
}

// Rename gives the session a title.
func (r *Router) Rename(ctx context.Context, id, title string) (*actors.Info, error) {
	return as[*actors.Info](r.call(ctx, id, &actors.Rename{Title: title}, false))
}

// Delete deletes an idle session.
func (r *Router) Delete(ctx context.Context, id string) error {
	_, err := r.call(ctx, id, &actors.Delete{}, false)
	return err
}

// SwitchAgent selects the agent for the next provider turn.
func (r *Router) SwitchAgent(ctx context.Context, id, agent string) (*actors.Info, error) {
	return as[*actors.Info](r.call(ctx, id, &actors.SwitchAgent{Agent: agent}, false))
}

// SwitchModel selects the model for the next provider turn.
func (r *Router) SwitchModel(ctx context.Context, id string, m messages.ModelRef) (*actors.Info, error) {
	return as[*actors.Info](r.call(ctx, id, &actors.SwitchModel{Model: m}, false))
}

// Revert runs a revert command on the member holding the session.
func (r *Router) Revert(ctx context.Context, id string, rv actors.Revert) (*actors.RevertInfo, error) {
	return as[*actors.RevertInfo](r.call(ctx, id, &rv, false))
}

// ReplyPermission answers a pending permission request.
func (r *Router) ReplyPermission(ctx context.Context, id string, p actors.ReplyPermission) error {
	_, err := r.call(ctx, id, &p, false)
	return err
}
