// Package clustertest runs cluster members as processes for the tests of
// the cluster and of the layers above it (the chaos member-kill runs,
// the cluster benchmarks).
//
// Member is the body of a member process: a node on a shared MySQL/MariaDB
// journal whose sessions are Session grains, with a scripted provider whose
// tools leave a marker per call in the Location (SideEffects) and can wait
// for a gate (GateFile), and a control API on loopback. StartMembers and
// Restart start such processes (a test's binary built by BuildMember, or
// `sessionrt chaos member`) and read their READY and turn lines; Cluster
// drives a started set through the control API. Every wait is bounded by
// progress (WaitProgress), not by wall time: a loaded machine is slow, a
// stuck member makes no progress.
//
// Only tests, benchmarks and `sessionrt chaos` (whose member processes
// run Member) import it. It injects no faults and checks no invariants:
// that is the chaos package's work, which imports it, never the reverse.
package clustertest
