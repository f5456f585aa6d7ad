package tools

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/sessionrt/sessionrt/toolactors/schema"
)

// Glob finds files of the Location by a glob pattern (`**` crosses directories).
type Glob struct {
	cfg Config
	def definitionOnce
}

// GlobInput is glob's input.
type GlobInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
}

// SearchOutput is the structured value of glob and grep.
type SearchOutput struct {
	Matches   []string `json:"matches"`
	Truncated bool     `json:"truncated,omitempty"`
}

// Definition implements Tool. It is built once: its schema and JSON are immutable.
func (g *Glob) Definition() Definition { return g.def.get(g.define) }

func (g *Glob) define() Definition {
	return Definition{
		Name: "glob",
		Description: fmt.Sprintf("Find files by glob pattern relative to the project directory "+
			"(`*` and `?` within a name, `**` across directories, `{a,b}` alternatives). At most %d results, sorted by path.", g.cfg.SearchLimit),
		Action: "glob",
		Input: schema.Object([]string{"pattern"}, map[string]*schema.Schema{
			"pattern": schema.String("Glob pattern, e.g. **/*.go"),
			"path":    schema.String("Directory to search, relative to the project directory (default: the project directory)"),
		}),
	}
}

// Run implements Tool.
func (g *Glob) Run(ctx context.Context, call Call) (Result, error) {
	var in GlobInput
	if err := decode(call.Input, &in); err != nil {
		return Result{}, err
	}
	re, err := GlobRegexp(in.Pattern)
	if err != nil {
		return Result{}, err
	}
	root, err := Resolve(call.Dir, in.Path)
	if err != nil {
		return Result{}, err
	}
	if err := call.Authorize(ctx, "glob", []string{in.Pattern}, nil, "Glob "+in.Pattern); err != nil {
		return Result{}, err
	}
	var out SearchOutput
	err = walkFiles(ctx, call.Dir, root, func(path, _ string) bool {
		if !re.MatchString(Rel(root, path)) {
			return true
		}
		if len(out.Matches) == g.cfg.SearchLimit {
			out.Truncated = true
			return false
		}
		out.Matches = append(out.Matches, Rel(call.Dir, path))
		return true
	})
	if err != nil {
		return Result{}, err
	}
	return Result{Title: in.Pattern, Text: searchText(out, "files", g.cfg.SearchLimit), Structured: out}, nil
}

// Grep searches file contents of the Location with a regular expression (RE2 syntax).
type Grep struct {
	cfg Config
	def definitionOnce
}

// GrepInput is grep's input.
type GrepInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
	Include string `json:"include,omitempty"`
}

// Definition implements Tool. It is built once: its schema and JSON are immutable.
func (g *Grep) Definition() Definition { return g.def.get(g.define) }

func (g *Grep) define() Definition {
	return Definition{
		Name: "grep",
		Description: fmt.Sprintf("Search file contents with a regular expression (RE2). Returns path:line: text, at most %d matches. "+
			"path may be a file or directory relative to the project directory, or a managed tool-output file's absolute path; "+
			"include filters file names by glob.", g.cfg.SearchLimit),
		Action: "grep",
		Input: schema.Object([]string{"pattern"}, map[string]*schema.Schema{
			"pattern": schema.String("Regular expression"),
			"path":    schema.String("File or directory to search (default: the project directory)"),
			"include": schema.String("Glob the file paths must match, e.g. *.go"),
		}),
	}
}

// Run implements Tool.
func (g *Grep) Run(ctx context.Context, call Call) (Result, error) {
	var in GrepInput
	if err := decode(call.Input, &in); err != nil {
		return Result{}, err
	}
	re, err := regexp.Compile(in.Pattern)
	if err != nil {
		return Result{}, fmt.Errorf("grep: field \"pattern\": %w", err)
	}
	var inc *regexp.Regexp
	if in.Include != "" {
		if inc, err = GlobRegexp(in.Include); err != nil {
			return Result{}, fmt.Errorf("grep: field \"include\": %w", err)
		}
	}
	var root string
	base := call.Dir // the tree the walk stays in, and paths are shown from
	if filepath.IsAbs(in.Path) && call.ManagedDir != "" && filepath.Dir(filepath.Clean(in.Path)) == filepath.Clean(call.ManagedDir) &&
		strings.HasPrefix(filepath.Base(in.Path), "tool_") {
		root, base = filepath.Clean(in.Path), filepath.Clean(call.ManagedDir)
	} else if root, err = Resolve(call.Dir, in.Path); err != nil {
		return Result{}, err
	}
	if err := call.Authorize(ctx, "grep", []string{in.Pattern}, nil, "Grep "+in.Pattern); err != nil {
		return Result{}, err
	}
	var out SearchOutput
	err = walkFiles(ctx, base, root, func(path, real string) bool {
		if inc != nil && !inc.MatchString(Rel(root, path)) && !inc.MatchString(filepath.Base(path)) {
			return true
		}
		return grepFile(real, Rel(base, path), re, &out, g.cfg.SearchLimit)
	})
	if err != nil {
		return Result{}, err
	}
	return Result{Title: in.Pattern, Text: searchText(out, "matches", g.cfg.SearchLimit), Structured: out}, nil
}

