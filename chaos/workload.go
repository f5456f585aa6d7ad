package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/sessionrt/sessionrt/cluster/clustertest"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// SideEffects is the file in the Location every tool call appends its
// marker to (the cluster members' too: the checks read it the same way).
const SideEffects = clustertest.SideEffects

// ToolPIDs is the file every tool call appends its shell's PID to.
const ToolPIDs = "tool-pids.log"

// Model is the model chaos sessions use.
var Model = clustertest.Model

// newProvider answers a prompt with one bash call that appends a unique
// marker to the side-effect file, and a tool result with text. Markers are
// unique per process (nonce) and per request, so a tool that ran twice shows
// up as a repeated marker.
func newProvider(nonce string) (*scripted.Provider, error) {
	var calls atomic.Int64
	return scripted.New(scripted.Config{Func: func(_ context.Context, req *provider.Request, n int) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == provider.RoleTool || len(req.Tools) == 0 {
			return scripted.Turn{Text: "done", Chunk: 2}, nil
		}
		marker := fmt.Sprintf("%s-%d", nonce, calls.Add(1))
		args, _ := json.Marshal(map[string]string{
			"command":     fmt.Sprintf("echo $$ >> %s; echo %s >> %s && sleep 0.05", ToolPIDs, marker, SideEffects),
			"description": "chaos side effect",
		})
		return scripted.Turn{Text: "working", Chunk: 3, ToolCalls: []scripted.ToolCall{{ID: "call_" + marker, Name: "bash", Args: args}}}, nil
	}})
}
