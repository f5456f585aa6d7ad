package config

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Command is one configured command: a prompt template run as a prompt.
type Command struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Agent and Model ("provider/model"), when set, run the prompt with them.
	Agent    string `json:"agent,omitempty"`
	Model    string `json:"model,omitempty"`
	Variant  string `json:"variant,omitempty"`
	Subtask  bool   `json:"subtask,omitempty"`
	Template string `json:"template"`
	// Source is the file that defines it (a command/*.md file, or the
	// configuration file of the "command" key).
	Source string `json:"source"`
}

// commandDirs are the subfolders of a configuration folder holding command
// files, as OpenCode names them.
var commandDirs = []string{"command", "commands"}

// loadCommands reads the "command" key, then the command/**/*.md files of
// every configuration folder (a file overrides a key of the same name, a
// nearer folder a farther one). It returns the folders and files it looked
// at, whose changes change the result.
func loadCommands(cfg *Config) (map[string]Command, []stamp, error) {
	out := map[string]Command{}
	for name, c := range cfg.Info.Command {
		src := ""
		if v := cfg.Tree.At("command", name); v != nil {
			src = v.Pos.File
		}
		out[name] = Command{Name: name, Description: c.Description, Agent: c.Agent, Model: c.Model,
			Variant: c.Variant, Subtask: c.Subtask, Template: c.Template, Source: src}
	}
	var stamps []stamp
	for _, folder := range cfg.Folders {
		for _, sub := range commandDirs {
			dir := filepath.Join(folder, sub)
			st := stat(dir)
			stamps = append(stamps, st)
			if !st.exists || !st.dir {
				continue
			}
			var files []string
			_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return nil // an unreadable subfolder holds no commands
				}
				if d.IsDir() {
					if p != dir {
						stamps = append(stamps, stat(p))
					}
					return nil
				}
				if strings.HasSuffix(p, ".md") {
					files = append(files, p)
				}
				return nil
			})
			sort.Strings(files)
			for _, f := range files {
				stamps = append(stamps, stat(f))
				b, err := os.ReadFile(f)
				if err != nil {
					return nil, stamps, &FileError{Path: f, Msg: err.Error()}
				}
				meta, body, err := frontMatter(f, b)
				if err != nil {
					return nil, stamps, err
				}
				rel, _ := filepath.Rel(dir, f)
				name := strings.TrimSuffix(filepath.ToSlash(rel), ".md")
				sub, _ := strconv.ParseBool(meta["subtask"])
				out[name] = Command{Name: name, Description: meta["description"], Agent: meta["agent"], Model: meta["model"],
					Variant: meta["variant"], Subtask: sub, Template: strings.TrimSpace(body), Source: f}
			}
		}
	}
	return out, stamps, nil
}

// frontMatter splits a Markdown file into its front matter (flat
// "key: value" lines between "---" lines; an indented line continues the
// last value) and its body. A file without front matter is all body.
func frontMatter(file string, b []byte) (map[string]string, string, error) {
	meta := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), len(b)+1)
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return meta, string(b), nil
	}
	offset := len(sc.Bytes()) + 1
	line := 1
	last := ""
	for sc.Scan() {
		line++
		text := sc.Text()
		offset += len(sc.Bytes()) + 1
		if strings.TrimSpace(text) == "---" {
			if offset > len(b) {
				offset = len(b)
			}
			return meta, string(b[offset:]), nil
		}
		if strings.TrimSpace(text) == "" || strings.HasPrefix(strings.TrimSpace(text), "#") {
			continue
		}
		if (text[0] == ' ' || text[0] == '\t') && last != "" {
			// A folded or indented continuation of the last value (YAML's
			// "key: >" blocks and wrapped lines).
			if v := meta[last]; v == "" || v == ">" || v == "|" || v == ">-" || v == "|-" {
				meta[last] = strings.TrimSpace(text)
			} else {
				meta[last] = v + " " + strings.TrimSpace(text)
			}
			continue
		}
		k, v, ok := strings.Cut(text, ":")
		if !ok {
			return nil, "", &FileError{Path: file, Line: line, Col: 1, Msg: "front matter line is not \"key: value\""}
		}
		last = strings.TrimSpace(k)
		meta[last] = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	return nil, "", &FileError{Path: file, Line: line, Col: 1, Msg: "front matter is not closed with ---"}
}

var (
	argToken    = regexp.MustCompile(`(?i)(?:\[Image\s+\d+\]|"[^"]*"|'[^']*'|[^\s"']+)`)
	argQuote    = regexp.MustCompile(`^["']|["']$`)
	placeholder = regexp.MustCompile(`\$(\d+)`)
)

// Expand fills a command's template with its arguments, as OpenCode does:
// $ARGUMENTS is the whole argument text; $1, $2… are the words (quotes
// group words), the highest one taking every remaining word; a template
// with no placeholder gets the arguments appended after a blank line.
func (c Command) Expand(arguments string) string {
	var args []string
	for _, a := range argToken.FindAllString(arguments, -1) {
		args = append(args, argQuote.ReplaceAllString(a, ""))
	}
	highest := 0
	marks := placeholder.FindAllStringSubmatch(c.Template, -1)
	for _, m := range marks {
		if n, _ := strconv.Atoi(m[1]); n > highest {
			highest = n
		}
	}
	out := placeholder.ReplaceAllStringFunc(c.Template, func(m string) string {
		n, _ := strconv.Atoi(m[1:])
		switch {
		case n < 1 || n-1 >= len(args):
			return ""
		case n == highest:
			return strings.Join(args[n-1:], " ")
		}
		return args[n-1]
	})
	hasAll := strings.Contains(c.Template, "$ARGUMENTS")
	out = strings.ReplaceAll(out, "$ARGUMENTS", arguments)
	if len(marks) == 0 && !hasAll && strings.TrimSpace(arguments) != "" {
		out += "\n\n" + arguments
	}
	return strings.TrimSpace(out)
}

// LocalReference is a named folder the read tool may read beside the
// Location, resolved against the Location.
type LocalReference struct {
	Name, Path, Description string
	Hidden                  bool
}

// LocalReferences lists the configuration's local references by name.
func (c *Config) LocalReferences() []LocalReference {
	refs := map[string]Reference{}
	for k, v := range c.Info.Reference {
		refs[k] = v
	}
	for k, v := range c.Info.References {
		refs[k] = v
	}
	var out []LocalReference
	for name, r := range refs {
		if r.Path == "" {
			continue
		}
		p := expandHome(r.Path, c.Home)
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.Dir, p)
		}
		out = append(out, LocalReference{Name: name, Path: filepath.Clean(p), Description: r.Description, Hidden: r.Hidden})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
