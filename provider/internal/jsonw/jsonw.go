package jsonw

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// Writer builds one JSON document.
type Writer struct {
	B    []byte
	need bool // a comma is due before the next key or value
}

func (w *Writer) comma() {
	if w.need {
		w.B = append(w.B, ',')
	}
}

// Open starts an object ('{') or array ('[').
func (w *Writer) Open(c byte) {
	w.comma()
	w.B = append(w.B, c)
	w.need = false
}

// Close ends an object ('}') or array (']').
func (w *Writer) Close(c byte) {
	w.B = append(w.B, c)
	w.need = true
}

// Key writes an object key (escaped) and its colon.
func (w *Writer) Key(k string) {
	w.comma()
	w.B = AppendString(w.B, k)
	w.B = append(w.B, ':')
	w.need = false
}

// Str writes a string value.
func (w *Writer) Str(s string) {
	w.comma()
	w.B = AppendString(w.B, s)
	w.need = true
}

// Raw writes a value that is already JSON.
func (w *Writer) Raw(r []byte) {
	w.comma()
	w.B = append(w.B, r...)
	w.need = true
}

// RawString writes a value that is already JSON, given as a string.
func (w *Writer) RawString(r string) {
	w.comma()
	w.B = append(w.B, r...)
	w.need = true
}

// Int writes an integer value.
func (w *Writer) Int(n int) {
	w.comma()
	w.B = strconv.AppendInt(w.B, int64(n), 10)
	w.need = true
}

// Bool writes a boolean value.
func (w *Writer) Bool(b bool) {
	w.comma()
	w.B = strconv.AppendBool(w.B, b)
	w.need = true
}

// Float writes a number; NaN and infinities (not JSON) are written as null.
func (w *Writer) Float(f float64) {
	w.comma()
	if math.IsNaN(f) || math.IsInf(f, 0) {
		w.B = append(w.B, "null"...)
	} else {
		w.B = strconv.AppendFloat(w.B, f, 'g', -1, 64)
	}
	w.need = true
}

// Null writes null.
func (w *Writer) Null() {
	w.comma()
	w.B = append(w.B, "null"...)
	w.need = true
}

const hex = "0123456789abcdef"

// plain[c] is '1' for the ASCII bytes a JSON string holds unescaped.
const plain = "0000000000000000000000000000000011011111111111111111111111111111111111111111111111111111111101111111111111111111111111111111111100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"

// AppendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced by U+FFFD, U+2028/U+2029
// escaped (as encoding/json does, for JavaScript consumers).
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) && plain8(load64(s, i)) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if plain[c] == '1' {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plain8 reports whether the 8 bytes of w are all plain ASCII string bytes
// (no control character, quote, backslash or non-ASCII byte): a word at a
// time is several times faster than a byte at a time on long text.
func plain8(w uint64) bool {
	hasZero := func(x uint64) uint64 { return (x - lsb) & ^x & msb }
	return (w&msb)|((w-0x20*lsb) & ^w & msb)|hasZero(w^('"'*lsb))|hasZero(w^('\\'*lsb)) == 0
}

// load64 reads s[i:i+8] little-endian (the compiler merges it into one load).
func load64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}
