package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/sessionrt/sessionrt/provider"
)

// checkSame compares appendBody (through Encode, and appended after a
// prefix) with the reference encoder, errors included.
func checkSame(t *testing.T, a *Adapter, req *provider.Request) {
	t.Helper()
	want, werr := a.referenceEncode(req)
	got, gerr := a.Encode(req)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("error %v, reference %v", gerr, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("body differs:\n got %s\nwant %s", got, want)
	}
	if werr != nil {
		return
	}
	prefix := []byte("prefix")
	app, _ := a.appendBody(prefix, req)
	if !bytes.Equal(app[:len(prefix)], prefix) || !bytes.Equal(app[len(prefix):], want) {
		t.Fatalf("appended after a prefix: %s", app)
	}
	if !json.Valid(want) && validRaw(req) {
		t.Fatalf("invalid JSON: %s", want)
	}
}

// validRaw reports whether req's raw fields are JSON (else the body is not).
func validRaw(req *provider.Request) bool {
	for _, v := range req.Wire {
		if !json.Valid(v) {
			return false
		}
	}
	return true
}

func f64(f float64) *float64 { return &f }
func boolp(b bool) *bool     { return &b }

// shapes are requests covering every branch of the encoder.
func shapes() map[string]*provider.Request {
	model := provider.ModelRef{Provider: "anthropic", Model: "claude-sonnet-4-5"}
	user := func(s string) provider.Message { return provider.Message{Role: provider.RoleUser, Text: s} }
	call := func(id, name, args string) provider.Message {
		return provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: id, Name: name, Args: json.RawMessage(args)}}}
	}
	result := func(id, out string, isErr bool) provider.Message {
		return provider.Message{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: id, Output: out, IsError: isErr}}
	}
	tools := []provider.Tool{
		{Name: "read", Description: "Reads <a> & \"b\"", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
		{Name: "noschema"},
		{Name: "nodesc", Schema: json.RawMessage(` { "type" : "object" } `)},
	}
	signed := []provider.Reasoning{{Text: "think", Signature: "sig", Provider: Kind}, {Redacted: "opaque"}, {Text: "other", Signature: "x", Provider: "openai"}, {Text: "unsigned"}}
	reqs := map[string]*provider.Request{
		"minimal":                   {Model: model, Messages: []provider.Message{user("Hi")}},
		"system cached":             {Model: model, System: "SYSTEM <ctx> \u2028 \xff", Messages: []provider.Message{user("Hi\n\t\"q\"")}},
		"max tokens":                {Model: model, Messages: []provider.Message{user("Hi")}, Controls: provider.Controls{MaxOutputTokens: 100}},
		"temp top_p stop":           {Model: model, Messages: []provider.Message{user("Hi")}, Controls: provider.Controls{Temperature: f64(0.7), TopP: f64(0.00001), Stop: []string{"END", "<stop>"}}},
		"temp nil top_p":            {Model: model, Messages: []provider.Message{user("Hi")}, Controls: provider.Controls{TopP: f64(1e21)}},
		"thinking budget":           {Model: model, Messages: []provider.Message{user("Hi")}, Options: provider.Options{ReasoningBudget: 5000}, Controls: provider.Controls{Temperature: f64(1), TopP: f64(0.5)}},
		"thinking keeps high top_p": {Model: model, Messages: []provider.Message{user("Hi")}, Options: provider.Options{ReasoningEffort: "high"}, Controls: provider.Controls{TopP: f64(0.97), MaxOutputTokens: 64000}},
		"thinking clamped":          {Model: model, Messages: []provider.Message{user("Hi")}, Options: provider.Options{ReasoningEffort: "medium"}, Controls: provider.Controls{MaxOutputTokens: 3000}},
		"thinking too small":        {Model: model, Messages: []provider.Message{user("Hi")}, Options: provider.Options{ReasoningEffort: "low"}, Controls: provider.Controls{MaxOutputTokens: 2000, Temperature: f64(0.2)}},
		"thinking minimal effort":   {Model: model, Messages: []provider.Message{user("Hi")}, Options: provider.Options{ReasoningEffort: "minimal"}},
		"tools auto":                {Model: model, Messages: []provider.Message{user("Hi")}, Tools: tools},
		"tools none":                {Model: model, Messages: []provider.Message{user("Hi")}, Tools: tools, ToolChoice: provider.ToolChoiceNone},
		"tools serial":              {Model: model, Messages: []provider.Message{user("Hi")}, Tools: tools, Options: provider.Options{ParallelToolCalls: boolp(false)}},
		"tools parallel":            {Model: model, Messages: []provider.Message{user("Hi")}, Tools: tools, Options: provider.Options{ParallelToolCalls: boolp(true)}},
		"tool loop": {Model: model, Tools: tools, Messages: []provider.Message{
			user("go"), call("t1", "read", `{"path":"a"}`), result("t1", "", true), user("and"),
			{Role: provider.RoleSystem, Text: "note"}, call("t2", "grep", ""), result("t2", "out", false),
		}},
		"used tools without definitions": {Model: model, Messages: []provider.Message{
			user("go"), call("t1", "zeta", `{}`), result("t1", "x", false),
			{Role: provider.RoleAssistant, Text: "again", ToolCalls: []provider.ToolCall{{ID: "t2", Name: "alpha", Args: json.RawMessage(`{}`)}, {ID: "t3", Name: "zeta", Args: json.RawMessage(`{}`)}}},
			result("t2", "y", false), result("t3", "z", false),
		}},
		"reasoning replay": {Model: model, Options: provider.Options{ReasoningBudget: 2048}, Messages: []provider.Message{
			user("q"), {Role: provider.RoleAssistant, Reasoning: signed, Text: "a", ToolCalls: []provider.ToolCall{{ID: "t1", Name: "read", Args: json.RawMessage(`{}`)}}},
			result("t1", "r", false),
		}},
		"unsigned tool turn drops thinking": {Model: model, Options: provider.Options{ReasoningBudget: 2048}, Controls: provider.Controls{Temperature: f64(0.3)}, Messages: []provider.Message{
			user("q"), {Role: provider.RoleAssistant, Reasoning: []provider.Reasoning{{Text: "x", Provider: "openai", Signature: "s"}}, ToolCalls: []provider.ToolCall{{ID: "t1", Name: "read", Args: json.RawMessage(`{}`)}}},
			result("t1", "r", false), {Role: provider.RoleAssistant}, user("more"),
		}},
		"last message only thinking": {Model: model, Messages: []provider.Message{
			user("q"), {Role: provider.RoleAssistant, Reasoning: []provider.Reasoning{{Text: "x", Signature: "s"}, {Redacted: "r"}}},
		}},
		"last message assistant text": {Model: model, Messages: []provider.Message{user("q"), {Role: provider.RoleAssistant, Text: "a"}}},
		"empty user entries":          {Model: model, Messages: []provider.Message{user("q"), {Role: provider.RoleAssistant, Text: "a"}, {Role: provider.RoleUser}}},
		"attachments": {Model: model, Messages: []provider.Message{{Role: provider.RoleUser, Text: "see", Attachments: []provider.Attachment{
			{Name: "a.png", MediaType: "image/PNG", Data: []byte{0, 1, 2, 3, 254, 255}},
			{MediaType: "image/jpeg", Data: []byte("j")}, {MediaType: "image/gif"}, {MediaType: "image/webp", Data: []byte("webp!")},
			{Name: "d.pdf", MediaType: "application/pdf", Data: []byte("%PDF-1.7")},
			{Name: "n\"<a>.txt", MediaType: "text/plain", Data: []byte("body \xe2\x80")}, {MediaType: "text/markdown", Data: []byte("# md")},
		}}}},
		"bad attachment": {Model: model, Messages: []provider.Message{user("q"), {Role: provider.RoleUser, Attachments: []provider.Attachment{{Name: "x.zip", MediaType: "application/zip"}}}}},
		"wire overrides": {Model: model, System: "s", Tools: tools, Options: provider.Options{ReasoningBudget: 2048},
			Controls: provider.Controls{Temperature: f64(0.5), TopP: f64(0.99), Stop: []string{"x"}, MaxOutputTokens: 9000},
			Messages: []provider.Message{user("Hi")},
			Wire: map[string]json.RawMessage{"metadata": json.RawMessage(`{"user_id":"u1"}`), "top_k": json.RawMessage(`5`), "max_tokens": json.RawMessage(`7`),
				"system": json.RawMessage(`"x"`), "tools": json.RawMessage(`[]`), "tool_choice": json.RawMessage(`{"type":"any"}`), "thinking": json.RawMessage(`null`),
				"temperature": json.RawMessage(`0`), "top_p": json.RawMessage(`1`), "stop_sequences": json.RawMessage(`[]`)}},
		"wire metadata only": {Model: model, Messages: []provider.Message{user("Hi")}, Wire: map[string]json.RawMessage{"metadata": json.RawMessage(`{"user_id":"u"}`)}},
		"wire tools over used": {Model: model, Messages: []provider.Message{user("go"), call("t1", "zeta", `{}`), result("t1", "x", false)},
			Wire: map[string]json.RawMessage{"tools": json.RawMessage(`[]`), "tool_choice": json.RawMessage(`{"type":"auto"}`)}},
		"invalid: no model": {Messages: []provider.Message{user("Hi")}},
		"nan controls":      {Model: model, Messages: []provider.Message{user("Hi")}, Controls: provider.Controls{Temperature: f64(math.NaN()), TopP: f64(math.Inf(1))}},
	}
	return reqs
}

