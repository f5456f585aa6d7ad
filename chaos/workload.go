package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// SideEffects is the file in the Location every tool call appends its marker to.
const SideEffects = "side-effects.log"

// ToolPIDs is the file every tool call appends its shell's PID to.
const ToolPIDs = "tool-pids.log"

// Model is the model chaos sessions use.
var Model = messages.ModelRef{Provider: "scripted", ID: "chaos"}

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

// countMarkers reads the side-effect file: how often each marker was written.
func countMarkers(loc string) (map[string]int, error) {
	f, err := os.Open(filepath.Join(loc, SideEffects))
	if os.IsNotExist(err) {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := strings.TrimSpace(sc.Text()); m != "" {
			out[m]++
		}
	}
	return out, sc.Err()
}
