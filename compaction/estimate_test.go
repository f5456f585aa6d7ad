package compaction

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"image/png"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/provider"
)

func TestTextTokensFollowsPreTokenizerRuns(t *testing.T) {
	cases := []struct {
		s    string
		want int
	}{
		{"", 0},
		{"abcd", 1},
		{"hello world", 2},                      // the space belongs to the word
		{strings.Repeat("x", 4000), 667},        // a long letter run: 6 letters a token
		{"12345", 2},                            // digits: 3 a token
		{`{"id":"c1"}`, 6},                      // {" id ":" c 1 "}: punctuation runs merge
		{"  indented", 3},                       // indentation, then an 8-letter word
		{"x\n\n    y", 3},                       // a line break run with its indentation
		{"héllo", 3},                            // h, é (half), llo
		{"日本語のテキスト", 8},                         // one token per CJK rune
		{"🙂🙂", 2},                               // four-byte runes
		{"2026-11-25T22:32:22Z status=200", 16}, // logs: denser than 4 bytes a token
	}
	for _, c := range cases {
		if got := TextTokens(c.s); got != c.want {
			t.Errorf("TextTokens(%q) = %d, want %d", c.s, got, c.want)
		}
	}
}

func TestEstimateCountsSystemHistoryAndTools(t *testing.T) {
	base := &provider.Request{Model: provider.ModelRef{Provider: "p", Model: "m"}}
	empty := Estimate(base)
	if empty != 0 {
		t.Fatalf("empty request: %d", empty)
	}
	add := func(name string, mut func(r *provider.Request), atLeast int) {
		t.Helper()
		r := *base
		mut(&r)
		if got := Estimate(&r); got < atLeast {
			t.Errorf("%s: estimate %d, want at least %d", name, got, atLeast)
		}
	}
	text := strings.Repeat("word ", 1000) // 1000 tokens
	add("system", func(r *provider.Request) { r.System = text }, 1000)
	add("user text", func(r *provider.Request) { r.Messages = []provider.Message{{Role: provider.RoleUser, Text: text}} }, 1000)
	add("reasoning", func(r *provider.Request) {
		r.Messages = []provider.Message{{Role: provider.RoleAssistant, Reasoning: []provider.Reasoning{{Text: text}}}}
	}, 1000)
	add("tool call args", func(r *provider.Request) {
		args, _ := json.Marshal(map[string]string{"content": text})
		r.Messages = []provider.Message{{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "c", Name: "write", Args: args}}}}
	}, 1000)
	add("tool result", func(r *provider.Request) {
		r.Messages = []provider.Message{{Role: provider.RoleTool, ToolResult: &provider.ToolResult{CallID: "c", Output: text}}}
	}, 1000)
	add("tool definitions", func(r *provider.Request) {
		r.Tools = []provider.Tool{{Name: "bash", Description: text, Schema: json.RawMessage(`{"type":"object"}`)}}
	}, 1000)
}

// pngOf is a PNG of w×h whose header DecodeConfig reads, padded with pad
// bytes of noise (the image data is never decoded, so it need not be valid;
// encoding real multi-megapixel images would dominate the test's time).
func pngOf(t testing.TB, w, h, pad int) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 17)
	copy(ihdr, "IHDR")
	binary.BigEndian.PutUint32(ihdr[4:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[8:], uint32(h))
	ihdr[12], ihdr[13] = 8, 6 // 8-bit RGBA
	binary.Write(&b, binary.BigEndian, uint32(13))
	b.Write(ihdr)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(ihdr))
	r := rand.New(rand.NewPCG(1, 2))
	for range pad {
		b.WriteByte(byte(r.IntN(256)))
	}
	if c, err := png.DecodeConfig(bytes.NewReader(b.Bytes())); err != nil || c.Width != w || c.Height != h {
		t.Fatalf("test PNG header: %v %+v", err, c)
	}
	return b.Bytes()
}

func TestImagesCostTheirDimensionsNotTheirBytes(t *testing.T) {
	big := pngOf(t, 1000, 1000, 4<<20) // 4 MiB, as a noisy photo would be
	if len(big) < 1_000_000 {
		t.Fatalf("noise PNG only %d bytes", len(big))
	}
	got := AttachmentTokens("image/png", big)
	// Anthropic: 1000·1000/750 = 1333 (+1); OpenAI: 768x768 → 4 tiles → 765.
	if got != 1334 {
		t.Fatalf("1000x1000 PNG: %d tokens, want 1334", got)
	}
	small := pngOf(t, 100, 50, 0)
	if got := AttachmentTokens("image/png", small); got != 255 { // OpenAI: 85 + 170·1 tile
		t.Fatalf("100x50 PNG: %d tokens, want 255", got)
	}
	if got := AttachmentTokens("image/png", []byte("not an image")); got != unknownImage {
		t.Fatalf("unreadable image: %d, want %d", got, unknownImage)
	}
	huge := pngOf(t, 4000, 3000, 0) // scaled down by both providers
	if got := AttachmentTokens("image/png", huge); got < 1000 || got > 1600 {
		t.Fatalf("4000x3000 PNG: %d tokens, want the scaled-down cost (1000..1600)", got)
	}
}

func TestWebPDimensionsAreReadFromTheHeader(t *testing.T) {
	// VP8X header: canvas width-1 and height-1 as 24-bit little endian.
	b := make([]byte, 30)
	copy(b, "RIFF")
	copy(b[8:], "WEBPVP8X")
	w, h := 800, 600
	b[24], b[25], b[26] = byte(w-1), byte((w-1)>>8), byte((w-1)>>16)
	b[27], b[28], b[29] = byte(h-1), byte((h-1)>>8), byte((h-1)>>16)
	gw, gh, ok := imageSize(b)
	if !ok || gw != w || gh != h {
		t.Fatalf("VP8X: %dx%d %v", gw, gh, ok)
	}
	// VP8L: 14-bit width-1 and height-1 after the signature byte.
	l := make([]byte, 30)
	copy(l, "RIFF")
	copy(l[8:], "WEBPVP8L")
	binary.LittleEndian.PutUint32(l[21:], uint32(w-1)|uint32(h-1)<<14)
	if gw, gh, ok := imageSize(l); !ok || gw != w || gh != h {
		t.Fatalf("VP8L: %dx%d %v", gw, gh, ok)
	}
}

func TestPDFsCostTheirPages(t *testing.T) {
	pdf := []byte("%PDF-1.7\n1 0 obj << /Type /Pages /Count 2 >>\n2 0 obj << /Type /Page >>\n3 0 obj <</Type/Page>>\n" + strings.Repeat("x", 100000))
	if got := AttachmentTokens("application/pdf", pdf); got != 2*pageTokens {
		t.Fatalf("2-page PDF: %d tokens, want %d", got, 2*pageTokens)
	}
	if got := AttachmentTokens("application/pdf", []byte("garbage!")); got != 2 {
		t.Fatalf("unparseable PDF: %d, want bytes/4", got)
	}
	if got := AttachmentTokens("text/plain", []byte(strings.Repeat("a", 400))); got != 100 {
		t.Fatalf("text attachment: %d", got)
	}
}
