package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func read(t *testing.T, src string) ([]Event, error) {
	t.Helper()
	r := NewReader(strings.NewReader(src))
	var evs []Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, Event{Name: append([]byte(nil), ev.Name...), Data: append([]byte(nil), ev.Data...)})
	}
}

func TestEventsWithNamesCommentsMultilineDataAndCRLF(t *testing.T) {
	src := ": keep-alive\n\nevent: a\ndata: one\ndata:two\n\r\ndata: x\r\n\r\n\n\nid: 7\nretry: 10\ndata: {}\n\n"
	evs, err := read(t, src)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("err = %v", err)
	}
	if len(evs) != 3 || string(evs[0].Name) != "a" || string(evs[0].Data) != "one\ntwo" || string(evs[1].Data) != "x" || string(evs[2].Data) != "{}" {
		t.Fatalf("events = %q", evs)
	}
}

func TestLinesLongerThanTheBufferAreJoined(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	evs, err := read(t, "data: "+long+"\n\n")
	if !errors.Is(err, io.EOF) || len(evs) != 1 || string(evs[0].Data) != long {
		t.Fatalf("err %v, %d events", err, len(evs))
	}
}

func TestEndOfBodyMidEventIsUnexpected(t *testing.T) {
	r := NewReader(strings.NewReader("data: a\n\ndata: {\"b"))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) || string(r.Partial()) != `data: {"b` {
		t.Fatalf("err %v partial %q", err, r.Partial())
	}
	r = NewReader(strings.NewReader("data: a\n"))
	if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("event without its blank line: err %v", err)
	}
}
