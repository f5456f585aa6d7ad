package compaction

import (
	"bytes"
	"encoding/binary"
	"image"
	_ "image/gif" // DecodeConfig of attached images: dimensions set their token cost
	_ "image/jpeg"
	_ "image/png"
	"math"
	"strings"

	"github.com/sessionrt/sessionrt/provider"
)

// Token estimation.
//
// A real tokenizer was measured and rejected: github.com/tiktoken-go/tokenizer
// (pure Go, embedded o200k/cl100k ranks, works offline) counts 1.6 MB/s on
// this machine — about 500 ms for a 200k-token request, a hundred times the
// 5 ms budget of a pre-turn check — and adds ~16 MB of generated Go source to
// every build. Anthropic publishes no tokenizer at all. So the estimate is a
// calibrated byte heuristic for every model family:
//
//   - ASCII and two-byte UTF-8 text: 4 bytes a token (tiktoken's o200k gives
//     3.98 bytes/token on code-and-prose text);
//   - three- and four-byte runes (CJK, emoji): one token each, where bytes/4
//     would undercount by a quarter or more;
//   - images: from their dimensions (DecodeConfig reads only the header),
//     the larger of Anthropic's w·h/750 and OpenAI's 512-px tile count, not
//     from their compressed bytes;
//   - PDFs: 3000 tokens a page (Anthropic: text plus a page image);
//   - a fixed overhead per message, tool call and tool definition.
//
// It errs high rather than low: compacting a little early is cheap, an
// overflow costs a wasted request.

const (
	messageOverhead = 4 // role and framing tokens of a message
	toolOverhead    = 8 // framing of a tool definition or call
	pageTokens      = 3000
	unknownImage    = 1600 // an image whose header we cannot read: a full-size image
)

// Estimate is the estimated input tokens of the complete request: system
// text, every message (text, reasoning, tool calls and results,
// attachments) and the tool definitions.
func Estimate(req *provider.Request) int {
	if req == nil {
		return 0
	}
	n := TextTokens(req.System)
	for i := range req.Tools {
		t := &req.Tools[i]
		n += toolOverhead + TextTokens(t.Name) + TextTokens(t.Description) + bytesTokens(t.Schema)
	}
	for i := range req.Messages {
		n += messageTokens(&req.Messages[i])
	}
	return n
}

func messageTokens(m *provider.Message) int {
	n := messageOverhead + TextTokens(m.Text)
	for _, r := range m.Reasoning {
		n += TextTokens(r.Text) + len(r.Redacted)/4
	}
	for _, c := range m.ToolCalls {
		n += toolOverhead + TextTokens(c.Name) + bytesTokens(c.Args)
	}
	if r := m.ToolResult; r != nil {
		n += toolOverhead + TextTokens(r.Output)
	}
	for i := range m.Attachments {
		n += AttachmentTokens(m.Attachments[i].MediaType, m.Attachments[i].Data)
	}
	return n
}

// AttachmentTokens estimates one attachment: images by dimensions, PDFs by
// pages, text by content, anything else at 4 bytes a token.
func AttachmentTokens(mediaType string, data []byte) int {
	switch {
	case strings.HasPrefix(mediaType, "image/"):
		if w, h, ok := imageSize(data); ok {
			return imageTokens(w, h)
		}
		return unknownImage
	case mediaType == "application/pdf":
		if p := pdfPages(data); p > 0 {
			return p * pageTokens
		}
	}
	return bytesTokens(data)
}

// imageSize reads an image's dimensions from its header (PNG, JPEG, GIF
// through the standard decoders; WebP here).
func imageSize(data []byte) (w, h int, ok bool) {
	if c, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
		return c.Width, c.Height, c.Width > 0 && c.Height > 0
	}
	return webpSize(data)
}

// webpSize parses the VP8/VP8L/VP8X header of a WebP file.
func webpSize(b []byte) (w, h int, ok bool) {
	if len(b) < 30 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return 0, 0, false
	}
	switch string(b[12:16]) {
	case "VP8 ":
		w = int(binary.LittleEndian.Uint16(b[26:28]) & 0x3fff)
		h = int(binary.LittleEndian.Uint16(b[28:30]) & 0x3fff)
	case "VP8L":
		bits := binary.LittleEndian.Uint32(b[21:25])
		w = int(bits&0x3fff) + 1
		h = int(bits>>14&0x3fff) + 1
	case "VP8X":
		w = int(uint32(b[24])|uint32(b[25])<<8|uint32(b[26])<<16) + 1
		h = int(uint32(b[27])|uint32(b[28])<<8|uint32(b[29])<<16) + 1
	default:
		return 0, 0, false
	}
	return w, h, w > 0 && h > 0
}

// imageTokens is the larger of the two big providers' published costs.
func imageTokens(w, h int) int {
	// Anthropic: scaled to at most 1568 px on the long side and ~1.15 MP,
	// then w·h/750.
	aw, ah := float64(w), float64(h)
	if s := 1568 / max(aw, ah); s < 1 {
		aw, ah = aw*s, ah*s
	}
	if mp := aw * ah; mp > 1_150_000 {
		s := math.Sqrt(1_150_000 / mp)
		aw, ah = aw*s, ah*s
	}
	anthropic := int(aw*ah/750) + 1
	// OpenAI high detail: fit in 2048², shortest side to 768, 170 a 512-px
	// tile plus 85.
	ow, oh := float64(w), float64(h)
	if s := 2048 / max(ow, oh); s < 1 {
		ow, oh = ow*s, oh*s
	}
	if s := 768 / min(ow, oh); s < 1 {
		ow, oh = ow*s, oh*s
	}
	tiles := ceilDiv(int(ow+0.5), 512) * ceilDiv(int(oh+0.5), 512)
	openai := 85 + 170*tiles
	return max(anthropic, openai)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// pdfPages counts page objects ("/Type /Page", not "/Pages").
func pdfPages(b []byte) int {
	n := 0
	for _, pat := range [][]byte{[]byte("/Type /Page"), []byte("/Type/Page")} {
		rest := b
		for {
			i := bytes.Index(rest, pat)
			if i < 0 {
				break
			}
			rest = rest[i+len(pat):]
			if len(rest) == 0 || rest[0] != 's' {
				n++
			}
		}
	}
	return n
}

func bytesTokens(b []byte) int { return (len(b) + 3) / 4 }

// TextTokens estimates the tokens of text: ASCII and two-byte runes at 4
// bytes a token, wider runes (CJK, emoji) one token each.
func TextTokens(s string) int {
	plain, wide := 0, 0
	i := 0
	// Eight ASCII bytes at a time: the common case of code and prose.
	for ; i+8 <= len(s); i += 8 {
		if load8(s, i)&0x8080808080808080 == 0 {
			plain += 8
			continue
		}
		for j := i; j < i+8; j++ {
			plain, wide = classify(s[j], plain, wide)
		}
	}
	for ; i < len(s); i++ {
		plain, wide = classify(s[i], plain, wide)
	}
	return (plain+3)/4 + wide
}

func classify(c byte, plain, wide int) (int, int) {
	switch {
	case c < 0x80:
		plain++
	case c >= 0xE0: // leading byte of a three- or four-byte rune
		wide++
	case c >= 0xC0: // leading byte of a two-byte rune
		plain += 2
	}
	// continuation bytes (0x80–0xBF) are counted with their leading byte
	return plain, wide
}

// load8 reads eight bytes of s at i as one word (the compiler merges the
// loads; no conversion to []byte, which could allocate).
func load8(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}
