//go:build unix

package instructions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sessionrt/sessionrt/contextsources"
)

// helperEnv makes the test binary, re-executed as an unprivileged user, load one tree.
const helperEnv = "INSTRUCTIONS_TEST_HELPER_DIR"

func TestUnreadableFileMakesTheSourceUnavailable(t *testing.T) {
	tr := newTree(t)
	tr.write("proj/AGENTS.md", "readable")
	tr.boundary()
	unreadable := tr.write("proj/a/AGENTS.md", "secret")
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		r := tr.load()
		if r.State() != contextsources.StateUnavailable || !errors.Is(r.Err(), os.ErrPermission) {
			t.Fatalf("state %v (%v)", r.State(), r.Err())
		}
		if d := tr.boundary(); d.Action != contextsources.Unchanged {
			t.Fatalf("unavailable must keep the last set: %v %q", d.Action, d.Message)
		}
		return
	}
	// root reads any file, so observe from this test binary re-executed as nobody.
	out := runAsNobody(t, tr)
	t.Logf("child observation: %s", strings.SplitN(out, "\n", 2)[0])
	if !strings.Contains(out, "STATE=unavailable") || !strings.Contains(out, "permission denied") {
		t.Fatalf("child observation:\n%s", out)
	}
}

func runAsNobody(t *testing.T, tr *tree) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Make the tree and a copy of the binary reachable for uid 65534.
	// t.TempDir makes base and its parent 0700.
	for d := tr.deep; d != filepath.Dir(filepath.Dir(tr.base)); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(tr.base, "helper.test")
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestHelperLoadAsAnotherUser$", "-test.count=1")
	cmd.Env = []string{helperEnv + "=" + tr.base, "PATH=/usr/bin:/bin"}
	cmd.Dir = tr.base
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	return string(out)
}

// TestHelperLoadAsAnotherUser is not a test of its own: runAsNobody runs it.
func TestHelperLoadAsAnotherUser(t *testing.T) {
	base := os.Getenv(helperEnv)
	if base == "" {
		t.Skip("helper for TestUnreadableFileMakesTheSourceUnavailable")
	}
	root := filepath.Join(base, "proj")
	r := Load(context.Background(), Config{Directory: filepath.Join(root, "a", "b", "c"), ProjectRoot: root,
		Getenv: func(string) string { return "" }})
	fmt.Printf("STATE=%v REASON=%v\n", r.State(), r.Err())
}

func TestNonRegularAgentsEntryIsNotAnInstructionFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(path string) error
	}{
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }},
		// A FIFO must not block the loader (it would stall every boundary to its timeout).
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			tr.write("proj/AGENTS.md", "root")
			if err := tc.make(filepath.Join(tr.deep, "AGENTS.md")); err != nil {
				t.Fatal(err)
			}
			if got := tr.paths(tr.load()); got != "project:proj/AGENTS.md" {
				t.Fatalf("files %s", got)
			}
		})
	}
}
