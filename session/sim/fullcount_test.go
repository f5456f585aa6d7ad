package sim

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestFullCountWithoutTheRaceDetector runs the simulator at its full count,
// 1,000 seeds × 1,000 steps, in a binary built without -race: the suite runs
// under -race, where TestInvariantsHoldAcrossSeeds takes a smaller count, and
// this keeps the full count inside the README's one test command.
func TestFullCountWithoutTheRaceDetector(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sessionrt and runs a million simulated steps")
	}
	bin := filepath.Join(t.TempDir(), "sessionrt")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "chaos", "--mode", "sim", "--seeds", "1000", "--steps", "1000").CombinedOutput()
	if err != nil {
		t.Fatalf("sessionrt chaos --mode sim --seeds 1000 --steps 1000: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
