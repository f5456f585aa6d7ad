package bound

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Defaults of OpenCode's tool output limit.
const (
	DefaultMaxLines = 2000
	DefaultMaxBytes = 50 * 1024
)

// Limits is the aggregate limit of one settlement. Zero fields take the defaults.
type Limits struct {
	MaxLines int // lines, default 2000
	MaxBytes int // UTF-8 bytes, default 50 KiB
}

func (l Limits) withDefaults() Limits {
	if l.MaxLines <= 0 {
		l.MaxLines = DefaultMaxLines
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// Stats counts what a text holds.
type Stats struct {
	Lines int
	Bytes int
}

// Measure counts lines (a final line without a newline counts) and bytes.
func Measure(text string) Stats {
	if text == "" {
		return Stats{}
	}
	n := countNewlines(text)
	if text[len(text)-1] != '\n' {
		n++
	}
	return Stats{Lines: n, Bytes: len(text)}
}

func countNewlines(s string) int {
	return strings.Count(s, "\n")
}

// Exceeds reports whether text is over the limit and must be bounded.
func Exceeds(text string, l Limits) bool {
	l = l.withDefaults()
	if len(text) > l.MaxBytes {
		return true
	}
	return Measure(text).Lines > l.MaxLines
}

// Result is the bounded projection.
type Result struct {
	Text      string // model-visible text
	Truncated bool   // the text was cut
	Omitted   Stats  // what the cut removed
}

// markerReserve is the byte budget kept for the marker so that head + marker + tail
// stays within MaxBytes (a marker is about 200 bytes plus the path).
const markerReserve = 512

// Saved says what became of the complete text before it was bounded, so that the marker
// tells the model the truth about it.
type Saved struct {
	// Path is the managed file holding the text; "" when it could not be written.
	Path string
	// Dropped counts bytes the tool lost before it produced the text (bash keeps the head
	// and the tail of its output within an in-memory cap): neither the file nor the
	// preview holds them.
	Dropped int64
}

// Preview bounds text whose complete form is in the managed file managedPath (""
// when it could not be written): PreviewSaved with nothing dropped before.
func Preview(text string, l Limits, managedPath string) Result {
	return PreviewSaved(text, l, Saved{Path: managedPath})
}

// PreviewSaved bounds text. When text is within the limit it is returned unchanged.
// Otherwise the head and the tail are kept (half of the budget each, never splitting a
// UTF-8 sequence) around a marker naming the file saved.Path; an empty path produces an
// explicitly lossy marker, and bytes dropped before are named. The result is within
// MaxLines lines and MaxBytes bytes whenever the path fits in the marker reserve.
func PreviewSaved(text string, l Limits, saved Saved) Result {
	l = l.withDefaults()
	if !Exceeds(text, l) {
		return Result{Text: text}
	}
	managedPath := saved.Path
	budgetBytes := l.MaxBytes - markerReserve - len(managedPath)
	if budgetBytes < 0 {
		budgetBytes = 0
	}
	// The marker takes up to 3 lines of the line budget.
	budgetLines := l.MaxLines - 3
	if budgetLines < 0 {
		budgetLines = 0
	}
	head := takeHead(text, budgetLines-budgetLines/2, budgetBytes-budgetBytes/2)
	tail := takeTail(text[len(head):], budgetLines/2, budgetBytes/2)
	omitted := text[len(head) : len(text)-len(tail)]
	om := Stats{Lines: countNewlines(omitted), Bytes: len(omitted)}
	var b strings.Builder
	b.Grow(len(head) + len(tail) + markerReserve + len(managedPath))
	b.WriteString(head)
	if head != "" && head[len(head)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString(Marker(om, saved))
	if tail != "" {
		b.WriteByte('\n')
	}
	b.WriteString(tail)
	return Result{Text: b.String(), Truncated: true, Omitted: om}
}

// Marker is the line put between head and tail. It calls the saved file "the complete
// output" only when nothing was dropped before it was written.
func Marker(omitted Stats, saved Saved) string {
	switch {
	case saved.Path == "" && saved.Dropped > 0:
		return fmt.Sprintf("... [%d lines, %d bytes truncated; %d more bytes were dropped from the middle of the output before (over the in-memory cap), and the rest could not be saved and is lost] ...",
			omitted.Lines, omitted.Bytes, saved.Dropped)
	case saved.Path == "":
		return fmt.Sprintf("... [%d lines, %d bytes truncated; the complete output could not be saved and is lost] ...",
			omitted.Lines, omitted.Bytes)
	case saved.Dropped > 0:
		return fmt.Sprintf("... [%d lines, %d bytes truncated; %s holds the output except %d bytes dropped from its middle before it was saved (over the in-memory cap, marked in the file); read it with offset, or grep it] ...",
			omitted.Lines, omitted.Bytes, saved.Path, saved.Dropped)
	}
	return fmt.Sprintf("... [%d lines, %d bytes truncated; the complete output is saved in %s; read it with offset, or grep it] ...",
		omitted.Lines, omitted.Bytes, saved.Path)
}

// takeHead returns the longest prefix of s made of at most maxLines lines and maxBytes
// bytes. A single line longer than the byte budget is cut at a rune boundary.
func takeHead(s string, maxLines, maxBytes int) string {
	if maxLines <= 0 || maxBytes <= 0 {
		return ""
	}
	end := 0
	for lines := 0; lines < maxLines && end < len(s); lines++ {
		i := strings.IndexByte(s[end:], '\n')
		next := len(s)
		if i >= 0 {
			next = end + i + 1
		}
		if next > maxBytes {
			if end == 0 { // the first line alone is too long: cut it
				return cutRunes(s[:maxBytes])
			}
			break
		}
		end = next
	}
	return s[:end]
}

// takeTail returns the longest suffix of s made of at most maxLines lines and maxBytes
// bytes, starting at a line start when possible.
func takeTail(s string, maxLines, maxBytes int) string {
	if maxLines <= 0 || maxBytes <= 0 || s == "" {
		return ""
	}
	start := len(s)
	// A final newline belongs to the last line.
	scan := len(s)
	if s[scan-1] == '\n' {
		scan--
	}
	for lines := 0; lines < maxLines && start > 0; lines++ {
		i := strings.LastIndexByte(s[:scan], '\n')
		prev := i + 1 // start of the line ending at scan
		if len(s)-prev > maxBytes {
			if start == len(s) { // the last line alone is too long: keep its end
				return cutRunesFront(s[len(s)-maxBytes:])
			}
			break
		}
		start = prev
		if i < 0 {
			break
		}
		scan = i
	}
	return s[start:]
}

// cutRunes drops a trailing partial UTF-8 sequence.
func cutRunes(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size > 1 {
			return s
		}
		s = s[:len(s)-1]
	}
	return s
}

// cutRunesFront drops a leading partial UTF-8 sequence.
func cutRunesFront(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		if utf8.RuneStart(s[0]) {
			return s
		}
		s = s[1:]
	}
	return s
}
