package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// get is Locations.Get that fails the test on error.
func get(t *testing.T, l *Locations, dir string) string {
	t.Helper()
	pid, err := l.Get(dir)
	if err != nil {
		t.Fatal(err)
	}
	return pid.Id
}

// A remembered resolution must not take a path to a Location that is no longer
// the directory it names.
func TestRetargetedSymlinkReachesItsNewLocation(t *testing.T) {
	_, locs := newTree(t, make(chan string, 100))
	a, b := t.TempDir(), t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	locA, locB := get(t, locs, a), get(t, locs, b)
	if got := get(t, locs, link); got != locA {
		t.Fatalf("link to a reached %s, want %s", got, locA)
	}
	if got := get(t, locs, link); got != locA { // remembered
		t.Fatalf("link to a reached %s the second time, want %s", got, locA)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(b, link); err != nil {
		t.Fatal(err)
	}
	if got := get(t, locs, link); got != locB {
		t.Fatalf("link retargeted to b reached %s, want %s", got, locB)
	}
}

// A directory renamed under a link that follows it is a new canonical path,
// hence a new Location, although the link now names the same inode.
func TestRenamedDirectoryUnderALinkReachesANewLocation(t *testing.T) {
	_, locs := newTree(t, make(chan string, 100))
	parent := t.TempDir()
	a := filepath.Join(parent, "a")
	if err := os.Mkdir(a, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	before := get(t, locs, link)
	moved := filepath.Join(parent, "moved")
	if err := os.Rename(a, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, link); err != nil {
		t.Fatal(err)
	}
	if got, want := get(t, locs, link), get(t, locs, moved); got == before || got != want {
		t.Fatalf("after the rename the link reached %s (before %s), want %s", got, before, want)
	}
}

// A path that no longer exists is an error, not its remembered Location.
func TestRemovedDirectoryIsAnErrorAfterBeingRemembered(t *testing.T) {
	_, locs := newTree(t, make(chan string, 100))
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	get(t, locs, dir)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := locs.Get(dir); err == nil {
		t.Fatal("a removed directory still got its Location")
	}
}

// A drain asks for its Location twice per turn; a deep path used to cost an
// lstat per element each time.
func BenchmarkGetKnownLocation(b *testing.B) {
	_, locs := newTree(b, make(chan string, 100))
	dir := filepath.Join(b.TempDir(), strings.Repeat("d/", 12))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if _, err := locs.Get(dir); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := locs.Get(dir); err != nil {
			b.Fatal(err)
		}
	}
}
