package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Mux routes each request to the Provider registered under its
// Model.Provider ID. It is immutable after construction.
type Mux struct {
	byID map[string]Provider
}

// NewMux returns a Mux over providers, keyed by provider ID.
func NewMux(providers map[string]Provider) *Mux {
	m := &Mux{byID: make(map[string]Provider, len(providers))}
	for id, p := range providers {
		m.byID[id] = p
	}
	return m
}

// IDs lists the registered provider IDs, sorted.
func (m *Mux) IDs() []string {
	ids := make([]string, 0, len(m.byID))
	for id := range m.byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Lookup returns the provider registered under id.
func (m *Mux) Lookup(id string) (Provider, bool) {
	p, ok := m.byID[id]
	return p, ok
}

// Stream routes req by req.Model.Provider.
func (m *Mux) Stream(ctx context.Context, req *Request) (Stream, error) {
	p, ok := m.byID[req.Model.Provider]
	if !ok {
		return nil, &Error{Kind: KindInvalidRequest, Message: fmt.Sprintf("provider %q is not configured (configured: %s)", req.Model.Provider, strings.Join(m.IDs(), ", "))}
	}
	return p.Stream(ctx, req)
}
