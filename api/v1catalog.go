package api

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"

	"github.com/sessionrt/sessionrt/messages"
)

// Catalog is what clients list for a Location: the agents, the configured
// providers with their models, the commands, the skills and the defaults.
// The server reads it per request through Config.Catalog, so a changed
// configuration shows without a restart. V1 and V2 routes share it.
type Catalog struct {
	Agents       []CatalogAgent
	Providers    []CatalogProvider
	Commands     []CatalogCommand
	Skills       []CatalogSkill
	References   []CatalogReference
	DefaultModel messages.ModelRef
	DefaultAgent string
	// Root is the Location's project root ("" when unknown).
	Root string
	// Err, when set, says the Location's configuration cannot be used (a
	// malformed file: file:line:col); the rest then holds the defaults.
	Err error
}

// CatalogAgent is one agent. Mode is "primary", "subagent" or "all".
type CatalogAgent struct {
	Name, Description, Mode string
	// Model is the agent's own model; zero when it uses the session's.
	Model       messages.ModelRef
	Variant     string
	Prompt      string
	Color       string
	Steps       int
	Hidden      bool
	Native      bool
	Temperature *float64
	TopP        *float64
	// Options are the agent's provider request options (JSON values).
	Options map[string]json.RawMessage
	// Permissions are the agent's rules in order (the last match wins).
	Permissions []CatalogRule
}

// CatalogRule is one permission rule.
type CatalogRule struct {
	Action, Resource, Effect string
}

// CatalogProvider is one configured provider and its models.
type CatalogProvider struct {
	ID, Name string
	Env      []string // the environment variables that configure it
	// Source says where it is configured: "env", "config" or "builtin".
	Source string
	Models []CatalogModel
}

// CatalogModel is one model of a provider.
type CatalogModel struct {
	ID, Name string
	// APIID is the ID the provider knows the model by ("" for ID): the
	// configured model is an alias.
	APIID                         string
	Context, Output               int
	Tools, Reasoning, Attachments bool
	Temperature                   bool
	// Variants are the model's option sets a session may pick.
	Variants []CatalogVariant
	// Headers and Options are sent with every request to the model.
	Headers map[string]string
	Options map[string]json.RawMessage
}

// CatalogVariant is a named option set of a model.
type CatalogVariant struct {
	ID      string
	Options map[string]json.RawMessage
}

// CatalogReference is a named folder the read tool may read beside the
// Location.
type CatalogReference struct {
	Name, Path, Description string
	Hidden                  bool
}

// CatalogCommand is one configured command (a prompt template).
type CatalogCommand struct {
	Name, Description, Template, Agent, Model string
	Variant                                   string
	Subtask                                   bool
	// Source is the file that defines it.
	Source string
}

// CatalogSkill is one skill found for the Location.
type CatalogSkill struct {
	Name, Description string
	// Location is the skill's SKILL.md file; Content its instructions.
	Location, Content string
}

// catalog is Config.Catalog's answer for a directory, or the built-in
// agent and the sessions' default model when the server has none.
func (s *Server) catalog(ctx context.Context, dir string) Catalog {
	if s.cfg.Catalog != nil {
		return s.cfg.Catalog(ctx, dir)
	}
	return Catalog{Agents: []CatalogAgent{{Name: "build", Mode: "primary"}}, DefaultAgent: "build"}
}

func (s *Server) v1CatalogRoutes() {
	m := s.mux
	m.HandleFunc("GET /path", s.v1Path)
	m.HandleFunc("GET /project/current", s.v1Project)
	m.HandleFunc("GET /project", s.v1Projects)
	m.HandleFunc("GET /project/{projectID}/directories", s.v1ProjectDirectories)
	m.HandleFunc("GET /config", s.v1Config)
	m.HandleFunc("GET /config/providers", s.v1ConfigProviders)
	m.HandleFunc("GET /provider", s.v1Providers)
	m.HandleFunc("GET /provider/auth", s.v1EmptyObject)
	m.HandleFunc("GET /agent", s.v1Agents)
	m.HandleFunc("GET /command", s.v1Commands)
	// Panels of things sessionrt does not run: honest empty answers.
	m.HandleFunc("GET /lsp", s.v1EmptyList)
	m.HandleFunc("GET /formatter", s.v1EmptyList)
	m.HandleFunc("GET /mcp", s.v1EmptyObject)
	m.HandleFunc("GET /experimental/resource", s.v1EmptyObject)
	m.HandleFunc("GET /experimental/workspace", s.v1EmptyList)
	m.HandleFunc("GET /experimental/workspace/status", s.v1EmptyList)
	m.HandleFunc("GET /experimental/capabilities", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"backgroundSubagents": false})
	})
	m.HandleFunc("GET /experimental/console", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"consoleManagedProviders": []string{}, "switchableOrgCount": 0})
	})
	m.HandleFunc("GET /vcs", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, struct{}{}) // no branch known
	})
}

