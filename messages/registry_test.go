package messages

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// samples returns one populated value of every session event.
func samples() []Event {
	m := ModelRef{Provider: "openai", ID: "gpt-5"}
	return []Event{
		SessionCreated{Location: "/tmp/p", Agent: "build", Model: m, Title: "Fix the login bug"},
		PromptAdmitted{MessageID: "msg_1", Prompt: Prompt{Text: "hi", Attachments: []Attachment{{Kind: "file", Name: "a.txt", MediaType: "text/plain", Data: []byte("x")}}}, Delivery: Queue},
		PromptPromoted{MessageIDs: []string{"msg_1", "msg_2"}},
		ContextEpochInitialized{Revision: 1, Baseline: "base\n", Snapshot: []byte{1, 2}, Location: "/tmp/p"},
		ContextEpochReplaced{Revision: 2, Baseline: "base2", Snapshot: []byte{3}, Location: "/tmp/p"},
		ContextEpochCleared{Reason: "moved"},
		ContextUpdated{MessageID: "sys_1", Text: "<changed/>", Snapshot: []byte{4}},
		AgentSwitched{Agent: "plan"},
		SessionRenamed{Title: "Login bug"},
		SessionDeleted{},
		ModelSwitched{Model: ModelRef{Provider: "openai", ID: "gpt-5", Variant: "high"}},
		Moved{From: "/a", To: "/b"},
		TurnStarted{AssistantMessageID: "am_1", Agent: "build", Model: m, Snapshot: "ab12"},
		TurnEnded{AssistantMessageID: "am_1", FinishReason: "stop", Usage: Usage{InputTokens: 10, OutputTokens: 5}, ProviderMetadata: []byte(`{"x":1}`)},
		TurnFailed{AssistantMessageID: "am_1", ErrorKind: "provider", Message: "boom"},
		TextEnded{AssistantMessageID: "am_1", Text: "hello"},
		ReasoningEnded{AssistantMessageID: "am_1", Text: "think", ProviderMetadata: []byte("sig")},
		ToolInputStarted{AssistantMessageID: "am_1", CallID: "c1", Tool: "bash"},
		ToolInputEnded{AssistantMessageID: "am_1", CallID: "c1", Tool: "bash", Input: []byte(`{}`)},
		ToolCalled{AssistantMessageID: "am_1", CallID: "c1", Tool: "bash", Input: []byte(`{"cmd":"ls"}`), Agent: "build"},
		ToolProgress{AssistantMessageID: "am_1", CallID: "c1", Title: "running"},
		ToolSucceeded{AssistantMessageID: "am_1", CallID: "c1", Output: "ok", Structured: []byte(`{}`), ManagedPath: "/m/tool_c1", Lossy: true},
		ToolFailed{AssistantMessageID: "am_1", CallID: "c1", Error: "Tool execution interrupted"},
		PermissionAsked{RequestID: "per_1", AssistantMessageID: "am_1", CallID: "c1", Action: "bash", Resources: []string{"ls"}},
		PermissionReplied{RequestID: "per_1", Reply: ReplyAlways, Feedback: "fine"},
		CompactionStarted{CompactionID: "cmp_1"},
		CompactionEnded{CompactionID: "cmp_1", Summary: "sum", RecentContext: "recent"},
		Interrupted{Reason: "client"},
		QuestionAsked{RequestID: "que_1", AssistantMessageID: "am_1", CallID: "c1", Questions: []Question{{Question: "Which?", Header: "Pick", Options: []QuestionOption{{Label: "a", Description: "first"}}, Multiple: true}}},
		QuestionReplied{RequestID: "que_1", Answers: [][]string{{"a"}}},
		QuestionRejected{RequestID: "que_2", Reason: "dismissed"},
		DrainFailed{Kind: "turn_limit", Message: "maximum provider turns reached"},
		Idle{},
		RevertStaged{MessageID: "msg_1", BoundarySeq: 4, BoundaryIndex: 1, Snapshot: "ab12", Current: "cd34", Files: []string{"a.txt", "dir/b.go"}},
		RevertCommitted{MessageID: "msg_1"},
		RevertCleared{},
		RevertRestored{Snapshot: "ab12"},
		RevertFinalized{},
		HistoryCopied{From: "ses_1", MessageID: "msg_3", Messages: []CopiedMessage{
			{ID: "msg_a", Role: RoleUser, Body: Message{Prompt: &Prompt{Text: "hi"}, Delivery: Steer}},
			{ID: "msg_b", Role: RoleAssistant, Body: Message{Agent: "build", Model: m, Finished: true, FinishReason: "stop",
				Parts: []Part{{Kind: PartText, Text: "hello"}, {Kind: PartTool, Tool: &ToolPart{CallID: "c1", Tool: "bash", Agent: "build", Input: []byte(`{}`), State: ToolStateCompleted, Output: "ok"}}}}},
		}},
	}
}

