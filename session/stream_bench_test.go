package session

import "testing"

// BenchmarkStreamPartText is the hot path: every text delta of every turn
// is one Step (one allocation: the Live delta handed to the subscribers).
func BenchmarkStreamPartText(b *testing.B) {
	c := Core{State: NewState("ses_1")}
	c.Drain = &Drain{Location: "/p", Turn: &Turn{AssistantMessageID: "msg_1", Streaming: true}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%4096 == 0 {
			c.Drain.Turn = &Turn{AssistantMessageID: "msg_1", Streaming: true} // a turn's worth of text
		}
		var in Input = StreamPart{Kind: PartText, Text: "token "}
		if rd := c.Step(in); len(rd.Live) != 1 {
			b.Fatal("no live delta")
		}
	}
}
