package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestValidateNamesTheField(t *testing.T) {
	s := Object([]string{"command"}, map[string]*Schema{
		"command": String("shell command"),
		"timeout": Integer("ms", 1, 600000),
		"verbose": Boolean("v"),
	})
	cases := map[string]string{
		`{"command": 5}`:                    `field "command": expected a string, got a number`,
		`{}`:                                `field "command": required`,
		`{"command":"ls","timeout":"x"}`:    `field "timeout": expected an integer`,
		`{"command":"ls","timeout":1.5}`:    `field "timeout": expected an integer, got 1.5`,
		`{"command":"ls","timeout":700000}`: `field "timeout": must be at most`,
		`{"command":"ls","comand":"x"}`:     `field "comand": unknown field`,
		`[1]`:                               `expected an object, got an array`,
		`{"command":`:                       `not valid JSON`,
		`{"command":"ls","verbose":"yes"}`:  `field "verbose": expected a boolean`,
	}
	for in, want := range cases {
		err := s.Validate([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
	if err := s.Validate([]byte(`{"command":"ls","timeout":1000,"verbose":null}`)); err != nil {
		t.Fatal(err)
	}
}

func TestMarshalIsJSONSchema(t *testing.T) {
	b, err := json.Marshal(Object([]string{"a"}, map[string]*Schema{"a": String("x")}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"a":{"type":"string","description":"x"}},"required":["a"],"additionalProperties":false}`
	if string(b) != want {
		t.Fatalf("got %s", b)
	}
}

func TestNilSchemaIsAnObjectWithNoFields(t *testing.T) {
	var s *Schema
	if err := s.Validate([]byte(`{}`)); err != nil {
		t.Fatalf("nil schema refused an empty object: %v", err)
	}
	if err := s.Validate(nil); err != nil {
		t.Fatalf("nil schema refused an empty input: %v", err)
	}
	if err := s.Validate([]byte(`{"anything": 1}`)); err == nil || !strings.Contains(err.Error(), "anything") {
		t.Fatalf("nil schema: %v, want the unknown field named", err)
	}
	if err := s.Validate([]byte(`[1]`)); err == nil {
		t.Fatal("nil schema accepted an array")
	}
}
