package session

import (
	"errors"
	"reflect"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
)

func steer(id string) Pending  { return Pending{MessageID: id, Delivery: messages.Steer} }
func queued(id string) Pending { return Pending{MessageID: id, Delivery: messages.Queue} }

func TestDecide(t *testing.T) {
	cases := []struct {
		name string
		in   Boundary
		want Step
	}{
		{"idle with nothing stops", Boundary{}, Step{}},
		{"run with nothing makes one attempt", Boundary{RunOwed: true}, Step{Call: true}},
		{"steers promote together in admission order",
			Boundary{Pending: []Pending{steer("a"), steer("b")}},
			Step{Promote: []string{"a", "b"}, Call: true}},
		{"steer promotes during a continuation",
			Boundary{Pending: []Pending{steer("a")}, Continuation: true, TurnsUsed: 3},
			Step{Promote: []string{"a"}, Call: true}},
		{"queued waits while a continuation is required",
			Boundary{Pending: []Pending{queued("q")}, Continuation: true, TurnsUsed: 2},
			Step{TurnsUsed: 2, Call: true}},
		{"one queued per activity, oldest first",
			Boundary{Pending: []Pending{queued("q1"), queued("q2")}},
			Step{Promote: []string{"q1"}, Call: true}},
		{"steer runs before queued on an idle session",
			Boundary{Pending: []Pending{queued("q"), steer("s")}},
			Step{Promote: []string{"s"}, Call: true}},
		{"promotion resets the allowance once",
			Boundary{Pending: []Pending{steer("a"), steer("b")}, Continuation: true, TurnsUsed: 24},
			Step{Promote: []string{"a", "b"}, Call: true}},
		{"last allowed turn has no tools",
			Boundary{Continuation: true, TurnsUsed: 24},
			Step{TurnsUsed: 24, Call: true, LastTurn: true}},
		{"custom limit",
			Boundary{Continuation: true, TurnsUsed: 1, TurnLimit: 2},
			Step{TurnsUsed: 1, Call: true, LastTurn: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Decide(c.in)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Decide(%+v)\n got %+v\nwant %+v", c.in, got, c.want)
			}
		})
	}
}

func TestDecideFailsPastTheLimitWithWorkLeft(t *testing.T) {
	got := Decide(Boundary{Continuation: true, TurnsUsed: 25})
	if got.Call || !errors.Is(got.Err, ErrTurnLimit) {
		t.Fatalf("got %+v, want ErrTurnLimit and no call", got)
	}
	// Nothing left to do past the limit is a plain stop, not a failure.
	if got := Decide(Boundary{TurnsUsed: 25}); got.Err != nil || got.Call {
		t.Fatalf("idle past limit: %+v", got)
	}
}
