package spanstore

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

func fixedSpans() []Span {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const tr = "0af7651916cd43dd8448eb211c80319c"
	return []Span{
		{TraceID: tr, SpanID: "a000000000000001", Name: "invoke_agent", Start: at(0), End: at(1523),
			Attributes: map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "build",
				"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o", "gen_ai.conversation.id": "ses_1"}},
		{TraceID: tr, SpanID: "a000000000000002", ParentSpanID: "a000000000000001", Name: "chat gpt-4o", Start: at(5), End: at(825),
			Attributes: map[string]any{"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
				"gen_ai.response.finish_reasons": []string{"tool_calls"}, "gen_ai.usage.input_tokens": int64(120),
				"gen_ai.usage.output_tokens": int64(40)}},
		{TraceID: tr, SpanID: "a000000000000003", ParentSpanID: "a000000000000001", Name: "execute_tool bash", Start: at(830), End: at(1131),
			Attributes: map[string]any{"gen_ai.tool.name": "bash", "gen_ai.tool.call.id": "call_1"}},
		{TraceID: tr, SpanID: "a000000000000005", ParentSpanID: "a000000000000003", Name: "pty read", Start: at(831), End: at(831).Add(850 * time.Microsecond)},
		{TraceID: tr, SpanID: "a000000000000004", ParentSpanID: "a000000000000001", Name: "chat gpt-4o", Start: at(1140), End: at(1520),
			StatusCode: "Error", StatusMessage: "provider said no",
			Attributes: map[string]any{"gen_ai.provider.name": "openai", "error.type": "rate limited"}},
		// A span whose parent lives in another process: its own tree.
		{TraceID: tr, SpanID: "b000000000000001", ParentSpanID: "ffffffffffffffff", Name: "execute_tool read", Start: at(2000), End: at(2012),
			Attributes: map[string]any{"gen_ai.tool.name": "read", "gen_ai.tool.call.id": "call_2"}},
	}
}

const fixedTree = `invoke_agent  1.52s  agent=build provider=openai model=gpt-4o
├─ chat gpt-4o  820ms  provider=openai model=gpt-4o finish=[tool_calls] in=120 out=40
├─ execute_tool bash  301ms  tool=bash call=call_1
│  └─ pty read  850µs
└─ chat gpt-4o  380ms  provider=openai error="rate limited"  ERROR: "provider said no"
execute_tool read  12ms  tool=read call=call_2
`

func TestRenderTreeShowsNestingDurationsAndGenAIAttributes(t *testing.T) {
	if got := RenderTree(fixedSpans()); got != fixedTree {
		t.Fatalf("tree:\n%s\nwant:\n%s", got, fixedTree)
	}
}

func TestRenderTreeIgnoresInputOrder(t *testing.T) {
	spans := fixedSpans()
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		r.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
		if got := RenderTree(spans); got != fixedTree {
			t.Fatalf("shuffled input gave:\n%s", got)
		}
	}
}

func TestRenderTreeKeepsSpansInAParentCycle(t *testing.T) {
	t0 := time.Unix(0, 0)
	spans := []Span{
		{TraceID: "t", SpanID: "1", ParentSpanID: "2", Name: "x", Start: t0, End: t0.Add(time.Second)},
		{TraceID: "t", SpanID: "2", ParentSpanID: "1", Name: "y", Start: t0.Add(time.Millisecond), End: t0.Add(time.Second)},
	}
	want := "x  1s\n└─ y  999ms\n"
	if got := RenderTree(spans); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if RenderTree(nil) != "" {
		t.Fatal("no spans should render as nothing")
	}
}

func TestFormatDuration(t *testing.T) {
	cases := map[time.Duration]string{
		850 * time.Microsecond:                "850µs",
		1234567 * time.Nanosecond:             "1.23ms",
		12345678 * time.Nanosecond:            "12.3ms",
		123456789 * time.Nanosecond:           "123ms",
		1523 * time.Millisecond:               "1.52s",
		2*time.Minute + 3456*time.Millisecond: "2m3.5s",
		-time.Second:                          "?",
	}
	for d, want := range cases {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestSpanJSONRoundTripRendersTheSameTree(t *testing.T) {
	in := fixedSpans()
	in[0].Attributes["f"] = 0.25
	in[0].Attributes["fs"] = []float64{1, 2.5}
	in[0].Attributes["is"] = []int64{3, 4}
	in[0].Attributes["bs"] = []bool{true}
	in[0].Events = []Event{{Name: "exception", Time: in[0].Start, Attributes: map[string]any{"n": int64(7)}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out []Span
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip changed spans:\n%#v\n%#v", in[0], out[0])
	}
	if got := RenderTree(out); got != fixedTree {
		t.Fatalf("tree after JSON:\n%s", got)
	}
	var bad Span
	if err := json.Unmarshal([]byte(`{"spanId":"x","attributes":{"a":{"nested":1}}}`), &bad); err == nil || !strings.Contains(err.Error(), "attribute a") {
		t.Fatalf("nested object attribute: err = %v", err)
	}
}
