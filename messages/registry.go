package messages

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"

	"github.com/vmihailenco/msgpack/v5"
)

var (
	// ErrUnknownType: no Go type is registered for a stored type name + version.
	ErrUnknownType = errors.New("unknown event type")
	// ErrUndecodable: a payload is not a valid msgpack encoding of its type.
	ErrUndecodable = errors.New("undecodable event payload")
)

// Registry maps event types to Go types. It is immutable after construction
// and safe for concurrent use.
type Registry struct {
	types map[EventType]reflect.Type
}

// NewRegistry registers one sample value per event type. Pointer samples,
// empty names, versions below 1 and duplicates are refused.
func NewRegistry(samples ...Event) (*Registry, error) {
	r := &Registry{types: make(map[EventType]reflect.Type, len(samples))}
	for _, s := range samples {
		if s == nil {
			return nil, errors.New("register event: nil sample")
		}
		rt := reflect.TypeOf(s)
		t := s.EventType()
		switch {
		case rt.Kind() == reflect.Pointer:
			return nil, fmt.Errorf("register event %s: sample is a pointer (%s); register the value type", t, rt)
		case t.Name == "" || t.Version < 1:
			return nil, fmt.Errorf("register event %s (%s): empty name or version below 1", t, rt)
		}
		if prev, dup := r.types[t]; dup {
			return nil, fmt.Errorf("register event %s: both %s and %s claim it", t, prev, rt)
		}
		r.types[t] = rt
	}
	return r, nil
}

// SessionRegistry returns a registry of the whole session event family.
func SessionRegistry() *Registry {
	r, err := NewRegistry(SessionEvents()...)
	if err != nil { // the family is a constant list; TestSessionRegistryIsComplete guards it
		panic(err)
	}
	return r
}

// Known reports whether t is registered.
func (r *Registry) Known(t EventType) bool { _, ok := r.types[t]; return ok }

// Types lists the registered event types (in no particular order).
func (r *Registry) Types() []EventType {
	out := make([]EventType, 0, len(r.types))
	for t := range r.types {
		out = append(out, t)
	}
	return out
}

// Marshal encodes e as msgpack. The concrete type must be the registered one.
func (r *Registry) Marshal(e Event) ([]byte, error) {
	if e == nil {
		return nil, errors.New("marshal event: nil")
	}
	t := e.EventType()
	rt, ok := r.types[t]
	if !ok {
		return nil, fmt.Errorf("marshal event %s: %w", t, ErrUnknownType)
	}
	if got := reflect.TypeOf(e); got != rt {
		return nil, fmt.Errorf("marshal event %s: value is %s, registered type is %s", t, got, rt)
	}
	b, err := marshal(e)
	if err != nil {
		return nil, fmt.Errorf("marshal event %s: %w", t, err)
	}
	return b, nil
}

// Unmarshal decodes a payload of type t into a value of its registered Go
// type. Unknown types give ErrUnknownType; bad bytes (including trailing
// garbage) give ErrUndecodable.
func (r *Registry) Unmarshal(t EventType, payload []byte) (Event, error) {
	rt, ok := r.types[t]
	if !ok {
		return nil, fmt.Errorf("event type %s: %w", t, ErrUnknownType)
	}
	v := reflect.New(rt)
	rd := bytes.NewReader(payload)
	// A pooled decoder: every event read (replay, tail, verify) decodes one
	// payload, and a fresh decoder per event was a steady allocation.
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(rd)
	if err := dec.Decode(v.Interface()); err != nil {
		return nil, fmt.Errorf("event type %s: %w: %v", t, ErrUndecodable, err)
	}
	if rd.Len() != 0 {
		return nil, fmt.Errorf("event type %s: %w: %d trailing bytes", t, ErrUndecodable, rd.Len())
	}
	return v.Elem().Interface().(Event), nil
}