func (s *Server) v1EmptyObject(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct{}{})
}

func (s *Server) v1Path(w http.ResponseWriter, r *http.Request) {
	dir := s.v1Dir(r)
	home, _ := os.UserHomeDir()
	cfg, _ := os.UserConfigDir()
	state := filepath.Join(home, ".local", "state")
	writeJSON(w, http.StatusOK, map[string]string{"home": home, "state": state, "config": filepath.Join(cfg, "opencode"),
		"worktree": dir, "directory": dir})
}

type v1ProjectTime struct {
	Created int64 `json:"created"`
	Updated int64 `json:"updated"`
}

type v1ProjectInfo struct {
	ID        string        `json:"id"`
	Worktree  string        `json:"worktree"`
	Name      string        `json:"name,omitempty"`
	Time      v1ProjectTime `json:"time"`
	Sandboxes []string      `json:"sandboxes"`
}

func v1ProjectOf(dir string) v1ProjectInfo {
	return v1ProjectInfo{ID: projectID(dir), Worktree: dir, Name: filepath.Base(dir), Sandboxes: []string{}}
}

func (s *Server) v1Project(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, v1ProjectOf(s.v1Dir(r)))
}

func (s *Server) v1Projects(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, []v1ProjectInfo{v1ProjectOf(s.v1Dir(r))})
}

func (s *Server) v1ProjectDirectories(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, []map[string]string{{"directory": s.v1Dir(r)}})
}

func (s *Server) v1Config(w http.ResponseWriter, r *http.Request) {
	cat := s.catalog(r.Context(), s.v1Dir(r))
	out := map[string]any{}
	if m := cat.DefaultModel; m.ID != "" {
		out["model"] = m.Provider + "/" + m.ID
	}
	if cat.DefaultAgent != "" {
		out["default_agent"] = cat.DefaultAgent
	}
	writeJSON(w, http.StatusOK, out)
}

type v1IO struct {
	Text  bool `json:"text"`
	Audio bool `json:"audio"`
	Image bool `json:"image"`
	Video bool `json:"video"`
	PDF   bool `json:"pdf"`
}

type v1Capabilities struct {
	Temperature bool `json:"temperature"`
	Reasoning   bool `json:"reasoning"`
	Attachment  bool `json:"attachment"`
	Toolcall    bool `json:"toolcall"`
	Input       v1IO `json:"input"`
	Output      v1IO `json:"output"`
	Interleaved bool `json:"interleaved"`
}

type v1Cost struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	Cache  v1Cache `json:"cache"`
}

type v1Limit struct {
	Context int `json:"context"`
	Output  int `json:"output"`
}

type v1API struct {
	ID  string `json:"id"`
	URL string `json:"url"`
	Npm string `json:"npm"`
}

type v1Model struct {
	ID           string            `json:"id"`
	ProviderID   string            `json:"providerID"`
	API          v1API             `json:"api"`
	Name         string            `json:"name"`
	Capabilities v1Capabilities    `json:"capabilities"`
	Cost         v1Cost            `json:"cost"`
	Limit        v1Limit           `json:"limit"`
	Status       string            `json:"status"`
	Options      struct{}          `json:"options"`
	Headers      map[string]string `json:"headers"`
	ReleaseDate  string            `json:"release_date"`
	// Variants are the model's option sets by name: the TUI cycles them
	// and sends the chosen one with each prompt.
	Variants map[string]map[string]json.RawMessage `json:"variants,omitempty"`
}

type v1Provider struct {
	ID      string             `json:"id"`
	Name    string             `json:"name"`
	Source  string             `json:"source"`
	Env     []string           `json:"env"`
	Options struct{}           `json:"options"`
	Models  map[string]v1Model `json:"models"`
}

