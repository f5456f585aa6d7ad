package sse

import (
	"errors"
	"io"
	"runtime"
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

// A released buffer comes back with unread bytes of the previous body still in
// it; the next Reader must see only its own body.
func TestReleasedBufferCarriesNothingOver(t *testing.T) {
	first := NewReader(strings.NewReader("data: a\n\ndata: leftover\n\n"))
	if ev, err := first.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("first: %q %v", ev.Data, err)
	}
	first.Release()
	first.Release() // idempotent
	if _, err := first.Next(); !errors.Is(err, ErrReleased) {
		t.Fatalf("Next after Release: %v", err)
	}
	for range 20 { // the pool may hand back any released buffer
		evs, err := read(t, "data: b\n\n")
		if !errors.Is(err, io.EOF) || len(evs) != 1 || string(evs[0].Data) != "b" {
			t.Fatalf("events %q, err %v", evs, err)
		}
	}
}

// Lines longer than the pooled buffer are still joined and still bounded.
func TestPooledReaderKeepsLineLimit(t *testing.T) {
	r := NewReader(strings.NewReader("data: " + strings.Repeat("x", MaxEvent+1) + "\n\n"))
	defer r.Release()
	if _, err := r.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v", err)
	}
}

// Each stream used to allocate its own 16 KiB buffer.
func TestReleasedBufferIsReused(t *testing.T) {
	cycle := func() {
		r := NewReader(strings.NewReader("data: x\n\n"))
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	cycle()
	const runs = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		cycle()
	}
	runtime.ReadMemStats(&after)
	// The race detector drops a quarter of the pool's Puts, hence an average.
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per >= bufSize/2 {
		t.Fatalf("%d bytes allocated per stream", per)
	}
}

func BenchmarkReaderPerStream(b *testing.B) {
	body := strings.Repeat("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n", 20) + "data: [DONE]\n\n"
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(strings.NewReader(body))
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
		r.Release()
	}
}

// The spec says to ignore unknown fields, but llama.cpp builds of 2025 report a
// failed stream only in one ("error: {…}" then "data: [DONE]"): the reader keeps
// them for the adapter, and an event made only of them is still dispatched.
func TestUnknownFieldLinesAreKeptWithTheirEvent(t *testing.T) {
	r := NewReader(strings.NewReader("error: {\"code\":400}\n\ndata: [DONE]\n\nevent: x\nfoo:bar\ndata: 1\nbaz\n\n"))
	ev, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := ev.Field("error"); !ok || string(v) != `{"code":400}` || len(ev.Data) != 0 || len(ev.Fields) != 1 {
		t.Fatalf("event %+v", ev)
	}
	if ev, err = r.Next(); err != nil || string(ev.Data) != "[DONE]" || ev.Fields != nil {
		t.Fatalf("event %+v, err %v", ev, err)
	}
	ev, err = r.Next()
	if err != nil || string(ev.Data) != "1" || len(ev.Fields) != 2 ||
		string(ev.Fields[0].Name) != "foo" || string(ev.Fields[0].Value) != "bar" ||
		string(ev.Fields[1].Name) != "baz" || len(ev.Fields[1].Value) != 0 {
		t.Fatalf("event %+v, err %v", ev, err)
	}
	if _, ok := ev.Field("error"); ok {
		t.Fatal("an absent field was found")
	}
}
