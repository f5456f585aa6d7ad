package session_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportsNoIOLayer: the session core is pure. It links no actor
// system, storage engine or telemetry, and its code never reads the clock
// (time arrives in inputs).
func TestImportsNoIOLayer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	banned := []string{
		"github.com/asynkron/protoactor-go",
		"github.com/sessionrt/sessionrt/persistence",
		"github.com/sessionrt/sessionrt/telemetry",
		"github.com/sessionrt/sessionrt/actors",
		"go.opentelemetry.io/",
		"github.com/dolthub/",
		"go.etcd.io/bbolt",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, b := range banned {
			if strings.HasPrefix(dep, b) {
				t.Errorf("session links %s", dep)
			}
		}
	}
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(src), "time.Now") {
			t.Errorf("%s reads the clock (time.Now): time must arrive in inputs", f)
		}
	}
}
