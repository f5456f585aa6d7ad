package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
)

// Schema is one JSON Schema node.
type Schema struct {
	Type        string             `json:"type"`
	Description string             `json:"description,omitempty"`
	Properties  map[string]*Schema `json:"properties,omitempty"`
	Required    []string           `json:"required,omitempty"`
	Items       *Schema            `json:"items,omitempty"`
	Minimum     *float64           `json:"minimum,omitempty"`
	Maximum     *float64           `json:"maximum,omitempty"`
	Enum        []string           `json:"enum,omitempty"`
	// AdditionalProperties is always false for objects: a misspelled field is an error.
	AdditionalProperties *bool `json:"additionalProperties,omitempty"`
}

// Object builds an object schema; it forbids additional properties.
func Object(required []string, props map[string]*Schema) *Schema {
	f := false
	return &Schema{Type: "object", Properties: props, Required: required, AdditionalProperties: &f}
}

// String builds a string schema.
func String(desc string) *Schema { return &Schema{Type: "string", Description: desc} }

// Integer builds an integer schema with inclusive bounds.
func Integer(desc string, min, max float64) *Schema {
	return &Schema{Type: "integer", Description: desc, Minimum: &min, Maximum: &max}
}

// Boolean builds a boolean schema.
func Boolean(desc string) *Schema { return &Schema{Type: "boolean", Description: desc} }

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid tool input")

// FieldError names the field that is wrong.
type FieldError struct {
	Field  string // dotted path, "" for the whole input
	Reason string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return "invalid tool input: " + e.Reason
	}
	return fmt.Sprintf("invalid tool input: field %q: %s", e.Field, e.Reason)
}

func (e *FieldError) Unwrap() error { return ErrInvalid }

// Validate checks raw JSON against s. It returns a *FieldError for the first problem,
// fields visited in name order so the answer is deterministic. A nil schema (a tool
// that declares no input) is an object with no fields.
func (s *Schema) Validate(raw []byte) error {
	if s == nil {
		s = &Schema{Type: "object"}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}") // providers send an empty input for a call without arguments
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return &FieldError{Reason: "not valid JSON: " + err.Error()}
	}
	if d.More() {
		return &FieldError{Reason: "trailing data after the JSON value"}
	}
	return s.check("", v)
}

func (s *Schema) check(path string, v any) error {
	bad := func(format string, a ...any) error {
		return &FieldError{Field: path, Reason: fmt.Sprintf(format, a...)}
	}
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return bad("expected an object, got %s", kind(v))
		}
		for _, r := range s.Required {
			if x, ok := m[r]; !ok || x == nil {
				return &FieldError{Field: join(path, r), Reason: "required"}
			}
		}
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			ps, ok := s.Properties[k]
			if !ok {
				return &FieldError{Field: join(path, k), Reason: "unknown field"}
			}
			if m[k] == nil {
				continue // null means absent for optional fields
			}
			if err := ps.check(join(path, k), m[k]); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return bad("expected a string, got %s", kind(v))
		}
		if len(s.Enum) > 0 {
			for _, e := range s.Enum {
				if e == str {
					return nil
				}
			}
			return bad("must be one of %v, got %q", s.Enum, str)
		}
	case "integer", "number":
		n, ok := v.(json.Number)
		if !ok {
			return bad("expected %s, got %s", article(s.Type), kind(v))
		}
		f, err := n.Float64()
		if err != nil {
			return bad("not a number: %s", n)
		}
		if s.Type == "integer" && f != math.Trunc(f) {
			return bad("expected an integer, got %s", n)
		}
		if s.Minimum != nil && f < *s.Minimum {
			return bad("must be at least %v, got %s", *s.Minimum, n)
		}
		if s.Maximum != nil && f > *s.Maximum {
			return bad("must be at most %v, got %s", *s.Maximum, n)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return bad("expected a boolean, got %s", kind(v))
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return bad("expected an array, got %s", kind(v))
		}
		if s.Items != nil {
			for i, x := range a {
				if err := s.Items.check(fmt.Sprintf("%s[%d]", path, i), x); err != nil {
					return err
				}
			}
		}
	default:
		return bad("schema has unsupported type %q", s.Type)
	}
	return nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func article(t string) string {
	if t == "integer" {
		return "an integer"
	}
	return "a number"
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
