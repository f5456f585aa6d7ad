package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
)

// Strings that exercise every escaping rule of encoding/json: quotes,
// backslashes, control characters (\b and \f have short forms), the
// HTML-sensitive <, > and & (escaped by default), U+2028/U+2029, invalid
// UTF-8 (becomes U+FFFD), multi-byte unicode and the empty string.
var trickyStrings = []string{
	"", "plain", `quote " and \ backslash`, "ctl \x00\x01\b\f\n\r\t\x1f\x7f end",
	"<script>alert('x&y')</script>", "a > b && c < d", "line\u2028sep\u2029para",
	"bad \xff\xfe utf8 \xe2\x80", "héllo wörld — 日本語 🎉", "ses_01234abc", "\u00e9\u0301",
}

// rawPayloads are the JSON blobs an event may carry (tool input, metadata,
// structured output): spaced, HTML-bearing, unicode, empty and invalid.
var rawPayloads = [][]byte{
	nil, []byte(`{}`), []byte(`{"cmd": "echo <b> & </b>", "n": [1, 2.5, -3e2], "ok": true, "z": null}`),
	[]byte(`{"s":"\u2028 é 🎉","nested":{"a":[{"b":"c"}]}}`), []byte(`not json`), []byte(`[1,2]`),
}

// fill sets every field of a sample event to the variant-th representative
// value (variant 0 leaves the zero value: empty strings, nil slices).
func fill(v reflect.Value, variant int, depth int) {
	if variant == 0 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(trickyStrings[(variant+depth)%len(trickyStrings)])
	case reflect.Bool:
		v.SetBool(variant%2 == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := []int64{1, -7, 1 << 40, math.MaxInt32}[variant%4]
		if !v.OverflowInt(n) {
			v.SetInt(n)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(variant))
	case reflect.Float32, reflect.Float64:
		v.SetFloat([]float64{0.5, 1e-7, 12345.678, 3e21}[variant%4])
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(rawPayloads[variant%len(rawPayloads)])
			return
		}
		n := variant % 3 // nil, empty or two elements
		if n == 0 {
			return
		}
		s := reflect.MakeSlice(v.Type(), 0, 2)
		for i := 0; i < (n-1)*2; i++ {
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, variant+i+1, depth+1)
			s = reflect.Append(s, e)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		if v.Type().Key().Kind() == reflect.String && variant%3 != 0 {
			k := reflect.New(v.Type().Key()).Elem()
			fill(k, variant, depth+1)
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, variant+1, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 26, 2, 3, 4, 5006000, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), variant+i, depth+1)
			}
		}
	case reflect.Pointer:
		if variant%2 == 1 {
			p := reflect.New(v.Type().Elem())
			fill(p.Elem(), variant, depth+1)
			v.Set(p)
		}
	}
}

// unknownEvent is a type this server has no mapping for: its payload goes
// through the generic JSON round trip (floats, nested maps, arrays).
type unknownEvent struct {
	Name  string         `json:"name"`
	N     int            `json:"n"`
	F     float64        `json:"f"`
	List  []string       `json:"list"`
	Attrs map[string]any `json:"attrs"`
	Raw   []byte         `json:"raw,omitempty"`
}

func (unknownEvent) EventType() messages.EventType {
	return messages.EventType{Name: "session.future.thing", Version: 3}
}

func sampleEvents() []messages.Event {
	var out []messages.Event
	samples := append(messages.SessionEvents(), unknownEvent{})
	for _, sample := range samples {
		for variant := range 12 {
			v := reflect.New(reflect.TypeOf(sample)).Elem()
			fill(v, variant, 0)
			out = append(out, v.Interface().(messages.Event))
		}
	}
	return out
}

