package messages

import (
	"bytes"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Hand-written msgpack encoders for the events a tool turn writes,
// byte-identical to the library's reflection encoding (msgpack.Marshal:
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
	encodeMsgpack(w *fieldWriter)
}

func (p PromptAdmitted) encodeMsgpack(w *fieldWriter) {
	w.mapLen(3)
	w.str("id", p.MessageID)
	w.key("pr")
	w.prompt(p.Prompt)
	w.str("dl", string(p.Delivery))
}

func (p PromptPromoted) encodeMsgpack(w *fieldWriter) {
	w.mapLen(1)
	w.key("ids")
	w.strings(p.MessageIDs)
}

func (c ContextUpdated) encodeMsgpack(w *fieldWriter) {
	w.mapLen(count(c.MessageID != "", true, true))
	w.optStr("id", c.MessageID)
	w.str("t", c.Text)
	w.bin("s", c.Snapshot)
}

func (t TurnStarted) encodeMsgpack(w *fieldWriter) {
	w.mapLen(3)
	w.str("am", t.AssistantMessageID)
	w.str("ag", t.Agent)
	w.key("m")
	w.model(t.Model)
}

func (t TurnEnded) encodeMsgpack(w *fieldWriter) {
	w.mapLen(count(true, true, true, len(t.ProviderMetadata) > 0))
	w.str("am", t.AssistantMessageID)
	w.str("fr", t.FinishReason)
	w.key("u")
	w.usage(t.Usage)
	w.optBin("pm", t.ProviderMetadata)
}

func (t TurnFailed) encodeMsgpack(w *fieldWriter) {
	w.mapLen(3)
	w.str("am", t.AssistantMessageID)
	w.str("k", t.ErrorKind)
	w.str("msg", t.Message)
}

func (t TextEnded) encodeMsgpack(w *fieldWriter) {
	w.partEnded(t.AssistantMessageID, t.Text, t.ProviderMetadata)
}

func (r ReasoningEnded) encodeMsgpack(w *fieldWriter) {
	w.partEnded(r.AssistantMessageID, r.Text, r.ProviderMetadata)
}

func (t ToolCalled) encodeMsgpack(w *fieldWriter) {
	w.mapLen(count(true, true, true, true, true, len(t.ProviderMetadata) > 0))
	w.str("am", t.AssistantMessageID)
	w.str("c", t.CallID)
	w.str("tl", t.Tool)
	w.bin("in", t.Input)
	w.str("ag", t.Agent)
	w.optBin("pm", t.ProviderMetadata)
}

func (t ToolSucceeded) encodeMsgpack(w *fieldWriter) {
	w.mapLen(count(true, true, true, len(t.Structured) > 0, t.ManagedPath != "", t.Lossy, len(t.ProviderMetadata) > 0))
	w.str("am", t.AssistantMessageID)
	w.str("c", t.CallID)
	w.str("o", t.Output)
	w.optBin("st", t.Structured)
	w.optStr("mp", t.ManagedPath)
	w.flag("l", t.Lossy)
	w.optBin("pm", t.ProviderMetadata)
}

func (t ToolFailed) encodeMsgpack(w *fieldWriter) {
	w.mapLen(3)
	w.str("am", t.AssistantMessageID)
	w.str("c", t.CallID)
	w.str("e", t.Error)
}

func (Idle) encodeMsgpack(w *fieldWriter) { w.mapLen(0) }

func count(present ...bool) int {
	n := 0
	for _, p := range present {
		if p {
			n++
		}
	}
	return n
}

// fieldWriter writes map entries, keeping the first error.
type fieldWriter struct {
	e   *msgpack.Encoder
	err error
}

func (w *fieldWriter) mapLen(n int) {
	if w.err == nil {
		w.err = w.e.EncodeMapLen(n)
	}
}

func (w *fieldWriter) key(k string) { w.string(k) }

