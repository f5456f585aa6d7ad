package managed

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestNamesAreUniqueAndOwned(t *testing.T) {
	s, err := New(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		n := s.NewName()
		if seen[n] {
			t.Fatalf("duplicate name %s", n)
		}
		seen[n] = true
	}
	p, err := s.Write("x")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Owns(p) || s.Owns(filepath.Join(s.Dir(), "other")) || s.Owns(filepath.Join(s.Dir(), "sub", filepath.Base(p))) {
		t.Fatal("Owns disagrees with the flat tool_ rule")
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "x" {
		t.Fatalf("content %q err %v", b, err)
	}
}

func TestWriteFailureIsAnError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Dir: filepath.Join(file, "sub")}) // parent is a file
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write("x"); err == nil {
		t.Fatal("write under a file succeeded")
	}
}

func TestRunSweepsPeriodicallyUntilCancelled(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Config{Dir: dir, Retention: time.Hour, SweepInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	// Written after Run started: only a later periodic sweep can remove it.
	p, err := s.Write("x")
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(p); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("periodic sweep never removed the expired file")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
}
