// Package actors is the runtime facade over Session actors: Sessions,
// the one door callers use, its Config, the activation registry that
// places one actor per session in this process and passivates it when
// idle, the journal waits that resume drains a journal failure stopped,
// the live Bus, and file snapshot placement.
//
// The Session actor itself is actors/shell: the loop around the pure
// session core (session.Core), whose effects the executors of
// actors/effect carry out and whose drains actors/observe traces. This
// package fills in what the actor may use of it (shell.Deps: functions
// and values, no back-pointer) and keeps the names of the actor's
// commands, answers and errors as aliases.
//
// Callers reach sessions only through the Sessions facade, so that the cluster
// can place the same actor as a grain without changing them.
//
// This package must not open files, sockets or databases itself: the journal,
// providers, context and tools come in through its Runtime configuration.
package actors
