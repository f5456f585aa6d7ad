package contextsources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sessionrt/sessionrt/contextsources/internal/canon"
)

// DefaultObserveTimeout bounds one observation when ObserveConfig.Timeout is zero.
const DefaultObserveTimeout = 2 * time.Second

var (
	// ErrLoaderPanic marks a source unavailable because its loader panicked.
	ErrLoaderPanic = errors.New("context source loader panicked")
	// ErrLoaderTimeout marks a source unavailable because its loader did not return in time
	// (or the caller's context ended first).
	ErrLoaderTimeout = errors.New("context source loader timed out")
	// ErrEncode marks a source unavailable because its codec could not encode the value.
	ErrEncode = errors.New("context source value does not encode")
)

// ObserveConfig tunes one observation.
type ObserveConfig struct {
	// Timeout bounds the whole observation: every loader runs concurrently and one still
	// running when it expires counts as Unavailable for this boundary. Default
	// DefaultObserveTimeout.
	Timeout time.Duration
}

// observed is one source's outcome, with the value already encoded for comparison.
type observed struct {
	src   sourceImpl
	state State
	value any
	enc   []byte
	err   error
}

// Observation is one coherent sample of a System Context: every source's state, in the
// System Context's order. It is immutable and pure data for Initialize/Reconcile/Replace.
type Observation struct {
	entries []observed
}

// Observe calls every loader concurrently, each with a context bounded by cfg.Timeout.
// It never panics and never waits past the timeout; see ErrLoaderPanic,
// ErrLoaderTimeout and ErrEncode.
func (sc SystemContext) Observe(ctx context.Context, cfg ObserveConfig) Observation {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultObserveTimeout
	}
	n := len(sc.sources)
	entries := make([]observed, n)
	if n == 0 {
		return Observation{}
	}
	ctx, cancel := context.WithTimeout(canon.WithBoundary(ctx), timeout)
	defer cancel()

	// Loaders write their own slot under mu; the last one closes all, so the caller
	// wakes once. After the deadline the caller marks the observation closed and late
	// loaders discard their results instead of racing with the returned slice.
	var (
		mu     sync.Mutex
		closed bool
		got    = make([]bool, n)
		left   = n
		all    = make(chan struct{})
	)
	for i, s := range sc.sources {
		go func() {
			o := loadOne(ctx, s.impl)
			mu.Lock()
			defer mu.Unlock()
			if closed {
				return
			}
			entries[i], got[i] = o, true
			if left--; left == 0 {
				close(all)
			}
		}()
	}
	select {
	case <-all:
	case <-ctx.Done():
	}
	mu.Lock()
	closed = true // from here on no loader writes entries or got
	mu.Unlock()
	for i, s := range sc.sources {
		if !got[i] {
			entries[i] = observed{src: s.impl, state: StateUnavailable,
				err: fmt.Errorf("%w: %s: %w", ErrLoaderTimeout, s.Key(), ctx.Err())}
			continue
		}
		entries[i] = encodeOne(entries[i])
	}
	return Observation{entries: entries}
}

// loadOne runs one loader; a panic becomes Unavailable.
func loadOne(ctx context.Context, src sourceImpl) (o observed) {
	o.src = src
	defer func() {
		if r := recover(); r != nil {
			o = observed{src: src, state: StateUnavailable,
				err: fmt.Errorf("%w: %s: %v", ErrLoaderPanic, src.key(), r)}
		}
	}()
	st, v, err := src.load(ctx)
	o.state, o.value, o.err = st, v, err
	if st == StateUnavailable && o.err == nil {
		o.err = errors.New("unavailable")
	}
	if st != StatePresent {
		o.value = nil
	}
	return o
}

// encodeOne encodes a present value on the caller's goroutine (whose stack is already
// grown: encoding in each fresh loader goroutine cost more in stack copies than the
// encoding itself). A codec that fails, panics or writes invalid JSON makes the source
// Unavailable.
func encodeOne(o observed) (out observed) {
	if o.state != StatePresent {
		return o
	}
	defer func() {
		if r := recover(); r != nil {
			out = observed{src: o.src, state: StateUnavailable,
				err: fmt.Errorf("%w: %s: codec panicked: %v", ErrEncode, o.src.key(), r)}
		}
	}()
	enc, err := o.src.encode(o.value)
	if err == nil && !o.src.trustedJSON() && !json.Valid(enc) {
		err = errors.New("codec produced invalid JSON")
	}
	if err != nil {
		return observed{src: o.src, state: StateUnavailable, err: fmt.Errorf("%w: %s: %w", ErrEncode, o.src.key(), err)}
	}
	o.enc = enc
	return o
}

// CombineObservations concatenates observations in caller order (for instance the
// Location registry's with the selected agent's skill guidance); a key met twice fails
// with ErrDuplicateKey.
func CombineObservations(parts ...Observation) (Observation, error) {
	n := 0
	for _, p := range parts {
		n += len(p.entries)
	}
	out := make([]observed, 0, n)
	seen := make(map[string]struct{}, n)
	for _, p := range parts {
		for _, e := range p.entries {
			k := e.src.key()
			if _, dup := seen[k]; dup {
				return Observation{}, fmt.Errorf("%w %q", ErrDuplicateKey, k)
			}
			seen[k] = struct{}{}
			out = append(out, e)
		}
	}
	return Observation{entries: out}, nil
}

// Keys lists the observed source keys in order.
func (o Observation) Keys() []string {
	keys := make([]string, len(o.entries))
	for i, e := range o.entries {
		keys[i] = e.src.key()
	}
	return keys
}

// SourceObservation is one source's outcome as seen from outside the package.
type SourceObservation struct {
	Key   string
	State State
	// Err says why the source is unavailable (nil otherwise).
	Err error
}

// Lookup reports one source's outcome.
func (o Observation) Lookup(key string) (SourceObservation, bool) {
	for _, e := range o.entries {
		if e.src.key() == key {
			return SourceObservation{Key: key, State: e.state, Err: e.err}, true
		}
	}
	return SourceObservation{}, false
}

// Unavailable lists the keys that could not be observed, in order.
func (o Observation) Unavailable() []string {
	var keys []string
	for _, e := range o.entries {
		if e.state == StateUnavailable {
			keys = append(keys, e.src.key())
		}
	}
	return keys
}
