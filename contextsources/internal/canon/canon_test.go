package canon

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestDirResolvesSymlinksLikeEvalSymlinks(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(base, "real", "a", "b")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{real, filepath.Join(base, "link", "a", "b"), filepath.Join(base, "link", "a", "..", "a", "b") + "/"} {
		got, err := Dir(in)
		if err != nil || got != real {
			t.Fatalf("Dir(%q) = %q, %v; want %q", in, got, err, real)
		}
	}
	if _, err := Dir(filepath.Join(base, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing dir: %v", err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(file); err == nil {
		t.Fatal("a file accepted as a directory")
	}
}
