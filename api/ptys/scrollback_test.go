package ptys

import (
	"bytes"
	"testing"
)

func TestScrollbackKeepsTheLastBytesByOffset(t *testing.T) {
	s := newScrollback(8)
	s.write([]byte("abcde"))
	if got, behind := s.read(0, 100); behind || string(got) != "abcde" {
		t.Fatalf("read(0) = %q, %v", got, behind)
	}
	s.write([]byte("fghij")) // wraps: keeps "cdefghij"
	if s.start() != 2 || s.end != 10 {
		t.Fatalf("start %d end %d, want 2 and 10", s.start(), s.end)
	}
	if _, behind := s.read(1, 100); !behind {
		t.Fatal("read(1) after byte 1 was dropped: want behind")
	}
	if got, _ := s.read(2, 100); string(got) != "cdefghij" {
		t.Fatalf("read(2) = %q", got)
	}
	if got, _ := s.read(5, 3); string(got) != "fgh" {
		t.Fatalf("read(5, 3) = %q", got)
	}
	if got, behind := s.read(10, 100); got != nil || behind {
		t.Fatalf("read at the end = %q, %v; want nothing", got, behind)
	}
}

func TestScrollbackWriteLargerThanTheRing(t *testing.T) {
	s := newScrollback(4)
	s.write([]byte("0123456789"))
	if s.start() != 6 || s.end != 10 {
		t.Fatalf("start %d end %d, want 6 and 10", s.start(), s.end)
	}
	if got, _ := s.read(6, 10); string(got) != "6789" {
		t.Fatalf("read(6) = %q", got)
	}
}

func TestScrollbackManySmallWritesReadBackInOrder(t *testing.T) {
	s := newScrollback(7)
	var all []byte
	for i := range 50 {
		p := []byte{byte('a' + i%26), byte('A' + i%26), '.'}
		all = append(all, p...)
		s.write(p)
		from := s.start()
		got, behind := s.read(from, 100)
		if behind || !bytes.Equal(got, all[from:]) {
			t.Fatalf("after write %d: read(%d) = %q, want %q", i, from, got, all[from:])
		}
	}
}
