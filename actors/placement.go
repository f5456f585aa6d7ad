package actors

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"
)

// ToolPlacement names the actor a Session sends a Location's tool
// messages to (ExecuteTool, CancelTool, CatalogRequest) when that is not
// this process's own registry: in a cluster, a proxy to the member that
// holds the Location's directory. local is this process's registry for
// dir; a nil PID (and nil error) keeps it. It blocks: it is called off the
// mailbox, when a drain resolves its Location.
type ToolPlacement func(ctx context.Context, dir string, local *actor.PID) (*actor.PID, error)

// SetToolPlacement installs p. Call it before the first session activates
// (the cluster does, between starting the facade and joining).
func (s *Sessions) SetToolPlacement(p ToolPlacement) { s.rt.cfg.ToolPlacement = p }
