package api

import (
	"context"
	"testing"
	"time"
)

// A synchronous prompt answers once every V1 stream carrying the session's
// directory has flushed the drain's events: OpenCode's `run --attach`
// exits on the answer and prints only what its stream already brought.
func TestV1PromptAnswersAfterTheStreamsWroteTheDrain(t *testing.T) {
	var w v1Watchers
	here := w.add(func(dir string) bool { return dir == "/p" })
	elsewhere := w.add(func(dir string) bool { return dir == "/q" }) // never follows the session: not waited for
	defer w.remove(elsewhere)

	done := make(chan struct{})
	go func() {
		w.delivered(context.Background(), "/p", "ses_1", 7, time.Minute)
		close(done)
	}()
	w.flushed(here, "ses_1", 6)
	w.flushed(here, "ses_other", 9)
	select {
	case <-done:
		t.Fatal("answered while the stream had written the session only up to seq 6 of 7")
	default:
	}
	w.flushed(here, "ses_1", 7)
	<-done // the test's timeout bounds a hang

	// A stream that closes is no longer waited for.
	done = make(chan struct{})
	go func() {
		w.delivered(context.Background(), "/p", "ses_1", 8, time.Minute)
		close(done)
	}()
	w.remove(here)
	<-done
}

// A stream whose client stopped reading holds the answer back for the limit
// only.
func TestV1PromptAnswersAtTheLimitWhenAStreamLags(t *testing.T) {
	var w v1Watchers
	defer w.remove(w.add(func(string) bool { return true }))
	w.delivered(context.Background(), "/p", "ses_1", 1, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.delivered(ctx, "/p", "ses_1", 1, time.Minute) // a gone caller does not wait
}
