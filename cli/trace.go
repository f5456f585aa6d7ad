package cli

import (
	"context"
	"fmt"

	"github.com/sessionrt/sessionrt/telemetry/spanstore"
)

// TraceCmd groups the span inspection commands.
type TraceCmd struct {
	ClientFlags `embed:""`

	Show TraceShowCmd `cmd:"" help:"Print a session's spans as a tree with durations and GenAI attributes."`
}

// TraceShowCmd prints the span tree of a session from the server's span store.
type TraceShowCmd struct {
	sessionRef
}

func (c *TraceShowCmd) Help() string {
	return "Reads the server's span store (no tracing backend needed).\n\nExamples:\n  sessionrt trace show ses_0190…\n  sessionrt trace show ses_0190… --json"
}

func (c *TraceShowCmd) Run(g *Globals, t *TraceCmd) error {
	cl, err := t.client(g)
	if err != nil {
		return err
	}
	spans, err := cl.Trace(context.Background(), c.Session)
	if err != nil {
		return failed("trace show", err)
	}
	if t.JSON {
		if spans == nil {
			spans = []spanstore.Span{}
		}
		return printJSON(g.out(), spans)
	}
	if len(spans) == 0 {
		_, err := fmt.Fprintf(g.out(), "no spans stored for %s\n", c.Session)
		return err
	}
	_, err = fmt.Fprint(g.out(), spanstore.RenderTree(spans))
	return err
}
