package toolactors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/managed"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// Example shows the Session side of the contract: one ExecuteTool per complete tool
// call, one ToolSettled back.
func Example() {
	dataDir, _ := os.MkdirTemp("", "sessionrt-example")
	defer os.RemoveAll(dataDir)
	location, _ := os.MkdirTemp("", "location")
	defer os.RemoveAll(location)

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, _ := managed.New(managed.Config{Dir: filepath.Join(dataDir, "tool-output")})
	ctx, stopSweeper := context.WithCancel(context.Background())
	defer stopSweeper()
	go store.Run(ctx) // once per process

	props, err := toolactors.Props(toolactors.Config{Dir: location, Output: store, Logger: quiet})
	if err != nil {
		panic(err)
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	registry := system.Root.Spawn(props)

	input, _ := json.Marshal(map[string]any{"command": "echo hello; exit 2"})
	res, err := system.Root.RequestFuture(registry, &toolactors.ExecuteTool{
		SessionID: "ses_1", AssistantMessageID: "msg_2", CallID: "call_3",
		Tool: "bash", Input: input, Agent: "build",
		Rules: []permission.Rule{{Action: "bash", Resource: "echo *", Effect: permission.Allow}},
		// Asker: the Session journals the pending request and waits for the client.
		Asker: permission.AskerFunc(func(ctx context.Context, r permission.Request) (permission.Reply, error) {
			return permission.Reply{Answer: permission.Once}, nil
		}),
	}, 30*time.Second).Result()
	if err != nil {
		panic(err)
	}
	s := res.(*toolactors.ToolSettled)
	fmt.Print(s.Output.Text)
	// Output:
	// hello
	// <bash_metadata>exit code 2</bash_metadata>
}
