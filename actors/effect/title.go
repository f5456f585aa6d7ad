package effect

import (
	"context"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/title"
)

// Titled is a title request's answer (Err: the request, or choosing its
// model, failed; Model is the model asked, or that would have been).
type Titled struct {
	Title string
	Model messages.ModelRef
	Err   error
	Took  time.Duration
}

// TitleModel chooses the model that names a session, and its provider.
// It may block on the configuration: Title calls it off the mailbox.
type TitleModel func() (messages.ModelRef, provider.Provider, error)

// TitleTimeout is how long the session's title request may take (Title's
// timeout): a title that takes longer is not worth waiting for (the
// session keeps its default), and the request must not outlive a provider
// that stopped answering.
const TitleTimeout = 2 * time.Minute

// Title asks a title model to name the session whose first prompt is
// prompt, on its own goroutine (the turn streams meanwhile and nothing
// waits for it), and posts the answer (Titled). A request that takes
// longer than timeout fails: a title is not worth waiting for, and the
// request must not outlive a provider that stopped answering; one that
// outlives ctx (the server stopping) too.
func Title(ctx context.Context, model TitleModel, prompt string, timeout time.Duration, post Post) {
	Go(post, func() any {
		start := time.Now()
		m, prov, err := model()
		if err != nil {
			return &Titled{Model: m, Err: err}
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		name, err := title.Ask(ctx, prov, title.Request(provider.ModelRef{Provider: m.Provider, Model: m.ID}, prompt))
		return &Titled{Title: name, Model: m, Err: err, Took: time.Since(start)}
	}, func(err error) any { return &Titled{Err: err} })
}
