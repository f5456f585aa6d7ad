package skills

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sessionrt/sessionrt/contextsources"
)

// Key is the skill guidance source key.
const Key = "agent/skills"

// Skill is what the model is told about one skill.
type Skill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Config builds the guidance source for one selected agent.
type Config struct {
	// Catalog lists the skills of the Location. Required. An error makes the source
	// Unavailable for that boundary.
	Catalog func(ctx context.Context) ([]Skill, error)
	// Allowed reports whether the selected agent's permissions let it use the named
	// skill. Default: every skill is allowed.
	Allowed func(name string) bool
}

// Load observes the agent's guidance once: the allowed skills sorted by name (first of a
// duplicated name wins), Absent when none is allowed.
func Load(ctx context.Context, cfg Config) contextsources.Result[[]Skill] {
	if cfg.Catalog == nil {
		return contextsources.Unavailable[[]Skill](errors.New("skills source: Catalog is required"))
	}
	all, err := cfg.Catalog(ctx)
	if err != nil {
		return contextsources.Unavailable[[]Skill](fmt.Errorf("skills catalog: %w", err))
	}
	seen := make(map[string]bool, len(all))
	var out []Skill
	for _, s := range all {
		if s.Name == "" || seen[s.Name] {
			continue
		}
		seen[s.Name] = true
		if cfg.Allowed == nil || cfg.Allowed(s.Name) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return contextsources.Absent[[]Skill]()
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return contextsources.Present(out)
}

// Render lists the skills as the model sees them.
func Render(list []Skill) string {
	var b strings.Builder
	b.WriteString("Skills provide specialized instructions for specific tasks. When a task matches a skill's description, load it with the skill tool.\n<available_skills>\n")
	for _, s := range list {
		b.WriteString("  <skill><name>" + contextsources.EscapeXML(s.Name) + "</name><description>" +
			contextsources.EscapeXML(s.Description) + "</description></skill>\n")
	}
	b.WriteString("</available_skills>")
	return b.String()
}

// Removal is the text emitted when no skill remains available to the agent.
const Removal = "No skills are available to you any more; earlier skill guidance no longer applies."

// Source is the guidance Context Source for one selected agent.
func Source(cfg Config) (contextsources.Source, error) {
	if cfg.Catalog == nil {
		return contextsources.Source{}, errors.New("skills source: Catalog is required")
	}
	return contextsources.Make(contextsources.Spec[[]Skill]{
		Key:      Key,
		Load:     func(ctx context.Context) contextsources.Result[[]Skill] { return Load(ctx, cfg) },
		Baseline: Render,
		Update: func(list []Skill) string {
			return "The skills available to you have changed. This complete list replaces the previous one.\n" + Render(list)
		},
		Removal: func([]Skill) string { return Removal },
	})
}

// Context is Source wrapped as a System Context, ready for Registry.ObserveWith.
func Context(cfg Config) (contextsources.SystemContext, error) {
	s, err := Source(cfg)
	if err != nil {
		return contextsources.SystemContext{}, err
	}
	return contextsources.New(s)
}

// DirCatalog reads skills from each dir's <name>/SKILL.md front matter ("name:" and
// "description:" between "---" lines; name defaults to the directory name). Missing
// dirs are skipped; a skill without a description is skipped; a SKILL.md that exists but
// cannot be read fails the catalog (→ Unavailable). Earlier dirs win on a name clash.
func DirCatalog(dirs ...string) func(ctx context.Context) ([]Skill, error) {
	return func(ctx context.Context) ([]Skill, error) {
		var out []Skill
		for _, dir := range dirs {
			entries, err := os.ReadDir(dir)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("skills dir: %w", err)
			}
			for _, e := range entries {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if !e.IsDir() {
					continue
				}
				b, err := os.ReadFile(filepath.Join(dir, e.Name(), "SKILL.md"))
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					return nil, fmt.Errorf("skill %s: %w", e.Name(), err)
				}
				if s, ok := parseFrontMatter(b, e.Name()); ok {
					out = append(out, s)
				}
			}
		}
		return out, nil
	}
}

func parseFrontMatter(b []byte, dirName string) (Skill, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return Skill{}, false
	}
	s := Skill{Name: dirName}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "---" {
			return s, s.Description != ""
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch strings.TrimSpace(k) {
		case "name":
			if v != "" {
				s.Name = v
			}
		case "description":
			s.Description = v
		}
	}
	return Skill{}, false // unterminated front matter
}
