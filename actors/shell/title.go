package shell

import (
	"errors"

	"github.com/sessionrt/sessionrt/actors/effect"
	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/session"
)

// askTitle runs the title request the core asked for (session.Title) off
// the mailbox (effect.Title): the turn streams meanwhile and nothing waits
// for it. Its answer comes back as a message (onTitled).
func (a *sessionActor) askTitle(t *session.Title) {
	if t == nil || !a.rt.Titles {
		return
	}
	rt, loc, model := a.rt, a.core.State.Row.Location, a.core.State.Row.Model
	effect.Title(rt.Ctx, func() (messages.ModelRef, provider.Provider, error) { return rt.TitleModel(loc, model) },
		t.Prompt, effect.TitleTimeout, effect.To(a.system, a.self))
}

// onTitled hands a title to the core, which names the session unless a
// client did meanwhile. A failed request changes nothing: the session
// keeps its default title, and its drain never knew.
func (a *sessionActor) onTitled(m *effect.Titled) {
	if errors.Is(m.Err, protocol.ErrNoTitles) {
		return
	}
	a.obs.Titled(m.Model, m.Took, m.Err, a.core.State.Row.Title == "")
	if m.Err == nil {
		a.execute(a.core.Step(session.TitleGenerated{Title: m.Title}))
	}
}
