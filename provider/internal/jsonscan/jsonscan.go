package jsonscan

import (
	"encoding/binary"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// plain[c] is '1' for the ASCII bytes a JSON string holds unescaped.
const plain = "0000000000000000000000000000000011011111111111111111111111111111111111111111111111111111111101111111111111111111111111111111111100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"

// ErrSyntax is returned for any malformed input.
var ErrSyntax = errors.New("jsonscan: syntax error")

// Scanner reads one JSON document from a byte slice.
type Scanner struct {
	b   []byte
	i   int
	buf []byte // scratch for unescaping
}

// Reset points the scanner at b.
func (s *Scanner) Reset(b []byte) { s.b, s.i = b, 0 }

func (s *Scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// Begin consumes the opening byte ('{' or '[').
func (s *Scanner) Begin(open byte) error {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != open {
		return ErrSyntax
	}
	s.i++
	return nil
}

// Next advances to element n (counted from 0) of the object or array being
// read, consuming the separating comma; it returns false after consuming the
// closing byte.
func (s *Scanner) Next(close byte, n int) (bool, error) {
	s.ws()
	if s.i >= len(s.b) {
		return false, ErrSyntax
	}
	if s.b[s.i] == close {
		s.i++
		return false, nil
	}
	if n > 0 {
		if s.b[s.i] != ',' {
			return false, ErrSyntax
		}
		s.i++
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] == close {
			return false, ErrSyntax // trailing comma
		}
	}
	return true, nil
}

// Object reads an object, calling field after each key with the scanner on
// that key's value (field must consume it). null reads as an empty object.
func (s *Scanner) Object(field func(key []byte) error) error {
	if s.Null() {
		return nil
	}
	if err := s.Begin('{'); err != nil {
		return err
	}
	for n := 0; ; n++ {
		more, err := s.Next('}', n)
		if err != nil || !more {
			return err
		}
		key, err := s.Key()
		if err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
	}
}

// Array reads an array, calling elem with the scanner on each element (elem
// must consume it). null reads as an empty array.
func (s *Scanner) Array(elem func() error) error {
	if s.Null() {
		return nil
	}
	if err := s.Begin('['); err != nil {
		return err
	}
	for n := 0; ; n++ {
		more, err := s.Next(']', n)
		if err != nil || !more {
			return err
		}
		if err := elem(); err != nil {
			return err
		}
	}
}

// Key reads an object key and its colon. The returned slice aliases the input
// when the key has no escapes.
func (s *Scanner) Key() ([]byte, error) {
	k, err := s.str()
	if err != nil {
		return nil, err
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return nil, ErrSyntax
	}
	s.i++
	return k, nil
}

// Peek returns the first byte of the next value without consuming it (0 at
// the end of the input): '[' tells an array from a string.
func (s *Scanner) Peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// Null consumes a null if one is next.
func (s *Scanner) Null() bool {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// String reads a string value (null reads as "").
func (s *Scanner) String() (string, error) {
	if s.Null() {
		return "", nil
	}
	b, err := s.str()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Bytes reads a string value as a slice valid until the next call (null
// reads as nil).
func (s *Scanner) Bytes() ([]byte, error) {
	if s.Null() {
		return nil, nil
	}
	return s.str()
}

// str reads a string token, unescaping into s.buf when needed. Invalid UTF-8
// is replaced by U+FFFD, as encoding/json does.
func (s *Scanner) str() ([]byte, error) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, ErrSyntax
	}
	s.i++
	start := s.i
	ascii := true
	for s.i < len(s.b) {
		for s.i+8 <= len(s.b) && plain8(binary.LittleEndian.Uint64(s.b[s.i:])) {
			s.i += 8
		}
		if s.i >= len(s.b) {
			break
		}
		c := s.b[s.i]
		if plain[c] == '1' {
			s.i++
			continue
		}
		switch {
		case c == '"':
			out := s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(out) {
				return []byte(string([]rune(string(out)))), nil
			}
			return out, nil
		case c == '\\':
			return s.strSlow(start)
		case c < 0x20:
			return nil, ErrSyntax
		case c >= 0x80:
			ascii = false
		}
		s.i++
	}
	return nil, ErrSyntax
}

func (s *Scanner) strSlow(start int) ([]byte, error) {
	s.buf = append(s.buf[:0], s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			if !utf8.Valid(s.buf) {
				s.buf = []byte(string([]rune(string(s.buf))))
			}
			return s.buf, nil
		case c < 0x20:
			return nil, ErrSyntax
		case c != '\\':
			s.buf = append(s.buf, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			return nil, ErrSyntax
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			s.buf = append(s.buf, e)
		case 'b':
			s.buf = append(s.buf, '\b')
		case 'f':
			s.buf = append(s.buf, '\f')
		case 'n':
			s.buf = append(s.buf, '\n')
		case 'r':
			s.buf = append(s.buf, '\r')
		case 't':
			s.buf = append(s.buf, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, ErrSyntax
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					save := s.i
					s.i += 2
					var ok2 bool
					if r2, ok2 = s.hex4(); !ok2 {
						return nil, ErrSyntax
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
					} else {
						s.i = save // lone surrogate; the next escape stands alone
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			s.buf = utf8.AppendRune(s.buf, r)
		default:
			return nil, ErrSyntax
		}
	}
	return nil, ErrSyntax
}

func (s *Scanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	s.i += 4
	return r, true
}

// Int reads an integer value (null reads as 0). A number with a fraction or
// exponent is an error here (callers fall back to encoding/json).
func (s *Scanner) Int() (int, error) {
	if s.Null() {
		return 0, nil
	}
	s.ws()
	start := s.i
	if err := s.number(); err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(string(s.b[start:s.i]))
	if err != nil {
		return 0, ErrSyntax
	}
	return n, nil
}

// number consumes a number token per the JSON grammar.
func (s *Scanner) number() error {
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	if s.i >= len(s.b) {
		return ErrSyntax
	}
	switch c := s.b[s.i]; {
	case c == '0':
		s.i++
	case '1' <= c && c <= '9':
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
		}
	default:
		return ErrSyntax
	}
	digits := func() error {
		n := 0
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		if n == 0 {
			return ErrSyntax
		}
		return nil
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if err := digits(); err != nil {
			return err
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if err := digits(); err != nil {
			return err
		}
	}
	return nil
}

// Raw skips one value and returns its bytes (aliasing the input).
func (s *Scanner) Raw() ([]byte, error) {
	s.ws()
	start := s.i
	if err := s.Skip(); err != nil {
		return nil, err
	}
	return s.b[start:s.i], nil
}

// Skip consumes and validates one value of any type.
func (s *Scanner) Skip() error { return s.skip(0) }

// maxDepth matches encoding/json's nesting limit, so Valid agrees with json.Valid.
const maxDepth = 10000

func (s *Scanner) skip(depth int) error {
	if depth >= maxDepth {
		return ErrSyntax
	}
	s.ws()
	if s.i >= len(s.b) {
		return ErrSyntax
	}
	switch c := s.b[s.i]; c {
	case '"':
		_, err := s.str()
		return err
	case '{':
		s.i++
		for n := 0; ; n++ {
			more, err := s.Next('}', n)
			if err != nil {
				return err
			}
			if !more {
				return nil
			}
			if _, err := s.Key(); err != nil {
				return err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
	case '[':
		s.i++
		for n := 0; ; n++ {
			more, err := s.Next(']', n)
			if err != nil {
				return err
			}
			if !more {
				return nil
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	default:
		return s.number()
	}
}

func (s *Scanner) lit(word string) error {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return nil
	}
	return ErrSyntax
}

// End checks that only whitespace remains.
func (s *Scanner) End() error {
	s.ws()
	if s.i != len(s.b) {
		return ErrSyntax
	}
	return nil
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

// Valid reports whether b is one valid JSON value (surrounding whitespace
// allowed), like encoding/json.Valid.
func Valid(b []byte) bool {
	var s Scanner
	s.Reset(b)
	return s.Skip() == nil && s.End() == nil
}
