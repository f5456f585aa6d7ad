package actors

import (
	"io"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
)

// quietLogger routes protoactor's own logging to nowhere; the runtime logs what matters itself.
func quietLogger(*actor.ActorSystem) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
