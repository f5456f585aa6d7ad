package actors

import (
	"context"

	"github.com/sessionrt/sessionrt/actors/protocol"
)

// Inspect reports what the activation of id on this process holds in
// memory, or nil when none is live here. It never activates the session.
func (s *Sessions) Inspect(ctx context.Context, id string) (*Inspection, error) {
	pid, gone, ok := s.rt.acts.acquireLive(id)
	if !ok {
		return nil, nil
	}
	defer s.rt.acts.release(id, pid)
	res, err := s.rt.acts.await(ctx, pid, gone, &protocol.Inspect{}, s.rt.cfg.RequestTimeout)
	if err != nil {
		return nil, err
	}
	return res.(*Inspection), nil
}
