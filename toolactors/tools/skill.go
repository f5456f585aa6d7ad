package tools

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sessionrt/sessionrt/toolactors/schema"
)

// SkillInfo is one skill (a SKILL.md) the skill tool can load.
type SkillInfo struct {
	Name        string
	Description string
	// Location is the SKILL.md file; its folder holds the skill's scripts
	// and references.
	Location string
	// Content is the file's body after its front matter.
	Content string
}

// Skill loads a skill's instructions into the conversation: the model
// names one of the skills the skill guidance lists, the permission
// "skill" is checked on its name, and the SKILL.md body comes back with
// the folder its relative paths are read from.
type Skill struct {
	cfg Config
	def definitionOnce
}

// SkillInput is skill's input.
type SkillInput struct {
	Name string `json:"name"`
}

// SkillOutput is skill's structured value.
type SkillOutput struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
}

// Definition implements Tool.
func (s *Skill) Definition() Definition { return s.def.get(s.define) }

func (s *Skill) define() Definition {
	return Definition{
		Name: "skill",
		Description: "Load a skill: specialized instructions, and the folder of its scripts and references, for a task " +
			"the skill's description matches. The available skills are listed in the system context; name one exactly.",
		Action: "skill",
		Input: schema.Object([]string{"name"}, map[string]*schema.Schema{
			"name": schema.String("The skill's name, as listed"),
		}),
	}
}

// Run implements Tool.
func (s *Skill) Run(ctx context.Context, call Call) (Result, error) {
	var in SkillInput
	if err := decode(call.Input, &in); err != nil {
		return Result{}, err
	}
	var found []SkillInfo
	if s.cfg.Skills != nil {
		var err error
		if found, err = s.cfg.Skills(ctx, call.Dir); err != nil {
			return Result{}, fmt.Errorf("list skills: %w", err)
		}
	}
	var sk *SkillInfo
	names := make([]string, 0, len(found))
	for i := range found {
		names = append(names, found[i].Name)
		if found[i].Name == in.Name {
			sk = &found[i]
		}
	}
	if sk == nil {
		sort.Strings(names)
		if len(names) == 0 {
			return Result{}, fmt.Errorf("skill %q not found: this project has no skills", in.Name)
		}
		return Result{}, fmt.Errorf("skill %q not found; the skills are: %s", in.Name, strings.Join(names, ", "))
	}
	if err := call.Authorize(ctx, "skill", []string{sk.Name}, nil, "Load skill "+sk.Name); err != nil {
		return Result{}, err
	}
	dir := filepath.Dir(sk.Location)
	text := fmt.Sprintf("<skill name=%q>\n# Skill: %s\n\n%s\n\nThis skill's folder is %s: paths it names (scripts/, references/, …) are relative to it.\n</skill>",
		sk.Name, sk.Name, strings.TrimSpace(sk.Content), dir)
	return Result{Title: "Loaded skill " + sk.Name, Text: text, Structured: SkillOutput{Name: sk.Name, Dir: dir}}, nil
}
