// Package msgpackw writes msgpack maps field by field, byte-identical to
// what github.com/vmihailenco/msgpack/v5's reflection encoder writes for a
// struct: fields in declaration order as a map, omitempty fields left out
// when empty, int64 as 9 bytes, nil slices as nil.
//
// The library decides each omitempty field through reflect.Value.Interface,
// one allocation per field per encode, and the journal encodes events and
// message bodies on every append; the hand-written encoders of the messages
// and persistence packages use this Writer instead. Their tests compare the
// bytes with msgpack.Marshal over randomly filled values, so a field added
// later fails until its encoder writes it.
package msgpackw
