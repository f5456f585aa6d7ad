package contextsources

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// RegistryConfig configures a Registry.
type RegistryConfig struct {
	// Observe tunes every observation the registry makes (default timeout
	// DefaultObserveTimeout).
	Observe ObserveConfig
}

// Registry is the Location-scoped System Context Registry: scoped contributions of
// sources, each under a stable contribution key. It is safe for concurrent use. The
// combined System Context lists contributions in contribution-key order (and each
// contribution's sources in its own order), so the rendered context never depends on
// registration order or on which loader finished first.
type Registry struct {
	cfg RegistryConfig

	mu       sync.Mutex
	contribs map[string]registration
	nextID   uint64
	combined SystemContext // rebuilt on every change; read under mu
}

type registration struct {
	id uint64
	sc SystemContext
}

// NewRegistry returns an empty registry.
func NewRegistry(cfg RegistryConfig) *Registry {
	return &Registry{cfg: cfg, contribs: make(map[string]registration)}
}

// Register adds (or replaces) the contribution under key. A source key already provided
// by another contribution fails with ErrDuplicateKey naming both. The returned remove
// function withdraws exactly this registration (a later replacement under the same key
// is left alone); its sources leave the context at the next observation, and Reconcile
// then emits their removal text.
func (r *Registry) Register(key string, sc SystemContext) (remove func(), err error) {
	if err := validateContributionKey(key); err != nil {
		return nil, fmt.Errorf("register contribution: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	owner := make(map[string]string)
	for ck, reg := range r.contribs {
		if ck == key {
			continue
		}
		for _, s := range reg.sc.sources {
			owner[s.Key()] = ck
		}
	}
	for _, s := range sc.sources {
		if other, dup := owner[s.Key()]; dup {
			return nil, fmt.Errorf("register contribution %q: %w %q (already contributed by %q)", key, ErrDuplicateKey, s.Key(), other)
		}
	}
	r.nextID++
	id := r.nextID
	r.contribs[key] = registration{id: id, sc: sc}
	r.rebuild()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if cur, ok := r.contribs[key]; ok && cur.id == id {
			delete(r.contribs, key)
			r.rebuild()
		}
	}, nil
}

// validateContributionKey accepts any non-empty key of letters, digits and "._/-": unlike
// source keys, contribution keys need no namespace (they only order contributions).
func validateContributionKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty contribution key", ErrInvalidSource)
	}
	for _, r := range key {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '.' || r == '_' || r == '-' || r == '/'
		if !ok {
			return fmt.Errorf("%w: contribution key %q: character %q not allowed", ErrInvalidSource, key, r)
		}
	}
	return nil
}

// Unregister removes the contribution under key, whoever registered it.
func (r *Registry) Unregister(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.contribs[key]; !ok {
		return false
	}
	delete(r.contribs, key)
	r.rebuild()
	return true
}

// rebuild recomputes the combined context; Register guarantees no duplicate keys.
func (r *Registry) rebuild() {
	keys := make([]string, 0, len(r.contribs))
	for k := range r.contribs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var all []Source
	for _, k := range keys {
		all = append(all, r.contribs[k].sc.sources...)
	}
	r.combined = SystemContext{sources: all}
}

// Contributions lists the contribution keys, sorted.
func (r *Registry) Contributions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.contribs))
	for k := range r.contribs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// SystemContext returns the current combined System Context (contribution-key order).
func (r *Registry) SystemContext() SystemContext {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.combined
}

// Observe evaluates every registered source concurrently and returns them in stable
// order. It fails only when ctx is already done (an observation would then say nothing).
func (r *Registry) Observe(ctx context.Context) (Observation, error) {
	return r.ObserveWith(ctx)
}

// ObserveWith observes the registry's sources followed by extra (for instance the
// selected agent's skill guidance), all concurrently. A key in extra that the registry
// already provides fails with ErrDuplicateKey.
func (r *Registry) ObserveWith(ctx context.Context, extra ...SystemContext) (Observation, error) {
	if err := ctx.Err(); err != nil {
		return Observation{}, fmt.Errorf("observe system context: %w", err)
	}
	sc := r.SystemContext()
	if len(extra) > 0 {
		var err error
		if sc, err = Combine(append([]SystemContext{sc}, extra...)...); err != nil {
			return Observation{}, fmt.Errorf("observe system context: %w", err)
		}
	}
	return sc.Observe(ctx, r.cfg.Observe), nil
}
