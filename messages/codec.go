package messages

import (
	"bytes"
	"sync"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sessionrt/sessionrt/internal/msgpackw"
)

// Hand-written msgpack encoders for the events a session writes in normal
// operation (creation, context epochs, tool turns, permissions, switches,
// moves, compaction, interruption), byte-identical to the library's
// reflection encoding (msgpack.Marshal:
// fields in declaration order as a map, empty omitempty fields left out,
// int64 as 9 bytes, nil slices as nil). The library decides each omitempty
// field through reflect.Value.Interface, one allocation per field per
// encode, and every journal append encodes its events. Decoding stays
// reflective. codec_test.go compares both encodings over randomly filled
// values of every hand-encoded type, so a field added later fails until
// its encoder writes it. The method is unexported so msgpack itself never
// sees it: msgpack.Marshal of an event stays the reference.

// handEncoded is an event with a hand-written encoder; Registry.Marshal
// uses it when present and the reflection encoding otherwise.
type handEncoded interface {
	encodeMsgpack(w *msgpackw.Writer)
}

func (p PromptAdmitted) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(msgpackw.Count(true, true, true, p.Held))
	w.Str("id", p.MessageID)
	w.Key("pr")
	writePrompt(w, p.Prompt)
	w.Str("dl", string(p.Delivery))
	w.Flag("hd", p.Held)
}

func (p PromptPromoted) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(1)
	w.Key("ids")
	w.Strings(p.MessageIDs)
}

func (c ContextUpdated) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(msgpackw.Count(c.MessageID != "", true, true))
	w.OptStr("id", c.MessageID)
	w.Str("t", c.Text)
	w.Bin("s", c.Snapshot)
}

func (t TurnStarted) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(msgpackw.Count(true, true, true, t.Snapshot != ""))
	w.Str("am", t.AssistantMessageID)
	w.Str("ag", t.Agent)
	w.Key("m")
	WriteModelRef(w, t.Model)
	w.OptStr("sn", t.Snapshot)
}

func (t TurnEnded) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(msgpackw.Count(true, true, true, len(t.ProviderMetadata) > 0))
	w.Str("am", t.AssistantMessageID)
	w.Str("fr", t.FinishReason)
	w.Key("u")
	WriteUsage(w, t.Usage)
	w.OptBin("pm", t.ProviderMetadata)
}

func (t TurnFailed) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(3)
	w.Str("am", t.AssistantMessageID)
	w.Str("k", t.ErrorKind)
	w.Str("msg", t.Message)
}

func (t TextEnded) encodeMsgpack(w *msgpackw.Writer) {
	writePartEnded(w, t.AssistantMessageID, t.Text, t.ProviderMetadata)
}

func (r ReasoningEnded) encodeMsgpack(w *msgpackw.Writer) {
	writePartEnded(w, r.AssistantMessageID, r.Text, r.ProviderMetadata)
}

func (t ToolCalled) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(msgpackw.Count(true, true, true, true, true, len(t.ProviderMetadata) > 0))
	w.Str("am", t.AssistantMessageID)
	w.Str("c", t.CallID)
	w.Str("tl", t.Tool)
	w.Bin("in", t.Input)
	w.Str("ag", t.Agent)
	w.OptBin("pm", t.ProviderMetadata)
}

func (t ToolSucceeded) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(msgpackw.Count(true, true, true, len(t.Structured) > 0, t.ManagedPath != "", t.Lossy, len(t.ProviderMetadata) > 0, t.Snapshot != ""))
	w.Str("am", t.AssistantMessageID)
	w.Str("c", t.CallID)
	w.Str("o", t.Output)
	w.OptBin("st", t.Structured)
	w.OptStr("mp", t.ManagedPath)
	w.Flag("l", t.Lossy)
	w.OptBin("pm", t.ProviderMetadata)
	w.OptStr("sn", t.Snapshot)
}

func (t ToolFailed) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(msgpackw.Count(true, true, true, t.Snapshot != ""))
	w.Str("am", t.AssistantMessageID)
	w.Str("c", t.CallID)
	w.Str("e", t.Error)
	w.OptStr("sn", t.Snapshot)
}

func (Idle) encodeMsgpack(w *msgpackw.Writer) { w.MapLen(0) }

func (s SessionCreated) encodeMsgpack(w *msgpackw.Writer) {
	if s.Title == "" {
		w.MapLen(3)
	} else {
		w.MapLen(4)
	}
	w.Str("loc", s.Location)
	w.Str("ag", s.Agent)
	w.Key("m")
	WriteModelRef(w, s.Model)
	if s.Title != "" {
		w.Str("ti", s.Title)
	}
}

func (SessionDeleted) encodeMsgpack(w *msgpackw.Writer) { w.MapLen(0) }

func (s SessionRenamed) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(1)
	w.Str("t", s.Title)
}

func (c ContextEpochInitialized) encodeMsgpack(w *msgpackw.Writer) {
	writeEpoch(w, c.Revision, c.Baseline, c.Snapshot, c.Location)
}

func (c ContextEpochReplaced) encodeMsgpack(w *msgpackw.Writer) {
	writeEpoch(w, c.Revision, c.Baseline, c.Snapshot, c.Location)
}

func (c ContextEpochCleared) encodeMsgpack(w *msgpackw.Writer) { writeReason(w, c.Reason) }

func (a AgentSwitched) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(1)
	w.Str("ag", a.Agent)
}

