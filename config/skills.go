package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Skill is one SKILL.md file: a name, when to use it, and the instructions
// the skill tool loads.
type Skill struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Location is the SKILL.md file.
	Location string `json:"location"`
	// Content is the file's body after its front matter.
	Content string `json:"content"`
}

// Dir is the folder of the skill's SKILL.md (its scripts and references).
func (s Skill) Dir() string { return filepath.Dir(s.Location) }

// The variables that turn off the skills OpenCode reads from other tools'
// folders, when set to anything but "", "0", "false", "no" or "off".
const (
	EnvDisableExternalSkills   = "OPENCODE_DISABLE_EXTERNAL_SKILLS"
	EnvDisableClaudeCodeSkills = "OPENCODE_DISABLE_CLAUDE_CODE_SKILLS"
)

// skillRoot is one folder searched for SKILL.md files: directly in
// subfolders named by subs (any depth below them), or anywhere below it
// when subs is empty.
type skillRoot struct {
	dir  string
	subs []string
}

// Skills discovers the Location's skills as OpenCode does, a later source
// overriding an earlier one of the same name:
//
//  1. ~/.claude/skills/ and ~/.agents/skills/;
//  2. .claude/skills/ and .agents/skills/ of each folder from the project
//     root down to the Location;
//  3. skill/ and skills/ of each configuration folder (the global one, each
//     .opencode/);
//  4. the folders the configuration's skills.paths name.
//
// A SKILL.md needs front matter with a name; one that cannot be read fails
// the discovery (the skill guidance is then unavailable for that turn).
func (c *Config) Skills(getenv func(string) string) ([]Skill, error) {
	var roots []skillRoot
	home := getenv("HOME")
	if !disabled(getenv(EnvDisableExternalSkills)) {
		var ext []string
		if !disabled(getenv(EnvDisableClaudeCodeSkills)) {
			ext = append(ext, ".claude")
		}
		ext = append(ext, ".agents")
		if home != "" {
			for _, e := range ext {
				roots = append(roots, skillRoot{filepath.Join(home, e), []string{"skills"}})
			}
		}
		if !disabled(getenv(EnvDisableProject)) {
			for _, level := range levels(c.Dir, c.Root) {
				for _, e := range ext {
					roots = append(roots, skillRoot{filepath.Join(level, e), []string{"skills"}})
				}
			}
		}
	}
	for _, f := range c.Folders {
		roots = append(roots, skillRoot{f, []string{"skill", "skills"}})
	}
	if s := c.Info.Skills; s != nil {
		for _, p := range s.Paths {
			if strings.HasPrefix(p, "~/") && home != "" {
				p = filepath.Join(home, p[2:])
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(c.Dir, p)
			}
			roots = append(roots, skillRoot{dir: p})
		}
	}
	byName := map[string]Skill{}
	for _, r := range roots {
		dirs := []string{r.dir}
		if len(r.subs) > 0 {
			dirs = nil
			for _, s := range r.subs {
				dirs = append(dirs, filepath.Join(r.dir, s))
			}
		}
		for _, d := range dirs {
			files, err := findSkillFiles(d)
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				s, ok, err := readSkill(f)
				if err != nil {
					return nil, err
				}
				if ok {
					byName[s.Name] = s
				}
			}
		}
	}
	out := make([]Skill, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// levels are the folders from root down to dir (dir alone when it is not
// below root).
func levels(dir, root string) []string {
	var out []string
	for d := dir; ; d = filepath.Dir(d) {
		out = append(out, d)
		if d == root || filepath.Dir(d) == d {
			break
		}
	}
	slices.Reverse(out)
	return out
}

// findSkillFiles lists the SKILL.md files below dir, sorted; none when dir
// does not exist. Symlinked folders are followed once.
func findSkillFiles(dir string) ([]string, error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
		return nil, nil
	}
	if err != nil {
		return nil, &FileError{Path: dir, Msg: err.Error()}
	}
	var out []string
	seen := map[string]bool{}
	var walk func(d string, depth int) error
	walk = func(d string, depth int) error {
		real, err := filepath.EvalSymlinks(d)
		if err != nil || seen[real] || depth > 16 {
			return nil
		}
		seen[real] = true
		entries, err := os.ReadDir(d)
		if err != nil {
			return &FileError{Path: d, Msg: err.Error()}
		}
		for _, e := range entries {
			p := filepath.Join(d, e.Name())
			isDir := e.IsDir()
			if e.Type()&fs.ModeSymlink != 0 {
				if st, err := os.Stat(p); err == nil {
					isDir = st.IsDir()
				}
			}
			switch {
			case isDir:
				if e.Name() == "node_modules" || e.Name() == ".git" {
					continue
				}
				if err := walk(p, depth+1); err != nil {
					return err
				}
			case e.Name() == "SKILL.md":
				out = append(out, p)
			}
		}
		return nil
	}
	if err := walk(dir, 0); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

func readSkill(path string) (Skill, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Skill{}, false, nil
	}
	if err != nil {
		return Skill{}, false, &FileError{Path: path, Msg: err.Error()}
	}
	meta, body, err := frontMatter(path, b)
	if err != nil {
		return Skill{}, false, nil // OpenCode skips a skill it cannot parse
	}
	if meta["name"] == "" {
		return Skill{}, false, nil
	}
	return Skill{Name: meta["name"], Description: meta["description"], Location: path, Content: strings.TrimSpace(body)}, true, nil
}
