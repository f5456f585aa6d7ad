package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// Rules turns OpenCode's permission configuration into rules, in the order
// written: an action's single effect is a rule on every resource ("*"); an
// action's object gives one rule per pattern. "~/" and "$HOME/" at the start
// of a pattern name the home folder. The last matching rule wins, so a
// later key overrides an earlier one where both match.
func Rules(p Permission, home string) []permission.Rule {
	var out []permission.Rule
	for _, e := range p {
		if e.Val.Patterns == nil {
			out = append(out, permission.Rule{Action: e.Key, Resource: "*", Effect: permission.Effect(e.Val.Effect)})
			continue
		}
		for _, pe := range e.Val.Patterns {
			out = append(out, permission.Rule{Action: e.Key, Resource: expandHome(pe.Key, home), Effect: permission.Effect(pe.Val)})
		}
	}
	return out
}

// ToolRules turns the legacy "tools" switches into rules: true allows the
// tool, false denies it; write, edit and patch name the edit action.
func ToolRules(tools Entries[bool]) []permission.Rule {
	var out []permission.Rule
	for _, t := range tools {
		action := t.Key
		if action == "write" || action == "patch" || action == "apply_patch" {
			action = "edit"
		}
		eff := permission.Deny
		if t.Val {
			eff = permission.Allow
		}
		out = append(out, permission.Rule{Action: action, Resource: "*", Effect: eff})
	}
	return out
}

func expandHome(p, home string) string {
	if home == "" {
		return p
	}
	switch {
	case p == "~" || p == "$HOME":
		return home
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(home, p[2:])
	case strings.HasPrefix(p, "$HOME/"):
		return filepath.Join(home, p[6:])
	}
	return p
}

// ruleset builds rules from a literal OpenCode-shaped permission: keys and
// values alternate; a value is an effect or a []string of pattern, effect
// pairs.
func ruleset(kv ...any) []permission.Rule {
	var out []permission.Rule
	for i := 0; i+1 < len(kv); i += 2 {
		action := kv[i].(string)
		switch v := kv[i+1].(type) {
		case permission.Effect:
			out = append(out, permission.Rule{Action: action, Resource: "*", Effect: v})
		case []string:
			for j := 0; j+1 < len(v); j += 2 {
				out = append(out, permission.Rule{Action: action, Resource: v[j], Effect: permission.Effect(v[j+1])})
			}
		}
	}
	return out
}

// validate checks what the JSON types cannot: effects, agent modes, model
// names, steps. Each error names the value's file, line and column.
func validate(v *Value) error {
	if err := validatePermission(v.Get("permission")); err != nil {
		return err
	}
	if err := validateModel(v.Get("model")); err != nil {
		return err
	}
	if err := validateModel(v.Get("small_model")); err != nil {
		return err
	}
	for _, key := range []string{"agent", "mode"} {
		agents := v.Get(key)
		if agents == nil || agents.Kind != Object {
			continue
		}
		for _, a := range agents.Vals {
			if a.Kind != Object {
				continue
			}
			if err := validatePermission(a.Get("permission")); err != nil {
				return err
			}
			if err := validateModel(a.Get("model")); err != nil {
				return err
			}
			if m := a.Get("mode"); m != nil && m.Kind == String {
				switch m.Str {
				case "primary", "subagent", "all":
				default:
					return m.errorf("agent mode %q: want primary, subagent or all", m.Str)
				}
			}
			for _, k := range []string{"steps", "maxSteps"} {
				if s := a.Get(k); s != nil && s.Kind == Number && (strings.HasPrefix(s.Str, "-") || s.Str == "0") {
					return s.errorf("%s %s: want a positive number of provider turns", k, s.Str)
				}
			}
		}
	}
	if cmds := v.Get("command"); cmds != nil && cmds.Kind == Object {
		for i, c := range cmds.Vals {
			if c.Kind == Object && c.Get("template") == nil {
				return c.errorf("command %q has no template", cmds.Keys[i])
			}
			if c.Kind == Object {
				if err := validateModel(c.Get("model")); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func validatePermission(p *Value) error {
	if p == nil {
		return nil
	}
	if p.Kind == String {
		return validEffect(p)
	}
	if p.Kind != Object {
		return p.errorf("permission: want an effect (allow, ask, deny) or an object of them")
	}
	for i, a := range p.Vals {
		switch a.Kind {
		case String:
			if err := validEffect(a); err != nil {
				return err
			}
		case Object:
			for _, e := range a.Vals {
				if err := validEffect(e); err != nil {
					return err
				}
			}
		default:
			return a.errorf("permission %q: want an effect (allow, ask, deny) or an object of pattern → effect", p.Keys[i])
		}
	}
	return nil
}

func validEffect(v *Value) error {
	if v.Kind != String || !permission.Effect(v.Str).Valid() {
		return v.errorf("permission effect %s: want \"allow\", \"ask\" or \"deny\"", v.JSON())
	}
	return nil
}

func validateModel(v *Value) error {
	if v == nil || v.Kind != String || v.Str == "" {
		return nil
	}
	if p, m, ok := strings.Cut(v.Str, "/"); !ok || p == "" || m == "" {
		return v.errorf("model %q: want provider/model", v.Str)
	}
	return nil
}

// ParseModel splits "provider/model" (the model ID may hold more slashes).
func ParseModel(s string) (provider, model string, err error) {
	p, m, ok := strings.Cut(s, "/")
	if !ok || p == "" || m == "" {
		return "", "", fmt.Errorf("model %q: want provider/model", s)
	}
	return p, m, nil
}
