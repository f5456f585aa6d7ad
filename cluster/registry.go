package cluster

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/cluster/wirepb"
	"github.com/sessionrt/sessionrt/toolactors"
)

// ErrUnknownType is returned for a message whose Go type (when encoding) or
// type name (when decoding) is not in the registry.
var ErrUnknownType = errors.New("message type not registered for the cluster wire")

// Registry maps wire type names to Go message types. Every member of a
// cluster must register the same names; a name is part of the wire format,
// so renaming a Go type must not rename its wire name.
type Registry struct {
	byName map[string]reflect.Type // name -> pointer type
	byType map[reflect.Type]string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]reflect.Type{}, byType: map[reflect.Type]string{}}
}

// Register adds a message type under name. sample must be a pointer to a
// struct (messages travel as pointers, as they do between local actors).
func (r *Registry) Register(name string, sample any) error {
	t := reflect.TypeOf(sample)
	if name == "" {
		return fmt.Errorf("register %v: empty wire name", t)
	}
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("register %q: %v is not a pointer to a struct", name, t)
	}
	if old, ok := r.byName[name]; ok && old != t {
		return fmt.Errorf("register %q: name already used by %v", name, old)
	}
	if old, ok := r.byType[t]; ok && old != name {
		return fmt.Errorf("register %q: %v already registered as %q", name, t, old)
	}
	r.byName[name], r.byType[t] = t, name
	return nil
}

// Knows reports whether msg's type is registered.
func (r *Registry) Knows(msg any) bool {
	_, ok := r.byType[reflect.TypeOf(msg)]
	return ok
}

// Encode turns a registered message into its wire form.
func (r *Registry) Encode(msg any) (*wirepb.Encoded, error) {
	if e, ok := msg.(*wirepb.Encoded); ok {
		return e, nil // already in wire form
	}
	name, ok := r.byType[reflect.TypeOf(msg)]
	if !ok {
		return nil, fmt.Errorf("encode %T: %w", msg, ErrUnknownType)
	}
	data, err := msgpack.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", name, err)
	}
	return &wirepb.Encoded{TypeName: name, Data: data}, nil
}

// Decode rebuilds the Go message (a pointer, as registered) from its wire form.
func (r *Registry) Decode(e *wirepb.Encoded) (any, error) {
	t, ok := r.byName[e.TypeName]
	if !ok {
		return nil, fmt.Errorf("decode %q: %w", e.TypeName, ErrUnknownType)
	}
	v := reflect.New(t.Elem())
	if err := msgpack.Unmarshal(e.Data, v.Interface()); err != nil {
		return nil, fmt.Errorf("decode %s (%d bytes): %w", e.TypeName, len(e.Data), err)
	}
	return v.Interface(), nil
}

// SessionRegistry returns a registry holding the Session actor's commands
// and replies, and a Location's tool messages, under stable wire names.
func SessionRegistry() *Registry {
	r := NewRegistry()
	for name, sample := range map[string]any{
		"session.Create":          &actors.Create{},
		"session.Prompt":          &actors.Prompt{},
		"session.Run":             &actors.Run{},
		"session.Wake":            &actors.Wake{},
		"session.Interrupt":       &actors.Interrupt{},
		"session.Move":            &actors.Move{},
		"session.SwitchAgent":     &actors.SwitchAgent{},
		"session.SwitchModel":     &actors.SwitchModel{},
		"session.Rename":          &actors.Rename{},
		"session.Delete":          &actors.Delete{},
		"session.ReplyPermission": &actors.ReplyPermission{},
		"session.WaitIdle":        &actors.WaitIdle{},
		"session.Compact":         &actors.Compact{},
		"session.Revert":          &actors.Revert{},
		"session.RevertInfo":      &actors.RevertInfo{},
		"session.Info":            &actors.Info{},
		"session.Receipt":         &actors.Receipt{},
		"session.Outcome":         &actors.Outcome{},
		"session.Done":            &actors.Done{},
		"session.CommandError":    &actors.CommandError{},
		// A Location's tool calls, between a Session's member and the
		// member holding the directory (locations.go).
		"location.ExecuteTool": &RemoteExecuteTool{},
		"location.ToolSettled": &toolactors.ToolSettled{},
		"location.CancelTool":  &toolactors.CancelTool{},
		"location.CancelAck":   &toolactors.CancelAck{},
		"location.Ask":         &RemoteAsk{},
		"location.AskReply":    &RemoteAskReply{},
		// A Location's file snapshots, on the member holding it (snapshots.go).
		"location.Snapshot":      &RemoteSnapshot{},
		"location.SnapshotReply": &RemoteSnapshotReply{},
	} {
		if err := r.Register(name, sample); err != nil {
			panic(err) // a programming error in the table above, caught by tests
		}
	}
	return r
}
