package persistence

import (
	"github.com/vmihailenco/msgpack/v5"

	"github.com/sessionrt/sessionrt/messages"
)

// Hand-written msgpack encoders for the message body, byte-identical to the
// library's reflection encoding (msgpack.Marshal: fields in declaration
// order as a map, empty omitempty fields left out, int64 as 9 bytes, int
// compact). The library decides each omitempty field through
// reflect.Value.Interface, one allocation per field per encode: a turn's
// assistant message (13 such fields, plus 3 per part and 8 per tool part)
// is rewritten by every append of the turn. Decoding stays reflective.
// bodycodec_test.go compares both encodings field by field.

// EncodeMsgpack implements msgpack.CustomEncoder.
func (m Message) EncodeMsgpack(e *msgpack.Encoder) error {
	n := count(m.Prompt != nil, m.Delivery != "", m.Text != "", m.RecentContext != "", m.Agent != "",
		true, len(m.Parts) > 0, m.Finished, m.FinishReason != "", !usageEmpty(m.Usage),
		len(m.ProviderMetadata) > 0, m.ErrorKind != "", m.Error != "")
	w := fieldWriter{e: e}
	w.mapLen(n)
	if m.Prompt != nil {
		w.key("pr")
		w.value(m.Prompt)
	}
	w.str("dl", string(m.Delivery))
	w.str("t", m.Text)
	w.str("rc", m.RecentContext)
	w.str("ag", m.Agent)
	w.key("m")
	w.model(m.Model)
	if len(m.Parts) > 0 {
		w.key("pa")
		if w.err == nil {
			w.err = e.EncodeArrayLen(len(m.Parts))
		}
		for i := range m.Parts {
			if w.err == nil {
				w.err = m.Parts[i].EncodeMsgpack(e)
			}
		}
	}
	w.flag("fin", m.Finished)
	w.str("fr", m.FinishReason)
	if !usageEmpty(m.Usage) {
		w.key("u")
		w.usage(m.Usage)
	}
	w.bytes("pm", m.ProviderMetadata)
	w.str("ek", m.ErrorKind)
	w.str("e", m.Error)
	return w.err
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (p Part) EncodeMsgpack(e *msgpack.Encoder) error {
	w := fieldWriter{e: e}
	w.mapLen(count(true, true, p.Text != "", len(p.ProviderMetadata) > 0, p.Tool != nil))
	w.key("k")
	w.string(string(p.Kind))
	w.key("s")
	w.int64(p.Seq)
	w.str("t", p.Text)
	w.bytes("pm", p.ProviderMetadata)
	if p.Tool != nil {
		w.key("tl")
		if w.err == nil {
			w.err = p.Tool.EncodeMsgpack(e)
		}
	}
	return w.err
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (t ToolPart) EncodeMsgpack(e *msgpack.Encoder) error {
	w := fieldWriter{e: e}
	w.mapLen(count(true, true, true, true, true, t.Title != "", t.Output != "", len(t.Structured) > 0,
		t.ManagedPath != "", t.Lossy, t.Error != "", len(t.CallMetadata) > 0, len(t.ResultMetadata) > 0))
	w.key("c")
	w.string(t.CallID)
	w.key("n")
	w.string(t.Tool)
	w.key("ag")
	w.string(t.Agent)
	w.key("in")
	if w.err == nil {
		w.err = e.EncodeBytes(t.Input) // nil encodes as nil, like the library
	}
	w.key("st")
	w.string(string(t.State))
	w.str("ti", t.Title)
	w.str("o", t.Output)
	w.bytes("so", t.Structured)
	w.str("mp", t.ManagedPath)
	w.flag("l", t.Lossy)
	w.str("e", t.Error)
	w.bytes("cm", t.CallMetadata)
	w.bytes("rm", t.ResultMetadata)
	return w.err
}

func count(present ...bool) int {
	n := 0
	for _, p := range present {
		if p {
			n++
		}
	}
	return n
}

func usageEmpty(u messages.Usage) bool { return u == messages.Usage{} }

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

func (w *fieldWriter) int64(n int64) {
	if w.err == nil {
		w.err = w.e.EncodeInt64(n) // the library's int64 field encoding without UseCompactInts
	}
}

func (w *fieldWriter) value(v any) {
	if w.err == nil {
		w.err = w.e.Encode(v)
	}
}

// str, flag and bytes write an omitempty field when it is not empty.
func (w *fieldWriter) str(k, s string) {
	if s != "" {
		w.key(k)
		w.string(s)
	}
}

func (w *fieldWriter) flag(k string, b bool) {
	if b && w.err == nil {
		w.key(k)
		if w.err == nil {
			w.err = w.e.EncodeBool(true)
		}
	}
}

func (w *fieldWriter) bytes(k string, b []byte) {
	if len(b) > 0 {
		w.key(k)
		if w.err == nil {
			w.err = w.e.EncodeBytes(b)
		}
	}
}

// model writes a ModelRef (no omitempty fields: always both).
func (w *fieldWriter) model(m messages.ModelRef) {
	w.mapLen(2)
	w.key("p")
	w.string(m.Provider)
	w.key("id")
	w.string(m.ID)
}

// usage writes a non-empty Usage (every field omitempty).
func (w *fieldWriter) usage(u messages.Usage) {
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
