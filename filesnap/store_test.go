package filesnap

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func files(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func open(t *testing.T) *Store {
	t.Helper()
	st, err := Open(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// age moves every file's mtime a minute back, so the stat cache trusts it
// (files changed within a second of a Take are always hashed again).
func age(t *testing.T, root string) {
	t.Helper()
	old := time.Now().Add(-time.Minute)
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			os.Chtimes(p, old, old)
		}
		return nil
	})
}

func TestRestoreBringsBackExactBytesAndRemovesCreatedFiles(t *testing.T) {
	st, root := open(t), t.TempDir()
	write(t, root, "a.txt", "one\ntwo\nthree\n")
	write(t, root, "dir/b.go", "package b\n")
	write(t, root, "gone.txt", "bye")
	want := files(t, root)
	before, err := st.Take(root)
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, "a.txt", "one\n2\nthree\nfour\n")
	write(t, root, "new/deep/c.txt", "created")
	os.Remove(filepath.Join(root, "gone.txt"))
	after, err := st.Take(root)
	if err != nil {
		t.Fatal(err)
	}
	diffs, err := st.Diff(before, after)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Status{}
	for _, d := range diffs {
		got[d.Path] = d.Status
	}
	if !reflect.DeepEqual(got, map[string]Status{"a.txt": Modified, "gone.txt": Deleted, "new/deep/c.txt": Added}) {
		t.Fatalf("diff statuses: %v", got)
	}
	if d := diffs[0]; d.Additions != 2 || d.Deletions != 1 ||
		!strings.Contains(d.Patch, "@@ -1,3 +1,4 @@\n one\n-two\n+2\n three\n+four\n") {
		t.Fatalf("a.txt: +%d -%d\n%s", d.Additions, d.Deletions, d.Patch)
	}
	if err := st.Restore(root, before, Paths(diffs)); err != nil {
		t.Fatal(err)
	}
	if got := files(t, root); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(root, "new")); !os.IsNotExist(err) {
		t.Fatalf("emptied directory new/ is still there: %v", err)
	}
	// Idempotent, and restoring the later tree undoes it.
	if err := st.Restore(root, before, Paths(diffs)); err != nil {
		t.Fatal(err)
	}
	if err := st.Restore(root, after, Paths(diffs)); err != nil {
		t.Fatal(err)
	}
	if id, _ := st.Take(root); id != after {
		t.Fatalf("after restoring %s the Location snapshots as %s", after, id)
	}
}

func TestTakeWithNothingChangedWritesNothing(t *testing.T) {
	st, root := open(t), t.TempDir()
	for i := 0; i < 50; i++ {
		write(t, root, filepath.Join("d", string(rune('a'+i%26)), "f"+string(rune('a'+i/26))), "x")
	}
	age(t, root)
	first, err := st.Take(root)
	if err != nil {
		t.Fatal(err)
	}
	idx := st.indexPath(mustAbs(root))
	fi1, err := os.Stat(idx)
	if err != nil {
		t.Fatal(err)
	}
	trees, _ := os.ReadDir(filepath.Join(st.cfg.Dir, "trees"))
	second, err := st.Take(root)
	if err != nil {
		t.Fatal(err)
	}
	if second != first {
		t.Fatalf("unchanged Location: %s then %s", first, second)
	}
	fi2, _ := os.Stat(idx)
	trees2, _ := os.ReadDir(filepath.Join(st.cfg.Dir, "trees"))
	if !fi2.ModTime().Equal(fi1.ModTime()) || len(trees2) != len(trees) {
		t.Fatal("a Take with nothing changed rewrote the index or added a tree")
	}
}

func mustAbs(p string) string { a, _ := filepath.Abs(p); return a }

func TestSameStatDifferentContentIsSeenWhenRecent(t *testing.T) {
	st, root := open(t), t.TempDir()
	write(t, root, "f", "aaaa")
	first, _ := st.Take(root)
	// Same size, mtime put back: only a recent mtime makes Take look again.
	p := filepath.Join(root, "f")
	fi, _ := os.Stat(p)
	write(t, root, "f", "bbbb")
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	second, _ := st.Take(root)
	if second == first {
		t.Fatal("a rewrite with the same size and mtime within a second went unseen")
	}
}

