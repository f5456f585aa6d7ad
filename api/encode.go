package api

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
)

// The event streams encode every event of every session, so their JSON is
// written here without reflection for the common shapes. Each function
// produces exactly the bytes encoding/json.Marshal would (HTML-sensitive
// characters escaped, map keys sorted); encode_test.go checks that over
// every event type. Anything it does not know goes through json.Marshal.

// field is one key of an event's data object; fields encode as the
// map[string]any with those keys would.
type field struct {
	k string
	v any
}

type fields []field

// appendFields encodes d like json.Marshal of the equivalent map: keys in
// sorted order (d is sorted in place; it is small, so by insertion).
func appendFields(b []byte, d fields) ([]byte, error) {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j].k < d[j-1].k; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
	b = append(b, '{')
	for i, f := range d {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, f.k)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, f.v); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendMap(b []byte, d map[string]any) ([]byte, error) {
	var arr [16]string
	keys := arr[:0]
	for k := range d {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, d[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return appendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case float64:
		// encoding/json uses %f in this range and an exponent outside it.
		if a := math.Abs(x); a == 0 || (a >= 1e-6 && a < 1e21) {
			return strconv.AppendFloat(b, x, 'f', -1, 64), nil
		}
	case []string:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		return append(b, ']'), nil
	case map[string]any:
		if x == nil {
			return append(b, "null"...), nil
		}
		return appendMap(b, x)
	case wire.LocationRef:
		if enc, ok := locationRefPlain(x); ok {
			b = append(b, `{"directory":`...)
			b = appendString(b, enc)
			return append(b, '}'), nil
		}
	}
	// Nested wire types and raw JSON: json.Marshal compacts and escapes
	// them exactly as it would inside the map.
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// locationRefPlain reports whether a LocationRef is just its directory, so
// the fast path writes it; other fields go through json.Marshal.
func locationRefPlain(l wire.LocationRef) (string, bool) {
	if (l == wire.LocationRef{Directory: l.Directory}) {
		return l.Directory, true
	}
	return "", false
}

// appendEvent encodes an Event like json.Marshal. Data must be compact JSON
// with HTML-sensitive characters escaped (what json.Marshal produced), as
// every Data of this package is; anything else is compacted by json.Marshal.
func appendEvent(b []byte, ev wire.Event) ([]byte, error) {
	if len(ev.Data) == 0 || !plainJSON(ev.Data) {
		j, err := json.Marshal(ev)
		if err != nil {
			return b, err
		}
		return append(b, j...), nil
	}
	b = append(b, `{"id":`...)
	b = appendString(b, ev.ID)
	b = append(b, `,"type":`...)
	b = appendString(b, ev.Type)
	if d := ev.Durable; d != nil {
		b = append(b, `,"durable":{"aggregateID":`...)
		b = appendString(b, d.AggregateID)
		b = append(b, `,"seq":`...)
		b = strconv.AppendInt(b, d.Seq, 10)
		b = append(b, `,"version":`...)
		b = strconv.AppendInt(b, int64(d.Version), 10)
		b = append(b, '}')
	}
	b = append(b, `,"data":`...)
	b = append(b, ev.Data...)
	return append(b, '}'), nil
}

// plainJSON is a cheap check that raw JSON needs no rewriting by
// json.Marshal: no whitespace outside strings (json.Marshal's own output
// has none) and no raw HTML-sensitive or non-ASCII-special bytes. It does
// not validate; our Data always comes from json.Marshal.
func plainJSON(raw []byte) bool {
	in := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2: // U+2028, U+2029 are escaped by json.Marshal
			if i+2 < len(raw) && raw[i+1] == 0x80 && (raw[i+2] == 0xA8 || raw[i+2] == 0xA9) {
				return false
			}
		case c >= utf8.RuneSelf:
			// other multi-byte UTF-8 stays as is
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\n' || c == '\r' || c == '\t'):
			return false
		}
	}
	return utf8.Valid(raw)
}

const hexDigits = "0123456789abcdef"

// appendString quotes s exactly as encoding/json does with HTML escaping.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
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
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendDurableEvent appends toEvent(env, now) encoded as appendEvent would,
// with the data written in place.
func appendDurableEvent(b []byte, env messages.Envelope, now time.Time) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, eventID(env.SessionID, env.Seq))
	b = append(b, `,"type":`...)
	b = appendString(b, eventName(env.Type))
	b = append(b, `,"durable":{"aggregateID":`...)
	b = appendString(b, env.SessionID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, env.Seq, 10)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, int64(env.Type.Version), 10)
	b = append(b, `},"data":`...)
	b = appendEventData(b, env, now)
	return append(b, '}')
}
