package messages

import (
	"github.com/vmihailenco/msgpack/v5"

	"github.com/sessionrt/sessionrt/internal/msgpackw"
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
	n := msgpackw.Count(m.Prompt != nil, m.Delivery != "", m.Text != "", m.RecentContext != "", m.Agent != "",
		true, len(m.Parts) > 0, m.Finished, m.FinishReason != "", !usageEmpty(m.Usage),
		len(m.ProviderMetadata) > 0, m.ErrorKind != "", m.Error != "")
	w := msgpackw.Writer{Enc: e}
	w.MapLen(n)
	if m.Prompt != nil {
		w.Key("pr")
		w.Value(m.Prompt)
	}
	w.OptStr("dl", string(m.Delivery))
	w.OptStr("t", m.Text)
	w.OptStr("rc", m.RecentContext)
	w.OptStr("ag", m.Agent)
	w.Key("m")
	WriteModelRef(&w, m.Model)
	if len(m.Parts) > 0 {
		w.Key("pa")
		w.ArrayLen(len(m.Parts))
		for i := range m.Parts {
			if w.Err == nil {
				w.Err = m.Parts[i].EncodeMsgpack(e)
			}
		}
	}
	w.Flag("fin", m.Finished)
	w.OptStr("fr", m.FinishReason)
	if !usageEmpty(m.Usage) {
		w.Key("u")
		WriteUsage(&w, m.Usage)
	}
	w.OptBin("pm", m.ProviderMetadata)
	w.OptStr("ek", m.ErrorKind)
	w.OptStr("e", m.Error)
	return w.Err
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (p Part) EncodeMsgpack(e *msgpack.Encoder) error {
	w := msgpackw.Writer{Enc: e}
	w.MapLen(msgpackw.Count(true, true, p.Text != "", len(p.ProviderMetadata) > 0, p.Tool != nil))
	w.Key("k")
	w.String(string(p.Kind))
	w.Key("s")
	w.Int64(p.Seq)
	w.OptStr("t", p.Text)
	w.OptBin("pm", p.ProviderMetadata)
	if p.Tool != nil {
		w.Key("tl")
		if w.Err == nil {
			w.Err = p.Tool.EncodeMsgpack(e)
		}
	}
	return w.Err
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (t ToolPart) EncodeMsgpack(e *msgpack.Encoder) error {
	w := msgpackw.Writer{Enc: e}
	w.MapLen(msgpackw.Count(true, true, true, true, true, t.Title != "", t.Output != "", len(t.Structured) > 0,
		t.ManagedPath != "", t.Lossy, t.Error != "", len(t.CallMetadata) > 0, len(t.ResultMetadata) > 0))
	w.Key("c")
	w.String(t.CallID)
	w.Key("n")
	w.String(t.Tool)
	w.Key("ag")
	w.String(t.Agent)
	w.Bin("in", t.Input)
	w.Key("st")
	w.String(string(t.State))
	w.OptStr("ti", t.Title)
	w.OptStr("o", t.Output)
	w.OptBin("so", t.Structured)
	w.OptStr("mp", t.ManagedPath)
	w.Flag("l", t.Lossy)
	w.OptStr("e", t.Error)
	w.OptBin("cm", t.CallMetadata)
	w.OptBin("rm", t.ResultMetadata)
	return w.Err
}

func usageEmpty(u Usage) bool { return u == Usage{} }
