package contextsources

import (
	"context"
	"sync"
	"testing"
	"time"
)

// cell is a real source value the test moves between states.
type cell struct {
	mu sync.Mutex
	r  Result[string]
}

func newCell(v string) *cell { return &cell{r: Present(v)} }

func (c *cell) set(r Result[string]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r = r
}

func (c *cell) load(context.Context) Result[string] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.r
}

// strSource renders "base k=v", "now k=v" and (when removable) "gone k".
func strSource(t testing.TB, key string, c *cell, removable bool) Source {
	t.Helper()
	spec := Spec[string]{
		Key:      key,
		Load:     c.load,
		Baseline: func(v string) string { return "base " + key + "=" + v },
		Update:   func(v string) string { return "now " + key + "=" + v },
	}
	if removable {
		spec.Removal = func(v string) string { return "gone " + key + " (was " + v + ")" }
	}
	s, err := Make(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustNew(t testing.TB, sources ...Source) SystemContext {
	t.Helper()
	sc, err := New(sources...)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func observe(sc SystemContext) Observation {
	return sc.Observe(context.Background(), ObserveConfig{Timeout: 30 * time.Second})
}

func mustInit(t testing.TB, sc SystemContext) Generation {
	t.Helper()
	g, err := Initialize(observe(sc))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// roundTrip stores and reloads a snapshot as the journal would.
func roundTrip(t testing.TB, s Snapshot) Snapshot {
	t.Helper()
	b, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	d, err := DecodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