func TestSessionRegistryIsComplete(t *testing.T) {
	r := SessionRegistry()
	if got, want := len(r.Types()), len(SessionEvents()); got != want {
		t.Fatalf("registry has %d types, family has %d", got, want)
	}
	if len(samples()) != len(SessionEvents()) {
		t.Fatalf("test samples (%d) do not cover the family (%d)", len(samples()), len(SessionEvents()))
	}
}

func TestEveryEventRoundTripsThroughMsgpack(t *testing.T) {
	r := SessionRegistry()
	for _, e := range samples() {
		b, err := r.Marshal(e)
		if err != nil {
			t.Fatalf("%s: %v", e.EventType(), err)
		}
		got, err := r.Unmarshal(e.EventType(), b)
		if err != nil {
			t.Fatalf("%s: %v", e.EventType(), err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("%s: round trip\n got %#v\nwant %#v", e.EventType(), got, e)
		}
	}
}

func TestUnknownTypeIsRefused(t *testing.T) {
	r := SessionRegistry()
	_, err := r.Unmarshal(EventType{"session.nope", 1}, []byte{0x80})
	if !errors.Is(err, ErrUnknownType) || !strings.Contains(err.Error(), "session.nope.v1") {
		t.Fatalf("err = %v", err)
	}
	// A known name with an unknown version is unknown too.
	if _, err := r.Unmarshal(EventType{"session.created", 9}, []byte{0x80}); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("err = %v", err)
	}
}

func TestCorruptPayloadIsUndecodable(t *testing.T) {
	r := SessionRegistry()
	good, _ := r.Marshal(SessionCreated{Location: "/x"})
	for name, p := range map[string][]byte{
		"garbage":     []byte("\xc1\xc1\xc1"),
		"truncated":   good[:len(good)-2],
		"trailing":    append(append([]byte{}, good...), 0x01),
		"wrong shape": {0x01},
	} {
		if _, err := r.Unmarshal(SessionCreated{}.EventType(), p); !errors.Is(err, ErrUndecodable) {
			t.Errorf("%s: err = %v, want ErrUndecodable", name, err)
		}
	}
}

func TestMarshalRefusesUnregisteredAndPointerValues(t *testing.T) {
	r := SessionRegistry()
	if _, err := r.Marshal(&SessionCreated{}); err == nil {
		t.Fatal("pointer value accepted")
	}
	small, _ := NewRegistry(Idle{})
	if _, err := small.Marshal(SessionCreated{}); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("err = %v", err)
	}
}

func TestNewRegistryRefusesDuplicatesAndPointers(t *testing.T) {
	if _, err := NewRegistry(Idle{}, Idle{}); err == nil {
		t.Fatal("duplicate accepted")
	}
	if _, err := NewRegistry(&Idle{}); err == nil {
		t.Fatal("pointer sample accepted")
	}
}

func TestDeltaIsNotADurableEvent(t *testing.T) {
	var d any = Delta{Kind: TextDelta, Text: "x"}
	if _, ok := d.(Event); ok {
		t.Fatal("Delta implements Event: the journal could store it")
	}
}

func TestNewIDIsUniqueAndPrefixed(t *testing.T) {
	a, b := NewID("ses"), NewID("ses")
	if a == b || !strings.HasPrefix(a, "ses_") || len(a) != len("ses_")+28 {
		t.Fatalf("ids %q %q", a, b)
	}
}
