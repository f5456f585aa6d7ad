package actors

import (
	"errors"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
)

func TestBusDeliversOnlyTheSubscribedSession(t *testing.T) {
	b := NewBus()
	one := b.Subscribe("s1", 4)
	all := b.Subscribe("", 4)
	defer one.Close()
	defer all.Close()
	b.Publish(Live{SessionID: "s2", Delta: &messages.Delta{Kind: messages.TextDelta, Text: "x"}})
	b.Publish(Live{SessionID: "s1", Delta: &messages.Delta{Kind: messages.TextDelta, Text: "y"}})
	if got := <-one.C(); got.SessionID != "s1" || got.Delta.Text != "y" {
		t.Fatalf("s1 subscriber got %+v", got)
	}
	if len(one.C()) != 0 {
		t.Fatal("s1 subscriber received another session's item")
	}
	if got := <-all.C(); got.SessionID != "s2" {
		t.Fatalf("global subscriber got %+v first", got)
	}
	if got := <-all.C(); got.SessionID != "s1" {
		t.Fatalf("global subscriber got %+v second", got)
	}
}

func TestBusCutsASlowSubscriberWithoutBlocking(t *testing.T) {
	b := NewBus()
	slow := b.Subscribe("s1", 2)
	for i := 0; i < 10; i++ { // would block forever if Publish waited
		b.Publish(Live{SessionID: "s1", Delta: &messages.Delta{Kind: messages.TextDelta}})
	}
	n := 0
	for range slow.C() {
		n++
	}
	if n != 2 {
		t.Fatalf("slow subscriber drained %d items before the cut, want its buffer of 2", n)
	}
	if !errors.Is(slow.Err(), ErrSlowSubscriber) {
		t.Fatalf("cut subscription says %v", slow.Err())
	}
	slow.Close() // closing after a cut is harmless
}
