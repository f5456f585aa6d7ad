package messages

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// fill sets each field (recursively) with probability p to a random value,
// with lengths crossing msgpack's fixstr/str8/str16 and bin8/bin16 bounds
// and non-nil empty slices (the library writes those, unlike nil ones).
func fill(v reflect.Value, r *rand.Rand, p float64) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if r.Float64() < p {
				fill(v.Field(i), r, p)
			}
		}
	case reflect.String:
		v.SetString(string(bytes.Repeat([]byte{byte('a' + r.IntN(26))}, []int{1, 2, 31, 32, 300}[r.IntN(5)])))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Uint8:
		v.SetUint(uint64(r.IntN(256)))
	case reflect.Int, reflect.Int64:
		v.SetInt([]int64{1, -1, 127, -33, 300, 1 << 40, -1 << 40}[r.IntN(7)])
	case reflect.Slice:
		n := []int{0, 1, 2, 300}[r.IntN(4)]
		if v.Type().Elem().Kind() != reflect.Uint8 {
			n = min(n, 2)
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fill(v.Index(i), r, 1)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), r, p)
	default:
		panic("fill: no case for " + v.Type().String())
	}
}

// TestMarshalEqualsTheLibrarysReflection compares the registry's encoding
// of every session event (hand-written or pooled reflection) with
// msgpack.Marshal, which never sees the unexported encoders.
func TestMarshalEqualsTheLibrarysReflection(t *testing.T) {
	reg := SessionRegistry()
	r := rand.New(rand.NewPCG(1, 2))
	for _, sample := range SessionEvents() {
		rt := reflect.TypeOf(sample)
		for i := range 2000 {
			v := reflect.New(rt).Elem()
			fill(v, r, []float64{0, 1, 0.5, 0.2}[i%4])
			e := v.Interface().(Event)
			got, err := reg.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			want, err := msgpack.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s case %d: %+v\n got %x\nwant %x", rt, i, e, got, want)
			}
		}
	}
}

func TestSessionEventsAreHandEncoded(t *testing.T) {
	for _, e := range append(toolTurn(), operation()...) {
		if _, ok := e.(handEncoded); !ok {
			t.Errorf("%T has no hand-written encoder", e)
		}
	}
}

// The pooled buffer is reused: a returned payload must not alias it.
func TestMarshalResultsDoNotShareTheBuffer(t *testing.T) {
	reg := SessionRegistry()
	a, err := reg.Marshal(TextEnded{AssistantMessageID: "msg_1", Text: "first"})
	if err != nil {
		t.Fatal(err)
	}
	keep := bytes.Clone(a)
	if _, err := reg.Marshal(TextEnded{AssistantMessageID: "msg_2", Text: "second"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, keep) {
		t.Fatalf("first payload changed to %x", a)
	}
}

// operation is every other event a session writes in normal operation:
// its creation, context epochs, permissions, switches, a move, compaction
// and interruption. Only the tool-input and tool-progress events remain on
// the reflection path.
func operation() []Event {
	return []Event{
		SessionCreated{}, ContextEpochInitialized{}, ContextEpochReplaced{}, ContextEpochCleared{},
		PermissionAsked{}, PermissionReplied{}, AgentSwitched{}, ModelSwitched{}, Moved{},
		CompactionStarted{}, CompactionEnded{}, Interrupted{}, TurnFailed{}, ReasoningEnded{}, ToolFailed{},
	}
}

// toolTurn is what a drain with one tool round writes: the prompt's
// admission and promotion, a context update, a turn that calls a tool and
// its settlement, a second turn that answers in text, and idle.
func toolTurn() []Event {
	m := ModelRef{Provider: "openai", ID: "gpt-5"}
	u := Usage{InputTokens: 1200, OutputTokens: 80, CacheReadTokens: 1024}
	return []Event{
		PromptAdmitted{MessageID: "msg_0193a1b2c3d4e5f60718293a4b", Prompt: Prompt{Text: "list the files"}, Delivery: Queue},
		PromptPromoted{MessageIDs: []string{"msg_0193a1b2c3d4e5f60718293a4b"}},
		ContextUpdated{Text: "<env><cwd>/tmp/p</cwd></env>", Snapshot: []byte(`{"cwd":"/tmp/p"}`)},
		TurnStarted{AssistantMessageID: "msg_0193a1b2c3d4e5f60718293a4c", Agent: "build", Model: m},
		ToolCalled{AssistantMessageID: "msg_0193a1b2c3d4e5f60718293a4c", CallID: "call_1", Tool: "ls", Input: []byte(`{"path":"."}`), Agent: "build"},
		ToolSucceeded{AssistantMessageID: "msg_0193a1b2c3d4e5f60718293a4c", CallID: "call_1", Output: "a.txt\nb.txt\n"},
		TurnEnded{AssistantMessageID: "msg_0193a1b2c3d4e5f60718293a4c", FinishReason: "tool-calls", Usage: u},
		TurnStarted{AssistantMessageID: "msg_0193a1b2c3d4e5f60718293a4d", Agent: "build", Model: m},
		TextEnded{AssistantMessageID: "msg_0193a1b2c3d4e5f60718293a4d", Text: "Two files: a.txt and b.txt."},
		TurnEnded{AssistantMessageID: "msg_0193a1b2c3d4e5f60718293a4d", FinishReason: "stop", Usage: u},
		Idle{},
	}
}

// BenchmarkMarshalToolTurn encodes every event of a tool turn (one op = the
// whole turn), as the journal does on append.
func BenchmarkMarshalToolTurn(b *testing.B) {
	r := SessionRegistry()
	events := toolTurn()
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range events {
			if _, err := r.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// newSession is what a new session writes before its first turn: the
// creation and its first context epoch.
func newSession() []Event {
	return []Event{
		SessionCreated{Location: "/tmp/p", Agent: "build", Model: ModelRef{Provider: "openai", ID: "gpt-5"}},
		ContextEpochInitialized{Revision: 2, Baseline: "<env><cwd>/tmp/p</cwd><os>linux</os></env>", Snapshot: []byte(`{"cwd":"/tmp/p","os":"linux"}`), Location: "/tmp/p"},
	}
}

// BenchmarkMarshalNewSession encodes a new session's first events (one op =
// both).
func BenchmarkMarshalNewSession(b *testing.B) {
	r := SessionRegistry()
	events := newSession()
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range events {
			if _, err := r.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	}
}