func TestGitignoreIsRespected(t *testing.T) {
	st, root := open(t), t.TempDir()
	write(t, root, ".gitignore", "*.log\n/build/\nnode_modules\n!keep.log\ndocs/**/*.tmp\n")
	write(t, root, "a.log", "x")
	write(t, root, "keep.log", "x")
	write(t, root, "build/out", "x")
	write(t, root, "src/build/kept", "x")
	write(t, root, "src/node_modules/m.js", "x")
	write(t, root, "docs/x/y/z.tmp", "x")
	write(t, root, "docs/z.tmp", "x")
	write(t, root, "sub/.gitignore", "local.txt\n")
	write(t, root, "sub/local.txt", "x")
	write(t, root, "local.txt", "x")
	write(t, root, ".git/config", "x")
	write(t, root, ".git/info/exclude", "secret\n")
	write(t, root, "secret", "x")
	id, err := st.Take(root)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := st.Tree(id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tr.Entries {
		got = append(got, e.Path)
	}
	want := []string{".gitignore", "keep.log", "local.txt", "src/build/kept", "sub/.gitignore"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tracked %v, want %v", got, want)
	}
}

func TestLargeFilesAndSymlinksAndModes(t *testing.T) {
	st, err := Open(Config{Dir: t.TempDir(), MaxFileSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	write(t, root, "big", strings.Repeat("x", 11))
	write(t, root, "run.sh", "#!/bin/sh\n")
	os.Chmod(filepath.Join(root, "run.sh"), 0o755)
	os.Symlink("run.sh", filepath.Join(root, "link"))
	before, _ := st.Take(root)
	os.Remove(filepath.Join(root, "link"))
	os.Chmod(filepath.Join(root, "run.sh"), 0o644)
	write(t, root, "big", strings.Repeat("y", 12))
	after, _ := st.Take(root)
	changed, _ := st.Changed(before, after)
	if !reflect.DeepEqual(changed, []string{"link", "run.sh"}) {
		t.Fatalf("changed %v (a file over MaxFileSize is not tracked)", changed)
	}
	if err := st.Restore(root, before, changed); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(root, "link")); err != nil || target != "run.sh" {
		t.Fatalf("link: %q %v", target, err)
	}
	if fi, _ := os.Stat(filepath.Join(root, "run.sh")); fi.Mode().Perm() != 0o755 {
		t.Fatalf("run.sh mode %v", fi.Mode())
	}
}

func TestBadIDsAndPathsAreRefused(t *testing.T) {
	st, root := open(t), t.TempDir()
	if _, err := st.Tree("../../etc/passwd"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("tree with a path for an ID: %v", err)
	}
	if _, err := st.Tree(strings.Repeat("0", 64)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing tree: %v", err)
	}
	id, _ := st.Take(root)
	for _, p := range []string{"../x", "/etc/passwd", "a/../../b", ""} {
		if err := st.Restore(root, id, []string{p}); err == nil || !strings.Contains(err.Error(), "path") {
			t.Fatalf("restore %q: %v", p, err)
		}
	}
	if _, err := st.Take(filepath.Join(root, "missing")); err == nil {
		t.Fatal("take of a missing directory succeeded")
	}
}

func TestUnifiedPatch(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n"
	b := "1\nTWO\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\nFOURTEEN\n15"
	patch, adds, dels := unified("f", []byte(a), []byte(b), true, true)
	want := "diff --git a/f b/f\n--- a/f\n+++ b/f\n" +
		"@@ -1,5 +1,5 @@\n 1\n-2\n+TWO\n 3\n 4\n 5\n" +
		"@@ -11,5 +11,5 @@\n 11\n 12\n 13\n-14\n-15\n+FOURTEEN\n+15\n\\ No newline at end of file\n"
	if patch != want || adds != 3 || dels != 3 {
		t.Fatalf("+%d -%d\n%s\nwant\n%s", adds, dels, patch, want)
	}
	if _, adds, dels := unified("n", nil, []byte("x\ny\n"), false, true); adds != 2 || dels != 0 {
		t.Fatalf("new file: +%d -%d", adds, dels)
	}
}

func TestALocationWithTooManyFilesIsNotSnapshotted(t *testing.T) {
	st, err := Open(Config{Dir: t.TempDir(), MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, f := range []string{"a", "b", "c"} {
		write(t, root, f, f)
	}
	if _, err := st.Take(root); err != nil {
		t.Fatalf("3 files with MaxFiles 3: %v", err)
	}
	write(t, root, "d/e", "e")
	if _, err := st.Take(root); !errors.Is(err, ErrTooManyFiles) || !strings.Contains(err.Error(), "MaxFiles") {
		t.Fatalf("4 files with MaxFiles 3: %v", err)
	}
	// Not walked again for a while, even once it is small again.
	os.RemoveAll(filepath.Join(root, "d"))
	if _, err := st.Take(root); !errors.Is(err, ErrTooManyFiles) || !strings.Contains(err.Error(), "checked") {
		t.Fatalf("a second Take soon after: %v", err)
	}
}
