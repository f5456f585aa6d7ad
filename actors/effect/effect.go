package effect

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
)

// Post hands an executor's result to whoever asked for the effect: a
// message for the asking actor's mailbox. It must not block.
type Post func(msg any)

// To posts to pid through system's root context.
func To(system *actor.ActorSystem, pid *actor.PID) Post {
	return func(msg any) { system.Root.Send(pid, msg) }
}

// Go runs work on its own goroutine and posts its result; a panic in the
// work is posted as onPanic's result instead of killing the process.
func Go(post Post, work func() any, onPanic func(error) any) {
	go func() {
		var res any
		func() {
			defer func() {
				if r := recover(); r != nil {
					res = onPanic(fmt.Errorf("panic: %v", r))
				}
			}()
			res = work()
		}()
		post(res)
	}()
}
