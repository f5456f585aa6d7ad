package canon

import (
	"context"
	"sync"
)

// A boundary shares Project's answers between the sources observed at one provider-turn
// boundary: the environment and instructions sources both resolve the Location's project
// there, concurrently. It lives only as long as that observation's context (the package
// still caches nothing across boundaries), and it makes the sources agree on one sample
// of the directory tree instead of two that a concurrent "git init" could split.
type boundary struct {
	mu      sync.Mutex
	answers []*answer
}

type answer struct {
	dir        string
	once       sync.Once
	cdir, root string
	git        bool
	err        error
	done       bool // Project returned (it did not panic)
}

type boundaryKey struct{}

// WithBoundary returns ctx carrying a fresh boundary for ProjectAt.
func WithBoundary(ctx context.Context) context.Context {
	return context.WithValue(ctx, boundaryKey{}, &boundary{})
}

// ProjectAt is Project, answered once per dir within ctx's boundary (if it has one).
func ProjectAt(ctx context.Context, dir string) (cdir, root string, git bool, err error) {
	b, _ := ctx.Value(boundaryKey{}).(*boundary)
	if b == nil {
		return Project(dir)
	}
	a := b.answer(dir)
	a.once.Do(func() {
		a.cdir, a.root, a.git, a.err = Project(dir)
		a.done = true
	})
	if !a.done { // the first caller panicked (its loader is then Unavailable): no answer to share
		return Project(dir)
	}
	return a.cdir, a.root, a.git, a.err
}

func (b *boundary) answer(dir string) *answer {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.answers {
		if a.dir == dir {
			return a
		}
	}
	a := &answer{dir: dir}
	b.answers = append(b.answers, a)
	return a
}
