package anthropic

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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
				if !reflect.DeepEqual(fast, slow) {
					t.Errorf("%s: event %s\nfast %+v\nslow %+v", f, data, fast, slow)
				}
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d events took the fast path", n)
	}
}
