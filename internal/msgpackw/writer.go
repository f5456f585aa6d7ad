package msgpackw

import "github.com/vmihailenco/msgpack/v5"

// Writer writes to Enc and keeps the first error in Err; once Err is set,
// every call is a no-op.
type Writer struct {
	Enc *msgpack.Encoder
	Err error
}

// MapLen starts a map of n entries.
func (w *Writer) MapLen(n int) {
	if w.Err == nil {
		w.Err = w.Enc.EncodeMapLen(n)
	}
}

// ArrayLen starts an array of n elements.
func (w *Writer) ArrayLen(n int) {
	if w.Err == nil {
		w.Err = w.Enc.EncodeArrayLen(n)
	}
}

// Key writes a map key.
func (w *Writer) Key(k string) { w.String(k) }

func (w *Writer) String(s string) {
	if w.Err == nil {
		w.Err = w.Enc.EncodeString(s)
	}
}

// Bytes writes b as binary; nil encodes as nil, like the library.
func (w *Writer) Bytes(b []byte) {
	if w.Err == nil {
		w.Err = w.Enc.EncodeBytes(b)
	}
}

// Int64 writes n as the library writes an int64 field without
// UseCompactInts.
func (w *Writer) Int64(n int64) {
	if w.Err == nil {
		w.Err = w.Enc.EncodeInt64(n)
	}
}

// Value writes v through the library (for fields with no fast form).
func (w *Writer) Value(v any) {
	if w.Err == nil {
		w.Err = w.Enc.Encode(v)
	}
}

// Strings writes a []string as the library does: nil as nil, else an array.
func (w *Writer) Strings(ss []string) {
	if ss == nil {
		if w.Err == nil {
			w.Err = w.Enc.EncodeNil()
		}
		return
	}
	w.ArrayLen(len(ss))
	for _, s := range ss {
		w.String(s)
	}
}

// Str and Bin write a field that is always present.
func (w *Writer) Str(k, s string) {
	w.Key(k)
	w.String(s)
}

func (w *Writer) Bin(k string, b []byte) {
	w.Key(k)
	w.Bytes(b)
}

// OptStr, OptBin and Flag write an omitempty field only when it is not
// empty (a Flag only when true).
func (w *Writer) OptStr(k, s string) {
	if s != "" {
		w.Str(k, s)
	}
}

func (w *Writer) OptBin(k string, b []byte) {
	if len(b) > 0 {
		w.Bin(k, b)
	}
}

func (w *Writer) Flag(k string, b bool) {
	if b {
		w.Key(k)
		if w.Err == nil {
			w.Err = w.Enc.EncodeBool(true)
		}
	}
}

// Count is how many of the fields are present: a map's length.
func Count(present ...bool) int {
	n := 0
	for _, p := range present {
		if p {
			n++
		}
	}
	return n
}
