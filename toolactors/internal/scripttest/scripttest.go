package scripttest

import (
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/sessionrt/sessionrt/toolactors/proc"
)

// Dir makes a real temporary directory with its symlinks resolved, as the
// tools require of a Location.
func Dir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Names maps script names ($LOC) to real directories.
type Names struct {
	names, dirs []string
}

// Add names dir. Later names may be inside earlier ones: Normalize replaces
// the longest directory first.
func (n *Names) Add(name, dir string) {
	n.names = append(n.names, name)
	n.dirs = append(n.dirs, dir)
}

// Dir is the directory of name.
func (n *Names) Dir(name string) string {
	for i, x := range n.names {
		if x == name {
			return n.dirs[i]
		}
	}
	return ""
}

// Expand replaces every name in s with its directory, the longest name
// first (tool_10 before tool_1).
func (n *Names) Expand(s string) string {
	idx := make([]int, len(n.names))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return len(n.names[idx[a]]) > len(n.names[idx[b]]) })
	for _, j := range idx {
		s = strings.ReplaceAll(s, n.names[j], n.dirs[j])
	}
	return s
}

// Normalize replaces every directory in s with its name.
func (n *Names) Normalize(s string) string {
	for _, j := range n.order() {
		s = strings.ReplaceAll(s, n.dirs[j], n.names[j])
	}
	return s
}

// order lists the indexes by directory length, longest first.
func (n *Names) order() []int {
	idx := make([]int, len(n.dirs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return len(n.dirs[idx[a]]) > len(n.dirs[idx[b]]) })
	return idx
}

// Path is a script path as a real one: names expanded, relative to $LOC.
func (n *Names) Path(p string) string {
	p = n.Expand(p)
	if !filepath.IsAbs(p) {
		p = filepath.Join(n.Dir("$LOC"), p)
	}
	return p
}

// Files runs the shared file commands; handled is false for any other command.
func Files(t *testing.T, td *datadriven.TestData, n *Names) (out string, handled bool) {
	t.Helper()
	arg := func(key string) string {
		var v string
		td.MaybeScanArgs(t, key, &v)
		return v
	}
	switch td.Cmd {
	case "write":
		p := n.Path(arg("path"))
		var content []byte
		switch {
		case td.HasArg("lines"):
			var lines int
			td.ScanArgs(t, "lines", &lines)
			prefix := "line"
			td.MaybeScanArgs(t, "prefix", &prefix)
			var b strings.Builder
			for i := 1; i <= lines; i++ {
				fmt.Fprintf(&b, "%s %d\n", prefix, i)
			}
			content = []byte(b.String())
		case td.HasArg("hex"):
			var err error
			if content, err = hex.DecodeString(arg("hex")); err != nil {
				t.Fatalf("%s: %v", td.Pos, err)
			}
		default:
			content = []byte(n.Expand(td.Input))
			if len(content) > 0 {
				content = append(content, '\n')
			}
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		return "", true
	case "mkdir":
		if err := os.MkdirAll(n.Path(arg("path")), 0o755); err != nil {
			t.Fatal(err)
		}
		return "", true
	case "symlink":
		p := n.Path(arg("path"))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(n.Expand(arg("to")), p); err != nil {
			t.Fatal(err)
		}
		return "", true
	case "rm":
		if err := os.RemoveAll(n.Path(arg("path"))); err != nil {
			t.Fatal(err)
		}
		return "", true
	case "cat":
		b, err := os.ReadFile(n.Path(arg("path")))
		if os.IsNotExist(err) {
			return "(no such file)\n", true
		}
		if err != nil {
			t.Fatal(err)
		}
		if td.HasArg("excerpt") {
			var k int
			td.ScanArgs(t, "excerpt", &k)
			return fmt.Sprintf("(%d lines, %d bytes)\n", strings.Count(string(b), "\n"), len(b)) + Excerpt(n.Normalize(string(b)), k), true
		}
		return n.Normalize(string(b)), true
	case "files":
		dir := "$LOC"
		td.MaybeScanArgs(t, "dir", &dir)
		return n.Normalize(Tree(t, n.Path(dir))), true
	case "gone", "running":
		if !td.HasArg("pidfile") {
			return "", false
		}
		// A process dies by SIGKILL a moment after it is sent: Gone waits
		// for it, bounded.
		name := arg("pidfile")
		b, err := os.ReadFile(n.Path(name))
		if err != nil {
			t.Fatalf("%s: %v", td.Pos, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s: %s holds no PID: %v", td.Pos, name, err)
		}
		if td.Cmd == "running" {
			if proc.Alive(pid) {
				return name + ": running\n", true
			}
			return name + ": NOT RUNNING\n", true
		}
		return GoneLine(name, pid), true
	}
	return "", false
}

// GoneLine says whether pid is dead within five seconds.
func GoneLine(what string, pid int) string {
	if proc.Gone(pid, 5*time.Second) {
		return what + ": gone\n"
	}
	return what + ": ALIVE after 5s\n"
}

// Tree lists every regular file (with its content indented), symlink and
// empty directory under dir, in path order.
func Tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case p == dir:
		case d.Type()&fs.ModeSymlink != 0:
			to, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "%s -> %s\n", rel, to)
		case d.IsDir():
			if entries, err := os.ReadDir(p); err == nil && len(entries) == 0 {
				fmt.Fprintf(&b, "%s/\n", rel)
			}
		default:
			content, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "%s\n", rel)
			for _, l := range strings.SplitAfter(string(content), "\n") {
				if l != "" {
					fmt.Fprintf(&b, "  %s", l)
					if !strings.HasSuffix(l, "\n") {
						b.WriteString("\n  (no final newline)\n")
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() == 0 {
		return "(empty)\n"
	}
	return b.String()
}

// Excerpt keeps the first and the last n lines of out, and any truncation
// marker line ("... [") between them, and says how many lines it left out: a
// page of 2000 lines reads as six. A line it keeps is cut after 100 bytes,
// saying how many it left out.
func Excerpt(out string, n int) string {
	// Lines longer than maxShown bytes are cut to it too.
	const maxShown = 100
	lines := strings.SplitAfter(out, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	skipped := 0
	for i, l := range lines {
		if i < n || i >= len(lines)-n || strings.HasPrefix(l, "... [") {
			if skipped > 0 {
				fmt.Fprintf(&b, "… (%d lines not shown)\n", skipped)
				skipped = 0
			}
			if body := strings.TrimSuffix(l, "\n"); len(body) > maxShown && !strings.HasPrefix(l, "... [") {
				l = fmt.Sprintf("%s… (%d more bytes on this line)\n", body[:maxShown], len(body)-maxShown)
			}
			b.WriteString(l)
			continue
		}
		skipped++
	}
	return b.String()
}
