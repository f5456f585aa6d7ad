package api

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
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
		if out, ok := appendFloat(b, x); ok {
			return out, nil
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
		return appendLocationRef(b, x), nil
	case *wire.ModelRef:
		if x == nil {
			return append(b, "null"...), nil
		}
		return appendModelRef(b, *x), nil
	case wire.ModelRef:
		return appendModelRef(b, x), nil
	case wire.Prompt:
		if out, ok := appendPrompt(b, x); ok {
			return out, nil
		}
	case wire.Tokens:
		if out, ok := appendTokens(b, x); ok {
			return out, nil
		}
	case wire.ErrorDetail:
		return appendErrorDetail(b, x), nil
	case []wire.ToolContent:
		return appendToolContents(b, x), nil
	case wire.PermissionSource:
		return appendPermissionSource(b, x), nil
	case json.RawMessage:
		if x == nil {
			return append(b, "null"...), nil // RawMessage.MarshalJSON's nil
		}
		if plainJSON(x) && json.Valid(x) {
			return append(b, x...), nil
		}
	case []any:
		if out, ok := appendAnys(b, x); ok {
			return out, nil
		}
	case nil:
		return append(b, "null"...), nil
	}
	// Anything else, and the cases above that need json.Marshal's exact
	// error or rewriting (non-finite floats, raw JSON with spaces or
	// HTML-sensitive characters), as json.Marshal writes it in a map.
	j, err := marshalFallback(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// marshalFallback is appendValue's json.Marshal; tests count its calls to
// check that the common values take the hand-written path.
var marshalFallback = json.Marshal

// appendFloat writes f as encoding/json's float64 encoder does: %f
// between 1e-6 and 1e21, else the shortest exponent form without a leading
// zero in a negative exponent (1e-07 becomes 1e-7). It reports false for
// NaN and infinities, which json.Marshal refuses; callers then fall back to
// it for the exact error.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b, true
}

// The wire structs below are written in declaration order with their
// omitempty rules, as encoding/json writes a struct. encode_test.go fills
// every exported field by reflection and compares with json.Marshal, so a
// field added to one of them fails the test until it is written here.

func appendLocationRef(b []byte, l wire.LocationRef) []byte {
	b = append(b, `{"directory":`...)
	b = appendString(b, l.Directory)
	if l.WorkspaceID != "" {
		b = append(b, `,"workspaceID":`...)
		b = appendString(b, l.WorkspaceID)
	}
	return append(b, '}')
}

func appendModelRef(b []byte, m wire.ModelRef) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, m.ID)
	b = append(b, `,"providerID":`...)
	b = appendString(b, m.ProviderID)
	if m.Variant != "" {
		b = append(b, `,"variant":`...)
		b = appendString(b, m.Variant)
	}
	return append(b, '}')
}

func appendErrorDetail(b []byte, e wire.ErrorDetail) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, e.Type)
	b = append(b, `,"message":`...)
	b = appendString(b, e.Message)
	if e.Kind != "" {
		b = append(b, `,"kind":`...)
		b = appendString(b, e.Kind)
	}
	return append(b, '}')
}

func appendPermissionSource(b []byte, s wire.PermissionSource) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, s.Type)
	b = append(b, `,"messageID":`...)
	b = appendString(b, s.MessageID)
	b = append(b, `,"callID":`...)
	b = appendString(b, s.CallID)
	return append(b, '}')
}

func appendToolContents(b []byte, cs []wire.ToolContent) []byte {
	if cs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, c := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = appendString(b, c.Type)
		b = append(b, `,"text":`...)
		b = appendString(b, c.Text)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendTokens reports false on a float json.Marshal refuses.
func appendTokens(b []byte, t wire.Tokens) ([]byte, bool) {
	for _, m := range [...]struct {
		key string
		f   float64
	}{{`{"input":`, t.Input}, {`,"output":`, t.Output}, {`,"reasoning":`, t.Reasoning}, {`,"cache":{"read":`, t.Cache.Read}, {`,"write":`, t.Cache.Write}} {
		b = append(b, m.key...)
		var ok bool
		if b, ok = appendFloat(b, m.f); !ok {
			return b, false
		}
	}
	return append(b, '}', '}'), true
}

func appendPrompt(b []byte, p wire.Prompt) ([]byte, bool) {
	b = append(b, `{"text":`...)
	b = appendString(b, p.Text)
	if len(p.Files) > 0 {
		b = append(b, `,"files":[`...)
		for i, f := range p.Files {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendFileAttachment(b, f); !ok {
				return b, false
			}
		}
		b = append(b, ']')
	}
	if len(p.Agents) > 0 {
		b = append(b, `,"agents":[`...)
		for i, a := range p.Agents {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendString(b, a.Name)
			var ok bool
			if b, ok = appendPromptSource(b, a.Source); !ok {
				return b, false
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

func appendFileAttachment(b []byte, f wire.FileAttachment) ([]byte, bool) {
	b = append(b, `{"uri":`...)
	b = appendString(b, f.URI)
	for _, kv := range [...]struct{ k, v string }{{`,"mime":`, f.Mime}, {`,"name":`, f.Name}, {`,"description":`, f.Description}} {
		if kv.v != "" {
			b = append(b, kv.k...)
			b = appendString(b, kv.v)
		}
	}
	b, ok := appendPromptSource(b, f.Source)
	return append(b, '}'), ok
}

// appendPromptSource writes the omitempty `,"source":{...}` member of an
// attachment when s is set.
func appendPromptSource(b []byte, s *wire.PromptSource) ([]byte, bool) {
	if s == nil {
		return b, true
	}
	b = append(b, `,"source":{"start":`...)
	b, ok1 := appendFloat(b, s.Start)
	b = append(b, `,"end":`...)
	b, ok2 := appendFloat(b, s.End)
	b = append(b, `,"text":`...)
	b = appendString(b, s.Text)
	return append(b, '}'), ok1 && ok2
}

// appendAnys writes a decoded JSON array (unknown events' payloads); false
// when an element needs json.Marshal.
func appendAnys(b []byte, xs []any) ([]byte, bool) {
	if xs == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendValue(b, x); err != nil {
			return b, false
		}
	}
	return append(b, ']'), true
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

// plainByte marks the bytes encoding/json copies as they are in a string:
// ASCII that is not a control character, quote, backslash or HTML-sensitive
// <, > or &. Bytes from 0x80 need the UTF-8 check, so they are not plain.
// appendString skips runs of them with one table load per byte: it is most
// of the encoders' time (user CPU on realistic keys and ids 0.80 → 0.53 s
// per 35M strings against the chain of comparisons).
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendString quotes s exactly as encoding/json does with HTML escaping.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendStringBody(b, s)
	return append(b, '"')
}

// appendStringBody writes s escaped, without the quotes. Escaping works
// rune by rune, so the bodies of parts joined at ASCII bytes concatenate to
// the body of the joined string (an invalid sequence cut short by ASCII is
// replaced the same either way).
func appendStringBody(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		for i < len(s) && plainByte[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
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
	return append(b, s[start:]...)
}

// appendDurableEvent appends toEvent(env, now) encoded as appendEvent would,
// with the data written in place.
func appendDurableEvent(b []byte, env messages.Envelope, now time.Time) []byte {
	// The id is eventID's, written in place instead of built as a string.
	b = append(b, `{"id":"evt_`...)
	b = appendStringBody(b, strings.TrimPrefix(env.SessionID, "ses_"))
	b = append(b, '_')
	b = strconv.AppendInt(b, env.Seq, 10)
	b = append(b, `","type":`...)
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
