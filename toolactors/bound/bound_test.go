package bound

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestTextWithinLimitIsUnchanged(t *testing.T) {
	for _, text := range []string{"", "x", lines(2000), strings.Repeat("a", 50*1024)} {
		r := Preview(text, Limits{}, "/p/tool_x")
		if r.Truncated || r.Text != text {
			t.Fatalf("text of %d bytes changed (truncated=%v)", len(text), r.Truncated)
		}
	}
}

func TestOverLineLimitKeepsHeadTailAndNamesFile(t *testing.T) {
	text := lines(2001)
	r := Preview(text, Limits{}, "/data/tool-output/tool_abc")
	if !r.Truncated {
		t.Fatal("2001 lines not truncated")
	}
	if !strings.HasPrefix(r.Text, "line 1\n") || !strings.HasSuffix(r.Text, "line 2001\n") {
		t.Fatalf("head or tail lost: %q ... %q", r.Text[:20], r.Text[len(r.Text)-20:])
	}
	if !strings.Contains(r.Text, "/data/tool-output/tool_abc") {
		t.Fatal("marker does not name the managed file")
	}
	if s := Measure(r.Text); s.Lines > 2000 || s.Bytes > 50*1024 {
		t.Fatalf("preview over limit: %+v", s)
	}
}

func TestOverByteLimitWithOneHugeLineCutsAtRuneBoundary(t *testing.T) {
	text := strings.Repeat("é", 40*1024) // 80 KiB, one line
	r := Preview(text, Limits{}, "")
	if !r.Truncated || !utf8.ValidString(r.Text) {
		t.Fatalf("truncated=%v valid=%v", r.Truncated, utf8.ValidString(r.Text))
	}
	if len(r.Text) > 50*1024 {
		t.Fatalf("preview %d bytes", len(r.Text))
	}
	if !strings.Contains(r.Text, "could not be saved") {
		t.Fatal("lossy preview does not say so")
	}
	if r.Omitted.Bytes+len(r.Text) < len(text) {
		t.Fatalf("omitted %d bytes does not account for the cut", r.Omitted.Bytes)
	}
}

func TestCustomLimits(t *testing.T) {
	r := Preview(lines(100), Limits{MaxLines: 10, MaxBytes: 1 << 20}, "/f")
	if s := Measure(r.Text); s.Lines > 10 {
		t.Fatalf("%d lines: %q", s.Lines, r.Text)
	}
	if !strings.HasPrefix(r.Text, "line 1\n") || !strings.HasSuffix(r.Text, "line 100\n") {
		t.Fatalf("head/tail lost: %q", r.Text)
	}
}
