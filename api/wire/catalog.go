package wire

import "encoding/json"

// Located is the envelope of the Location-scoped routes: {"location", "data"}.
type Located[T any] struct {
	Location LocationInfo `json:"location"`
	Data     T            `json:"data"`
}

// LocationInfo is OpenCode's Location.Info: the directory and its project.
type LocationInfo struct {
	Directory   string      `json:"directory"`
	WorkspaceID string      `json:"workspaceID,omitempty"`
	Project     ProjectInfo `json:"project"`
}

// ProjectInfo names a project: its ID and root directory.
type ProjectInfo struct {
	ID        string `json:"id"`
	Directory string `json:"directory"`
}

// ProviderRequest is what a provider or agent adds to every request.
type ProviderRequest struct {
	Headers map[string]string          `json:"headers"`
	Body    map[string]json.RawMessage `json:"body"`
}

// PermissionRule is one permission rule (PermissionV2Rule).
type PermissionRule struct {
	Action   string `json:"action"`
	Resource string `json:"resource"`
	Effect   string `json:"effect"`
}

// Agent is OpenCode's AgentV2Info.
type Agent struct {
	ID          string           `json:"id"`
	Model       *ModelRef        `json:"model,omitempty"`
	Request     ProviderRequest  `json:"request"`
	System      string           `json:"system,omitempty"`
	Description string           `json:"description,omitempty"`
	Mode        string           `json:"mode"`
	Hidden      bool             `json:"hidden"`
	Color       string           `json:"color,omitempty"`
	Steps       int              `json:"steps,omitempty"`
	Permissions []PermissionRule `json:"permissions"`
}

// API says how a provider or model is reached.
type API struct {
	ID       string          `json:"id,omitempty"`
	Type     string          `json:"type"` // "native" or "aisdk"
	Package  string          `json:"package,omitempty"`
	URL      string          `json:"url,omitempty"`
	Settings json.RawMessage `json:"settings"`
}

// Provider is OpenCode's ProviderV2Info.
type Provider struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Disabled bool            `json:"disabled,omitempty"`
	API      API             `json:"api"`
	Request  ProviderRequest `json:"request"`
}

// ModelCapabilities says what a model accepts and produces.
type ModelCapabilities struct {
	Tools  bool     `json:"tools"`
	Input  []string `json:"input"`
	Output []string `json:"output"`
}

// ModelRequest is what a model adds to every request, and its variant.
type ModelRequest struct {
	Headers map[string]string          `json:"headers"`
	Body    map[string]json.RawMessage `json:"body"`
	Variant string                     `json:"variant,omitempty"`
}

// ModelVariant is a named option set of a model.
type ModelVariant struct {
	ID      string                     `json:"id"`
	Headers map[string]string          `json:"headers"`
	Body    map[string]json.RawMessage `json:"body"`
}

// ModelTime holds the release time (ms since the epoch; 0 unknown).
type ModelTime struct {
	Released float64 `json:"released"`
}

// ModelLimit holds a model's token limits.
type ModelLimit struct {
	Context int `json:"context"`
	Input   int `json:"input,omitempty"`
	Output  int `json:"output"`
}

// Model is OpenCode's ModelV2Info.
type Model struct {
	ID           string            `json:"id"`
	ProviderID   string            `json:"providerID"`
	Family       string            `json:"family,omitempty"`
	Name         string            `json:"name"`
	API          API               `json:"api"`
	Capabilities ModelCapabilities `json:"capabilities"`
	Request      ModelRequest      `json:"request"`
	Variants     []ModelVariant    `json:"variants"`
	Time         ModelTime         `json:"time"`
	Cost         []json.RawMessage `json:"cost"`
	Status       string            `json:"status"`
	Enabled      bool              `json:"enabled"`
	Limit        ModelLimit        `json:"limit"`
}

// Command is OpenCode's CommandV2Info.
type Command struct {
	Name        string    `json:"name"`
	Template    string    `json:"template"`
	Description string    `json:"description,omitempty"`
	Agent       string    `json:"agent,omitempty"`
	Model       *ModelRef `json:"model,omitempty"`
	Subtask     bool      `json:"subtask,omitempty"`
}

// Skill is OpenCode's SkillV2Info.
type Skill struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Slash       bool   `json:"slash,omitempty"`
	Location    string `json:"location"`
	Content     string `json:"content"`
}

// ReferenceSource is where a reference comes from (a local folder here).
type ReferenceSource struct {
	Type        string `json:"type"` // "local"
	Path        string `json:"path"`
	Description string `json:"description,omitempty"`
	Hidden      bool   `json:"hidden,omitempty"`
}

// Reference is OpenCode's ReferenceInfo: a named folder the read tool may
// read beside the Location.
type Reference struct {
	Name        string          `json:"name"`
	Path        string          `json:"path"`
	Description string          `json:"description,omitempty"`
	Hidden      bool            `json:"hidden,omitempty"`
	Source      ReferenceSource `json:"source"`
}

// FileSystemEntry is one file or directory, relative to the Location.
type FileSystemEntry struct {
	Path string `json:"path"`
	Type string `json:"type"` // "file" or "directory"
}

// SavedPermission is one saved approval ("always" reply) of a project.
type SavedPermission struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectID"`
	Action    string `json:"action"`
	Resource  string `json:"resource"`
}

// Integration is OpenCode's IntegrationInfo (sessionrt lists none).
type Integration struct {
	ID string `json:"id"`
}
