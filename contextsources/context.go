package contextsources

import (
	"errors"
	"fmt"
)

// ErrDuplicateKey is returned when composition meets one source key twice.
var ErrDuplicateKey = errors.New("duplicate context source key")

// SystemContext is an ordered, immutable set of Context Sources with unique keys.
// The zero value is the empty System Context.
type SystemContext struct {
	sources []Source
}

// New composes sources in the given order; a duplicate or zero Source fails.
func New(sources ...Source) (SystemContext, error) {
	seen := make(map[string]struct{}, len(sources))
	out := make([]Source, 0, len(sources))
	for i, s := range sources {
		if s.impl == nil {
			return SystemContext{}, fmt.Errorf("%w: source %d is the zero Source (build it with Make)", ErrInvalidSource, i)
		}
		k := s.Key()
		if _, dup := seen[k]; dup {
			return SystemContext{}, fmt.Errorf("%w %q", ErrDuplicateKey, k)
		}
		seen[k] = struct{}{}
		out = append(out, s)
	}
	return SystemContext{sources: out}, nil
}

// Combine concatenates System Contexts, keeping caller order; a key met twice fails
// with ErrDuplicateKey naming it.
func Combine(parts ...SystemContext) (SystemContext, error) {
	n := 0
	for _, p := range parts {
		n += len(p.sources)
	}
	all := make([]Source, 0, n)
	for _, p := range parts {
		all = append(all, p.sources...)
	}
	return New(all...)
}

// Keys lists the source keys in order.
func (sc SystemContext) Keys() []string {
	keys := make([]string, len(sc.sources))
	for i, s := range sc.sources {
		keys[i] = s.Key()
	}
	return keys
}

// Len is the number of sources.
func (sc SystemContext) Len() int { return len(sc.sources) }
