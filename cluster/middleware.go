package cluster

import (
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/cluster/wirepb"
)

// wireProps returns the props options that put a grain on the msgpack wire:
// inbound *wirepb.Encoded messages are decoded before the actor sees them,
// and registered messages the actor sends to another member (replies
// included: Respond is a Send to the sender) are encoded. Local sends stay
// plain pointers.
func wireProps(reg *Registry, log *slog.Logger) []actor.PropsOption {
	return []actor.PropsOption{
		actor.WithReceiverMiddleware(decodeInbound(reg, log)),
		actor.WithSenderMiddleware(encodeOutbound(reg, log)),
	}
}

func decodeInbound(reg *Registry, log *slog.Logger) actor.ReceiverMiddleware {
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			enc, ok := env.Message.(*wirepb.Encoded)
			if !ok {
				next(c, env)
				return
			}
			msg, err := reg.Decode(enc)
			if err != nil {
				// Answer instead of dropping, so the caller sees why
				// rather than a timeout; the actor never sees the message.
				log.Error("cluster: undecodable message", "self", c.Self(), "err", err)
				if env.Sender != nil {
					reply := &actors.CommandError{Code: actors.CodeInvalid, Msg: fmt.Sprintf("cluster wire: %v", err)}
					if out, eerr := reg.Encode(reply); eerr == nil {
						c.ActorSystem().Root.Send(env.Sender, out)
					}
				}
				return
			}
			next(c, &actor.MessageEnvelope{Header: env.Header, Message: msg, Sender: env.Sender})
		}
	}
}

func encodeOutbound(reg *Registry, log *slog.Logger) actor.SenderMiddleware {
	return func(next actor.SenderFunc) actor.SenderFunc {
		return func(c actor.SenderContext, target *actor.PID, env *actor.MessageEnvelope) {
			if target == nil || target.Address == c.ActorSystem().Address() || !reg.Knows(env.Message) {
				next(c, target, env)
				return
			}
			enc, err := reg.Encode(env.Message)
			if err != nil {
				// Unencodable reply: send an error the caller can read.
				log.Error("cluster: unencodable message", "target", target, "err", err)
				enc, err = reg.Encode(&actors.CommandError{Code: actors.CodeInternal, Msg: fmt.Sprintf("cluster wire: %v", err)})
				if err != nil {
					return
				}
			}
			next(c, target, &actor.MessageEnvelope{Header: env.Header, Message: enc, Sender: env.Sender})
		}
	}
}
