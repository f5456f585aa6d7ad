package contextsources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// State is the outcome of one loader call.
type State uint8

const (
	// StatePresent: the loader observed a value.
	StatePresent State = iota + 1
	// StateAbsent: the loader observed, successfully, that there is no value (a removal).
	StateAbsent
	// StateUnavailable: the value could not be observed this time (stale-while-revalidate).
	StateUnavailable
)

func (s State) String() string {
	switch s {
	case StatePresent:
		return "present"
	case StateAbsent:
		return "absent"
	case StateUnavailable:
		return "unavailable"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Result is what a loader returns: a value, a successful absence, or Unavailable.
type Result[T any] struct {
	state State
	value T
	err   error
}

// Present is a loaded value.
func Present[T any](v T) Result[T] { return Result[T]{state: StatePresent, value: v} }

// Absent is a successfully observed absence; a removable source emits its removal text.
func Absent[T any]() Result[T] { return Result[T]{state: StateAbsent} }

// Unavailable is an expected, temporary inability to observe; reason says why.
func Unavailable[T any](reason error) Result[T] {
	if reason == nil {
		reason = errors.New("unavailable")
	}
	return Result[T]{state: StateUnavailable, err: reason}
}

// State reports which of the three outcomes r is.
func (r Result[T]) State() State { return r.state }

// Value returns the loaded value (zero unless Present).
func (r Result[T]) Value() T { return r.value }

// Err returns why the value was unavailable (nil otherwise).
func (r Result[T]) Err() error { return r.err }

// Codec stores and compares a source's value as JSON.
type Codec[T any] interface {
	Encode(T) ([]byte, error)
	Decode([]byte) (T, error)
}

// JSONCodec is the default codec: encoding/json both ways.
type JSONCodec[T any] struct{}

// Encode marshals v with encoding/json.
func (JSONCodec[T]) Encode(v T) ([]byte, error) { return json.Marshal(v) }

// Decode unmarshals b with encoding/json.
func (JSONCodec[T]) Decode(b []byte) (T, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// Spec describes one Context Source of value type T.
type Spec[T any] struct {
	// Key is stable and namespaced: "namespace/name" (letters, digits, '.', '_', '-';
	// at least one '/'). Required.
	Key string
	// Codec compares and stores the value. Default: JSONCodec[T].
	Codec Codec[T]
	// Load observes the current value. It must honour ctx; it may block or panic, which
	// the observer turns into Unavailable. Required.
	Load func(ctx context.Context) Result[T]
	// Baseline renders the value for a Baseline System Context or for a source newly
	// admitted mid-conversation. Pure. Required.
	Baseline func(T) string
	// Update renders the newly effective value after a change (never a diff). Pure.
	// Default: Baseline.
	Update func(T) string
	// Removal renders what the model is told when the value disappears. Pure. Optional:
	// nil makes the source non-removable (an absence then changes nothing).
	Removal func(T) string
}

// ErrInvalidSource is returned by Make for a malformed Spec.
var ErrInvalidSource = errors.New("invalid context source")

// Source is a Context Source with its value type hidden, so differently typed sources
// compose uniformly. Build one with Make.
type Source struct {
	impl sourceImpl
}

// Key returns the source's stable key.
func (s Source) Key() string {
	if s.impl == nil {
		return ""
	}
	return s.impl.key()
}

// sourceImpl is the type-erased face of a Spec[T]; values travel as any.
type sourceImpl interface {
	key() string
	load(ctx context.Context) (State, any, error)
	encode(v any) ([]byte, error)
	decode(b []byte) (any, error)
	baseline(v any) string
	update(v any) string
	removable() bool
	removal(v any) string
	// trustedJSON: the codec is encoding/json, whose output needs no validation.
	trustedJSON() bool
}

type typed[T any] struct{ s Spec[T] }

func (t typed[T]) key() string { return t.s.Key }
func (t typed[T]) load(ctx context.Context) (State, any, error) {
	r := t.s.Load(ctx)
	switch r.state {
	case StatePresent, StateAbsent, StateUnavailable:
	default:
		return StateUnavailable, nil, fmt.Errorf("loader returned zero Result")
	}
	return r.state, r.value, r.err
}
func (t typed[T]) encode(v any) ([]byte, error) { return t.s.Codec.Encode(v.(T)) }
func (t typed[T]) decode(b []byte) (any, error) { return t.s.Codec.Decode(b) }
func (t typed[T]) baseline(v any) string        { return t.s.Baseline(v.(T)) }
func (t typed[T]) update(v any) string          { return t.s.Update(v.(T)) }
func (t typed[T]) removable() bool              { return t.s.Removal != nil }
func (t typed[T]) removal(v any) string         { return t.s.Removal(v.(T)) }
func (t typed[T]) trustedJSON() bool {
	_, ok := t.s.Codec.(JSONCodec[T])
	return ok
}

// Make validates spec and hides its value type.
func Make[T any](spec Spec[T]) (Source, error) {
	if err := ValidateKey(spec.Key); err != nil {
		return Source{}, err
	}
	if spec.Load == nil {
		return Source{}, fmt.Errorf("%w %q: Load is required", ErrInvalidSource, spec.Key)
	}
	if spec.Baseline == nil {
		return Source{}, fmt.Errorf("%w %q: Baseline is required", ErrInvalidSource, spec.Key)
	}
	if spec.Codec == nil {
		spec.Codec = JSONCodec[T]{}
	}
	if spec.Update == nil {
		spec.Update = spec.Baseline
	}
	return Source{impl: typed[T]{s: spec}}, nil
}

// MustMake is Make for sources built from constants; it panics on a malformed Spec.
func MustMake[T any](spec Spec[T]) Source {
	s, err := Make(spec)
	if err != nil {
		panic(err)
	}
	return s
}

// ValidateKey checks that key is stable and namespaced ("namespace/name").
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidSource)
	}
	if !strings.Contains(key, "/") {
		return fmt.Errorf("%w %q: key must be namespaced as namespace/name", ErrInvalidSource, key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" {
			return fmt.Errorf("%w %q: empty key segment", ErrInvalidSource, key)
		}
		for _, r := range seg {
			ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
				r == '.' || r == '_' || r == '-'
			if !ok {
				return fmt.Errorf("%w %q: character %q not allowed in key", ErrInvalidSource, key, r)
			}
		}
	}
	return nil
}
