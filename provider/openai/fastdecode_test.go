package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/provider/internal/jsonscan"
)

// TestFastDecodeMatchesEncodingJSON decodes every chunk of every transcript
// both ways; whenever the fast path accepts a chunk it must agree exactly.
func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.sse")
	n := 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var sc jsonscan.Scanner
			var fast, slow chunk
			fok := decodeChunkFast(&sc, []byte(data), &fast, true)
			serr := json.Unmarshal([]byte(data), &slow)
			if fok && serr != nil {
				t.Errorf("%s: fast path accepted what encoding/json refuses: %s", f, data)
			}
			if fok {
				n++
				if len(fast.Choices) == 0 {
					fast.Choices = nil // the fast path keeps the slice's capacity
				}
				if len(slow.Choices) == 0 {
					slow.Choices = nil
				}
				// The exported fields, pointees included (the fast path
				// points Usage into the chunk's own storage).
				fb, _ := json.Marshal(fast)
				sb, _ := json.Marshal(slow)
				if !bytes.Equal(fb, sb) {
					t.Errorf("%s: %s\nfast %s\nslow %s", f, data, fb, sb)
				}
			}
		}
	}
	if n < 30 {
		t.Fatalf("only %d chunks took the fast path", n)
	}
}
