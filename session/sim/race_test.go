//go:build race

package sim

// Under the race detector the suite runs a smaller count; the full count
// runs without it (.ci/run: sessionrt chaos --mode sim --seeds 1000).
const raceEnabled = true
