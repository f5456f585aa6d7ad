package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var (
	envRef  = regexp.MustCompile(`\{env:([^}]+)\}`)
	fileRef = regexp.MustCompile(`\{file:[^}]+\}`)
)

// substitute replaces {env:VAR} and {file:path} in a configuration's text
// before it is parsed, as OpenCode does: {env:VAR} becomes the variable's
// value verbatim (empty when unset), {file:path} the file's trimmed content
// escaped as JSON string content (relative paths from the file's directory,
// ~/ from home). A {file:} on a line comment is left alone. It returns the
// files it read, whose changes change the configuration.
func substitute(text []byte, file string, getenv func(string) string, home string) ([]byte, []string, error) {
	s := envRef.ReplaceAllStringFunc(string(text), func(m string) string {
		return getenv(envRef.FindStringSubmatch(m)[1])
	})
	refs := fileRef.FindAllStringIndex(s, -1)
	if refs == nil {
		return []byte(s), nil, nil
	}
	var out strings.Builder
	var read []string
	last := 0
	for _, r := range refs {
		ref := s[r[0]:r[1]]
		out.WriteString(s[last:r[0]])
		last = r[1]
		lineStart := strings.LastIndexByte(s[:r[0]], '\n') + 1
		if strings.HasPrefix(strings.TrimLeft(s[lineStart:r[0]], " \t"), "//") {
			out.WriteString(ref)
			continue
		}
		p := strings.TrimSuffix(strings.TrimPrefix(ref, "{file:"), "}")
		if strings.HasPrefix(p, "~/") && home != "" {
			p = filepath.Join(home, p[2:])
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(file), p)
		}
		read = append(read, p)
		b, err := os.ReadFile(p)
		if err != nil {
			line := strings.Count(s[:r[0]], "\n") + 1
			msg := "bad file reference " + ref + ": " + err.Error()
			if errors.Is(err, fs.ErrNotExist) {
				msg = "bad file reference " + ref + ": " + p + " does not exist"
			}
			return nil, read, &FileError{Path: file, Line: line, Col: r[0] - lineStart + 1, Msg: msg}
		}
		q, _ := json.Marshal(strings.TrimSpace(string(b)))
		out.Write(q[1 : len(q)-1])
	}
	out.WriteString(s[last:])
	return []byte(out.String()), read, nil
}
