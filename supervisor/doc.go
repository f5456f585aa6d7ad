// Package supervisor owns the actor tree below the root: one Location
// supervisor per canonical project directory, and the supervision strategies
// of the tree.
//
//	root ─┬─ Locations (this package) ─┬─ location /a ─┬─ context registry
//	      │                            │               ├─ tool registry ─ tool call actors
//	      │                            │               └─ PTY actors
//	      │                            └─ location /b …
//	      └─ Session actors (package actors)
//
// A Location is created on demand for a directory and keeps its children
// alive: the long-lived registries restart on failure (their state is rebuilt
// from configuration), PTYs stop (a terminal whose shell died is not silently
// replaced). The package knows its children only as Props factories, so it does
// not import the packages that implement them.
package supervisor