func TestAppendBodyMatchesReference(t *testing.T) {
	for _, cfg := range []Config{{}, {NoConversationCache: true, DefaultMaxTokens: 1500}} {
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for name, req := range shapes() {
			t.Run(fmt.Sprintf("%s/nocache=%v", name, cfg.NoConversationCache), func(t *testing.T) { checkSame(t, a, req) })
		}
	}
}

// FuzzAppendBody compares appendBody with the reference encoder on requests
// built from fuzzed strings, raw JSON, numbers and a shape selector whose
// bits pick the history's entries and the options.
func FuzzAppendBody(f *testing.F) {
	f.Add("Hi", "SYSTEM", "read", []byte(`{"path":"a"}`), 0.7, 1024, uint64(0))
	f.Add("<b>&\u2028", "bad \xff utf8", "ctl \x00\x1f", []byte(` {"s":"\u2028"} `), 1e-7, 5000, uint64(0xffffffffffffffff))
	f.Add("", "", "", []byte(nil), math.NaN(), -1, uint64(0x5a5a5a5a5a5a5a5a))
	f.Add("日本語 🎉", `"\`, "x", []byte("[1,2]"), 0.96, 70000, uint64(0x123456789abcdef))
	f.Fuzz(func(t *testing.T, s1, s2, s3 string, raw []byte, num float64, n int, bits uint64) {
		take := func(k uint) bool { return bits>>(k%64)&1 == 1 }
		cfg := Config{NoConversationCache: take(63), DefaultMaxTokens: n % 100000}
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(raw) && !take(49) {
			raw, _ = json.Marshal(string(raw)) // mostly valid: Validate refuses the rest
		}
		name := "n" + s1
		req := &provider.Request{Model: provider.ModelRef{Model: "m" + s3}, Options: provider.Options{ReasoningBudget: n % 70000}}
		if take(60) {
			req.System = s2
		}
		if take(59) {
			req.Controls = provider.Controls{MaxOutputTokens: n % 9000, Temperature: &num, Stop: []string{s1, s2}}
		}
		if take(58) {
			req.Controls.TopP = &num
		}
		if take(57) {
			req.Options.ParallelToolCalls = boolp(take(56))
		}
		if take(55) {
			req.ToolChoice = provider.ToolChoiceNone
		}
		if take(54) {
			req.Tools = []provider.Tool{{Name: name, Description: s2, Schema: raw}, {Name: "n" + s3}}
		}
		if take(53) {
			req.Wire = map[string]json.RawMessage{"metadata": raw, "x_" + s1: json.RawMessage(`1`)}
		}
		// Bits 0..47 pick 16 history entries, 3 bits each.
		for k := uint(0); k < 48; k += 3 {
			id := fmt.Sprint("t", k)
			switch bits >> k & 7 {
			case 0:
				req.Messages = append(req.Messages, provider.Message{Role: provider.RoleUser, Text: s1})
			case 1:
				req.Messages = append(req.Messages, provider.Message{Role: provider.RoleSystem, Text: s2})
			case 2:
				req.Messages = append(req.Messages, provider.Message{Role: provider.RoleAssistant, Text: s3,
					ToolCalls: []provider.ToolCall{{ID: id, Name: name, Args: raw}}})
			case 3:
				req.Messages = append(req.Messages, provider.Message{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: "t" + fmt.Sprint(k-3), Output: s2, IsError: take(k + 1)}})
			case 4:
				req.Messages = append(req.Messages, provider.Message{Role: provider.RoleAssistant, Reasoning: []provider.Reasoning{
					{Text: s1, Signature: s2, Provider: s3}, {Redacted: s3}}, Text: s1})
			case 5:
				req.Messages = append(req.Messages, provider.Message{Role: provider.RoleUser, Attachments: []provider.Attachment{
					{Name: s1, MediaType: "image/png", Data: raw}, {Name: s2, MediaType: "text/plain", Data: []byte(s3)}, {MediaType: "application/PDF", Data: []byte(s1)}}})
			case 6:
				req.Messages = append(req.Messages, provider.Message{Role: provider.RoleAssistant})
			case 7:
				req.Messages = append(req.Messages, provider.Message{Role: provider.RoleUser}) // no block
			}
		}
		if take(52) && take(51) && take(50) {
			// An unsupported media type (unless s2 names a supported one).
			req.Messages = append(req.Messages, provider.Message{Role: provider.RoleUser, Attachments: []provider.Attachment{{Name: s1, MediaType: s2}}})
		}
		checkSame(t, a, req)
	})
}
