package spanstore

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// shown are the attributes RenderTree prints, in order, with their short labels.
var shown = []struct{ key, label string }{
	{"gen_ai.agent.name", "agent"},
	{"gen_ai.provider.name", "provider"},
	{"gen_ai.request.model", "model"},
	{"gen_ai.tool.name", "tool"},
	{"gen_ai.tool.call.id", "call"},
	{"gen_ai.response.finish_reasons", "finish"},
	{"gen_ai.usage.input_tokens", "in"},
	{"gen_ai.usage.output_tokens", "out"},
	{"error.type", "error"},
}

// RenderTree prints spans as trees, one line per span: tree guides, name,
// duration and the key GenAI attributes, then the status message of a failed
// span. Children follow their parent in start order; a span whose parent is
// not in the set (a remote or pruned parent) starts a tree of its own. The
// result depends only on the input: the order of spans does not matter.
//
//	invoke_agent  1.52s  agent=build provider=openai model=gpt-4o
//	├─ chat gpt-4o  820ms  provider=openai model=gpt-4o finish=[tool_calls] in=120 out=40
//	└─ execute_tool bash  301ms  tool=bash call=call_1
func RenderTree(spans []Span) string {
	byID := make(map[string]int, len(spans))
	for i, s := range spans {
		byID[s.TraceID+"/"+s.SpanID] = i
	}
	children := make(map[int][]int)
	var roots []int
	for i, s := range spans {
		p, ok := byID[s.TraceID+"/"+s.ParentSpanID]
		if s.ParentSpanID == "" || !ok || p == i {
			roots = append(roots, i)
			continue
		}
		children[p] = append(children[p], i)
	}
	order := func(a, b int) int {
		return cmp.Or(spans[a].Start.Compare(spans[b].Start),
			cmp.Compare(spans[a].TraceID, spans[b].TraceID),
			cmp.Compare(spans[a].SpanID, spans[b].SpanID))
	}
	slices.SortFunc(roots, order)
	for _, c := range children {
		slices.SortFunc(c, order)
	}

	var b strings.Builder
	printed := make([]bool, len(spans))
	var walk func(i int, prefix, branch string)
	walk = func(i int, prefix, branch string) {
		printed[i] = true
		b.WriteString(prefix + branch)
		writeLine(&b, spans[i])
		next := prefix
		switch branch {
		case "├─ ":
			next += "│  "
		case "└─ ":
			next += "   "
		}
		kids := children[i]
		for k, c := range kids {
			if printed[c] {
				continue // a parent cycle in corrupt data
			}
			if k == len(kids)-1 {
				walk(c, next, "└─ ")
			} else {
				walk(c, next, "├─ ")
			}
		}
	}
	for _, r := range roots {
		walk(r, "", "")
	}
	// Spans caught in a parent cycle are reachable from no root: print them
	// rather than lose them.
	var rest []int
	for i := range spans {
		if !printed[i] {
			rest = append(rest, i)
		}
	}
	slices.SortFunc(rest, order)
	for _, i := range rest {
		if !printed[i] {
			walk(i, "", "")
		}
	}
	return b.String()
}

func writeLine(b *strings.Builder, s Span) {
	b.WriteString(s.Name)
	b.WriteString("  ")
	b.WriteString(FormatDuration(s.Duration()))
	first := true
	for _, a := range shown {
		v, ok := s.Attributes[a.key]
		if !ok {
			continue
		}
		if first {
			b.WriteString(" ")
			first = false
		}
		b.WriteString(" " + a.label + "=" + formatValue(v))
	}
	if s.StatusCode == "Error" {
		b.WriteString("  ERROR")
		if s.StatusMessage != "" {
			b.WriteString(": " + strconv.Quote(s.StatusMessage))
		}
	}
	b.WriteByte('\n')
}

func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		return quoteIfNeeded(x)
	case []string:
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = quoteIfNeeded(s)
		}
		return "[" + strings.Join(q, ",") + "]"
	default:
		return fmt.Sprint(x)
	}
}

func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"=,[]") {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// FormatDuration prints a span duration with about three significant digits:
// 850µs, 12.3ms, 1.52s, 2m3.5s.
func FormatDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "?"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < 10*time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d < 100*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	default:
		return d.Round(100 * time.Millisecond).String()
	}
}
