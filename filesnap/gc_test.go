package filesnap

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestGCRemovesOldTreesAndTheirBlobsOnly(t *testing.T) {
	st := open(t)
	root := t.TempDir()
	write(t, root, "a.txt", "old a\n")
	write(t, root, "gone.txt", "only in the old tree\n")
	write(t, root, "same.txt", "in both\n")
	age(t, root)
	old, err := st.Take(root)
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, "a.txt", "new a\n")
	os.Remove(filepath.Join(root, "gone.txt"))
	age(t, root)
	cur, err := st.Take(root)
	if err != nil {
		t.Fatal(err)
	}
	want := files(t, root)
	// The old tree was last returned long ago; the current one now.
	long := time.Now().Add(-30 * 24 * time.Hour)
	if err := os.Chtimes(st.treePath(old), long, long); err != nil {
		t.Fatal(err)
	}
	gs, err := st.GC(DefaultRetention)
	if err != nil {
		t.Fatal(err)
	}
	if gs.Trees != 1 || gs.Blobs != 2 || gs.KeptTrees != 1 {
		t.Fatalf("gc %+v, want 1 tree and 2 blobs (old a, gone) removed", gs)
	}
	if _, err := st.Tree(old); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old tree after gc: %v", err)
	}
	// The current tree restores whole.
	for _, p := range []string{"a.txt", "same.txt"} {
		os.Remove(filepath.Join(root, p))
	}
	if err := st.Restore(root, cur, []string{"a.txt", "same.txt"}); err != nil {
		t.Fatal(err)
	}
	if got := files(t, root); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored %v, want %v", got, want)
	}
	// A collection with nothing old removes nothing; a Take with nothing
	// changed keeps its tree young.
	if again, err := st.Take(root); err != nil || again != cur {
		t.Fatalf("take %s %v", again, err)
	}
	if gs, err := st.GC(DefaultRetention); err != nil || gs.Trees != 0 || gs.Blobs != 0 {
		t.Fatalf("second gc %+v %v", gs, err)
	}
}

func TestGCKeepsBlobsTheStatCacheNames(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	write(t, root, "a.txt", "a\n")
	age(t, root)
	id, err := st.Take(root)
	if err != nil {
		t.Fatal(err)
	}
	// Every tree is old; the stat cache still vouches for a.txt's blob,
	// so the next Take (which does not read a.txt) must find it.
	long := time.Now().Add(-30 * 24 * time.Hour)
	os.Chtimes(st.treePath(id), long, long)
	st2, err := Open(Config{Dir: dir}) // a new process: the cache is on disk only
	if err != nil {
		t.Fatal(err)
	}
	if gs, err := st2.GC(time.Hour); err != nil || gs.Trees != 1 || gs.Blobs != 0 {
		t.Fatalf("gc %+v %v", gs, err)
	}
	id2, err := st2.Take(root)
	if err != nil || id2 != id {
		t.Fatalf("take after gc: %s %v (want %s)", id2, err, id)
	}
	os.Remove(filepath.Join(root, "a.txt"))
	if err := st2.Restore(root, id2, []string{"a.txt"}); err != nil {
		t.Fatal(err)
	}
}
