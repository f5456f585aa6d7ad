package spanstore

import (
	"fmt"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
	"go.opentelemetry.io/otel/attribute"
)

// Limits that keep one row inside a MySQL BLOB (64 KiB) whatever a span holds.
const (
	maxStringValue = 4096  // bytes kept of one string attribute value
	maxEvents      = 32    // events kept per span
	maxBlob        = 60000 // encoded attributes or events above this are reduced
	maxName        = 255   // characters of a span name (VARCHAR(255))
)

// storedAttr is one attribute as written: the type travels with the value so
// that an int64 reads back as an int64 (msgpack alone would not say).
type storedAttr struct {
	Key   string             `msgpack:"k"`
	Type  string             `msgpack:"t"`
	Value msgpack.RawMessage `msgpack:"v"`
}

type storedEvent struct {
	Name   string       `msgpack:"n"`
	TimeNs int64        `msgpack:"ts"`
	Attrs  []storedAttr `msgpack:"a,omitempty"`
}

func encodeAttrs(kvs []attribute.KeyValue) ([]storedAttr, error) {
	out := make([]storedAttr, 0, len(kvs))
	for _, kv := range kvs {
		var v any
		switch kv.Value.Type() {
		case attribute.BOOL:
			v = kv.Value.AsBool()
		case attribute.INT64:
			v = kv.Value.AsInt64()
		case attribute.FLOAT64:
			v = kv.Value.AsFloat64()
		case attribute.STRING:
			v = truncate(kv.Value.AsString(), maxStringValue)
		case attribute.BOOLSLICE:
			v = kv.Value.AsBoolSlice()
		case attribute.INT64SLICE:
			v = kv.Value.AsInt64Slice()
		case attribute.FLOAT64SLICE:
			v = kv.Value.AsFloat64Slice()
		case attribute.STRINGSLICE:
			ss := kv.Value.AsStringSlice()
			for i := range ss {
				ss[i] = truncate(ss[i], maxStringValue)
			}
			v = ss
		default:
			// Types added to OpenTelemetry later are kept as their text form.
			v = truncate(kv.Value.Emit(), maxStringValue)
		}
		raw, err := msgpack.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode attribute %s: %w", kv.Key, err)
		}
		typ := kv.Value.Type().String()
		if kv.Value.Type() > attribute.STRINGSLICE {
			typ = attribute.STRING.String()
		}
		out = append(out, storedAttr{Key: string(kv.Key), Type: typ, Value: raw})
	}
	return out, nil
}

func decodeAttrs(in []storedAttr) (map[string]any, error) {
	out := make(map[string]any, len(in))
	for _, a := range in {
		var err error
		switch a.Type {
		case "BOOL":
			var v bool
			err = msgpack.Unmarshal(a.Value, &v)
			out[a.Key] = v
		case "INT64":
			var v int64
			err = msgpack.Unmarshal(a.Value, &v)
			out[a.Key] = v
		case "FLOAT64":
			var v float64
			err = msgpack.Unmarshal(a.Value, &v)
			out[a.Key] = v
		case "STRING":
			var v string
			err = msgpack.Unmarshal(a.Value, &v)
			out[a.Key] = v
		case "BOOLSLICE":
			var v []bool
			err = msgpack.Unmarshal(a.Value, &v)
			out[a.Key] = v
		case "INT64SLICE":
			var v []int64
			err = msgpack.Unmarshal(a.Value, &v)
			out[a.Key] = v
		case "FLOAT64SLICE":
			var v []float64
			err = msgpack.Unmarshal(a.Value, &v)
			out[a.Key] = v
		case "STRINGSLICE":
			var v []string
			err = msgpack.Unmarshal(a.Value, &v)
			out[a.Key] = v
		default:
			err = fmt.Errorf("unknown attribute type %q", a.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", a.Key, err)
		}
	}
	return out, nil
}

// essential reports whether an attribute survives when a span's attributes
// are too large to store whole: the ones the tree shows.
func essential(key string) bool {
	return len(key) > 7 && key[:7] == "gen_ai." || key == "error.type"
}

// marshalAttrs encodes attributes for the attributes column, keeping only the
// essential ones if the whole set does not fit.
func marshalAttrs(kvs []attribute.KeyValue) ([]byte, error) {
	enc, err := encodeAttrs(kvs)
	if err != nil {
		return nil, err
	}
	b, err := msgpack.Marshal(enc)
	if err != nil || len(b) <= maxBlob {
		return b, err
	}
	kept := make([]attribute.KeyValue, 0, len(kvs)+1)
	for _, kv := range kvs {
		if essential(string(kv.Key)) {
			kept = append(kept, kv)
		}
	}
	kept = append(kept, attribute.Bool("sessionrt.attributes_truncated", true))
	if enc, err = encodeAttrs(kept); err != nil {
		return nil, err
	}
	return msgpack.Marshal(enc)
}

func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// truncateRunes keeps at most n characters (VARCHAR lengths count characters).
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
