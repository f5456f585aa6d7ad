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
// pre-tokenizer-shaped heuristic (TextTokens) for every model family,
// calibrated against o200k and cl100k: it counts 1.07–1.45× their tokens on
// Go source, Markdown, prose, JSON, logs and CJK text, and 0.97–1.19× on
// German (bytes/4 was 0.56× on logs and 0.80× on JSON: an underestimate
// that lets a request overflow). Besides text:
//
//   - images: from their dimensions (DecodeConfig reads only the header),
//     the larger of Anthropic's w·h/750 and OpenAI's 512-px tile count, not
//     from their compressed bytes;
//   - PDFs: 3000 tokens a page (Anthropic: text plus a page image);
//   - other binary attachments: 4 bytes a token;
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

// TextTokens estimates the tokens of text the way a BPE pre-tokenizer
// splits it, counting in half tokens:
//
//   - a run of letters: one token per 6 letters (common words are one token
//     with their leading space, long identifiers split);
//   - a run of digits: one token per 3 (tiktoken splits numbers so);
//   - a run of punctuation: one token per 3 bytes (`":"`, `},` merge);
//   - a single space before a word is part of it; other whitespace runs, and
//     a line break with the indentation after it, one token;
//   - three- and four-byte runes (CJK, emoji) one token each, two-byte runes
//     (accented letters) half a token.
func TextTokens(s string) int {
	half := 0
	n := len(s)
	for i := 0; i < n; {
		c := s[i]
		j := i + 1
		switch k := classes[c]; k {
		case classLetter, classDigit, classPunct:
			for j < n && classes[s[j]] == k {
				j++
			}
			per := 3
			if k == classLetter {
				per = 6
			}
			half += 2 * ((j - i + per - 1) / per)
		case classSpace:
			for j < n && classes[s[j]] == classSpace {
				j++
			}
			if j-i > 1 || j == n || (classes[s[j]] != classLetter && classes[s[j]] != classOther) {
				half += 2
			}
		case classNewline:
			for j < n && (classes[s[j]] == classNewline || classes[s[j]] == classSpace) {
				j++
			}
			half += 2
		default:
			switch {
			case c >= 0xE0: // leading byte of a three- or four-byte rune
				half += 2
			case c >= 0xC0: // leading byte of a two-byte rune
				half++
			}
			// continuation bytes are counted with their leading byte
		}
		i = j
	}
	return (half + 1) / 2
}

// Byte classes of TextTokens.
const (
	classOther = iota // non-ASCII
	classLetter
	classDigit
	classSpace
	classNewline
	classPunct
)

// classes maps a byte to its class. It is computed once and never written
// after (a lookup table, not state).
var classes = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
			t[c] = classLetter
		case c >= '0' && c <= '9':
			t[c] = classDigit
		case c == ' ' || c == '\t':
			t[c] = classSpace
		case c == '\n' || c == '\r':
			t[c] = classNewline
		case c < 0x80:
			t[c] = classPunct
		default:
			t[c] = classOther
		}
	}
	return t
}()
