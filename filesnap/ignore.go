package filesnap

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"strings"
)

// rule is one .gitignore pattern, relative to the directory of its file.
type rule struct {
	base    string   // directory of the .gitignore, slash-separated, "" for the root
	segs    []string // pattern split on "/"; "**" matches any number of segments
	negate  bool
	dirOnly bool
	// anchored patterns (a "/" other than a trailing one) match from base;
	// the others match the last path element at any depth below base.
	anchored bool
}

// parseIgnore reads the rules of one .gitignore (or info/exclude) file.
func parseIgnore(data []byte, base string) []rule {
	var rules []rule
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		// Trailing spaces are ignored unless escaped with a backslash.
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
			line = line[:len(line)-1]
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := rule{base: base}
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, line[1:]
		} else if strings.HasPrefix(line, `\`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		if strings.Contains(line, "/") {
			r.anchored, line = true, strings.TrimPrefix(line, "/")
		}
		r.segs = strings.Split(line, "/")
		rules = append(rules, r)
	}
	return rules
}

// ignorer answers whether a path is ignored, from the rules of every
// .gitignore between the root and the path (deeper files last: the last
// matching rule wins, as in git).
type ignorer struct {
	root  string
	rules []rule
}

func newIgnorer(root string) *ignorer {
	ig := &ignorer{root: root}
	if b, err := os.ReadFile(root + "/.git/info/exclude"); err == nil {
		ig.rules = append(ig.rules, parseIgnore(b, "")...)
	}
	return ig
}

// enter loads dir's .gitignore (dir is slash-separated, relative to the
// root) and returns the number of rules before it, for leave.
func (ig *ignorer) enter(dir string) int {
	n := len(ig.rules)
	p := ig.root
	if dir != "" {
		p += "/" + dir
	}
	if b, err := os.ReadFile(p + "/.gitignore"); err == nil {
		ig.rules = append(ig.rules, parseIgnore(b, dir)...)
	}
	return n
}

func (ig *ignorer) leave(n int) { ig.rules = ig.rules[:n] }

// ignored reports whether rel (slash-separated, relative to the root) is
// ignored. Its parent directories are known not to be: the walk does not
// descend into ignored directories.
func (ig *ignorer) ignored(rel string, isDir bool) bool {
	for i := len(ig.rules) - 1; i >= 0; i-- {
		r := &ig.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		if r.match(rel) {
			return !r.negate
		}
	}
	return false
}

func (r *rule) match(rel string) bool {
	if r.base != "" {
		if !strings.HasPrefix(rel, r.base+"/") {
			return false
		}
		rel = rel[len(r.base)+1:]
	}
	if !r.anchored {
		ok, _ := path.Match(r.segs[0], path.Base(rel))
		return ok
	}
	return matchSegs(r.segs, strings.Split(rel, "/"))
}

// matchSegs matches path segments against pattern segments, "**" standing
// for zero or more whole segments.
func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return len(name) > 0 // "x/**" matches everything inside x, not x
			}
			for i := 0; i <= len(name); i++ {
				if matchSegs(rest, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
