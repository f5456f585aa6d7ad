package cluster

import (
	"context"
	"errors"
	"testing"
)

func TestPlacementHolderIsTheLongestRootAndLocalDirectoriesStayLocal(t *testing.T) {
	p, err := NewPlacement("m0", map[string]string{"/srv": "m1", "/srv/big": "m2", "/home/a": "m0"})
	if err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{
		"/srv":           "m1",
		"/srv/x":         "m1",
		"/srv/big/y":     "m2",
		"/srv/bigger":    "m1", // a root is a directory, not a string prefix
		"/home/a/proj":   "m0",
		"/elsewhere":     "",
		"/srv/big/../z/": "m1",
	} {
		if got := p.Holder(dir); got != want {
			t.Errorf("Holder(%q) = %q, want %q", dir, got, want)
		}
	}
	// Held here, or by nobody: the local registry (no proxy, no cluster needed).
	for _, dir := range []string{"/home/a/proj", "/elsewhere"} {
		if pid, err := p.Tools(context.Background(), dir, nil); pid != nil || err != nil {
			t.Errorf("Tools(%q) = %v, %v: want the local registry", dir, pid, err)
		}
	}
	// Held by another member before joining: a clear error.
	if _, err := p.Tools(context.Background(), "/srv/x", nil); err == nil {
		t.Error("a remote Location before joining the cluster gave no error")
	}
}

func TestNewPlacementRefusesRelativeRootsAndEmptyNames(t *testing.T) {
	for _, tc := range []struct {
		self  string
		roots map[string]string
	}{
		{"", nil},
		{"m0", map[string]string{"rel/dir": "m1"}},
		{"m0", map[string]string{"/abs": ""}},
	} {
		if _, err := NewPlacement(tc.self, tc.roots); !errors.Is(err, ErrConfig) {
			t.Errorf("NewPlacement(%q, %v) = %v, want ErrConfig", tc.self, tc.roots, err)
		}
	}
}
