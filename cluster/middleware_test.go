package cluster

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/cluster/wirepb"
)

func quietSystem(t *testing.T) *actor.ActorSystem {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
}

// gotActor records what reaches it and answers Run with Done.
type gotActor struct{ got chan any }

func (a *gotActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actors.Run:
		a.got <- m
		ctx.Respond(&actors.Done{LastSeq: 7})
	case *actor.Started, *actor.Stopping, *actor.Stopped:
	default:
		a.got <- m
	}
}

func TestGrainSeesDecodedCommandsNotEnvelopes(t *testing.T) {
	reg := SessionRegistry()
	system := quietSystem(t)
	got := make(chan any, 1)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &gotActor{got: got} }, wireProps(reg, slog.New(slog.DiscardHandler))...))
	defer system.Root.Stop(pid)

	enc, err := reg.Encode(&actors.Run{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := system.Root.RequestFuture(pid, enc, time.Minute).Result()
	if err != nil {
		t.Fatal(err)
	}
	if m := <-got; m == nil {
		t.Fatal("nothing received")
	} else if _, ok := m.(*actors.Run); !ok {
		t.Fatalf("actor received %T, want *actors.Run", m)
	}
	// The caller is local: the reply stays a plain pointer.
	if d, ok := res.(*actors.Done); !ok || d.LastSeq != 7 {
		t.Fatalf("reply %#v, want *actors.Done{LastSeq: 7}", res)
	}
}

func TestUndecodableMessageIsAnsweredWithInvalidError(t *testing.T) {
	reg := SessionRegistry()
	system := quietSystem(t)
	got := make(chan any, 1)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &gotActor{got: got} }, wireProps(reg, slog.New(slog.DiscardHandler))...))
	defer system.Root.Stop(pid)

	res, err := system.Root.RequestFuture(pid, &wirepb.Encoded{TypeName: "session.Unknown", Data: []byte{0x80}}, time.Minute).Result()
	if err != nil {
		t.Fatal(err)
	}
	enc, ok := res.(*wirepb.Encoded)
	if !ok {
		t.Fatalf("reply %T, want an encoded error", res)
	}
	dec, err := reg.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := dec.(error); !ok || !errors.Is(e, actors.ErrInvalid) {
		t.Fatalf("reply %#v, want an invalid CommandError", dec)
	}
	select {
	case m := <-got:
		t.Fatalf("the actor saw the undecodable message as %#v", m)
	default:
	}
}

func TestRepliesToAnotherMemberAreEncodedLocalOnesAreNot(t *testing.T) {
	reg := SessionRegistry()
	system := quietSystem(t)
	var sent []any
	next := func(_ actor.SenderContext, _ *actor.PID, env *actor.MessageEnvelope) {
		sent = append(sent, env.Message)
	}
	send := encodeOutbound(reg, slog.New(slog.DiscardHandler))(next)

	remotePID := actor.NewPID("127.0.0.1:1", "future$1")
	localPID := actor.NewPID(system.Address(), "future$2")
	send(system.Root, remotePID, &actor.MessageEnvelope{Message: &actors.Done{LastSeq: 3}})
	send(system.Root, localPID, &actor.MessageEnvelope{Message: &actors.Done{LastSeq: 3}})
	type unregistered struct{}
	send(system.Root, remotePID, &actor.MessageEnvelope{Message: &unregistered{}})

	if len(sent) != 3 {
		t.Fatalf("sent %d messages, want 3", len(sent))
	}
	enc, ok := sent[0].(*wirepb.Encoded)
	if !ok || enc.TypeName != "session.Done" {
		t.Fatalf("to another member: sent %#v, want an encoded session.Done", sent[0])
	}
	if _, ok := sent[1].(*actors.Done); !ok {
		t.Fatalf("to a local PID: sent %T, want the plain *actors.Done", sent[1])
	}
	if _, ok := sent[2].(*unregistered); !ok {
		t.Fatalf("unregistered message: sent %T, want it passed through", sent[2])
	}
}
