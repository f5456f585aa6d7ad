package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/supervisor"
)

// The Location-scoped catalog routes of OpenCode's V2 API: what a client
// may choose in a Location (agents, models, providers, commands, skills,
// references), read per request from Config.Catalog, so a changed
// configuration shows without a restart.
func (s *Server) catalogRoutes() {
	m := s.mux
	m.HandleFunc("GET /api/location", s.location)
	m.HandleFunc("GET /api/agent", s.agents)
	m.HandleFunc("GET /api/model", s.models)
	m.HandleFunc("GET /api/provider", s.providers)
	m.HandleFunc("GET /api/provider/{providerID}", s.provider)
	m.HandleFunc("GET /api/command", s.commands)
	m.HandleFunc("GET /api/skill", s.skills)
	m.HandleFunc("GET /api/reference", s.references)
	m.HandleFunc("GET /api/integration", func(w http.ResponseWriter, r *http.Request) {
		if loc, ok := s.locationInfo(w, r); ok {
			writeJSON(w, http.StatusOK, wire.Located[[]wire.Integration]{Location: loc, Data: []wire.Integration{}})
		}
	})
	const login = "provider log-in integrations; configure providers in opencode.json (\"provider\": {…, \"options\": {\"apiKey\": \"{env:VAR}\"}}) or with the providers' environment variables (OPENAI_API_KEY, ANTHROPIC_API_KEY)"
	for _, p := range []string{
		"GET /api/integration/{integrationID}",
		"POST /api/integration/{integrationID}/connect/key",
		"POST /api/integration/{integrationID}/connect/oauth",
		"GET /api/integration/attempt/{attemptID}",
		"DELETE /api/integration/attempt/{attemptID}",
		"POST /api/integration/attempt/{attemptID}/complete",
		"PATCH /api/credential/{credentialID}",
		"DELETE /api/credential/{credentialID}",
	} {
		m.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotImplemented, wire.Error{Tag: wire.TagNotImplemented,
				Message: fmt.Sprintf("%s %s: %s are not implemented by sessionrt", r.Method, r.URL.Path, login)})
		})
	}
}

// requestDir is the Location a request names: ?location[directory]= (the
// SDK's deep-object form) or ?directory=, else the default Location.
func (s *Server) requestDir(r *http.Request) string {
	q := r.URL.Query()
	for _, k := range []string{"location[directory]", "directory"} {
		if d := q.Get(k); d != "" {
			return d
		}
	}
	return s.cfg.DefaultLocation
}

// locationInfo resolves the request's Location, answering 400 when it is
// not a directory.
func (s *Server) locationInfo(w http.ResponseWriter, r *http.Request) (wire.LocationInfo, bool) {
	dir, err := supervisor.Canonical(s.requestDir(r))
	if err != nil {
		badRequest(w, "location.directory", "location", "%v", err)
		return wire.LocationInfo{}, false
	}
	root := s.catalog(r.Context(), dir).Root
	if root == "" {
		root = dir
	}
	return wire.LocationInfo{Directory: dir, WorkspaceID: r.URL.Query().Get("location[workspace]"),
		Project: wire.ProjectInfo{ID: projectID(root), Directory: root}}, true
}

// located resolves the request's Location and its catalog; a Location
// whose configuration cannot be used answers 400 naming file:line:col.
func (s *Server) located(w http.ResponseWriter, r *http.Request) (wire.LocationInfo, Catalog, bool) {
	loc, ok := s.locationInfo(w, r)
	if !ok {
		return loc, Catalog{}, false
	}
	cat := s.catalog(r.Context(), loc.Directory)
	if cat.Err != nil {
		badRequest(w, "location.directory", "config", "configuration of %s: %v", loc.Directory, cat.Err)
		return loc, cat, false
	}
	return loc, cat, true
}

func (s *Server) location(w http.ResponseWriter, r *http.Request) {
	if loc, ok := s.locationInfo(w, r); ok {
		writeJSON(w, http.StatusOK, loc)
	}
}

func (s *Server) agents(w http.ResponseWriter, r *http.Request) {
	loc, cat, ok := s.located(w, r)
	if !ok {
		return
	}
	out := make([]wire.Agent, 0, len(cat.Agents))
	for _, a := range cat.Agents {
		wa := wire.Agent{ID: a.Name, System: a.Prompt, Description: a.Description, Mode: a.Mode, Hidden: a.Hidden,
			Color: a.Color, Steps: a.Steps, Permissions: []wire.PermissionRule{},
			Request: wire.ProviderRequest{Headers: map[string]string{}, Body: map[string]json.RawMessage{}}}
		if a.Model.ID != "" {
			wa.Model = &wire.ModelRef{ID: a.Model.ID, ProviderID: a.Model.Provider, Variant: a.Variant}
		}
		for k, v := range a.Options {
			wa.Request.Body[k] = v
		}
		if a.Temperature != nil {
			wa.Request.Body["temperature"], _ = json.Marshal(*a.Temperature)
		}
		if a.TopP != nil {
			wa.Request.Body["top_p"], _ = json.Marshal(*a.TopP)
		}
		for _, p := range a.Permissions {
			wa.Permissions = append(wa.Permissions, wire.PermissionRule{Action: p.Action, Resource: p.Resource, Effect: p.Effect})
		}
		out = append(out, wa)
	}
	writeJSON(w, http.StatusOK, wire.Located[[]wire.Agent]{Location: loc, Data: out})
}

