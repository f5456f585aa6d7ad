package canon

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Within one boundary every source gets the same answer for a directory (a .git created
// between two of its sources' loads is not half-seen); the next boundary sees the change.
func TestProjectAtAnswersOncePerBoundary(t *testing.T) {
	base, err := Dir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "a", "b")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := WithBoundary(context.Background())
	if _, root, git, err := ProjectAt(ctx, dir); err != nil || git || root != dir {
		t.Fatalf("before git init: root %q git %v err %v", root, git, err)
	}
	if err := os.Mkdir(filepath.Join(base, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, root, git, _ := ProjectAt(ctx, dir); git || root != dir {
		t.Fatalf("same boundary answered again: root %q git %v", root, git)
	}
	for name, ctx := range map[string]context.Context{"next boundary": WithBoundary(context.Background()), "no boundary": context.Background()} {
		if cdir, root, git, err := ProjectAt(ctx, dir); err != nil || !git || root != base || cdir != dir {
			t.Fatalf("%s: cdir %q root %q git %v err %v; want root %q with git", name, cdir, root, git, err, base)
		}
	}
}

// A first caller that panicked inside Project leaves nothing to share: the next source of
// the boundary resolves the directory itself instead of taking an empty answer.
func TestProjectAtAfterAPanickedFirstCaller(t *testing.T) {
	dir, err := Dir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithBoundary(context.Background())
	a := ctx.Value(boundaryKey{}).(*boundary).answer(dir)
	func() {
		defer func() { recover() }()
		a.once.Do(func() { panic("loader panicked") })
	}()
	if cdir, root, _, err := ProjectAt(ctx, dir); err != nil || cdir != dir || root != dir {
		t.Fatalf("cdir %q root %q err %v; want %q", cdir, root, err, dir)
	}
}
