// Package protocol is what a Session actor is asked and answers: its
// commands, their answers and errors, the items it publishes live, its
// inspection, its fault points and its recovery policy. They are plain
// values, so that they cross a mailbox (and, wrapped, the cluster) intact.
//
// The Session actor (actors/shell) answers them; the Sessions facade
// (package actors) sends them and keeps their names (actors/aliases.go);
// the cluster's grains carry them between members. None of those packages
// needs the others to speak it.
package protocol
