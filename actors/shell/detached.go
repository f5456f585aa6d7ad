package shell

import (
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
)

// Detached is a Session actor driven by hand, outside any actor system:
// the facade's tests check what an activation loads and keeps against the
// journal with it. The runtime never uses it.
type Detached struct{ a *sessionActor }

// NewDetached returns the actor of id, not activated.
func NewDetached(id string, d *Deps) *Detached {
	return &Detached{a: &sessionActor{id: id, rt: d, log: d.Logger}}
}

// Activate acquires the session's ownership and loads its state.
func (x *Detached) Activate() error { return x.a.activate(nil) }

// Create and Prompt run the commands as the mailbox would.
func (x *Detached) Create(m *Create) any { return x.a.create(m) }
func (x *Detached) Prompt(m *Prompt) any { return x.a.prompt(m) }

// Write appends events, fenced by the actor's ownership.
func (x *Detached) Write(evs ...messages.Event) error { return x.a.write(evs) }

func (x *Detached) ID() string            { return x.a.id }
func (x *Detached) Seq() int64            { return x.a.seq }
func (x *Detached) Ownership() int64      { return x.a.ownership }
func (x *Detached) State() *session.State { return &x.a.core.State }
