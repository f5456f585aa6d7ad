package msgpackw

import (
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

type sample struct {
	A string   `msgpack:"a"`
	B string   `msgpack:"b,omitempty"`
	C []byte   `msgpack:"c"`
	D []byte   `msgpack:"d,omitempty"`
	E bool     `msgpack:"e,omitempty"`
	F int64    `msgpack:"f"`
	G []string `msgpack:"g"`
}

func (s sample) write(w *Writer) {
	w.MapLen(Count(true, s.B != "", true, len(s.D) > 0, s.E, true, true))
	w.Str("a", s.A)
	w.OptStr("b", s.B)
	w.Bin("c", s.C)
	w.OptBin("d", s.D)
	w.Flag("e", s.E)
	w.Key("f")
	w.Int64(s.F)
	w.Key("g")
	w.Strings(s.G)
}

// The Writer's bytes are the library's reflection encoding of the same
// struct, empty and full, nil and empty slices alike.
func TestWriterMatchesTheReflectionEncoding(t *testing.T) {
	for _, s := range []sample{
		{},
		{A: "x", B: "y", C: []byte{}, D: []byte{1}, E: true, F: -1 << 40, G: []string{}},
		{A: string(make([]byte, 40)), C: make([]byte, 300), F: 7, G: []string{"p", ""}},
	} {
		want, err := msgpack.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w := Writer{Enc: msgpack.NewEncoder(&buf)}
		s.write(&w)
		if w.Err != nil {
			t.Fatal(w.Err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%+v:\n got %x\nwant %x", s, buf.Bytes(), want)
		}
	}
}
