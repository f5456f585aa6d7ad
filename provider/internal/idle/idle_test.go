package idle

import (
	"io"
	"testing"
	"time"
)

func TestSilentBodyIsClosedAfterTheTimeout(t *testing.T) {
	pr, pw := io.Pipe()
	b := Wrap(pr, 50*time.Millisecond)
	go pw.Write([]byte("x"))
	buf := make([]byte, 8)
	if n, err := b.Read(buf); n != 1 || err != nil {
		t.Fatalf("first read %d %v", n, err)
	}
	done := make(chan error, 1)
	go func() { _, err := b.Read(buf); done <- err }()
	select {
	case err := <-done:
		if err == nil || !b.Expired() {
			t.Fatalf("read after silence = %v, expired %v", err, b.Expired())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("silent body still blocking after 5s")
	}
}

func TestZeroTimeoutNeverExpires(t *testing.T) {
	pr, pw := io.Pipe()
	b := Wrap(pr, 0)
	go func() { pw.Write([]byte("ab")); pw.Close() }()
	got, err := io.ReadAll(b)
	if err != nil || string(got) != "ab" || b.Expired() {
		t.Fatalf("%q %v %v", got, err, b.Expired())
	}
	b.Close()
}
