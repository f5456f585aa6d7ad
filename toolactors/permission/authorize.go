package permission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Sentinel errors callers branch on (wrapped by DeniedError and RejectedError).
var (
	ErrDenied   = errors.New("permission denied")
	ErrRejected = errors.New("permission rejected")
)

// DeniedError says a configured rule denies the resource.
type DeniedError struct {
	Action, Resource string
	Rule             Rule
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("permission denied: %s on %q by rule %s", e.Action, e.Resource, e.Rule)
}

func (e *DeniedError) Unwrap() error { return ErrDenied }

// RejectedError says the client rejected a pending request, with optional feedback.
// Without feedback the Session interrupts its drain; with feedback the model sees it
// as a tool error.
type RejectedError struct {
	Action   string
	Feedback string
}

func (e *RejectedError) Error() string {
	if e.Feedback == "" {
		return fmt.Sprintf("the user rejected permission for %s", e.Action)
	}
	return fmt.Sprintf("the user rejected permission for %s with feedback: %s", e.Action, e.Feedback)
}

func (e *RejectedError) Unwrap() error { return ErrRejected }

// Request is a pending permission request raised by an ask.
type Request struct {
	SessionID string `json:"sessionID" msgpack:"session_id"`
	CallID    string `json:"callID" msgpack:"call_id"`
	Tool      string `json:"tool" msgpack:"tool"`
	Agent     string `json:"agent" msgpack:"agent"`
	Action    string `json:"action" msgpack:"action"`
	// Resources are the resources the call acts on that no rule or approval allows.
	Resources []string `json:"resources" msgpack:"resources"`
	// Always are the patterns saved as project approvals when the reply is "always".
	Always []string `json:"always" msgpack:"always"`
	// Title is a one-line human description ("Run: git status").
	Title string `json:"title" msgpack:"title"`
}

// Answer is the client's choice.
type Answer string

// Answers.
const (
	Once   Answer = "once"
	Always Answer = "always"
	Reject Answer = "reject"
)

// Reply answers a Request.
type Reply struct {
	Answer   Answer `json:"answer" msgpack:"answer"`
	Feedback string `json:"feedback,omitempty" msgpack:"feedback,omitempty"` // with Reject only
}

// Asker raises a pending permission request and blocks until the client replies or
// ctx ends (the call was cancelled). The Session implements it by journaling the
// request, publishing it to clients and journaling the reply.
type Asker interface {
	Ask(ctx context.Context, req Request) (Reply, error)
}

// AskerFunc adapts a function to Asker.
type AskerFunc func(ctx context.Context, req Request) (Reply, error)

// Ask calls f.
func (f AskerFunc) Ask(ctx context.Context, req Request) (Reply, error) { return f(ctx, req) }

// ApprovalStore holds saved project approvals: allow rules added by "always" replies.
type ApprovalStore interface {
	Approvals(ctx context.Context, project string) ([]Rule, error)
	Approve(ctx context.Context, project string, rules []Rule) error
}

// MemoryApprovals is an in-process ApprovalStore, for standalone use and tests.
type MemoryApprovals struct {
	mu    sync.Mutex
	rules map[string][]Rule
}

// Approvals returns the saved approvals of project.
func (m *MemoryApprovals) Approvals(_ context.Context, project string) ([]Rule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Rule(nil), m.rules[project]...), nil
}

// Approve saves rules for project.
func (m *MemoryApprovals) Approve(_ context.Context, project string, rules []Rule) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rules == nil {
		m.rules = map[string][]Rule{}
	}
	m.rules[project] = append(m.rules[project], rules...)
	return nil
}

// Check is one authorization: a tool call acting as Action on Resources.
type Check struct {
	Project string // key of saved approvals (the Location's project)
	Rules   []Rule // agent and session rules, in order
	Request        // what an ask would raise; Request.Resources are the resources to check
}

// Authorize decides a Check: nil when allowed, a *DeniedError when a configured rule
// denies any resource, a *RejectedError when the client rejects, ctx's error when the
// call is cancelled while waiting. Saved approvals allow what configuration leaves at
// ask, never what it denies. One ask covers every resource still at ask.
func Authorize(ctx context.Context, c Check, store ApprovalStore, asker Asker) error {
	var pending []string
	var approvals []Rule
	loaded := false
	for _, res := range c.Resources {
		d := Evaluate(c.Rules, c.Action, res)
		switch d.Effect {
		case Deny:
			return &DeniedError{Action: c.Action, Resource: res, Rule: *d.Rule}
		case Allow:
			continue
		}
		if store != nil && !loaded {
			var err error
			if approvals, err = store.Approvals(ctx, c.Project); err != nil {
				return fmt.Errorf("load saved approvals of project %q: %w", c.Project, err)
			}
			loaded = true
		}
		if Evaluate(approvals, c.Action, res).Effect == Allow {
			continue
		}
		pending = append(pending, res)
	}
	if len(pending) == 0 {
		return nil
	}
	if asker == nil {
		return fmt.Errorf("permission for %s on %s needs an answer, but the caller supplied no asker: %w",
			c.Action, strings.Join(pending, ", "), ErrDenied)
	}
	req := c.Request
	req.Resources = pending
	if len(req.Always) == 0 {
		req.Always = pending
	}
	reply, err := asker.Ask(ctx, req)
	if err != nil {
		return fmt.Errorf("ask permission for %s: %w", c.Action, err)
	}
	switch reply.Answer {
	case Once:
		return nil
	case Always:
		if store == nil {
			return nil
		}
		saved := make([]Rule, 0, len(req.Always))
		for _, p := range req.Always {
			saved = append(saved, Rule{Action: c.Action, Resource: p, Effect: Allow})
		}
		if err := store.Approve(ctx, c.Project, saved); err != nil {
			return fmt.Errorf("save approval for %s in project %q: %w", c.Action, c.Project, err)
		}
		return nil
	case Reject:
		return &RejectedError{Action: c.Action, Feedback: reply.Feedback}
	default:
		return fmt.Errorf("permission reply for %s: unknown answer %q (want once, always or reject)", c.Action, reply.Answer)
	}
}
