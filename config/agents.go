package config

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// Agent modes.
const (
	ModePrimary  = "primary"
	ModeSubagent = "subagent"
	ModeAll      = "all"
)

// Agent is one agent as configured for a Location: the built-in build and
// plan agents with their configuration applied, and the configured ones.
type Agent struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Mode is primary, subagent or all.
	Mode string `json:"mode"`
	// Native marks the built-in agents.
	Native bool   `json:"native"`
	Hidden bool   `json:"hidden,omitempty"`
	Color  string `json:"color,omitempty"`
	// Model is the agent's model ("provider/model"), "" for the session's.
	Model   string `json:"model,omitempty"`
	Variant string `json:"variant,omitempty"`
	// Prompt is the agent's system prompt, "" for none.
	Prompt      string   `json:"prompt,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	// Steps is the provider-turn limit of one drain activity; 0 for the
	// runtime's default.
	Steps int `json:"steps,omitempty"`
	// Options are provider request options.
	Options map[string]json.RawMessage `json:"options,omitempty"`
	// Rules are the agent's permission rules in order: OpenCode's defaults,
	// the agent's built-in ones, the global configuration's, the agent's
	// configured ones. The last match wins; no match asks.
	Rules []permission.Rule `json:"rules"`
}

// Agents are the agents of a Location.
type Agents struct {
	// Default is the agent sessions start with.
	Default string
	// List holds every agent: the default first, then by name.
	List []Agent
}

// Get returns the named agent.
func (a Agents) Get(name string) (Agent, bool) {
	for _, x := range a.List {
		if x.Name == name {
			return x, true
		}
	}
	return Agent{}, false
}

// Names lists the agent names a client may select (not hidden), in List order.
func (a Agents) Names() []string {
	var out []string
	for _, x := range a.List {
		if !x.Hidden {
			out = append(out, x.Name)
		}
	}
	return out
}

// AgentEnv is what the agents' default permissions depend on.
type AgentEnv struct {
	// Home expands "~/" in permission patterns.
	Home string
	// External are folders outside the Location every agent may reach
	// without asking (the managed tool-output folder, skill folders).
	External []string
}

// BaseRules are the permissions OpenCode gives every agent before its own:
// everything allowed, except reading .env files (ask), directories outside
// the Location (ask, but for env.External), the question tool (deny) and
// the plan switches (deny).
func BaseRules(env AgentEnv) []permission.Rule {
	ext := []string{"*", string(permission.Ask)}
	for _, d := range env.External {
		ext = append(ext, filepath.Join(d, "*"), string(permission.Allow))
	}
	return ruleset(
		"*", permission.Allow,
		"doom_loop", permission.Ask,
		"external_directory", ext,
		"question", permission.Deny,
		"plan_enter", permission.Deny,
		"plan_exit", permission.Deny,
		"read", []string{"*", "allow", "*.env", "ask", "*.env.*", "ask", "*.env.example", "allow"},
	)
}

// builtinAgents are build and plan as OpenCode ships them; plan may not
// edit (but its plan notes) and asks before any command.
func builtinAgents(env AgentEnv) []Agent {
	base := BaseRules(env)
	return []Agent{
		{Name: "build", Description: "The default agent. Executes tools based on configured permissions.", Mode: ModePrimary, Native: true,
			Rules: append(append([]permission.Rule(nil), base...), ruleset("question", permission.Allow, "plan_enter", permission.Allow)...)},
		{Name: "plan", Description: "Plan mode. Disallows all edit tools.", Mode: ModePrimary, Native: true,
			Rules: append(append([]permission.Rule(nil), base...), ruleset(
				"question", permission.Allow,
				"plan_exit", permission.Allow,
				"edit", []string{"*", "deny", filepath.Join(".opencode", "plans", "*.md"), "allow"},
				"bash", []string{"*", "ask"},
			)...)},
	}
}

// internalAgents are OpenCode's hidden built-in agents for its own small
// requests: title names sessions (its model wins over small_model; disable
// turns titles off), summary and compaction summarize. Configured, they are
// listed hidden, never as agents a client selects.
var internalAgents = map[string]bool{"title": true, "summary": true, "compaction": true}

// Agents resolves the Location's agents: the built-in ones with the global
// permission configuration and their own applied, then the configured ones.
func (c *Config) Agents(env AgentEnv) (Agents, error) {
	info := c.Info
	global := append(ToolRules(info.Tools), Rules(info.Permission, env.Home)...)
	list := builtinAgents(env)
	for i := range list {
		list[i].Rules = append(list[i].Rules, global...)
	}
	index := func(name string) int {
		for i, a := range list {
			if a.Name == name {
				return i
			}
		}
		return -1
	}
	type named struct {
		name string
		cfg  *AgentConfig
		mode string
	}
	var configured []named
	for _, key := range []string{"agent", "mode"} {
		src := info.Agent
		if key == "mode" {
			src = info.Mode
		}
		names := make([]string, 0, len(src))
		for n := range src {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			m := ""
			if key == "mode" {
				m = ModePrimary
			}
			if src[n] != nil {
				configured = append(configured, named{n, src[n], m})
			}
		}
	}
	for _, n := range configured {
		ac := n.cfg
		i := index(n.name)
		if ac.Disable {
			if i >= 0 {
				list = append(list[:i], list[i+1:]...)
			}
			continue
		}
		if i < 0 {
			a := Agent{Name: n.name, Mode: ModeAll, Rules: append(BaseRules(env), global...)}
			if internalAgents[n.name] {
				// Configuring OpenCode's internal agent (its title
				// model, say) does not make it one a client picks.
				a.Mode, a.Native, a.Hidden = ModePrimary, true, true
			}
			list = append(list, a)
			i = len(list) - 1
		}
		a := &list[i]
		set := func(dst *string, v string) {
			if v != "" {
				*dst = v
			}
		}
		set(&a.Model, ac.Model)
		set(&a.Variant, ac.Variant)
		set(&a.Prompt, ac.Prompt)
		set(&a.Description, ac.Description)
		set(&a.Mode, ac.Mode)
		set(&a.Mode, n.mode)
		set(&a.Color, ac.Color)
		if ac.Temperature != nil {
			a.Temperature = ac.Temperature
		}
		if ac.TopP != nil {
			a.TopP = ac.TopP
		}
		if ac.Hidden != nil {
			a.Hidden = *ac.Hidden
		}
		if ac.Steps != nil {
			a.Steps = *ac.Steps
		} else if ac.MaxSteps != nil {
			a.Steps = *ac.MaxSteps
		}
		if len(ac.Options) > 0 {
			opts := make(map[string]json.RawMessage, len(a.Options)+len(ac.Options))
			for k, v := range a.Options {
				opts[k] = v
			}
			for k, v := range ac.Options {
				opts[k] = v
			}
			a.Options = opts
		}
		a.Rules = append(a.Rules, ToolRules(ac.Tools)...)
		a.Rules = append(a.Rules, Rules(ac.Permission, env.Home)...)
	}
	// The managed tool-output folder stays reachable unless a rule denies it.
	for i := range list {
		for _, d := range env.External {
			glob := filepath.Join(d, "*")
			if !deniesExactly(list[i].Rules, "external_directory", glob) {
				list[i].Rules = append(list[i].Rules, permission.Rule{Action: "external_directory", Resource: glob, Effect: permission.Allow})
			}
		}
	}
	def, err := c.defaultAgent(list)
	if err != nil {
		return Agents{}, err
	}
	sort.SliceStable(list, func(i, j int) bool {
		if (list[i].Name == def) != (list[j].Name == def) {
			return list[i].Name == def
		}
		return list[i].Name < list[j].Name
	})
	return Agents{Default: def, List: list}, nil
}

func deniesExactly(rules []permission.Rule, action, resource string) bool {
	for _, r := range rules {
		if r.Action == action && r.Resource == resource && r.Effect == permission.Deny {
			return true
		}
	}
	return false
}

func (c *Config) defaultAgent(list []Agent) (string, error) {
	if name := c.Info.DefaultAgent; name != "" {
		at := c.Tree.Get("default_agent")
		var found *Agent
		for i := range list {
			if list[i].Name == name {
				found = &list[i]
			}
		}
		switch {
		case found == nil:
			var names []string
			for _, a := range list {
				names = append(names, a.Name)
			}
			return "", at.errorf("default agent %q is not an agent (agents: %s)", name, strings.Join(names, ", "))
		case found.Mode == ModeSubagent:
			return "", at.errorf("default agent %q is a subagent", name)
		case found.Hidden:
			return "", at.errorf("default agent %q is hidden", name)
		}
		return name, nil
	}
	for _, a := range list {
		if a.Mode != ModeSubagent && !a.Hidden {
			return a.Name, nil
		}
	}
	return "", fmt.Errorf("configuration of %s leaves no primary visible agent", c.Dir)
}