func TestEventEncodingMatchesEncodingJSONForEveryEventType(t *testing.T) {
	now := time.Date(2026, 11, 26, 1, 2, 3, 456789000, time.UTC)
	seen := map[string]bool{}
	for i, ev := range sampleEvents() {
		name := fmt.Sprintf("%T/%d", ev, i)
		seen[fmt.Sprintf("%T", ev)] = true
		env := messages.Envelope{SessionID: trickyStrings[i%len(trickyStrings)], Seq: int64(i), Type: ev.EventType(), Event: ev}
		if i%2 == 0 {
			env.Time = now.Add(time.Duration(i) * time.Microsecond)
		}

		// The data object against json.Marshal of the same keys as a map
		// (the shape the streams always had).
		data := eventData(nil, ev)
		data = append(data, field{"timestamp", millis(now)}, field{"sessionID", env.SessionID})
		m := map[string]any{}
		for _, f := range data {
			m[f.k] = f.v
		}
		if len(m) != len(data) {
			t.Fatalf("%s: duplicate keys in %v", name, data)
		}
		want, wantErr := json.Marshal(m)
		got, gotErr := appendFields(nil, data)
		if (wantErr != nil) != (gotErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("%s data:\n got %s (%v)\nwant %s (%v)", name, got, gotErr, want, wantErr)
		}

		// The whole event as history returns it and as the streams write it.
		we := toEvent(env, now)
		want, wantErr = json.Marshal(we)
		got, gotErr = appendEvent(nil, we)
		if wantErr != nil || gotErr != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s event:\n got %s (%v)\nwant %s (%v)", name, got, gotErr, want, wantErr)
		}
		if got := appendDurableEvent([]byte("x"), env, now); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("%s durable event:\n got %s\nwant x%s", name, got, want)
		}
	}
	for _, sample := range messages.SessionEvents() {
		if !seen[fmt.Sprintf("%T", sample)] {
			t.Errorf("event type %T not covered", sample)
		}
	}
}