func (w *fieldWriter) string(s string) {
	if w.err == nil {
		w.err = w.e.EncodeString(s)
	}
}

func (w *fieldWriter) bytes(b []byte) {
	if w.err == nil {
		w.err = w.e.EncodeBytes(b) // nil encodes as nil, like the library
	}
}

func (w *fieldWriter) int64(n int64) {
	if w.err == nil {
		w.err = w.e.EncodeInt64(n) // the library's int64 field encoding without UseCompactInts
	}
}

// str and bin write a field that is always present.
func (w *fieldWriter) str(k, s string) {
	w.key(k)
	w.string(s)
}

func (w *fieldWriter) bin(k string, b []byte) {
	w.key(k)
	w.bytes(b)
}

// optStr, optBin and flag write an omitempty field when it is not empty.
func (w *fieldWriter) optStr(k, s string) {
	if s != "" {
		w.str(k, s)
	}
}

func (w *fieldWriter) optBin(k string, b []byte) {
	if len(b) > 0 {
		w.bin(k, b)
	}
}

func (w *fieldWriter) flag(k string, b bool) {
	if b {
		w.key(k)
		if w.err == nil {
			w.err = w.e.EncodeBool(true)
		}
	}
}

// strings writes a []string as the library does: nil as nil, else an array.
func (w *fieldWriter) strings(ss []string) {
	if ss == nil {
		if w.err == nil {
			w.err = w.e.EncodeNil()
		}
		return
	}
	if w.err == nil {
		w.err = w.e.EncodeArrayLen(len(ss))
	}
	for _, s := range ss {
		w.string(s)
	}
}

func (w *fieldWriter) model(m ModelRef) {
	w.mapLen(2)
	w.str("p", m.Provider)
	w.str("id", m.ID)
}

// usage writes a Usage (every field omitempty; an empty one is an empty map).
func (w *fieldWriter) usage(u Usage) {
	w.mapLen(count(u.InputTokens != 0, u.OutputTokens != 0, u.ReasoningTokens != 0, u.CacheReadTokens != 0, u.CacheWriteTokens != 0))
	for _, f := range [...]struct {
		k string
		v int64
	}{{"in", u.InputTokens}, {"out", u.OutputTokens}, {"rs", u.ReasoningTokens}, {"cr", u.CacheReadTokens}, {"cw", u.CacheWriteTokens}} {
		if f.v != 0 {
			w.key(f.k)
			w.int64(f.v)
		}
	}
}

func (w *fieldWriter) prompt(p Prompt) {
	w.mapLen(count(true, len(p.Attachments) > 0))
	w.str("t", p.Text)
	if len(p.Attachments) == 0 {
		return
	}
	w.key("a")
	if w.err == nil {
		w.err = w.e.EncodeArrayLen(len(p.Attachments))
	}
	for i := range p.Attachments {
		w.attachment(&p.Attachments[i])
	}
}

func (w *fieldWriter) attachment(a *Attachment) {
	w.mapLen(count(true, a.Name != "", a.MediaType != "", a.URI != "", len(a.Data) > 0))
	w.str("k", a.Kind)
	w.optStr("n", a.Name)
	w.optStr("mt", a.MediaType)
	w.optStr("u", a.URI)
	w.optBin("d", a.Data)
}

// partEnded writes TextEnded and ReasoningEnded (same shape).
func (w *fieldWriter) partEnded(am, text string, pm []byte) {
	w.mapLen(count(true, true, len(pm) > 0))
	w.str("am", am)
	w.str("t", text)
	w.optBin("pm", pm)
}

// marshaler is a pooled encoder with its buffer: Marshal copies the bytes
// out, so the buffer is reused instead of msgpack.Marshal's fresh one
// growing per event.
type marshaler struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
	w   fieldWriter // pooled too: passed to an interface method, it would escape
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
		m.w = fieldWriter{e: m.enc}
		h.encodeMsgpack(&m.w)
		err = m.w.err
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
