package messages

import "fmt"

// The model-visible history of a session: the messages the journal's
// projector builds from the events and a provider request is made of. They
// live here, next to the events, so that code planning requests
// (compaction, provider, session) links no storage engine.

// Role of a projected message.
type Role string

const (
	RoleUser       Role = "user"
	RoleAssistant  Role = "assistant"
	RoleSystem     Role = "system"     // a Mid-Conversation System Message
	RoleCompaction Role = "compaction" // a completed compaction checkpoint
)

// PartKind of an assistant message part.
type PartKind string

const (
	PartText      PartKind = "text"
	PartReasoning PartKind = "reasoning"
	PartTool      PartKind = "tool"
)

// ToolState of a tool call.
type ToolState string

const (
	ToolStatePending   ToolState = "pending" // input streaming or complete, not yet called
	ToolStateRunning   ToolState = "running" // ToolCalled recorded, not settled
	ToolStateCompleted ToolState = "completed"
	ToolStateFailed    ToolState = "failed"
)

// Message is one projected Session message, ordered by (Seq, Index): the seq
// of the event that created it and its position within that event (several
// prompts promoted by one event share a seq).
type Message struct {
	ID    string `msgpack:"-"`
	Seq   int64  `msgpack:"-"`
	Index int    `msgpack:"-"`
	Role  Role   `msgpack:"-"`

	// user
	Prompt   *Prompt  `msgpack:"pr,omitempty"`
	Delivery Delivery `msgpack:"dl,omitempty"`
	// system: the update text; compaction: the summary
	Text          string `msgpack:"t,omitempty"`
	RecentContext string `msgpack:"rc,omitempty"` // compaction only

	// assistant
	Agent            string   `msgpack:"ag,omitempty"`
	Model            ModelRef `msgpack:"m,omitempty"`
	Parts            []Part   `msgpack:"pa,omitempty"`
	Finished         bool     `msgpack:"fin,omitempty"` // TurnEnded or TurnFailed seen
	FinishReason     string   `msgpack:"fr,omitempty"`
	Usage            Usage    `msgpack:"u,omitempty"`
	ProviderMetadata []byte   `msgpack:"pm,omitempty"`
	ErrorKind        string   `msgpack:"ek,omitempty"`
	Error            string   `msgpack:"e,omitempty"`
}

// Part is one part of an assistant message, in event order.
type Part struct {
	Kind             PartKind  `msgpack:"k"`
	Seq              int64     `msgpack:"s"`
	Text             string    `msgpack:"t,omitempty"`
	ProviderMetadata []byte    `msgpack:"pm,omitempty"`
	Tool             *ToolPart `msgpack:"tl,omitempty"`
}

// ToolPart is a tool call and, once settled, its result.
type ToolPart struct {
	CallID         string    `msgpack:"c"`
	Tool           string    `msgpack:"n"`
	Agent          string    `msgpack:"ag"`
	Input          []byte    `msgpack:"in"`
	State          ToolState `msgpack:"st"`
	Title          string    `msgpack:"ti,omitempty"` // latest ToolProgress title
	Output         string    `msgpack:"o,omitempty"`
	Structured     []byte    `msgpack:"so,omitempty"`
	ManagedPath    string    `msgpack:"mp,omitempty"`
	Lossy          bool      `msgpack:"l,omitempty"`
	Error          string    `msgpack:"e,omitempty"`
	CallMetadata   []byte    `msgpack:"cm,omitempty"` // provider metadata of the call side
	ResultMetadata []byte    `msgpack:"rm,omitempty"` // provider metadata of the settlement
}

// Check says whether h can be written: a compaction message only first
// (a boundary starts its event), and no turn or tool call left open (a
// copy is history, never work in progress).
func (h HistoryCopied) Check() error {
	for i, m := range h.Messages {
		switch {
		case m.ID == "":
			return fmt.Errorf("copied message %d has no ID", i)
		case m.Role == RoleCompaction && i > 0:
			return fmt.Errorf("copied compaction %s is not the first message of its event", m.ID)
		case m.Role == RoleAssistant && !m.Body.Finished:
			return fmt.Errorf("copied assistant message %s is not finished", m.ID)
		}
		for _, p := range m.Body.Parts {
			if p.Tool != nil && p.Tool.State != ToolStateCompleted && p.Tool.State != ToolStateFailed {
				return fmt.Errorf("copied tool call %s of %s is %s, not settled", p.Tool.CallID, m.ID, p.Tool.State)
			}
		}
	}
	return nil
}

// Boundary says whether h starts with a compaction: its seq is then the
// history boundary.
func (h HistoryCopied) Boundary() bool {
	return len(h.Messages) > 0 && h.Messages[0].Role == RoleCompaction
}

// At returns h's messages as the history holds them once h is at seq: at
// (seq, index), their parts at seq. They share nothing with h.
func (h HistoryCopied) At(seq int64) []Message {
	out := make([]Message, len(h.Messages))
	for i, c := range h.Messages {
		m := c.Body
		m.ID, m.Seq, m.Index, m.Role = c.ID, seq, i, c.Role
		if m.Prompt != nil {
			p := *m.Prompt
			p.Attachments = append([]Attachment(nil), p.Attachments...)
			m.Prompt = &p
		}
		if len(m.Parts) > 0 {
			m.Parts = append([]Part(nil), m.Parts...)
			for j := range m.Parts {
				m.Parts[j].Seq = seq
				if t := m.Parts[j].Tool; t != nil {
					tc := *t
					m.Parts[j].Tool = &tc
				}
			}
		}
		out[i] = m
	}
	return out
}