func TestDeltaAndOtherEventsEncodeLikeEncodingJSON(t *testing.T) {
	now := time.Date(2026, 11, 26, 1, 2, 3, 456789000, time.UTC)
	var evs []wire.Event
	for i, s := range trickyStrings {
		for _, kind := range []messages.DeltaKind{messages.TextDelta, messages.ToolInputDelta, "future"} {
			evs = append(evs, toDelta(messages.Delta{SessionID: s, AssistantMessageID: s, CallID: trickyStrings[(i+1)%len(trickyStrings)], Kind: kind, Text: s}, now))
		}
		evs = append(evs, wire.Event{ID: s, Type: s, Durable: &wire.Durable{AggregateID: s, Seq: -1, Version: 0}, Data: json.RawMessage(`{"a":1}`)})
	}
	// Raw data json.Marshal would rewrite: spaces, raw HTML characters,
	// U+2028, an escaped quote before a brace, nested strings.
	for _, raw := range []string{`{}`, `{"a":"&"}`, `{"a":">"}`, `{"a":"<"}`, `{ "a" : 1 }`, "{\"a\":\"<&>\"}", "{\"a\":\"\u2028\"}", `{"a":"x\"}"}`, `{"a":"\\"}`, `[1, 2]`, `{"a":"é"}`, "{\"a\":\n1}"} {
		evs = append(evs, wire.Event{ID: "evt_1", Type: wire.EventConnected, Data: json.RawMessage(raw)})
	}
	for _, ev := range evs {
		want, wantErr := json.Marshal(ev)
		got, gotErr := appendEvent([]byte("prefix"), ev)
		if wantErr != nil || gotErr != nil || !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("event %+v:\n got %s (%v)\nwant prefix%s (%v)", ev, got, gotErr, want, wantErr)
		}
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	cases := append([]string{}, trickyStrings...)
	var all strings.Builder
	for c := 0; c < 256; c++ {
		all.WriteByte(byte(c))
	}
	cases = append(cases, all.String(), strings.Repeat("é<", 100), "\u2027\u2028\u2029\u202a", "\xed\xa0\x80", "\xf4\x90\x80\x80")
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestFieldValuesMatchEncodingJSON(t *testing.T) {
	for _, v := range []any{
		0.0, math.Copysign(0, -1), 1e-6, 9.99e-7, 1e20, 1e21, -1e21, 123456789.125, 1764120000123.456, -0.5,
		int(-3), int64(math.MaxInt64), true, false, []string(nil), []string{}, []string{"<a>", ""},
		map[string]any(nil), map[string]any{}, map[string]any{"b": 1.5, "a": []any{"x", 2.0}, "<": "&"},
		wire.LocationRef{Directory: "/tmp/<d>"}, wire.LocationRef{Directory: "/d", WorkspaceID: "w"},
		json.RawMessage(`{ "x" : "<" }`), []wire.ToolContent(nil), nil,
	} {
		want, wantErr := json.Marshal(map[string]any{"v": v})
		got, gotErr := appendFields(nil, fields{{"v", v}})
		if wantErr != nil || gotErr != nil || !bytes.Equal(got, want) {
			t.Errorf("%#v: got %s (%v), want %s (%v)", v, got, gotErr, want, wantErr)
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1)} {
		if _, err := appendFields(nil, fields{{"v", v}}); err == nil {
			t.Errorf("%v: no error, json.Marshal fails", v)
		}
	}
}

// toolTurn is the durable event sequence of one prompt answered by one
// tool call and a closing text, as the bench's turns produce.
func toolTurn() []messages.Envelope {
	const am, call = "msg_01JAZ0K3T9Q8W7E6R5Y4U3I2O1", "call_01JAZ0K3T9Q8W7E6R5Y4U3I2O2"
	model := messages.ModelRef{Provider: "fake", ID: "fake-model"}
	evs := []messages.Event{
		messages.PromptAdmitted{MessageID: "msg_01JAZ0K3T9Q8W7E6R5Y4U3I2O0", Prompt: messages.Prompt{Text: "run the tests and tell me what fails"}, Delivery: messages.Steer},
		messages.PromptPromoted{MessageIDs: []string{"msg_01JAZ0K3T9Q8W7E6R5Y4U3I2O0"}},
		messages.TurnStarted{AssistantMessageID: am, Agent: "build", Model: model},
		messages.ToolInputStarted{AssistantMessageID: am, CallID: call, Tool: "bash"},
		messages.ToolInputEnded{AssistantMessageID: am, CallID: call, Tool: "bash", Input: []byte(`{"command":"go test ./...","timeout":120}`)},
		messages.ToolCalled{AssistantMessageID: am, CallID: call, Tool: "bash", Input: []byte(`{"command":"go test ./...","timeout":120}`), Agent: "build"},
		messages.ToolSucceeded{AssistantMessageID: am, CallID: call, Output: "ok  \tgithub.com/x/y\t0.012s\n", Structured: []byte(`{"exitCode":0}`)},
		messages.TextEnded{AssistantMessageID: am, Text: "All tests pass; nothing fails."},
		messages.TurnEnded{AssistantMessageID: am, FinishReason: "stop", Usage: messages.Usage{InputTokens: 1234, OutputTokens: 56, CacheReadTokens: 1000}},
		messages.Idle{},
	}
	now := time.Date(2026, 11, 26, 1, 2, 3, 456789000, time.UTC)
	out := make([]messages.Envelope, len(evs))
	for i, ev := range evs {
		out[i] = messages.Envelope{SessionID: "ses_01JAZ0K3T9Q8W7E6R5Y4U3I2OX", Seq: int64(i + 7), Type: ev.EventType(), Event: ev, Time: now.Add(time.Duration(i) * time.Millisecond)}
	}
	return out
}

// BenchmarkEncodeToolTurn encodes every durable event of a tool turn as
// the streams do (one reused frame buffer).
func BenchmarkEncodeToolTurn(b *testing.B) {
	turn := toolTurn()
	now := time.Now()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		for _, env := range turn {
			buf = appendDurableEvent(buf[:0], env, now)
		}
	}
}

// countFallbacks counts appendValue's calls to json.Marshal until the test
// ends.
func countFallbacks(t testing.TB) *int {
	n := new(int)
	orig := marshalFallback
	marshalFallback = func(v any) ([]byte, error) {
		*n++
		return orig(v)
	}
	t.Cleanup(func() { marshalFallback = orig })
	return n
}

// checkValue fails unless appendValue writes v (after a prefix it must
// keep) exactly as json.Marshal does, or both fail.
func checkValue(t *testing.T, v any) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, gotErr := appendValue([]byte("x"), v)
	if (wantErr != nil) != (gotErr != nil) || (wantErr == nil && !bytes.Equal(got, append([]byte("x"), want...))) {
		t.Fatalf("%#v:\n got %s (%v)\nwant x%s (%v)", v, got, gotErr, want, wantErr)
	}
}

// wireSamples are the nested values eventData hands appendValue that have
// hand-written encoders.
var wireSamples = []any{
	wire.ModelRef{}, (*wire.ModelRef)(nil), wire.Prompt{}, wire.Tokens{}, wire.ErrorDetail{}, []wire.ToolContent(nil),
	wire.PermissionSource{}, wire.LocationRef{}, json.RawMessage(nil), []any(nil),
}

