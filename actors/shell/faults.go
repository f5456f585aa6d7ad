package shell

import "github.com/sessionrt/sessionrt/actors/protocol"

// fault kills the actor at p when the configured injector says so.
func (a *sessionActor) fault(p protocol.FaultPoint) {
	if f := a.rt.Faults; f != nil && !a.stopping && f(p, a.id) {
		panic(protocol.InjectedFault{Point: p, Session: a.id})
	}
}
