package api

import (
	"context"

	"github.com/sessionrt/sessionrt/messages"
)

// OpenCode's session.next.prompted names the prompt it makes visible, with
// its text and delivery. The runtime's promotion (PromptPromoted) names its
// prompts by message ID only: the prompt is in the earlier PromptAdmitted.
// A stream remembers the admissions it carries and, for a promotion whose
// admission it did not carry (a stream that starts after it: a reconnect
// with Last-Event-ID, ?after=, a page of history), reads the prompt from
// the journal's inbox row, which outlives the promotion.

// promptedEvent is a promotion with its first prompt, as the V2 wire
// writes it.
type promptedEvent struct {
	messages.PromptPromoted
	prompt   messages.Prompt
	delivery messages.Delivery
}

type admission struct {
	prompt   messages.Prompt
	delivery messages.Delivery
}

// admissions is one stream's admitted, not yet promoted prompts by message
// ID; a promotion removes its own.
type admissions map[string]admission

// withPrompt returns env with a promotion's prompt attached and records an
// admission; other events are returned as they are.
func (s *Server) withPrompt(ctx context.Context, a admissions, env messages.Envelope) (messages.Envelope, error) {
	switch e := env.Event.(type) {
	case messages.PromptAdmitted:
		a[e.MessageID] = admission{e.Prompt, e.Delivery}
	case messages.PromptPromoted:
		if len(e.MessageIDs) == 0 {
			return env, nil
		}
		first, ok := a[e.MessageIDs[0]]
		if !ok {
			in, err := s.cfg.Journal.Admission(ctx, env.SessionID, e.MessageIDs[0])
			if err != nil {
				return env, err
			}
			first = admission{in.Prompt, in.Delivery}
		}
		for _, id := range e.MessageIDs {
			delete(a, id)
		}
		env.Event = promptedEvent{e, first.prompt, first.delivery}
	}
	return env, nil
}
