package render

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
)

// TestRender runs the scripts in testdata/: "history" writes a history
// compactly (one message a line, its parts and attachments indented under
// it), "render" prints the request Request builds from it for a model, one
// message a line. Regenerate the expectations on purpose with:
// go test ./render -run TestRender -rewrite
//
// History lines (texts are one word or a Go-quoted string):
//
//	user <text>                               a prompt (user alone: no prompt)
//	  attach <kind> <name> <uri>              an unresolved reference
//	  attach <kind> <name> <type> <data>      inline content
//	system <text>                             a mid-conversation system message
//	compaction <summary> [<recent>]           a completed compaction
//	assistant <provider>/<model>[@<variant>]  an assistant message of that model
//	  text <text>
//	  reasoning <text> [sig=<signature>]      signed as the provider signs it
//	  tool <call> <name> <state> <input> [<output or error>]
//
// "render model=<provider>/<model>[@<variant>] [baseline=<text>]
// [tools=(<name>,…)] [last]" prints the request for that model.
func TestRender(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var history []messages.Message
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "history":
				var err error
				if history, err = parseHistory(td.Input); err != nil {
					t.Fatalf("%s: %v", td.Pos, err)
				}
				return fmt.Sprintf("messages: %d\n", len(history))
			case "render":
				var model, baseline string
				var tools []string
				td.ScanArgs(t, "model", &model)
				td.MaybeScanArgs(t, "baseline", &baseline)
				td.MaybeScanArgs(t, "tools", &tools)
				turn := Turn{Model: modelRef(model), Baseline: baseline, History: history, LastTurn: td.HasArg("last")}
				for _, name := range tools {
					turn.Tools = append(turn.Tools, provider.Tool{Name: name})
				}
				return describe(Request(turn))
			default:
				t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
				return ""
			}
		})
	})
}

// modelRef reads <provider>/<model>[@<variant>].
func modelRef(s string) messages.ModelRef {
	s, variant, _ := strings.Cut(s, "@")
	p, id, _ := strings.Cut(s, "/")
	return messages.ModelRef{Provider: p, ID: id, Variant: variant}
}

// parseHistory reads the compact history of a script.
func parseHistory(in string) ([]messages.Message, error) {
	var out []messages.Message
	for n, line := range strings.Split(in, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f, err := fields(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n+1, err)
		}
		indented := strings.HasPrefix(line, " ")
		if indented != (f[0] == "attach" || f[0] == "text" || f[0] == "reasoning" || f[0] == "tool") {
			return nil, fmt.Errorf("line %d: %q: parts and attachments are indented under their message, messages are not", n+1, line)
		}
		arg := func(i int) string {
			if i < len(f) {
				return f[i]
			}
			return ""
		}
		var last *messages.Message
		if len(out) > 0 {
			last = &out[len(out)-1]
		}
		switch f[0] {
		case "user":
			m := messages.Message{Role: messages.RoleUser}
			if len(f) > 1 {
				m.Prompt = &messages.Prompt{Text: f[1]}
			}
			out = append(out, m)
		case "system":
			out = append(out, messages.Message{Role: messages.RoleSystem, Text: arg(1)})
		case "compaction":
			out = append(out, messages.Message{Role: messages.RoleCompaction, Text: arg(1), RecentContext: arg(2)})
		case "assistant":
			out = append(out, messages.Message{Role: messages.RoleAssistant, Model: modelRef(arg(1))})
		case "attach":
			if last == nil || last.Prompt == nil {
				return nil, fmt.Errorf("line %d: an attachment belongs to a prompt", n+1)
			}
			a := messages.Attachment{Kind: arg(1), Name: arg(2)}
			if len(f) > 4 {
				a.MediaType, a.Data = f[3], []byte(f[4])
			} else {
				a.URI = arg(3)
			}
			last.Prompt.Attachments = append(last.Prompt.Attachments, a)
		case "text", "reasoning", "tool":
			if last == nil || last.Role != messages.RoleAssistant {
				return nil, fmt.Errorf("line %d: a part belongs to an assistant message", n+1)
			}
			var p messages.Part
			switch f[0] {
			case "text":
				p = messages.Part{Kind: messages.PartText, Text: arg(1)}
			case "reasoning":
				p = messages.Part{Kind: messages.PartReasoning, Text: arg(1)}
				if sig, ok := strings.CutPrefix(arg(2), "sig="); ok {
					p.ProviderMetadata, _ = json.Marshal(map[string]string{provider.MetaReasoningSignature: sig})
				}
			case "tool":
				tp := &messages.ToolPart{CallID: arg(1), Tool: arg(2), State: messages.ToolState(arg(3)), Input: []byte(arg(4))}
				if tp.State == messages.ToolStateFailed {
					tp.Error = arg(5)
				} else {
					tp.Output = arg(5)
				}
				p = messages.Part{Kind: messages.PartTool, Tool: tp}
			}
			last.Parts = append(last.Parts, p)
		default:
			return nil, fmt.Errorf("line %d: unknown %q", n+1, f[0])
		}
	}
	return out, nil
}

// fields splits a line at spaces; a field starting with a quote is a Go
// string.
func fields(line string) ([]string, error) {
	var out []string
	for s := strings.TrimSpace(line); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, err
			}
			v, _ := strconv.Unquote(q)
			out, s = append(out, v), s[len(q):]
			continue
		}
		f, rest, _ := strings.Cut(s, " ")
		out, s = append(out, f), rest
	}
	return out, nil
}

// describe prints a request compactly and deterministically: its header,
// then one message a line (an assistant's reasoning and calls indented
// under it).
func describe(r *provider.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "model %s/%s", r.Model.Provider, r.Model.Model)
	if r.Variant != "" {
		fmt.Fprintf(&b, " variant=%s", r.Variant)
	}
	b.WriteString("\n")
	if r.System != "" {
		fmt.Fprintf(&b, "system %q\n", r.System)
	}
	var tools []string
	for _, t := range r.Tools {
		tools = append(tools, t.Name)
	}
	fmt.Fprintf(&b, "tools [%s]", strings.Join(tools, " "))
	if r.ToolChoice == provider.ToolChoiceNone {
		b.WriteString(" choice=none")
	}
	b.WriteString("\n")
	if len(r.Messages) == 0 {
		b.WriteString("no messages\n")
	}
	for _, m := range r.Messages {
		switch m.Role {
		case provider.RoleTool:
			res := m.ToolResult
			state := "ok"
			if res.IsError {
				state = "error"
			}
			fmt.Fprintf(&b, "tool %s %s %s %q\n", res.CallID, res.Name, state, res.Output)
			continue
		}
		fmt.Fprintf(&b, "%s %q\n", m.Role, m.Text)
		for _, a := range m.Attachments {
			fmt.Fprintf(&b, "  attachment %s %s %q\n", a.Name, a.MediaType, a.Data)
		}
		for _, r := range m.Reasoning {
			fmt.Fprintf(&b, "  reasoning %q", r.Text)
			if r.Signature != "" {
				fmt.Fprintf(&b, " sig=%s", r.Signature)
			}
			b.WriteString("\n")
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "  call %s %s %s\n", c.ID, c.Name, c.Args)
		}
	}
	return b.String()
}
