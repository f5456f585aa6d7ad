package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/title"
)

// DemoModel is the model ID of the offline demo.
const DemoModel = "demo"

// Demo returns the offline demo provider used when no real provider is
// configured. It answers sensibly without a model:
//   - "run: <command>" (or "$ <command>") calls the bash tool when offered;
//   - after tool results, it reports their first lines;
//   - anything else gets an explanation that this is the offline demo and
//     how to configure a real provider, quoting the prompt.
//
// Replies stream in small chunks so clients see real deltas. It keeps only the
// latest DemoKeep requests: a server may run it for months.
func Demo() *Provider {
	p, _ := New(Config{Func: demoTurn, Keep: DemoKeep})
	return p
}

// DemoKeep is how many of its latest requests the demo provider keeps.
const DemoKeep = 8

func demoTurn(_ context.Context, req *provider.Request, n int) (Turn, error) {
	var last *provider.Message
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if r := req.Messages[i].Role; r == provider.RoleUser || r == provider.RoleTool {
			last = &req.Messages[i]
			break
		}
	}
	if last == nil {
		return Turn{Text: "Hello from sessionrt's offline demo provider. Send a prompt to begin.", Chunk: 8}, nil
	}
	if last.Role == provider.RoleTool {
		// Report every result of the latest tool batch.
		var b strings.Builder
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == provider.RoleTool; i-- {
			r := req.Messages[i].ToolResult
			status := "returned"
			if r.IsError {
				status = "failed with"
			}
			fmt.Fprintf(&b, "The tool call %s %s:\n%s\n", r.CallID, status, firstLines(r.Output, 10))
		}
		return Turn{Text: strings.TrimSpace(b.String()), Chunk: 16}, nil
	}
	text := strings.TrimSpace(last.Text)
	if req.System == title.Instructions {
		return Turn{Text: demoTitle(text)}, nil
	}
	if cmd, ok := demoCommand(text); ok && offers(req, "bash") && req.ToolChoice != provider.ToolChoiceNone {
		args, _ := json.Marshal(map[string]string{"command": cmd, "description": "demo command"})
		return Turn{Text: "Running `" + cmd + "`.", ToolCalls: []ToolCall{{Name: "bash", Args: args}}, Chunk: 16}, nil
	}
	reply := fmt.Sprintf("This is sessionrt's offline demo provider: no model is configured "+
		"(set ANTHROPIC_API_KEY, or OPENAI_API_KEY and optionally OPENAI_BASE_URL for a local server). "+
		"The session, its journal and its tools are real; try \"run: ls\" to call the bash tool.\n\nYou said: %q", firstLines(text, 3))
	return Turn{Text: reply, Chunk: 12}, nil
}

// demoTitle names a session as a model would, from the first words of
// the prompt quoted in a title request.
func demoTitle(request string) string {
	_, prompt, _ := strings.Cut(request, "<message>")
	prompt, _, _ = strings.Cut(prompt, "</message>")
	words := strings.Fields(prompt)
	if len(words) == 0 {
		return "Demo session"
	}
	t := strings.Join(words[:min(len(words), 6)], " ")
	if r := []rune(t); len(r) > 50 {
		t = string(r[:50])
	}
	return t
}

func demoCommand(text string) (string, bool) {
	for _, p := range []string{"run:", "$"} {
		if strings.HasPrefix(text, p) {
			if cmd := strings.TrimSpace(strings.TrimPrefix(text, p)); cmd != "" {
				return cmd, true
			}
		}
	}
	return "", false
}

func offers(req *provider.Request, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		return strings.Join(lines[:n], "\n") + "\n…"
	}
	return s
}
