package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/sessionrt/sessionrt/actors"
)

func TestRouterRefusesAnEmptySessionIDAndAWrongReplyType(t *testing.T) {
	r := &Router{}
	if _, err := r.Prompt(context.Background(), "", actors.Prompt{}); !errors.Is(err, actors.ErrInvalid) {
		t.Fatalf("empty session ID: %v, want ErrInvalid", err)
	}
	if _, err := as[*actors.Info](&actors.Done{}, nil); err == nil {
		t.Fatal("a Done taken for an Info")
	}
	want := &actors.Outcome{LastSeq: 3}
	if got, err := as[*actors.Outcome](want, nil); err != nil || got != want {
		t.Fatalf("as = %v, %v", got, err)
	}
	boom := errors.New("boom")
	if _, err := as[*actors.Outcome](nil, boom); err != boom {
		t.Fatalf("the call's error was replaced: %v", err)
	}
}