func TestWireValuesMatchEncodingJSON(t *testing.T) {
	// Every exported field set by reflection (so a field added to a wire
	// type fails here until its encoder writes it): tricky strings, floats
	// in and out of %f range, nil/empty/two-element slices, nil and set
	// pointers, raw payloads with spaces, HTML characters and invalid JSON.
	for _, sample := range wireSamples {
		for variant := range 24 {
			v := reflect.New(reflect.TypeOf(sample)).Elem()
			fill(v, variant, 0)
			checkValue(t, v.Interface())
		}
	}
	src := &wire.PromptSource{Start: 1e-7, End: 3e21, Text: "<&>"}
	for _, v := range []any{
		wire.Prompt{Text: "x", Files: []wire.FileAttachment{}, Agents: []wire.AgentAttachment{}},
		wire.Prompt{Files: []wire.FileAttachment{{URI: "file:///a b", Source: src}, {}}, Agents: []wire.AgentAttachment{{Name: "\u2028", Source: src}, {}}},
		wire.Prompt{Files: []wire.FileAttachment{{Source: &wire.PromptSource{Start: math.NaN()}}}},
		wire.Prompt{Agents: []wire.AgentAttachment{{Source: &wire.PromptSource{End: math.Inf(-1)}}}},
		wire.Tokens{Input: math.Copysign(0, -1), Output: 5e-324, Reasoning: math.MaxFloat64, Cache: wire.CacheTokens{Read: 1e21, Write: 999999999999999999999}},
		wire.Tokens{Cache: wire.CacheTokens{Write: math.NaN()}}, wire.Tokens{Input: math.Inf(1)},
		&wire.ModelRef{ID: "a\x00b", ProviderID: "\xff", Variant: "v"}, wire.ErrorDetail{Kind: "k"},
		[]wire.ToolContent{}, []wire.ToolContent{{Type: "text", Text: "a\u2029b"}},
		json.RawMessage{}, json.RawMessage(`null`), json.RawMessage(`{"a":"\u003c"}`), json.RawMessage(`{"a":"<"}`),
		json.RawMessage(" {}"), json.RawMessage("{}\n"), json.RawMessage("{\"a\":\"\u2028\"}"), json.RawMessage("\"\xff\""),
		json.RawMessage(`{"a":1}x`), json.RawMessage("{\"a\":\"\x01\"}"), json.RawMessage(`"\\"`), json.RawMessage(`"\"}"`),
		json.RawMessage(`[1,-2.5e10,true,false,null,{"k":[]}]`), json.RawMessage(`{"a":"é🎉"}`),
		[]any{}, []any{"<", 1.5, nil, map[string]any{"b": 1.0, "a": []any{}}, json.RawMessage(`{ }`)}, []any{math.NaN()},
		nil, 1e-7, 1e-300, 3e21, -1.5e-9, 1.7976931348623157e308,
	} {
		checkValue(t, v)
	}
}

// A tool turn, a failed turn and a permission prompt encode without
// json.Marshal: every value they carry has a hand-written encoder.
func TestCommonEventsTakeTheHandWrittenPath(t *testing.T) {
	fallbacks := countFallbacks(t)
	evs := toolTurn()
	for _, ev := range []messages.Event{
		messages.SessionCreated{Location: "/w", Agent: "build", Model: messages.ModelRef{Provider: "p", ID: "m"}},
		messages.PromptAdmitted{MessageID: "m", Delivery: messages.Queue, Prompt: messages.Prompt{Text: "t", Attachments: []messages.Attachment{{Kind: "file", URI: "file:///x.go"}, {Kind: "agent", Name: "plan"}}}},
		messages.ModelSwitched{Model: messages.ModelRef{Provider: "p", ID: "m"}},
		messages.Moved{From: "/a", To: "/b"},
		messages.ToolProgress{AssistantMessageID: "a", CallID: "c", Title: "t", Metadata: []byte(`{"lines":3}`)},
		messages.ToolSucceeded{AssistantMessageID: "a", CallID: "c", Output: "o", ManagedPath: "/m"},
		messages.ToolFailed{AssistantMessageID: "a", CallID: "c", Error: "boom <1>"},
		messages.TurnFailed{AssistantMessageID: "a", ErrorKind: "provider", Message: "overloaded"},
		messages.PermissionAsked{RequestID: "r", Action: "bash", AssistantMessageID: "a", CallID: "c"},
		messages.PermissionReplied{RequestID: "r", Reply: messages.PermissionReply("once")},
	} {
		evs = append(evs, messages.Envelope{SessionID: "ses_1", Seq: 1, Type: ev.EventType(), Event: ev})
	}
	now := time.Date(2026, 11, 26, 1, 2, 3, 0, time.UTC)
	for _, env := range evs {
		got := appendDurableEvent(nil, env, now)
		if want, _ := json.Marshal(toEvent(env, now)); !bytes.Equal(got, want) {
			t.Fatalf("%T:\n got %s\nwant %s", env.Event, got, want)
		}
		if *fallbacks != 0 {
			t.Fatalf("%T: %d values went through json.Marshal", env.Event, *fallbacks)
		}
	}
}

