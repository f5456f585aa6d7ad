// Package node is the composition root of one sessionrt process: it opens
// the journal, sets up telemetry, starts the actor system with its Location
// tree (context and tool registries) and the Session facade, and wires the
// providers from configuration. `sessionrt serve`, the benchmarks and the
// chaos suites build their runtime here, so there is one way to assemble it.
//
// It owns wiring only: no behaviour of its own beyond start-up order and an
// orderly stop (sessions first, then Locations, telemetry, journal).
package node
