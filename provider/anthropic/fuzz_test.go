package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionrt/sessionrt/provider"
)

// FuzzStream feeds arbitrary bodies to the decoder: it must never panic, and
// every stream must end either with a finish part then io.EOF, or with a
// classified *provider.Error — never silently.
func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s := newStream(context.Background(), io.NopCloser(bytes.NewReader(body)))
		defer s.Close()
		var last provider.Part
		for i := 0; ; i++ {
			p, err := s.Next()
			if errors.Is(err, io.EOF) {
				if last.Kind != provider.PartFinish {
					t.Fatalf("EOF after %v, not after a finish part", last.Kind)
				}
				return
			}
			if err != nil {
				var pe *provider.Error
				if !errors.As(err, &pe) || pe.Kind == provider.KindUnknown {
					t.Fatalf("unclassified error %T: %v", err, err)
				}
				return
			}
			if p.Kind == provider.PartToolCall && !jsonValid(p.Args) {
				t.Fatalf("tool call with invalid JSON args %q", p.Args)
			}
			last = p
			if i > 1<<20 {
				t.Fatal("stream does not end")
			}
		}
	})
}

func jsonValid(b []byte) bool { return json.Valid(b) }
