package provider_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// A provider turn as the Session drives it: build the request, stream it
// through the retry wrapper, fold the parts into the assistant message, and
// branch on the error class.
func Example() {
	sc, _ := scripted.Parse([]byte(`{"turns":[
		{"error":{"kind":"rate_limited","retry_after":"1s"}},
		{"text":"Reading it.","tool_calls":[{"id":"call_1","name":"read","args":{"path":"go.mod"}}]}
	]}`))
	model, _ := scripted.New(scripted.Config{Script: sc})
	p := provider.Retry(model, provider.RetryConfig{
		// Tests inject the clock; the default sleeps, honouring ctx.
		Sleep: func(context.Context, time.Duration) error { return nil },
		OnRetry: func(attempt int, d time.Duration, err error) {
			fmt.Printf("attempt %d in %s after %s\n", attempt, d, provider.KindOf(err))
		},
	})

	req := &provider.Request{
		Model:    provider.ModelRef{Provider: "scripted", Model: "demo"},
		System:   "You are a coding agent.",
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "What module is this?"}},
		Tools:    []provider.Tool{{Name: "read", Description: "Read a file"}},
	}
	s, err := p.Stream(context.Background(), req)
	if err != nil {
		fmt.Println("failed before streaming:", provider.KindOf(err))
		return
	}
	acc, err := provider.Collect(s, "scripted")
	switch {
	case err == nil:
		m := acc.Message()
		fmt.Println(m.Text, m.ToolCalls[0].Name, string(m.ToolCalls[0].Args), acc.Finish)
	case provider.KindOf(err) == provider.KindContextOverflow:
		fmt.Println("compact and try again")
	default:
		fmt.Println("turn failed:", err)
	}
	// Output:
	// attempt 2 in 1s after rate_limited
	// Reading it. read {"path":"go.mod"} tool_calls
}
