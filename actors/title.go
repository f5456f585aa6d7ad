package actors

import (
	"errors"
	"time"

	"github.com/sessionrt/sessionrt/actors/effect"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/session"
)

// titleTimeout bounds a title request: a title that takes longer is not
// worth waiting for (the session keeps its default), and the request must
// not outlive a provider that stopped answering.
const titleTimeout = 2 * time.Minute

// askTitle runs the title request the core asked for (session.Title) off
// the mailbox (effect.Title): the turn streams meanwhile and nothing waits
// for it. Its answer comes back as a message (onTitled).
func (a *sessionActor) askTitle(t *session.Title) {
	if t == nil || !a.rt.cfg.Titles {
		return
	}
	rt, loc, model := a.rt, a.core.State.Row.Location, a.core.State.Row.Model
	effect.Title(rt.ctx, func() (messages.ModelRef, provider.Provider, error) { return rt.titleModel(loc, model) },
		t.Prompt, titleTimeout, effect.To(a.system, a.self))
}

// errNoTitles: the Location's configuration turns titles off.
var errNoTitles = errors.New("titles are off (agent.title.disable)")

// titleModel is the model that names a session of loc running on model:
// the Location's title model when its providers serve it, else the
// session's own (OpenCode falls back the same way).
func (rt *runtime) titleModel(loc string, model messages.ModelRef) (messages.ModelRef, provider.Provider, error) {
	s, err := rt.setup(loc)
	if err != nil {
		return model, nil, err
	}
	if s.NoTitles {
		return model, nil, errNoTitles
	}
	if small := s.TitleModel; small.ID != "" {
		if p, err := rt.provider(s.Models, small); err == nil {
			return small, p, nil
		}
	}
	p, err := rt.provider(s.Models, model)
	return model, p, err
}

// onTitled hands a title to the core, which names the session unless a
// client did meanwhile. A failed request changes nothing: the session
// keeps its default title, and its drain never knew.
func (a *sessionActor) onTitled(m *effect.Titled) {
	if errors.Is(m.Err, errNoTitles) {
		return
	}
	a.obs.Titled(m.Err, a.core.State.Row.Title == "")
	model := m.Model.Provider + "/" + m.Model.ID
	if m.Err != nil {
		a.log.Warn("session title request failed; the session keeps its default title", "session", a.id, "model", model, "err", m.Err)
		return
	}
	a.log.Debug("session titled", "session", a.id, "model", model, "took", m.Took)
	a.execute(a.core.Step(session.TitleGenerated{Title: m.Title}))
}
