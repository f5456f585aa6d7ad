package spanstore_test

import (
	"fmt"
	"time"

	"github.com/sessionrt/sessionrt/telemetry/spanstore"
)

func ExampleRenderTree() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	spans := []spanstore.Span{
		{TraceID: "t1", SpanID: "a", Name: "invoke_agent", Start: t0, End: t0.Add(1520 * time.Millisecond),
			Attributes: map[string]any{"gen_ai.agent.name": "build"}},
		{TraceID: "t1", SpanID: "c", ParentSpanID: "a", Name: "execute_tool bash", Start: t0.Add(900 * time.Millisecond), End: t0.Add(1200 * time.Millisecond),
			Attributes: map[string]any{"gen_ai.tool.name": "bash", "gen_ai.tool.call.id": "call_1"}},
		{TraceID: "t1", SpanID: "b", ParentSpanID: "a", Name: "chat gpt-4o", Start: t0.Add(time.Millisecond), End: t0.Add(880 * time.Millisecond),
			Attributes: map[string]any{"gen_ai.usage.input_tokens": int64(120), "gen_ai.usage.output_tokens": int64(40),
				"gen_ai.response.finish_reasons": []string{"tool_calls"}}},
	}
	fmt.Print(spanstore.RenderTree(spans))
	// Output:
	// invoke_agent  1.52s  agent=build
	// ├─ chat gpt-4o  879ms  finish=[tool_calls] in=120 out=40
	// └─ execute_tool bash  300ms  tool=bash call=call_1
}
