package messages

import "testing"

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
