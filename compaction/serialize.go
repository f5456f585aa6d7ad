package compaction

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sessionrt/sessionrt/messages"
)

// bounds are the sizes, in tokens (cut at 4 bytes a token), serialized items
// are cut to: Item for tool calls, tool results and text attachments; Text
// for message text (0: whole).
type bounds struct{ Item, Text int }

// The recent context is kept small (it is re-sent with every later request);
// the transcript for the summary may be larger (it is read once). When a
// summary request does not fit, its transcript is serialized again with the
// tighter fallbacks before the compaction is refused.
const (
	recentItemTokens     = 1000 // recent context: tool results, text attachments
	transcriptItemTokens = 2000 // summary transcript, first try
)

// transcriptLevels are the bounds of the summary transcript, loosest first.
func transcriptLevels() [3]bounds {
	return [3]bounds{{Item: transcriptItemTokens}, {Item: 500, Text: 2000}, {Item: 100, Text: 250}}
}

// serialize renders one projected message as plain text. Nothing
// provider-native survives: assistant text, tool calls and tool results
// become labelled text, attachments a line naming their type and bounds
// (images with dimensions and size, never their bytes), and each tool result
// or text attachment is cut to its bound with a marker. Reasoning is left
// out: it is the model's scratch work, often large, and what it decided is
// in the text and the tool calls that follow it.
func serialize(b *strings.Builder, m *messages.Message, bd bounds) {
	itemTokens := bd.Item
	switch m.Role {
	case messages.RoleUser:
		b.WriteString("[user]\n")
		if m.Prompt != nil {
			b.WriteString(cutText(m.Prompt.Text, bd.Text))
			for i := range m.Prompt.Attachments {
				b.WriteString("\n")
				writeAttachment(b, &m.Prompt.Attachments[i], itemTokens)
			}
		}
	case messages.RoleSystem:
		b.WriteString("[system update]\n")
		b.WriteString(cutText(m.Text, bd.Text))
	case messages.RoleCompaction:
		// Only reached for a compaction message that is not the boundary
		// (never in a well-formed history): keep its content as text.
		b.WriteString("[earlier summary]\n")
		b.WriteString(m.Text)
		if m.RecentContext != "" {
			b.WriteString("\n")
			b.WriteString(m.RecentContext)
		}
	case messages.RoleAssistant:
		b.WriteString("[assistant]")
		for i := range m.Parts {
			p := &m.Parts[i]
			switch p.Kind {
			case messages.PartText:
				if p.Text != "" {
					b.WriteString("\n")
					b.WriteString(cutText(p.Text, bd.Text))
				}
			case messages.PartTool:
				if p.Tool != nil {
					b.WriteString("\n")
					writeTool(b, p.Tool, itemTokens)
				}
			}
		}
		if m.Error != "" {
			fmt.Fprintf(b, "\n[turn failed: %s]", m.Error)
		}
	default:
		fmt.Fprintf(b, "[%s]", m.Role)
	}
}

func writeAttachment(b *strings.Builder, a *messages.Attachment, itemTokens int) {
	name := a.Name
	if name == "" {
		name = a.URI
	}
	kind := a.Kind
	if kind == "" {
		kind = "attachment"
	}
	switch {
	case len(a.Data) == 0:
		fmt.Fprintf(b, "[%s %q %s %s: not inlined]", kind, name, a.MediaType, a.URI)
	case strings.HasPrefix(a.MediaType, "image/"):
		if w, h, ok := imageSize(a.Data); ok {
			fmt.Fprintf(b, "[image %q %s %dx%d, %s: not shown after compaction]", name, a.MediaType, w, h, size(len(a.Data)))
		} else {
			fmt.Fprintf(b, "[image %q %s, %s: not shown after compaction]", name, a.MediaType, size(len(a.Data)))
		}
	case strings.HasPrefix(a.MediaType, "text/") && utf8.Valid(a.Data):
		fmt.Fprintf(b, "[%s %q %s, %s]\n", kind, name, a.MediaType, size(len(a.Data)))
		b.WriteString(cut(string(a.Data), itemTokens*4, ""))
		fmt.Fprintf(b, "\n[end of %q]", name)
	default:
		extra := ""
		if a.MediaType == "application/pdf" {
			if p := pdfPages(a.Data); p > 0 {
				extra = fmt.Sprintf(", %d pages", p)
			}
		}
		fmt.Fprintf(b, "[%s %q %s, %s%s: not shown after compaction]", kind, name, a.MediaType, size(len(a.Data)), extra)
	}
}

func writeTool(b *strings.Builder, t *messages.ToolPart, itemTokens int) {
	fmt.Fprintf(b, "[tool call %s %s] %s\n", t.Tool, t.CallID, cut(string(t.Input), itemTokens*4, ""))
	switch t.State {
	case messages.ToolStateCompleted:
		fmt.Fprintf(b, "[tool result %s %s: completed, %s]\n", t.Tool, t.CallID, size(len(t.Output)))
		b.WriteString(cut(t.Output, itemTokens*4, t.ManagedPath))
	case messages.ToolStateFailed:
		fmt.Fprintf(b, "[tool result %s %s: failed]\n", t.Tool, t.CallID)
		b.WriteString(cut(t.Error, itemTokens*4, ""))
	default:
		fmt.Fprintf(b, "[tool result %s %s: interrupted]", t.Tool, t.CallID)
	}
}

// cutText cuts message text to tokens (0: keeps it whole).
func cutText(s string, tokens int) string {
	if tokens <= 0 {
		return s
	}
	return cut(s, tokens*4, "")
}

// cut keeps at most maxBytes of s: its head and tail, with a marker saying
// how much was left out (and where the full text is, when known).
func cut(s string, maxBytes int, fullPath string) string {
	if len(s) <= maxBytes {
		return s
	}
	h, t := maxBytes/2, len(s)-maxBytes/2
	for h > 0 && !utf8.RuneStart(s[h]) { // do not split a rune
		h--
	}
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	head, tail := s[:h], s[t:]
	where := ""
	if fullPath != "" {
		where = "; full text in " + fullPath
	}
	return fmt.Sprintf("%s\n[… %d bytes omitted%s …]\n%s", head, len(s)-len(head)-len(tail), where, tail)
}

func size(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
