package filesnap

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// DefaultRetention is how long GC keeps a tree no Take has returned since
// (OpenCode prunes its shadow repositories' objects after 7 days too).
const DefaultRetention = 7 * 24 * time.Hour

// GCStats says what a collection removed and kept.
type GCStats struct {
	Trees, Blobs         int // removed
	KeptTrees, KeptBlobs int
	Bytes                int64 // of the removed blobs
}

// touch marks a tree as in use now (its mtime): GC keeps trees a Take
// returned within the retention. Best effort: a failure only makes the
// tree older to GC.
func (s *Store) touch(p string) {
	now := time.Now()
	_ = os.Chtimes(p, now, now)
}

// GC bounds the store: it removes the trees that no Take returned within
// retention (their mtime), then every blob that no remaining tree and no
// Location's stat cache names. A revert to a removed tree is refused by
// its caller (Tree answers ErrNotFound). Takes and Restores wait while it
// runs.
func (s *Store) GC(retention time.Duration) (GCStats, error) {
	var st GCStats
	if retention <= 0 {
		retention = DefaultRetention
	}
	s.gc.Lock()
	defer s.gc.Unlock()
	cutoff := time.Now().Add(-retention)
	live := map[string]bool{}
	// The stat caches' blobs: a later Take names them without writing them.
	s.mu.Lock()
	for _, rs := range s.roots {
		for _, c := range rs.index {
			live[c.Blob] = true
		}
	}
	s.mu.Unlock()
	idx, err := os.ReadDir(filepath.Join(s.cfg.Dir, "index"))
	if err != nil {
		return st, fmt.Errorf("filesnap: gc: %w", err)
	}
	for _, de := range idx {
		if de.IsDir() {
			continue
		}
		if err := s.markIndex(filepath.Join(s.cfg.Dir, "index", de.Name()), live); err != nil {
			return st, err
		}
	}
	trees, err := os.ReadDir(filepath.Join(s.cfg.Dir, "trees"))
	if err != nil {
		return st, fmt.Errorf("filesnap: gc: %w", err)
	}
	for _, de := range trees {
		if !validID(de.Name()) {
			continue // a temporary file: a crash left it
		}
		fi, err := de.Info()
		if err != nil {
			continue
		}
		if fi.ModTime().Before(cutoff) {
			if err := os.Remove(filepath.Join(s.cfg.Dir, "trees", de.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return st, fmt.Errorf("filesnap: gc: %w", err)
			}
			st.Trees++
			continue
		}
		t, err := s.Tree(de.Name())
		if err != nil {
			return st, fmt.Errorf("filesnap: gc: %w", err)
		}
		st.KeptTrees++
		for _, e := range t.Entries {
			live[e.Blob] = true
		}
	}
	blobs := filepath.Join(s.cfg.Dir, "blobs")
	dirs, err := os.ReadDir(blobs)
	if err != nil {
		return st, fmt.Errorf("filesnap: gc: %w", err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		des, err := os.ReadDir(filepath.Join(blobs, d.Name()))
		if err != nil {
			return st, fmt.Errorf("filesnap: gc: %w", err)
		}
		for _, de := range des {
			id := d.Name() + de.Name()
			if live[id] {
				st.KeptBlobs++
				continue
			}
			p := filepath.Join(blobs, d.Name(), de.Name())
			if fi, err := de.Info(); err == nil {
				st.Bytes += fi.Size()
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return st, fmt.Errorf("filesnap: gc: %w", err)
			}
			st.Blobs++
		}
	}
	// A root whose last tree was removed takes a fresh one next time.
	s.mu.Lock()
	for _, rs := range s.roots {
		if rs.tree != "" {
			if _, err := os.Stat(s.treePath(rs.tree)); err != nil {
				rs.tree = ""
			}
		}
	}
	s.mu.Unlock()
	return st, nil
}

// markIndex marks the blobs a stat cache file names.
func (s *Store) markIndex(p string, live map[string]bool) error {
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("filesnap: gc: %w", err)
	}
	defer f.Close()
	m := map[string]cached{}
	if err := gob.NewDecoder(bufio.NewReader(f)).Decode(&m); err != nil {
		// A damaged cache is rebuilt by the next Take (it hashes again and
		// writes what it needs): it names nothing to keep.
		os.Remove(p)
		return nil
	}
	for _, c := range m {
		live[c.Blob] = true
	}
	return nil
}

// Run collects every interval until stop is closed, logging nothing:
// report is told each collection's outcome.
func (s *Store) Run(stop <-chan struct{}, interval, retention time.Duration, report func(GCStats, error)) {
	if interval <= 0 {
		interval = time.Hour
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		st, err := s.GC(retention)
		if report != nil {
			report(st, err)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}
