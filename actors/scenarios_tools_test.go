package actors

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// The tool-layer scenarios (50–57) are tested on the tool registry and the
// tools themselves in toolactors; these run the ones whose outcome a
// session journals through a real Session, so that what the model sees and
// what the journal keeps are asserted too, and replayed (scenario 60).

// toolTurn runs one prompt whose first turn calls the given tools; the
// second answers. It returns the settlements the journal stored, by call
// ID, and the continuation request's tool results, in call order.
func toolTurn(t *testing.T, h *harness, calls ...scripted.ToolCall) (map[string]messages.Event, []*provider.ToolResult) {
	t.Helper()
	h.mu.Lock()
	h.turns = func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			return scripted.Turn{ToolCalls: calls}, nil
		}
		return scripted.Turn{Text: "seen"}, nil
	}
	h.mu.Unlock()
	id := h.create("")
	h.prompt(id, "", "use the tools", "", true)
	if out := h.waitIdle(id); out.Err != "" {
		t.Fatalf("drain: %+v", out)
	}
	reqs := h.prov.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	var results []*provider.ToolResult
	for _, m := range reqs[1].Messages {
		if m.ToolResult != nil {
			results = append(results, m.ToolResult)
		}
	}
	if len(results) != len(calls) {
		t.Fatalf("the model saw %d tool results, want %d: %q", len(results), len(calls), requestRoles(reqs[1]))
	}
	envs, err := h.journal.ReadEvents(h.ctx(), id, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	settled := map[string]messages.Event{}
	for _, e := range envs {
		switch ev := e.Event.(type) {
		case messages.ToolSucceeded:
			settled[ev.CallID] = ev
		case messages.ToolFailed:
			settled[ev.CallID] = ev
		}
	}
	h.checkReplay()
	return settled, results
}

func call(id, tool string, input any) scripted.ToolCall {
	b, _ := json.Marshal(input)
	return scripted.ToolCall{ID: id, Name: tool, Args: b}
}

func TestS50_BoundedOutputThroughASession(t *testing.T) {
	h := newHarness(t, nil)
	settled, results := toolTurn(t, h,
		call("small", "bash", map[string]any{"command": "seq 1 10", "description": "x"}),
		call("big", "bash", map[string]any{"command": "seq 1 3000", "description": "x"}))
	small, big := settled["small"].(messages.ToolSucceeded), settled["big"].(messages.ToolSucceeded)
	if small.ManagedPath != "" || results[0].Output != "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n<bash_metadata>exit code 0</bash_metadata>\n" {
		t.Fatalf("small output changed: stored %+v, model saw %q", small, results[0].Output)
	}
	if big.ManagedPath == "" || big.Lossy || results[1].Output != big.Output || !strings.Contains(big.Output, big.ManagedPath) {
		t.Fatalf("big output: stored %+v; the model must see the bounded preview naming the managed file", big)
	}
	if n := strings.Count(big.Output, "\n"); n > 2000 || len(big.Output) > 50*1024 || !strings.HasPrefix(big.Output, "1\n2\n") || !strings.Contains(big.Output, "3000\n") {
		t.Fatalf("preview of %d lines, %d bytes, want head and tail within the limits", n, len(big.Output))
	}
	full, err := os.ReadFile(big.ManagedPath)
	if err != nil || !strings.HasPrefix(string(full), "1\n2\n") || strings.Count(string(full), "\n") != 3001 {
		t.Fatalf("managed file: %d bytes, %v", len(full), err)
	}
}

func TestS51_ManagedFileFailureThroughASession(t *testing.T) {
	h := newHarness(t, nil)
	// The managed directory becomes a file: no managed file can be written.
	dir := filepath.Join(h.data, "tool-output")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "not a directory")
	settled, results := toolTurn(t, h, call("big", "bash", map[string]any{"command": "seq 1 5000", "description": "x"}))
	big, ok := settled["big"].(messages.ToolSucceeded)
	if !ok || !big.Lossy || big.ManagedPath != "" || !strings.Contains(big.Output, "could not be saved") || results[0].IsError {
		t.Fatalf("want a lossy success without a path, stored %+v", settled["big"])
	}
}

func TestS53_ReadThroughASession(t *testing.T) {
	h := newHarness(t, nil)
	writeFile(t, filepath.Join(h.loc, "b.txt"), "bee\n")
	if err := os.Mkdir(filepath.Join(h.loc, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(filepath.Dir(h.loc), fmt.Sprintf("outside-%s", filepath.Base(h.loc)))
	writeFile(t, outside, "secret\n")
	t.Cleanup(func() { os.Remove(outside) })
	if err := os.Symlink(outside, filepath.Join(h.loc, "link")); err != nil {
		t.Fatal(err)
	}
	_, results := toolTurn(t, h,
		call("dir", "read", map[string]any{"path": "."}),
		call("dotdot", "read", map[string]any{"path": "../" + filepath.Base(outside)}),
		call("symlink", "read", map[string]any{"path": "link"}))
	if r := results[0]; r.IsError || strings.Index(r.Output, "a/") > strings.Index(r.Output, "b.txt") || strings.Index(r.Output, "a/") < 0 {
		t.Fatalf("directory listing %q: want directories first", r.Output)
	}
	for _, r := range results[1:] {
		if !r.IsError || strings.Contains(r.Output, "secret") {
			t.Fatalf("an escape was not refused: %+v", r)
		}
	}
}

func TestS54_BashThroughASession(t *testing.T) {
	h := newHarness(t, nil)
	_, results := toolTurn(t, h,
		call("exit", "bash", map[string]any{"command": "echo out; exit 3", "description": "x"}),
		call("stdin", "bash", map[string]any{"command": "cat; echo read-eof", "description": "x"}),
		call("timeout", "bash", map[string]any{"command": "sleep 30 & sleep 30", "timeout": 300, "description": "x"}))
	if r := results[0]; !strings.Contains(r.Output, "out\n") || !strings.Contains(r.Output, "exit code 3") {
		t.Fatalf("exit code: %+v", r)
	}
	if r := results[1]; !strings.Contains(r.Output, "read-eof") {
		t.Fatalf("stdin not closed: %+v", r)
	}
	if r := results[2]; !strings.Contains(strings.ToLower(r.Output), "timed out") && !strings.Contains(strings.ToLower(r.Output), "timeout") {
		t.Fatalf("timeout: %+v", r)
	}
}

func TestS55_ApplyPatchThroughASession(t *testing.T) {
	h := newHarness(t, nil)
	writeFile(t, filepath.Join(h.loc, "m.txt"), "one\ntwo\n")
	_, results := toolTurn(t, h,
		call("ok", "apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Add File: n.txt\n+fresh\n*** Update File: m.txt\n@@\n one\n-two\n+2\n*** End Patch"}),
		call("bad", "apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Add File: never.txt\n+x\n*** Update File: m.txt\n@@\n-not there\n+y\n*** End Patch"}))
	if results[0].IsError || !results[1].IsError {
		t.Fatalf("results %+v %+v: want the valid patch applied and the invalid one refused", results[0], results[1])
	}
	if b, _ := os.ReadFile(filepath.Join(h.loc, "m.txt")); string(b) != "one\n2\n" {
		t.Fatalf("m.txt %q", b)
	}
	if _, err := os.Stat(filepath.Join(h.loc, "never.txt")); err == nil {
		t.Fatal("an invalid patch applied part of itself")
	}
}
