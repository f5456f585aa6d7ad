package filesnap

import (
	"bytes"
	"fmt"
	"strings"
)

// Status says how a file differs between two trees.
type Status string

const (
	Added    Status = "added"
	Modified Status = "modified"
	Deleted  Status = "deleted"
)

// FileDiff is one file that differs between two trees, with a unified
// patch (as OpenCode's FileDiff: path, status, additions, deletions, patch).
type FileDiff struct {
	Path      string
	Status    Status
	Additions int
	Deletions int
	Patch     string
}

// Paths returns the paths of diffs, in order.
func Paths(diffs []FileDiff) []string {
	out := make([]string, len(diffs))
	for i, d := range diffs {
		out[i] = d.Path
	}
	return out
}

// Changed returns the paths that differ between trees from and to, sorted,
// without reading any blob.
func (s *Store) Changed(from, to string) ([]string, error) {
	a, b, err := s.trees(from, to)
	if err != nil {
		return nil, err
	}
	var out []string
	zip(a, b, func(x, y *Entry) {
		out = append(out, pathOf(x, y))
	})
	return out, nil
}

// Diff returns the files that differ between trees from and to, sorted by
// path, each with its patch. Only paths in only (when not nil) are compared.
func (s *Store) Diff(from, to string, only ...string) ([]FileDiff, error) {
	a, b, err := s.trees(from, to)
	if err != nil {
		return nil, err
	}
	var keep map[string]bool
	if only != nil {
		keep = make(map[string]bool, len(only))
		for _, p := range only {
			keep[p] = true
		}
	}
	var out []FileDiff
	var ferr error
	zip(a, b, func(x, y *Entry) {
		p := pathOf(x, y)
		if ferr != nil || (keep != nil && !keep[p]) {
			return
		}
		d, err := s.fileDiff(p, x, y)
		if err != nil {
			ferr = err
			return
		}
		out = append(out, d)
	})
	return out, ferr
}

func (s *Store) trees(from, to string) (*Tree, *Tree, error) {
	a, err := s.Tree(from)
	if err != nil {
		return nil, nil, err
	}
	b, err := s.Tree(to)
	if err != nil {
		return nil, nil, err
	}
	return a, b, nil
}

func pathOf(x, y *Entry) string {
	if x != nil {
		return x.Path
	}
	return y.Path
}

// zip calls f for every path whose entry differs between the sorted trees
// (x nil: added; y nil: deleted).
func zip(a, b *Tree, f func(x, y *Entry)) {
	i, j := 0, 0
	for i < len(a.Entries) || j < len(b.Entries) {
		switch {
		case j == len(b.Entries) || (i < len(a.Entries) && a.Entries[i].Path < b.Entries[j].Path):
			f(&a.Entries[i], nil)
			i++
		case i == len(a.Entries) || b.Entries[j].Path < a.Entries[i].Path:
			f(nil, &b.Entries[j])
			j++
		default:
			if a.Entries[i].Blob != b.Entries[j].Blob || a.Entries[i].Mode != b.Entries[j].Mode {
				f(&a.Entries[i], &b.Entries[j])
			}
			i++
			j++
		}
	}
}

func (s *Store) fileDiff(p string, x, y *Entry) (FileDiff, error) {
	d := FileDiff{Path: p, Status: Modified}
	var before, after []byte
	var err error
	if x == nil {
		d.Status = Added
	} else if before, err = s.Blob(x.Blob); err != nil {
		return d, err
	}
	if y == nil {
		d.Status = Deleted
	} else if after, err = s.Blob(y.Blob); err != nil {
		return d, err
	}
	d.Patch, d.Additions, d.Deletions = unified(p, before, after, x != nil, y != nil)
	return d, nil
}

// unified renders a git-style unified patch of one file with three lines
// of context, and counts the added and deleted lines.
func unified(p string, a, b []byte, hasA, hasB bool) (string, int, int) {
	var out strings.Builder
	fmt.Fprintf(&out, "diff --git a/%s b/%s\n", p, p)
	from, to := "a/"+p, "b/"+p
	if !hasA {
		out.WriteString("new file\n")
		from = "/dev/null"
	}
	if !hasB {
		out.WriteString("deleted file\n")
		to = "/dev/null"
	}
	if bytes.IndexByte(a, 0) >= 0 || bytes.IndexByte(b, 0) >= 0 {
		fmt.Fprintf(&out, "Binary files %s and %s differ\n", from, to)
		return out.String(), 0, 0
	}
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	la, lb := splitLines(a), splitLines(b)
	ops := myers(la, lb)
	adds, dels := 0, 0
	for _, o := range ops {
		switch o.kind {
		case '+':
			adds++
		case '-':
			dels++
		}
	}
	writeHunks(&out, ops, la, lb)
	return out.String(), adds, dels
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// op is one line of an edit script: ' ' kept (both indexes), '-' deleted
// (index in a), '+' added (index in b).
type op struct {
	kind byte
	a, b int
}

// maxEdits bounds the edit distance myers searches (its trace is
// O(D²) memory); past it the file is shown as replaced whole.
const maxEdits = 2000

// myers is Myers' O(ND) diff, returning the edit script in order.
func myers(a, b []string) []op {
	n, m := len(a), len(b)
	max := n + m
	if max == 0 {
		return nil
	}
	off := max + 1
	v := make([]int, 2*max+3)
	// trace[d] is the window of v for k in [-d-1, d+1] as it was before
	// step d: all the walk back reads.
	var trace [][]int
	var d int
	found := false
outer:
	for d = 0; d <= max && d <= maxEdits; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = true
				break outer
			}
		}
	}
	if !found {
		ops := make([]op, 0, n+m)
		for i := range a {
			ops = append(ops, op{'-', i, -1})
		}
		for j := range b {
			ops = append(ops, op{'+', -1, j})
		}
		return ops
	}
	var rev []op
	x, y := n, m
	for ; d > 0; d-- {
		w := trace[d]
		at := func(k int) int { return w[k+d+1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
			rev = append(rev, op{' ', x, y})
		}
		if x == px {
			y--
			rev = append(rev, op{'+', -1, y})
		} else {
			x--
			rev = append(rev, op{'-', x, -1})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, op{' ', x, y})
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// writeHunks writes the edit script as unified hunks with 3 lines of context.
func writeHunks(out *strings.Builder, ops []op, a, b []string) {
	const ctx = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from ctx lines before the change to ctx lines after the
		// last change that is at most 2*ctx kept lines from the next.
		start := i - ctx
		if start < 0 {
			start = 0
		}
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				break
			}
			end = run
		}
		stop := end + ctx
		if stop > len(ops) {
			stop = len(ops)
		}
		// Line numbers of the hunk's first line on each side.
		aStart, bStart, aLen, bLen := 0, 0, 0, 0
		for _, o := range ops[:start] {
			if o.kind != '+' {
				aStart++
			}
			if o.kind != '-' {
				bStart++
			}
		}
		for _, o := range ops[start:stop] {
			if o.kind != '+' {
				aLen++
			}
			if o.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, o := range ops[start:stop] {
			var line string
			switch o.kind {
			case ' ', '-':
				line = a[o.a]
			default:
				line = b[o.b]
			}
			out.WriteByte(o.kind)
			out.WriteString(line)
			if !strings.HasSuffix(line, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = stop
	}
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
