package effect

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// TestTitlePostsTheModelsAnswer: the title model chosen off the mailbox
// is asked with the prompt; its answer is posted with the model.
func TestTitlePostsTheModelsAnswer(t *testing.T) {
	prov := scriptedProvider(t, scripted.Turn{Text: "Fix the flaky test"})
	m := messages.ModelRef{Provider: scripted.Kind, ID: "small"}
	ch := make(posted, 1)
	Title(context.Background(), func() (messages.ModelRef, provider.Provider, error) { return m, prov, nil },
		"the test in ci fails one run in ten", time.Minute, ch.post)
	got, ok := ch.next(t).(*Titled)
	if !ok || got.Err != nil || got.Title != "Fix the flaky test" || got.Model != m {
		t.Fatalf("%#v, want the title from %v", got, m)
	}
	reqs := prov.Requests()
	if len(reqs) != 1 || reqs[0].Model.Model != "small" {
		t.Fatalf("requests %+v, want one to the title model", reqs)
	}
}

// TestTitleFailsWithoutAskingOrWithinItsTimeout: a model that cannot be
// chosen is posted as the error, with nothing asked; a provider that does
// not answer fails the request at its timeout.
func TestTitleFailsWithoutAskingOrWithinItsTimeout(t *testing.T) {
	m := messages.ModelRef{Provider: scripted.Kind, ID: "main"}
	off := errors.New("titles are off")
	ch := make(posted, 1)
	Title(context.Background(), func() (messages.ModelRef, provider.Provider, error) { return m, nil, off }, "p", time.Minute, ch.post)
	if got := ch.next(t).(*Titled); !errors.Is(got.Err, off) || got.Model != m {
		t.Fatalf("%#v, want the model's error", got)
	}

	hangs := scriptedProvider(t, scripted.Turn{Hang: true})
	Title(context.Background(), func() (messages.ModelRef, provider.Provider, error) { return m, hangs, nil }, "p", 50*time.Millisecond, ch.post)
	if got := ch.next(t).(*Titled); got.Err == nil || got.Title != "" {
		t.Fatalf("%#v, want the request failed at its timeout", got)
	}
}
