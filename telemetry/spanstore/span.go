package spanstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Span is one stored span. Its JSON form (camelCase, as the HTTP API serves
// it) reads back into the same attribute types, so a client renders the same
// tree as the server.
type Span struct {
	SessionID    string    `json:"sessionId"`
	TraceID      string    `json:"traceId"`                // 32 hex digits
	SpanID       string    `json:"spanId"`                 // 16 hex digits
	ParentSpanID string    `json:"parentSpanId,omitempty"` // empty for a root span
	Name         string    `json:"name"`
	Kind         string    `json:"kind"`  // internal, server, client, producer, consumer
	Scope        string    `json:"scope"` // instrumentation scope (tracer) name
	Start        time.Time `json:"start"`
	End          time.Time `json:"end"`
	// StatusCode is "Unset", "Error" or "Ok".
	StatusCode    string `json:"statusCode"`
	StatusMessage string `json:"statusMessage,omitempty"`
	// Attributes hold bool, int64, float64, string or slices of those.
	Attributes map[string]any `json:"attributes,omitempty"`
	Events     []Event        `json:"events,omitempty"`
}

// Duration is End - Start.
func (s Span) Duration() time.Duration { return s.End.Sub(s.Start) }

// Event is a timestamped annotation on a span (such as a recorded error).
type Event struct {
	Name       string         `json:"name"`
	Time       time.Time      `json:"time"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// UnmarshalJSON restores attribute types: whole numbers become int64, other
// numbers float64, and uniform arrays []string, []int64, []float64 or []bool.
func (s *Span) UnmarshalJSON(b []byte) error {
	type plain Span
	var p plain
	if err := decodeNumbers(b, &p); err != nil {
		return err
	}
	var err error
	if p.Attributes, err = normalizeAttrs(p.Attributes); err != nil {
		return fmt.Errorf("span %s: %w", p.SpanID, err)
	}
	for i := range p.Events {
		if p.Events[i].Attributes, err = normalizeAttrs(p.Events[i].Attributes); err != nil {
			return fmt.Errorf("span %s event %s: %w", p.SpanID, p.Events[i].Name, err)
		}
	}
	*s = Span(p)
	return nil
}

func decodeNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

func normalizeAttrs(m map[string]any) (map[string]any, error) {
	for k, v := range m {
		n, err := normalize(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", k, err)
		}
		m[k] = n
	}
	return m, nil
}

func normalize(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		return number(x)
	case []any:
		return normalizeSlice(x)
	case string, bool:
		return x, nil
	}
	return nil, fmt.Errorf("unsupported JSON value %v of type %T", v, v)
}

func number(n json.Number) (any, error) {
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	f, err := n.Float64()
	if err != nil {
		return nil, fmt.Errorf("number %s: %w", n, err)
	}
	return f, nil
}

// normalizeSlice types an array by its elements: attribute slices are uniform.
// An array mixing whole and fractional numbers is []float64.
func normalizeSlice(xs []any) (any, error) {
	if len(xs) == 0 {
		return []string{}, nil
	}
	switch xs[0].(type) {
	case string:
		out := make([]string, len(xs))
		for i, x := range xs {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("mixed array: %v", xs)
			}
			out[i] = s
		}
		return out, nil
	case bool:
		out := make([]bool, len(xs))
		for i, x := range xs {
			b, ok := x.(bool)
			if !ok {
				return nil, fmt.Errorf("mixed array: %v", xs)
			}
			out[i] = b
		}
		return out, nil
	case json.Number:
		ints := make([]int64, len(xs))
		allInt := true
		for i, x := range xs {
			n, ok := x.(json.Number)
			if !ok {
				return nil, fmt.Errorf("mixed array: %v", xs)
			}
			v, err := n.Int64()
			if err != nil {
				allInt = false
				break
			}
			ints[i] = v
		}
		if allInt {
			return ints, nil
		}
		floats := make([]float64, len(xs))
		for i, x := range xs {
			n, ok := x.(json.Number)
			if !ok {
				return nil, fmt.Errorf("mixed array: %v", xs)
			}
			f, err := n.Float64()
			if err != nil {
				return nil, fmt.Errorf("number %s: %w", n, err)
			}
			floats[i] = f
		}
		return floats, nil
	}
	return nil, fmt.Errorf("unsupported array element %v of type %T", xs[0], xs[0])
}
