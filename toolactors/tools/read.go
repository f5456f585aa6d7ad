package tools

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/sessionrt/sessionrt/toolactors/schema"
)

// Read reads a file or lists a directory of the Location, paged.
type Read struct {
	cfg Config
	def definitionOnce
}

// ReadInput is read's input.
type ReadInput struct {
	Path      string `json:"path"`
	Reference string `json:"reference,omitempty"`
	Offset    int    `json:"offset,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// ReadOutput is read's structured value.
type ReadOutput struct {
	Path     string `json:"path"`
	Type     string `json:"type"`               // "file" or "directory"
	Encoding string `json:"encoding,omitempty"` // "utf-8" or "base64" for files
	Offset   int    `json:"offset"`             // 1-based first line or entry returned
	Count    int    `json:"count"`              // lines or entries returned
	Next     int    `json:"next,omitempty"`     // offset of the next page; 0 at the end
}

// Definition implements Tool. It is built once: its schema and JSON are immutable.
func (r *Read) Definition() Definition { return r.def.get(r.define) }

func (r *Read) define() Definition {
	return Definition{
		Name: "read",
		Description: "Read a file or list a directory. Paths are relative to the project directory " +
			"(or to a named project reference); managed tool-output files may be read by their absolute path. " +
			"Text is returned with line numbers, paged by lines: pass offset (1-based) and limit to continue. " +
			"Binary files come back base64-encoded. Directories list subdirectories first, alphabetically.",
		Action: "read",
		Input: schema.Object([]string{"path"}, map[string]*schema.Schema{
			"path":      schema.String("Path relative to the project directory, or the absolute path of a managed tool-output file"),
			"reference": schema.String("Name of a project reference to resolve path against instead of the project directory"),
			"offset":    schema.Integer("1-based line (or entry) to start at", 1, 1<<31-1),
			"limit":     schema.Integer("Number of lines (or entries) to return", 1, 1<<31-1),
		}),
	}
}

// Run implements Tool.
func (r *Read) Run(ctx context.Context, call Call) (Result, error) {
	var in ReadInput
	if err := decode(call.Input, &in); err != nil {
		return Result{}, err
	}
	if in.Offset == 0 {
		in.Offset = 1
	}
	if in.Limit == 0 {
		in.Limit = r.cfg.ReadPageLines
	}
	target, shown, err := r.resolve(call, in)
	if err != nil {
		return Result{}, err
	}
	if err := call.Authorize(ctx, "read", []string{target}, nil, "Read "+shown); err != nil {
		return Result{}, err
	}
	info, err := os.Stat(target)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Result{}, fmt.Errorf("read %s: no such file or directory", shown)
		}
		return Result{}, fmt.Errorf("read %s: %w", shown, err)
	}
	if info.IsDir() {
		return r.dir(target, shown, in)
	}
	if !info.Mode().IsRegular() {
		return Result{}, fmt.Errorf("read %s: not a regular file (%s)", shown, info.Mode().Type())
	}
	return r.file(ctx, target, shown, info.Size(), in)
}

func (r *Read) resolve(call Call, in ReadInput) (target, shown string, err error) {
	if filepath.IsAbs(in.Path) && in.Reference == "" && call.ManagedDir != "" {
		clean := filepath.Clean(in.Path)
		if filepath.Dir(clean) == filepath.Clean(call.ManagedDir) && strings.HasPrefix(filepath.Base(clean), "tool_") {
			return clean, clean, nil
		}
	}
	root := call.Dir
	if in.Reference != "" {
		dir, ok := call.References[in.Reference]
		if !ok {
			return "", "", fmt.Errorf("read: unknown project reference %q", in.Reference)
		}
		if root, err = filepath.EvalSymlinks(dir); err != nil {
			return "", "", fmt.Errorf("read: project reference %q: %w", in.Reference, err)
		}
	}
	target, err = Resolve(root, in.Path)
	if err != nil {
		return "", "", err
	}
	shown = Rel(root, target)
	if in.Reference != "" {
		shown = in.Reference + ":" + shown
	}
	return target, shown, nil
}

func (r *Read) dir(target, shown string, in ReadInput) (Result, error) {
	entries, err := os.ReadDir(target)
	if err != nil {
		return Result{}, fmt.Errorf("read directory %s: %w", shown, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		n := e.Name()
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			if st, err := os.Stat(filepath.Join(target, n)); err == nil && st.IsDir() {
				isDir = true
			}
		}
		if isDir {
			n += "/"
		}
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		di, dj := strings.HasSuffix(names[i], "/"), strings.HasSuffix(names[j], "/")
		if di != dj {
			return di
		}
		return names[i] < names[j]
	})
	out := ReadOutput{Path: shown, Type: "directory", Offset: in.Offset}
	var b strings.Builder
	fmt.Fprintf(&b, "%s/ (%d entries)\n", strings.TrimSuffix(shown, "/"), len(names))
	start := in.Offset - 1
	if start > len(names) {
		start = len(names)
	}
	end := min(start+in.Limit, len(names))
	for _, n := range names[start:end] {
		b.WriteString(n)
		b.WriteByte('\n')
	}
	out.Count = end - start
	if end < len(names) {
		out.Next = end + 1
		fmt.Fprintf(&b, "(%d more entries: continue with offset %d)\n", len(names)-end, out.Next)
	}
	return Result{Title: shown, Text: b.String(), Structured: out}, nil
}

func (r *Read) file(ctx context.Context, target, shown string, size int64, in ReadInput) (Result, error) {
	f, err := os.Open(target)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", shown, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	peek, _ := br.Peek(8 << 10)
	if isBinary(peek, size > int64(len(peek))) {
		if size > int64(r.cfg.ReadMaxBinaryBytes) {
			return Result{}, fmt.Errorf("read %s: binary file of %d bytes is over the %d-byte limit for base64 content", shown, size, r.cfg.ReadMaxBinaryBytes)
		}
		data, err := io.ReadAll(br)
		if err != nil {
			return Result{}, fmt.Errorf("read %s: %w", shown, err)
		}
		return Result{
			Title:      shown,
			Text:       fmt.Sprintf("%s: binary file, %d bytes, base64:\n%s\n", shown, len(data), base64.StdEncoding.EncodeToString(data)),
			Structured: ReadOutput{Path: shown, Type: "file", Encoding: "base64", Offset: 1, Count: 1},
		}, nil
	}
	out := ReadOutput{Path: shown, Type: "file", Encoding: "utf-8", Offset: in.Offset}
	var b strings.Builder
	line := 0
	for {
		if line%4096 == 0 && ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		text, err := br.ReadString('\n')
		if text == "" && err != nil {
			if err != io.EOF {
				return Result{}, fmt.Errorf("read %s line %d: %w", shown, line+1, err)
			}
			break
		}
		line++
		if line < in.Offset {
			continue
		}
		if out.Count == in.Limit {
			out.Next = line
			break
		}
		text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
		if len(text) > r.cfg.ReadMaxLineBytes {
			text = cutUTF8(text, r.cfg.ReadMaxLineBytes) + "… (line cut)"
		}
		fmt.Fprintf(&b, "%6d\t%s\n", line, strings.ToValidUTF8(text, "\uFFFD"))
		out.Count++
	}
	switch {
	case out.Next > 0:
		fmt.Fprintf(&b, "(more lines: continue with offset %d)\n", out.Next)
	case out.Count == 0 && line > 0:
		return Result{}, fmt.Errorf("read %s: offset %d is past the end of the file (%d lines)", shown, in.Offset, line)
	case line == 0:
		b.WriteString("(empty file)\n")
	default:
		fmt.Fprintf(&b, "(end of file: %d lines)\n", line)
	}
	return Result{Title: shown, Text: b.String(), Structured: out}, nil
}

// isBinary: a NUL byte, or bytes that are not UTF-8 (ignoring a sequence cut by the
// end of the sample when the file goes on).
func isBinary(sample []byte, truncated bool) bool {
	for _, c := range sample {
		if c == 0 {
			return true
		}
	}
	for len(sample) > 0 {
		r, n := utf8.DecodeRune(sample)
		if r == utf8.RuneError && n <= 1 {
			return !(truncated && len(sample) < utf8.UTFMax && !utf8.FullRune(sample))
		}
		sample = sample[n:]
	}
	return false
}

func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
