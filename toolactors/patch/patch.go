package patch

import (
	"errors"
	"fmt"
	"strings"
)

// Kind of operation.
type Kind string

// Kinds.
const (
	Add    Kind = "add"
	Update Kind = "update"
	Delete Kind = "delete"
)

// Op is one file operation.
type Op struct {
	Kind   Kind
	Path   string
	MoveTo string   // Update only; set when the patch asks for a move
	Lines  []string // Add: the new file's lines
	Chunks []Chunk  // Update: hunks in file order
	Line   int      // 1-based line of the op header in the patch
}

// Chunk is one hunk of an update.
type Chunk struct {
	Anchor string   // the text after "@@ ", if any
	Old    []string // context and removed lines, in order
	New    []string // context and added lines, in order
	EOF    bool     // the hunk must match at end of file
	Line   int      // 1-based line of the hunk in the patch
}

// ErrParse is wrapped by every ParseError.
var ErrParse = errors.New("invalid patch")

// ParseError names the patch line that is wrong.
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("invalid patch at line %d: %s", e.Line, e.Msg)
}

func (e *ParseError) Unwrap() error { return ErrParse }

const (
	beginMarker  = "*** Begin Patch"
	endMarker    = "*** End Patch"
	addPrefix    = "*** Add File: "
	deletePrefix = "*** Delete File: "
	updatePrefix = "*** Update File: "
	movePrefix   = "*** Move to: "
	eofMarker    = "*** End of File"
)

// Parse parses a whole patch. Nothing is returned unless every hunk parses.
func Parse(text string) ([]Op, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	// Trailing empty lines after the end marker are fine.
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != beginMarker {
		return nil, &ParseError{1, fmt.Sprintf("the patch must start with %q", beginMarker)}
	}
	if strings.TrimSpace(lines[len(lines)-1]) != endMarker {
		return nil, &ParseError{len(lines), fmt.Sprintf("the patch must end with %q", endMarker)}
	}
	var ops []Op
	i := 1
	last := len(lines) - 1
	for i < last {
		ln := i + 1
		l := lines[i]
		switch {
		case strings.HasPrefix(l, addPrefix):
			op := Op{Kind: Add, Path: strings.TrimSpace(l[len(addPrefix):]), Line: ln}
			i++
			for i < last && !strings.HasPrefix(lines[i], "*** ") {
				if !strings.HasPrefix(lines[i], "+") {
					return nil, &ParseError{i + 1, fmt.Sprintf("a line of an added file must start with '+', got %q", lines[i])}
				}
				op.Lines = append(op.Lines, lines[i][1:])
				i++
			}
			ops = append(ops, op)
		case strings.HasPrefix(l, deletePrefix):
			ops = append(ops, Op{Kind: Delete, Path: strings.TrimSpace(l[len(deletePrefix):]), Line: ln})
			i++
		case strings.HasPrefix(l, updatePrefix):
			op := Op{Kind: Update, Path: strings.TrimSpace(l[len(updatePrefix):]), Line: ln}
			i++
			if i < last && strings.HasPrefix(lines[i], movePrefix) {
				op.MoveTo = strings.TrimSpace(lines[i][len(movePrefix):])
				i++
			}
			var err error
			if op.Chunks, i, err = parseChunks(lines, i, last); err != nil {
				return nil, err
			}
			if len(op.Chunks) == 0 && op.MoveTo == "" {
				return nil, &ParseError{ln, fmt.Sprintf("update of %q has no hunks", op.Path)}
			}
			ops = append(ops, op)
		case strings.TrimSpace(l) == "":
			i++
		default:
			return nil, &ParseError{ln, fmt.Sprintf("expected an Add, Update or Delete File header, got %q", l)}
		}
		if len(ops) > 0 && ops[len(ops)-1].Path == "" {
			return nil, &ParseError{ops[len(ops)-1].Line, "missing file path"}
		}
	}
	if len(ops) == 0 {
		return nil, &ParseError{1, "the patch has no file operations"}
	}
	return ops, nil
}

