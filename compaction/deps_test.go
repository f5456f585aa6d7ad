package compaction_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoStorageEngine: compaction plans from the history types in
// messages, so it must not pull in the journal and its SQL engine.
func TestLinksNoStorageEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/sessionrt/sessionrt/persistence", "github.com/dolthub/", "go.etcd.io/bbolt"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("compaction links %s", dep)
			}
		}
	}
}