func wireModel(providerID string, m CatalogModel) wire.Model {
	wm := wire.Model{ID: m.ID, ProviderID: providerID, Name: m.Name,
		API:          wire.API{ID: m.apiID(), Type: "native", Settings: json.RawMessage("{}")},
		Capabilities: wire.ModelCapabilities{Tools: m.Tools, Input: []string{"text"}, Output: []string{"text"}},
		Request:      wire.ModelRequest{Headers: map[string]string{}, Body: map[string]json.RawMessage{}},
		Variants:     []wire.ModelVariant{}, Cost: []json.RawMessage{}, Status: "active", Enabled: true,
		Limit: wire.ModelLimit{Context: m.Context, Output: m.Output}}
	if wm.Name == "" {
		wm.Name = m.ID
	}
	if m.Attachments {
		wm.Capabilities.Input = append(wm.Capabilities.Input, "image")
	}
	for k, v := range m.Headers {
		wm.Request.Headers[k] = v
	}
	for k, v := range m.Options {
		wm.Request.Body[k] = v
	}
	for _, v := range m.Variants {
		mv := wire.ModelVariant{ID: v.ID, Headers: map[string]string{}, Body: map[string]json.RawMessage{}}
		for k, b := range v.Options {
			mv.Body[k] = b
		}
		wm.Variants = append(wm.Variants, mv)
	}
	return wm
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	loc, cat, ok := s.located(w, r)
	if !ok {
		return
	}
	out := []wire.Model{}
	for _, p := range cat.Providers {
		for _, m := range p.Models {
			out = append(out, wireModel(p.ID, m))
		}
	}
	writeJSON(w, http.StatusOK, wire.Located[[]wire.Model]{Location: loc, Data: out})
}

func wireProvider(p CatalogProvider) wire.Provider {
	name := p.Name
	if name == "" {
		name = p.ID
	}
	return wire.Provider{ID: p.ID, Name: name, API: wire.API{Type: "native", Settings: json.RawMessage("{}")},
		Request: wire.ProviderRequest{Headers: map[string]string{}, Body: map[string]json.RawMessage{}}}
}

func (s *Server) providers(w http.ResponseWriter, r *http.Request) {
	loc, cat, ok := s.located(w, r)
	if !ok {
		return
	}
	out := make([]wire.Provider, 0, len(cat.Providers))
	for _, p := range cat.Providers {
		out = append(out, wireProvider(p))
	}
	writeJSON(w, http.StatusOK, wire.Located[[]wire.Provider]{Location: loc, Data: out})
}

func (s *Server) provider(w http.ResponseWriter, r *http.Request) {
	loc, cat, ok := s.located(w, r)
	if !ok {
		return
	}
	id := r.PathValue("providerID")
	var known []string
	for _, p := range cat.Providers {
		if p.ID == id {
			writeJSON(w, http.StatusOK, wire.Located[wire.Provider]{Location: loc, Data: wireProvider(p)})
			return
		}
		known = append(known, p.ID)
	}
	sort.Strings(known)
	writeError(w, http.StatusNotFound, wire.Error{Tag: wire.TagNotFound,
		Message: fmt.Sprintf("provider %q is not configured in %s (configured: %v)", id, loc.Directory, known)})
}

func (s *Server) commands(w http.ResponseWriter, r *http.Request) {
	loc, cat, ok := s.located(w, r)
	if !ok {
		return
	}
	out := make([]wire.Command, 0, len(cat.Commands))
	for _, c := range cat.Commands {
		wc := wire.Command{Name: c.Name, Template: c.Template, Description: c.Description, Agent: c.Agent, Subtask: c.Subtask}
		if p, m, ok := splitModel(c.Model); ok {
			wc.Model = &wire.ModelRef{ID: m, ProviderID: p, Variant: c.Variant}
		}
		out = append(out, wc)
	}
	writeJSON(w, http.StatusOK, wire.Located[[]wire.Command]{Location: loc, Data: out})
}

func splitModel(s string) (provider, model string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], i > 0 && i < len(s)-1
		}
	}
	return "", "", false
}

func (s *Server) skills(w http.ResponseWriter, r *http.Request) {
	loc, cat, ok := s.located(w, r)
	if !ok {
		return
	}
	out := make([]wire.Skill, 0, len(cat.Skills))
	for _, sk := range cat.Skills {
		out = append(out, wire.Skill{Name: sk.Name, Description: sk.Description, Location: sk.Location, Content: sk.Content})
	}
	writeJSON(w, http.StatusOK, wire.Located[[]wire.Skill]{Location: loc, Data: out})
}

func (s *Server) references(w http.ResponseWriter, r *http.Request) {
	loc, cat, ok := s.located(w, r)
	if !ok {
		return
	}
	out := make([]wire.Reference, 0, len(cat.References))
	for _, ref := range cat.References {
		out = append(out, wire.Reference{Name: ref.Name, Path: ref.Path, Description: ref.Description, Hidden: ref.Hidden,
			Source: wire.ReferenceSource{Type: "local", Path: ref.Path, Description: ref.Description, Hidden: ref.Hidden}})
	}
	writeJSON(w, http.StatusOK, wire.Located[[]wire.Reference]{Location: loc, Data: out})
}