// FuzzAppendValue compares appendValue with json.Marshal for every value
// with a hand-written encoder, built from fuzzed strings, floats and raw
// JSON.
func FuzzAppendValue(f *testing.F) {
	f.Add("fake-model", "fake", "", 1234.0, 0.0, []byte(`{"command":"go test ./...","timeout":120}`))
	f.Add("<b>&</b>", "line\u2028sep", "bad \xff utf8", 1e-7, 3e21, []byte(`{"s":"\u2028 <é>","n":[1,2.5,-3e2],"z":null}`))
	f.Add("ctl \x00\x1f\x7f", `"\`, "日本語 🎉", math.Copysign(0, -1), 1e21, []byte(" [1, 2]\n"))
	f.Add("", "", "", math.NaN(), math.Inf(1), []byte(nil))
	f.Fuzz(func(t *testing.T, s1, s2, s3 string, f1, f2 float64, raw []byte) {
		src := &wire.PromptSource{Start: f1, End: f2, Text: s3}
		for _, v := range []any{
			wire.ModelRef{ID: s1, ProviderID: s2, Variant: s3}, &wire.ModelRef{ID: s2, ProviderID: s3},
			wire.Prompt{Text: s1, Files: []wire.FileAttachment{{URI: s2, Mime: s3, Name: s1, Description: s2, Source: src}, {URI: s3}},
				Agents: []wire.AgentAttachment{{Name: s2}, {Name: s3, Source: src}}},
			wire.Prompt{Text: s3},
			wire.Tokens{Input: f1, Output: f2, Reasoning: f1 * f2, Cache: wire.CacheTokens{Read: f2, Write: f1 + f2}},
			wire.ErrorDetail{Type: s1, Message: s2, Kind: s3}, wire.ErrorDetail{Message: s1},
			[]wire.ToolContent{{Type: s1, Text: s2}, {Type: s3}}, wire.PermissionSource{Type: s1, MessageID: s2, CallID: s3},
			wire.LocationRef{Directory: s1, WorkspaceID: s2}, wire.LocationRef{Directory: s3},
			json.RawMessage(raw), []any{s1, f1, json.RawMessage(raw), []any{s2}}, f1, f2, s1, []string{s1, s2},
		} {
			checkValue(t, v)
		}
	})
}

// appendDurableEvent writes eventID in place; the joins at "evt_" and "_"
// must escape like the whole id (cut-short UTF-8, HTML, U+2028 at the ends).
func TestDurableEventIDMatchesEventID(t *testing.T) {
	now := time.Date(2026, 11, 26, 1, 2, 3, 0, time.UTC)
	for _, sid := range []string{"", "ses_", "ses_\xe2\x80", "\xe2\x80ses_a", "ses_<&>\u2028", "xses_a", "ses_ses_a", "ses_\"\\\x00"} {
		for _, seq := range []int64{-1, 0, 7, math.MaxInt64} {
			env := messages.Envelope{SessionID: sid, Seq: seq, Type: messages.Idle{}.EventType(), Event: messages.Idle{}}
			want, _ := json.Marshal(toEvent(env, now))
			if got := appendDurableEvent(nil, env, now); !bytes.Equal(got, want) {
				t.Errorf("session %q seq %d:\n got %s\nwant %s", sid, seq, got, want)
			}
		}
	}
}
