package toolactors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/toolactors/bound"
	"github.com/sessionrt/sessionrt/toolactors/permission"
	"github.com/sessionrt/sessionrt/toolactors/schema"
	"github.com/sessionrt/sessionrt/toolactors/tools"
)

// callActor owns one tool call. The tool runs on its own goroutine, so the actor's
// mailbox stays free for Stop: stopping the actor cancels the tool (a bash process
// group gets SIGTERM, then SIGKILL) and waits for it, bounded by Config.StopWait.
type callActor struct {
	run    *callRun
	tool   tools.Tool
	cfg    Config
	cancel context.CancelFunc
	done   chan struct{}
	// stopping tells the tool goroutine not to post callFinished to an actor that is
	// already stopping (it would only become a dead letter).
	stopping atomic.Bool
}

// callFinished is posted by the tool goroutine to its actor when it has settled.
type callFinished struct{}

func (a *callActor) Receive(ctx actor.Context) {
	defer func() {
		// Never let a bug here escape: settle as panicked and stop.
		if p := recover(); p != nil {
			a.cfg.Logger.Error("tool call actor panicked", "call", a.run.req.CallID, "panic", p, "stack", string(debug.Stack()))
			a.run.settleError(ErrorPanicked, fmt.Sprintf("tool %s panicked: %v", a.run.req.Tool, p), "", "")
			if a.cancel != nil {
				a.cancel()
			}
			ctx.Stop(ctx.Self())
		}
	}()
	switch ctx.Message().(type) {
	case *actor.Started:
		runCtx, cancel := context.WithCancel(context.Background())
		a.cancel, a.done = cancel, make(chan struct{})
		self, system := ctx.Self(), ctx.ActorSystem()
		go func() {
			defer func() {
				if !a.stopping.Load() {
					system.Root.Send(self, &callFinished{})
				}
			}()
			defer close(a.done)
			a.execute(runCtx)
		}()
	case *callFinished:
		ctx.Stop(ctx.Self())
	case *actor.Stopping:
		a.stopping.Store(true)
		if a.cancel == nil {
			return
		}
		a.cancel()
		t := time.NewTimer(a.cfg.StopWait)
		defer t.Stop()
		select {
		case <-a.done:
		case <-t.C:
			a.cfg.Logger.Error("tool did not return after cancellation; settling it as interrupted",
				"call", a.run.req.CallID, "tool", a.run.req.Tool, "waited", a.cfg.StopWait)
		}
		a.run.settleError(ErrorInterrupted, InterruptedMessage, "", "")
	}
}

// execute runs the tool and settles. It runs on its own goroutine: a panic here would
// kill the process, so it is recovered into a settlement.
func (a *callActor) execute(ctx context.Context) {
	req := a.run.req
	defer func() {
		if p := recover(); p != nil {
			a.cfg.Logger.Error("tool panicked", "session", req.SessionID, "call", req.CallID, "tool", req.Tool,
				"panic", p, "stack", string(debug.Stack()))
			a.run.settleError(ErrorPanicked, fmt.Sprintf("tool %s panicked: %v", req.Tool, p), "", "")
		}
	}()
	agent := req.Agent
	if agent == "" {
		agent = DefaultAgent
	}
	call := tools.Call{
		SessionID: req.SessionID, CallID: req.CallID, Agent: agent,
		Dir: a.cfg.Dir, References: a.cfg.References, Input: req.Input, ManagedDir: a.cfg.Output.Dir(),
		Authorize: func(ctx context.Context, action string, resources, always []string, title string) error {
			return permission.Authorize(ctx, permission.Check{
				Project: a.cfg.Project,
				Rules:   req.Rules,
				Request: permission.Request{
					SessionID: req.SessionID, CallID: req.CallID, Tool: req.Tool, Agent: agent,
					Action: action, Resources: resources, Always: always, Title: title,
				},
			}, a.cfg.Approvals, req.Asker)
		},
	}
	res, err := a.tool.Run(ctx, call)
	if err != nil {
		a.run.settle(&ToolSettled{Error: classify(ctx, req.Tool, err)})
		return
	}
	// The tool succeeded: from here on nothing checks ctx, so bounding and settling
	// form one interruption-safe completion region.
	out, err := a.finish(res)
	if err != nil {
		a.run.settleError(ErrorFailed, fmt.Sprintf("tool %s returned invalid output: %v", req.Tool, err), "", "")
		return
	}
	a.run.settle(&ToolSettled{Output: out})
}

// finish validates a result and bounds its text.
func (a *callActor) finish(res tools.Result) (*ToolOutput, error) {
	out := &ToolOutput{Title: res.Title, ToolManagedPath: res.ManagedPath}
	if res.Structured != nil {
		b, err := json.Marshal(res.Structured)
		if err != nil {
			return nil, fmt.Errorf("structured value does not encode as JSON: %w", err)
		}
		out.Structured = b
	}
	text := strings.ToValidUTF8(res.Text, "\uFFFD")
	if text == "" && out.Structured != nil {
		// Structured-only result: the model sees its JSON, bounded below; Structured
		// itself stays complete for Session consumers.
		text = string(out.Structured)
	}
	if res.ManagedPath != "" && !a.cfg.Output.Owns(res.ManagedPath) {
		return nil, fmt.Errorf("managed path %s is not a managed tool output file", res.ManagedPath)
	}
	if !bound.Exceeds(text, a.cfg.Limits) {
		out.Text = text
		return out, nil
	}
	path, err := a.cfg.Output.Write(text)
	if err != nil {
		// The tool still succeeded: settle an explicitly lossy preview, tell operators.
		a.cfg.Logger.Error("managed tool output file not written; settling a lossy preview",
			"session", a.run.req.SessionID, "call", a.run.req.CallID, "tool", a.run.req.Tool,
			"bytes", len(text), "err", err)
		path = ""
		out.Lossy = true
	}
	p := bound.PreviewSaved(text, a.cfg.Limits, bound.Saved{Path: path, Dropped: res.Dropped})
	out.Text, out.Truncated, out.ManagedPath = p.Text, true, path
	return out, nil
}

// classify maps a tool error to its settlement.
func classify(ctx context.Context, tool string, err error) *ToolError {
	if ctx.Err() != nil {
		return &ToolError{Kind: ErrorInterrupted, Message: InterruptedMessage}
	}
	var fe *schema.FieldError
	var de *permission.DeniedError
	var re *permission.RejectedError
	switch {
	case errors.As(err, &fe):
		return &ToolError{Kind: ErrorInvalidInput, Message: fmt.Sprintf("%s: %v", tool, err), Field: fe.Field}
	case errors.As(err, &de):
		return &ToolError{Kind: ErrorDenied, Message: err.Error()}
	case errors.As(err, &re):
		return &ToolError{Kind: ErrorRejected, Message: err.Error(), Feedback: re.Feedback}
	case errors.Is(err, permission.ErrDenied):
		return &ToolError{Kind: ErrorDenied, Message: err.Error()}
	}
	return &ToolError{Kind: ErrorFailed, Message: err.Error()}
}