func parseChunks(lines []string, i, last int) ([]Chunk, int, error) {
	var chunks []Chunk
	var cur *Chunk
	for i < last {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "*** ") && strings.TrimSpace(l) != eofMarker:
			return chunks, i, nil
		case strings.TrimSpace(l) == eofMarker:
			if cur == nil {
				return nil, i, &ParseError{i + 1, "End of File marker outside a hunk"}
			}
			cur.EOF = true
		case strings.HasPrefix(l, "@@"):
			chunks = append(chunks, Chunk{Anchor: strings.TrimSpace(strings.TrimPrefix(l, "@@")), Line: i + 1})
			cur = &chunks[len(chunks)-1]
		default:
			if cur == nil {
				// The first hunk may omit its @@ header.
				chunks = append(chunks, Chunk{Line: i + 1})
				cur = &chunks[len(chunks)-1]
			}
			if cur.EOF {
				return nil, i, &ParseError{i + 1, "hunk line after End of File"}
			}
			switch {
			case l == "":
				// An empty line is an empty context line (editors strip the space).
				cur.Old = append(cur.Old, "")
				cur.New = append(cur.New, "")
			case l[0] == ' ':
				cur.Old = append(cur.Old, l[1:])
				cur.New = append(cur.New, l[1:])
			case l[0] == '-':
				cur.Old = append(cur.Old, l[1:])
			case l[0] == '+':
				cur.New = append(cur.New, l[1:])
			default:
				return nil, i, &ParseError{i + 1, fmt.Sprintf("a hunk line must start with ' ', '-' or '+', got %q", l)}
			}
		}
		i++
	}
	for _, c := range chunks {
		if len(c.Old) == 0 && len(c.New) == 0 {
			return nil, i, &ParseError{c.Line, "empty hunk"}
		}
	}
	return chunks, i, nil
}

// ErrNoMatch is wrapped when a hunk's context is not found.
var ErrNoMatch = errors.New("hunk does not match")

// Apply applies an update's chunks to content and returns the new content. Matching
// tries exact lines, then lines equal after trimming trailing space, then after
// trimming both ends.
func Apply(content string, chunks []Chunk) (string, error) {
	trailingNL := strings.HasSuffix(content, "\n")
	body := strings.TrimSuffix(content, "\n")
	var lines []string
	if body != "" || trailingNL {
		lines = strings.Split(body, "\n")
	}
	cursor := 0
	for ci, c := range chunks {
		if c.Anchor != "" {
			idx := seek(lines, []string{c.Anchor}, cursor, false)
			if idx < 0 {
				return "", fmt.Errorf("hunk %d (patch line %d): anchor %q not found: %w", ci+1, c.Line, c.Anchor, ErrNoMatch)
			}
			cursor = idx + 1
		}
		var idx int
		if len(c.Old) == 0 {
			idx = len(lines)
			if c.Anchor != "" {
				idx = cursor
			}
		} else {
			idx = seek(lines, c.Old, cursor, c.EOF)
			if idx < 0 {
				return "", fmt.Errorf("hunk %d (patch line %d): context not found:\n%s\n%w", ci+1, c.Line, strings.Join(c.Old, "\n"), ErrNoMatch)
			}
		}
		next := make([]string, 0, len(lines)-len(c.Old)+len(c.New))
		next = append(next, lines[:idx]...)
		next = append(next, c.New...)
		next = append(next, lines[idx+len(c.Old):]...)
		lines = next
		cursor = idx + len(c.New)
	}
	out := strings.Join(lines, "\n")
	if trailingNL || content == "" {
		out += "\n"
	}
	return out, nil
}

// seek finds pattern in lines at or after start; with eof, only at the end.
func seek(lines, pattern []string, start int, eof bool) int {
	if len(pattern) > len(lines) {
		return -1
	}
	norms := []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.TrimRight(s, " \t") },
		strings.TrimSpace,
	}
	for _, norm := range norms {
		from := start
		if eof {
			from = len(lines) - len(pattern)
		}
		for i := from; i >= 0 && i <= len(lines)-len(pattern); i++ {
			ok := true
			for j, p := range pattern {
				if norm(lines[i+j]) != norm(p) {
					ok = false
					break
				}
			}
			if ok {
				return i
			}
		}
	}
	return -1
}
