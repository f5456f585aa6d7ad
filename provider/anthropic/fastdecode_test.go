package anthropic

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/provider/internal/jsonscan"
)

// TestFastDecodeMatchesEncodingJSON decodes every event of every transcript
// both ways; whenever the fast path accepts an event it must agree exactly.
func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.sse")
	n := 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var sc jsonscan.Scanner
			var fast, slow event
			fok := decodeEventFast(&sc, []byte(data), &fast)
			serr := json.Unmarshal([]byte(data), &slow)
			if fok && serr != nil {
				t.Errorf("%s: fast path accepted what encoding/json refuses: %s", f, data)
			}
			if fok {
				n++
				// The exported fields, pointees included (the fast path
				// points them into the event's own store).
				fb, _ := json.Marshal(fast)
				sb, _ := json.Marshal(slow)
				if !bytes.Equal(fb, sb) {
					t.Errorf("%s: event %s\nfast %s\nslow %s", f, data, fb, sb)
				}
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d events took the fast path", n)
	}
}
