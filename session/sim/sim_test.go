package sim

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

var (
	seeds = flag.Int("sim.seeds", 200, "seeds to run")
	steps = flag.Int("sim.steps", 2000, "steps per seed")
)

// TestInvariantsHoldAcrossSeeds runs the simulator over many seeds; every
// invariant is checked after every step.
func TestInvariantsHoldAcrossSeeds(t *testing.T) {
	n, s := *seeds, *steps
	if testing.Short() || raceEnabled {
		n, s = 30, 1000
	}
	var total Result
	for seed := range uint64(n) {
		res, err := Run(Config{Seed: seed, Steps: s})
		if err != nil {
			t.Fatal(err)
		}
		total.Add(res)
	}
	// The run must exercise what it checks.
	if total.Events == 0 || total.Drains == 0 || total.Turns == 0 || total.Promotions == 0 || total.ToolCalls == 0 || total.Crashes == 0 || total.StaleRefused == 0 || total.Interrupts == 0 || total.Titles == 0 || total.Moves == 0 || total.Replies == 0 || total.Commands == 0 || total.Questions == 0 || total.Answers == 0 || total.Restores == 0 || total.RestoreCrashes == 0 {
		t.Fatalf("the run exercised too little: %+v", total)
	}
	t.Logf("%d seeds: %+v", n, total)
}

// TestSameSeedSameRun: a seed replays exactly.
func TestSameSeedSameRun(t *testing.T) {
	a, errA := Run(Config{Seed: 42, Steps: 3000})
	b, errB := Run(Config{Seed: 42, Steps: 3000})
	if a != b || (errA == nil) != (errB == nil) {
		t.Fatalf("seed 42 ran twice differently: %+v %v / %+v %v", a, errA, b, errB)
	}
}

// TestBrokenRulesAreCaught breaks one rule at a time and expects a
// violation that names its seed and a replay command.
func TestBrokenRulesAreCaught(t *testing.T) {
	for _, tc := range []struct{ rule, want string }{
		{"promote-early", "promoted early"},
		{"rerun-tool", "started twice"},
		{"keep-questions", "without its dismissal before it"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			var v *Violation
			for seed := range uint64(50) {
				_, err := Run(Config{Seed: seed, Steps: 5000, Break: tc.rule})
				if errors.As(err, &v) {
					break
				}
			}
			if v == nil {
				t.Fatalf("breaking %s was not caught in 50 seeds", tc.rule)
			}
			if msg := v.Error(); !strings.Contains(msg, tc.want) || !strings.Contains(msg, "sessionrt chaos --mode sim --seed") {
				t.Fatalf("violation %q does not say %q and how to replay it", msg, tc.want)
			}
			t.Log(v)
		})
	}
}