func v1Providers(cat Catalog) ([]v1Provider, map[string]string) {
	out := make([]v1Provider, 0, len(cat.Providers))
	def := map[string]string{}
	for _, p := range cat.Providers {
		vp := v1Provider{ID: p.ID, Name: p.Name, Source: "env", Env: nonNil(p.Env), Models: map[string]v1Model{}}
		if vp.Name == "" {
			vp.Name = p.ID
		}
		for _, m := range p.Models {
			name := m.Name
			if name == "" {
				name = m.ID
			}
			vp.Models[m.ID] = v1Model{ID: m.ID, ProviderID: p.ID, API: v1API{ID: m.apiID()}, Name: name,
				Capabilities: v1Capabilities{Temperature: m.Temperature, Reasoning: m.Reasoning, Attachment: m.Attachments, Toolcall: m.Tools,
					Input: v1IO{Text: true, Image: m.Attachments, PDF: m.Attachments}, Output: v1IO{Text: true}},
				Limit: v1Limit{Context: m.Context, Output: m.Output}, Status: "active", Headers: map[string]string{}}
			if len(m.Variants) > 0 {
				vm := vp.Models[m.ID]
				vm.Variants = make(map[string]map[string]json.RawMessage, len(m.Variants))
				for _, v := range m.Variants {
					vm.Variants[v.ID] = v.Options
				}
				vp.Models[m.ID] = vm
			}
		}
		if cat.DefaultModel.Provider == p.ID && cat.DefaultModel.ID != "" {
			def[p.ID] = cat.DefaultModel.ID
		} else if len(p.Models) > 0 {
			ids := make([]string, 0, len(p.Models))
			for _, m := range p.Models {
				ids = append(ids, m.ID)
			}
			sort.Strings(ids)
			def[p.ID] = ids[0]
		}
		out = append(out, vp)
	}
	return out, def
}

func (s *Server) v1ConfigProviders(w http.ResponseWriter, r *http.Request) {
	ps, def := v1Providers(s.catalog(r.Context(), s.v1Dir(r)))
	writeJSON(w, http.StatusOK, map[string]any{"providers": ps, "default": def})
}

func (s *Server) v1Providers(w http.ResponseWriter, r *http.Request) {
	ps, def := v1Providers(s.catalog(r.Context(), s.v1Dir(r)))
	connected := make([]string, 0, len(ps))
	for _, p := range ps {
		connected = append(connected, p.ID)
	}
	writeJSON(w, http.StatusOK, map[string]any{"all": ps, "default": def, "connected": connected})
}

type v1Agent struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Mode        string          `json:"mode"`
	Native      bool            `json:"native,omitempty"`
	Hidden      bool            `json:"hidden,omitempty"` // OpenCode's clients do not offer it
	Permission  json.RawMessage `json:"permission"`
	Options     struct{}        `json:"options"`
}

func (s *Server) v1Agents(w http.ResponseWriter, r *http.Request) {
	cat := s.catalog(r.Context(), s.v1Dir(r))
	out := make([]v1Agent, 0, len(cat.Agents))
	for _, a := range cat.Agents {
		mode := a.Mode
		if mode == "" {
			mode = "primary"
		}
		out = append(out, v1Agent{Name: a.Name, Description: a.Description, Mode: mode, Native: a.Native, Hidden: a.Hidden, Permission: json.RawMessage("[]")})
	}
	writeJSON(w, http.StatusOK, out)
}

type v1Command struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Agent       string   `json:"agent,omitempty"`
	Model       string   `json:"model,omitempty"`
	Source      string   `json:"source"`
	Template    string   `json:"template"`
	Hints       []string `json:"hints"`
}

func (s *Server) v1Commands(w http.ResponseWriter, r *http.Request) {
	cat := s.catalog(r.Context(), s.v1Dir(r))
	out := make([]v1Command, 0, len(cat.Commands))
	for _, c := range cat.Commands {
		out = append(out, v1Command{Name: c.Name, Description: c.Description, Agent: c.Agent, Model: c.Model, Source: "command", Template: c.Template, Hints: []string{}})
	}
	writeJSON(w, http.StatusOK, out)
}

// apiID is the model's ID at its provider.
func (m CatalogModel) apiID() string {
	if m.APIID != "" {
		return m.APIID
	}
	return m.ID
}