func (m ModelSwitched) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(1)
	w.Key("m")
	WriteModelRef(w, m.Model)
}

func (m Moved) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(2)
	w.Str("f", m.From)
	w.Str("t", m.To)
}

func (p PermissionAsked) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(msgpackw.Count(true, true, true, true, len(p.Resources) > 0))
	w.Str("id", p.RequestID)
	w.Str("am", p.AssistantMessageID)
	w.Str("c", p.CallID)
	w.Str("a", p.Action)
	if len(p.Resources) > 0 {
		w.Key("r")
		w.Strings(p.Resources)
	}
}

func (p PermissionReplied) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(msgpackw.Count(true, true, p.Feedback != ""))
	w.Str("id", p.RequestID)
	w.Str("r", string(p.Reply))
	w.OptStr("fb", p.Feedback)
}

func (c CompactionStarted) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(1)
	w.Str("id", c.CompactionID)
}

func (c CompactionEnded) encodeMsgpack(w *msgpackw.Writer) {
	w.MapLen(3)
	w.Str("id", c.CompactionID)
	w.Str("s", c.Summary)
	w.Str("rc", c.RecentContext)
}

func (i Interrupted) encodeMsgpack(w *msgpackw.Writer) { writeReason(w, i.Reason) }

// WriteModelRef writes a ModelRef: provider and ID always, the variant
// when one is selected (omitempty).
func WriteModelRef(w *msgpackw.Writer, m ModelRef) {
	if m.Variant == "" {
		w.MapLen(2)
	} else {
		w.MapLen(3)
	}
	w.Str("p", m.Provider)
	w.Str("id", m.ID)
	if m.Variant != "" {
		w.Str("v", m.Variant)
	}
}

// WriteUsage writes a Usage (every field omitempty; an empty one is an
// empty map).
func WriteUsage(w *msgpackw.Writer, u Usage) {
	w.MapLen(msgpackw.Count(u.InputTokens != 0, u.OutputTokens != 0, u.ReasoningTokens != 0, u.CacheReadTokens != 0, u.CacheWriteTokens != 0))
	for _, f := range [...]struct {
		k string
		v int64
	}{{"in", u.InputTokens}, {"out", u.OutputTokens}, {"rs", u.ReasoningTokens}, {"cr", u.CacheReadTokens}, {"cw", u.CacheWriteTokens}} {
		if f.v != 0 {
			w.Key(f.k)
			w.Int64(f.v)
		}
	}
}

func writePrompt(w *msgpackw.Writer, p Prompt) {
	w.MapLen(msgpackw.Count(true, len(p.Attachments) > 0))
	w.Str("t", p.Text)
	if len(p.Attachments) == 0 {
		return
	}
	w.Key("a")
	w.ArrayLen(len(p.Attachments))
	for i := range p.Attachments {
		writeAttachment(w, &p.Attachments[i])
	}
}

func writeAttachment(w *msgpackw.Writer, a *Attachment) {
	w.MapLen(msgpackw.Count(true, a.Name != "", a.MediaType != "", a.URI != "", len(a.Data) > 0))
	w.Str("k", a.Kind)
	w.OptStr("n", a.Name)
	w.OptStr("mt", a.MediaType)
	w.OptStr("u", a.URI)
	w.OptBin("d", a.Data)
}

// writeEpoch writes ContextEpochInitialized and ContextEpochReplaced (same
// shape, no omitempty fields).
func writeEpoch(w *msgpackw.Writer, rev int64, baseline string, snap []byte, loc string) {
	w.MapLen(4)
	w.Key("rev")
	w.Int64(rev)
	w.Str("b", baseline)
	w.Bin("s", snap)
	w.Str("loc", loc)
}

// writeReason writes ContextEpochCleared and Interrupted (one omitempty
// reason).
func writeReason(w *msgpackw.Writer, r string) {
	w.MapLen(msgpackw.Count(r != ""))
	w.OptStr("r", r)
}

// writePartEnded writes TextEnded and ReasoningEnded (same shape).
func writePartEnded(w *msgpackw.Writer, am, text string, pm []byte) {
	w.MapLen(msgpackw.Count(true, true, len(pm) > 0))
	w.Str("am", am)
	w.Str("t", text)
	w.OptBin("pm", pm)
}

// marshaler is a pooled encoder with its buffer: Marshal copies the bytes
// out, so the buffer is reused instead of msgpack.Marshal's fresh one
// growing per event.
type marshaler struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
	w   msgpackw.Writer // pooled too: passed to an interface method, it would escape
}

var marshalers = sync.Pool{New: func() any {
	m := &marshaler{}
	m.enc = msgpack.NewEncoder(&m.buf)
	return m
}}

// maxPooledBuf keeps one huge event from pinning its buffer in the pool.
const maxPooledBuf = 64 << 10

// marshal encodes e, by its hand-written encoder when it has one.
func marshal(e Event) ([]byte, error) {
	m := marshalers.Get().(*marshaler)
	m.buf.Reset()
	m.enc.Reset(&m.buf)
	var err error
	if h, ok := e.(handEncoded); ok {
		m.w = msgpackw.Writer{Enc: m.enc}
		h.encodeMsgpack(&m.w)
		err = m.w.Err
	} else {
		err = m.enc.Encode(e)
	}
	var out []byte
	if err == nil {
		out = bytes.Clone(m.buf.Bytes())
	}
	if m.buf.Cap() <= maxPooledBuf {
		marshalers.Put(m)
	}
	return out, err
}