// grepFile appends matching lines; false stops the walk (limit reached). path is
// the file's real path: O_NOFOLLOW refuses it if it was swapped for a symlink
// since walkFiles resolved it.
func grepFile(path, shown string, re *regexp.Regexp, out *SearchOutput, limit int) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return true // unreadable files are skipped, as grep -s does
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(8 << 10); bytes.IndexByte(head, 0) >= 0 {
		return true // binary
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if !re.Match(line) {
			continue
		}
		if len(out.Matches) == limit {
			out.Truncated = true
			return false
		}
		text := string(line)
		if len(text) > 2000 {
			text = cutUTF8(text, 2000) + "…"
		}
		out.Matches = append(out.Matches, fmt.Sprintf("%s:%d: %s", shown, n, strings.ToValidUTF8(text, "\uFFFD")))
	}
	return true
}

// walkFiles visits the regular files of root (a file or a directory tree inside
// dir), skipping .git and not descending into symlinked directories. Each file is
// resolved through contain, the authority read uses: a symlink is followed only to
// a regular file inside dir, and one that leads outside is skipped. visit gets the
// path as walked (for display and matching) and the real path to open; false stops
// the walk.
func walkFiles(ctx context.Context, dir, root string, visit func(path, real string) bool) error {
	stop := fmt.Errorf("stop")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return fmt.Errorf("search %s: %w", root, err)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if d.Name() == ".git" && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		real := path // reached through real directories under a resolved root
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			if real, err = contain(dir, path, path); err != nil {
				return nil
			}
			if st, err := os.Stat(real); err != nil || !st.Mode().IsRegular() {
				return nil
			}
		case !d.Type().IsRegular():
			return nil // sockets, fifos, devices: nothing to search
		}
		if !visit(path, real) {
			return stop
		}
		return nil
	})
	if err == stop {
		return nil
	}
	return err
}

func searchText(out SearchOutput, what string, limit int) string {
	if len(out.Matches) == 0 {
		return "No " + what + " found.\n"
	}
	s := strings.Join(out.Matches, "\n") + "\n"
	if out.Truncated {
		s += fmt.Sprintf("(results cut at %d %s; narrow the search)\n", limit, what)
	}
	return s
}

// GlobRegexp compiles a glob: `**/` matches zero or more directories, `**` anything,
// `*` and `?` within one path segment, `[...]` a class, `{a,b}` alternatives.
func GlobRegexp(pattern string) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, fmt.Errorf("glob: field \"pattern\" is empty")
	}
	var b strings.Builder
	b.WriteString("^")
	depth := 0
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch c {
		case '*':
			if i+1 < len(pattern) && pattern[i+1] == '*' {
				if i+2 < len(pattern) && pattern[i+2] == '/' {
					b.WriteString("(?:.*/)?")
					i += 2
				} else {
					b.WriteString(".*")
					i++
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(pattern[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("glob %q: unclosed [ at byte %d", pattern, i)
			}
			b.WriteString(pattern[i : i+j+1])
			i += j
		case '{':
			depth++
			b.WriteString("(?:")
		case '}':
			if depth == 0 {
				return nil, fmt.Errorf("glob %q: unmatched } at byte %d", pattern, i)
			}
			depth--
			b.WriteString(")")
		case ',':
			if depth > 0 {
				b.WriteString("|")
			} else {
				b.WriteString(",")
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("glob %q: unclosed {", pattern)
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("glob %q: %w", pattern, err)
	}
	return re, nil
}
