// Package environment provides two built-in Context Sources: the environment facts of a
// Location ("core/environment": working directory, project root, git repository or not,
// platform, OS, shell) and the host-local calendar date ("core/date").
//
// It owns only observing and rendering those values. It must not cache across
// boundaries (each safe provider-turn boundary observes afresh) nor know about epochs,
// snapshots or actors: that is the parent package's job.
package environment
