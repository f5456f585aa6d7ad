// Package middleware is the receiver middleware an actor of sessionrt runs
// behind, composed at its props, outermost first: panic recovery (the
// caller and the actor's waiters are answered before the supervisor
// restarts it), a gauge of live incarnations, and idle tracking (an actor
// that received nothing for a while is told so on its own goroutine, and
// passivates). The Session actor (actors/shell) runs behind all three, the
// cluster's grains behind idle tracking; the actor's Receive is left with
// what it does.
package middleware
