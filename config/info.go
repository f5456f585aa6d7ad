package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Info is the part of OpenCode's configuration (opencode.json) that
// sessionrt acts on. Keys it does not know are kept in the merged tree (and
// shown by `sessionrt config show`) but ignored, as OpenCode ignores them.
type Info struct {
	// Model is the default model, "provider/model".
	Model string `json:"model,omitempty"`
	// SmallModel is the model for small tasks (titles, summaries).
	SmallModel string `json:"small_model,omitempty"`
	// DefaultAgent names the primary agent sessions start with.
	DefaultAgent string `json:"default_agent,omitempty"`
	// Agent configures built-in agents and defines new ones.
	Agent map[string]*AgentConfig `json:"agent,omitempty"`
	// Mode is the legacy name of primary agents.
	Mode map[string]*AgentConfig `json:"mode,omitempty"`
	// Permission is the global permission configuration.
	Permission Permission `json:"permission,omitempty"`
	// Tools enables (true) or disables (false) tools by name (legacy).
	Tools Entries[bool] `json:"tools,omitempty"`
	// Command defines commands: prompt templates.
	Command map[string]CommandConfig `json:"command,omitempty"`
	// Provider configures providers and their models.
	Provider map[string]ProviderConfig `json:"provider,omitempty"`
	// EnabledProviders, when set, is the only providers used.
	EnabledProviders []string `json:"enabled_providers,omitempty"`
	// DisabledProviders are providers never used.
	DisabledProviders []string `json:"disabled_providers,omitempty"`
	// Skills adds skill folders.
	Skills *SkillsConfig `json:"skills,omitempty"`
	// References name folders the read tool may read beside the Location
	// ("reference" is the older spelling).
	References map[string]Reference `json:"references,omitempty"`
	Reference  map[string]Reference `json:"reference,omitempty"`
}

// Reference is a named folder: a path, or {"path", "description",
// "hidden"}; a git repository ({"repository"}) is accepted and not used.
type Reference struct {
	Path        string `json:"path,omitempty"`
	Repository  string `json:"repository,omitempty"`
	Description string `json:"description,omitempty"`
	Hidden      bool   `json:"hidden,omitempty"`
}

// UnmarshalJSON accepts a bare path.
func (r *Reference) UnmarshalJSON(b []byte) error {
	if s := bytes.TrimSpace(b); len(s) > 0 && s[0] == '"' {
		return json.Unmarshal(s, &r.Path)
	}
	type plain Reference
	return json.Unmarshal(b, (*plain)(r))
}

// AgentConfig is one agent's configuration.
type AgentConfig struct {
	Model       string   `json:"model,omitempty"`
	Variant     string   `json:"variant,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	// Prompt is the agent's system prompt ({file:…} reads it from a file).
	Prompt      string `json:"prompt,omitempty"`
	Description string `json:"description,omitempty"`
	// Mode is primary, subagent or all.
	Mode   string `json:"mode,omitempty"`
	Hidden *bool  `json:"hidden,omitempty"`
	Color  string `json:"color,omitempty"`
	// Steps is the provider-turn limit of one drain activity.
	Steps    *int `json:"steps,omitempty"`
	MaxSteps *int `json:"maxSteps,omitempty"` // legacy Steps
	Disable  bool `json:"disable,omitempty"`
	// Tools enables or disables tools by name (legacy permissions).
	Tools      Entries[bool] `json:"tools,omitempty"`
	Permission Permission    `json:"permission,omitempty"`
	// Options are provider request options; unknown agent keys land here
	// too, as in OpenCode.
	Options map[string]json.RawMessage `json:"options,omitempty"`
}

// agentKeys are AgentConfig's own keys; any other goes to Options.
var agentKeys = map[string]bool{"name": true, "model": true, "variant": true, "prompt": true, "description": true,
	"temperature": true, "top_p": true, "mode": true, "hidden": true, "color": true, "steps": true, "maxSteps": true,
	"options": true, "permission": true, "disable": true, "tools": true}

// UnmarshalJSON decodes the known keys and moves the rest into Options.
func (a *AgentConfig) UnmarshalJSON(b []byte) error {
	type plain AgentConfig
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for k, v := range all {
		if agentKeys[k] {
			continue
		}
		if p.Options == nil {
			p.Options = map[string]json.RawMessage{}
		}
		if _, set := p.Options[k]; !set {
			p.Options[k] = v
		}
	}
	*a = AgentConfig(p)
	return nil
}

// CommandConfig is one command: a prompt template.
type CommandConfig struct {
	// Template is the prompt; $ARGUMENTS, $1, $2… are the command's arguments.
	Template    string `json:"template"`
	Description string `json:"description,omitempty"`
	Agent       string `json:"agent,omitempty"`
	Model       string `json:"model,omitempty"`
	Variant     string `json:"variant,omitempty"`
	Subtask     bool   `json:"subtask,omitempty"`
}

// ProviderConfig configures one provider, in OpenCode's shape.
type ProviderConfig struct {
	Name string `json:"name,omitempty"`
	// NPM is the AI SDK package (@ai-sdk/openai-compatible, @ai-sdk/anthropic,
	// @ai-sdk/openai): it selects the wire format.
	NPM string `json:"npm,omitempty"`
	// API is the base URL when Options.BaseURL is not set.
	API string `json:"api,omitempty"`
	// Env are the variables that may hold the API key, first set wins.
	Env       []string               `json:"env,omitempty"`
	Options   ProviderOptions        `json:"options,omitempty"`
	Models    map[string]ModelConfig `json:"models,omitempty"`
	Whitelist []string               `json:"whitelist,omitempty"`
	Blacklist []string               `json:"blacklist,omitempty"`
}

// ProviderOptions are a provider's connection options.
type ProviderOptions struct {
	APIKey  string            `json:"apiKey,omitempty"`
	BaseURL string            `json:"baseURL,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Timeout in milliseconds (false: none) is accepted and not used.
	Timeout json.RawMessage `json:"timeout,omitempty"`
	// ChunkTimeout is OpenCode's "chunkTimeout": milliseconds between
	// streamed chunks after which a provider stream is given up (a
	// retryable error), or false for none. Unset is none: the spec's
	// runner imposes no provider-stream inactivity timeout (OpenCode's
	// own default of 300000 is not taken), so only an operator who knows a
	// server may hang silently sets one.
	ChunkTimeout Millis `json:"chunkTimeout,omitzero"`
}

// Millis is OpenCode's timeout value: a positive number of milliseconds,
// or false for none. The zero Millis is unset.
type Millis struct {
	// Set says the key was given; Off that it was false.
	Set, Off bool
	// N is the milliseconds when Set and not Off.
	N int64
}

// Duration is the timeout, 0 for none.
func (m Millis) Duration() time.Duration {
	if m.Off {
		return 0
	}
	return time.Duration(m.N) * time.Millisecond
}

// IsZero reports an unset value (omitzero).
func (m Millis) IsZero() bool { return !m.Set }

// UnmarshalJSON accepts a positive integer or false.
func (m *Millis) UnmarshalJSON(b []byte) error {
	s := bytes.TrimSpace(b)
	if string(s) == "false" {
		*m = Millis{Set: true, Off: true}
		return nil
	}
	var n int64
	if err := json.Unmarshal(s, &n); err != nil || n <= 0 {
		return fmt.Errorf("%s given, want a positive number of milliseconds or false", s)
	}
	*m = Millis{Set: true, N: n}
	return nil
}

// MarshalJSON writes the shape it was read in.
func (m Millis) MarshalJSON() ([]byte, error) {
	if m.Off || !m.Set {
		return []byte("false"), nil
	}
	return json.Marshal(m.N)
}

// ModelConfig describes one model of a provider.
type ModelConfig struct {
	// ID is the model ID sent to the provider when it differs from the key.
	ID          string `json:"id,omitempty"`
	Name        string `json:"name,omitempty"`
	Reasoning   *bool  `json:"reasoning,omitempty"`
	ToolCall    *bool  `json:"tool_call,omitempty"`
	Attachment  *bool  `json:"attachment,omitempty"`
	Temperature *bool  `json:"temperature,omitempty"`
	Limit       *struct {
		Context int `json:"context"`
		Input   int `json:"input,omitempty"`
		Output  int `json:"output"`
	} `json:"limit,omitempty"`
	// Options are request options sent with every request to this model.
	Options map[string]json.RawMessage `json:"options,omitempty"`
	Headers map[string]string          `json:"headers,omitempty"`
	// Variants are named option sets a session may select ("high", "max").
	Variants map[string]map[string]json.RawMessage `json:"variants,omitempty"`
	Status   string                                `json:"status,omitempty"`
}

// SkillsConfig adds skill folders.
type SkillsConfig struct {
	Paths []string `json:"paths,omitempty"`
	URLs  []string `json:"urls,omitempty"`
}

// Entries is a JSON object decoded with its keys in order.
type Entries[T any] []Entry[T]

// Entry is one key of an Entries object.
type Entry[T any] struct {
	Key string
	Val T
}

// UnmarshalJSON keeps the keys in the order written.
func (e *Entries[T]) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return &json.UnmarshalTypeError{Value: jsonKind(tok), Type: reflect.TypeFor[Entries[T]]()}
	}
	var out Entries[T]
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		var v T
		if err := dec.Decode(&v); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				te.Field = joinField(k.(string), te.Field)
			}
			return err
		}
		out = out.set(k.(string), v)
	}
	*e = out
	return nil
}

func (e Entries[T]) set(k string, v T) Entries[T] {
	for i := range e {
		if e[i].Key == k {
			e[i].Val = v
			return e
		}
	}
	return append(e, Entry[T]{k, v})
}

// MarshalJSON writes the keys in order.
func (e Entries[T]) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, x := range e {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(x.Key)
		v, err := json.Marshal(x.Val)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Permission is OpenCode's permission configuration: per action (tool
// permission name), one effect for every resource or an ordered object of
// resource pattern → effect. A bare string is the effect of every action.
type Permission Entries[PermissionValue]

// PermissionValue is one action's effect, or its patterns.
type PermissionValue struct {
	Effect   string          // set when the value is a string
	Patterns Entries[string] // set when the value is an object
}

// UnmarshalJSON accepts "allow" or {"*": "ask", "git *": "allow"}.
func (p *PermissionValue) UnmarshalJSON(b []byte) error {
	if s := bytes.TrimSpace(b); len(s) > 0 && s[0] == '"' {
		return json.Unmarshal(s, &p.Effect)
	}
	return json.Unmarshal(b, &p.Patterns)
}

// MarshalJSON writes the shape it was read in.
func (p PermissionValue) MarshalJSON() ([]byte, error) {
	if p.Patterns == nil {
		return json.Marshal(p.Effect)
	}
	return json.Marshal(p.Patterns)
}

// UnmarshalJSON accepts an object, or a bare effect for every action.
func (p *Permission) UnmarshalJSON(b []byte) error {
	if s := bytes.TrimSpace(b); len(s) > 0 && s[0] == '"' {
		var eff string
		if err := json.Unmarshal(s, &eff); err != nil {
			return err
		}
		*p = Permission{{Key: "*", Val: PermissionValue{Effect: eff}}}
		return nil
	}
	return (*Entries[PermissionValue])(p).UnmarshalJSON(b)
}

// MarshalJSON writes the keys in order.
func (p Permission) MarshalJSON() ([]byte, error) { return Entries[PermissionValue](p).MarshalJSON() }

func joinField(k, rest string) string {
	if rest == "" {
		return k
	}
	return k + "." + rest
}

func jsonKind(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		return "array"
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "bool"
	}
	return "null"
}

// decodeInfo decodes a configuration tree. A value of the wrong type is a
// *FileError at that value's position.
func decodeInfo(v *Value) (Info, error) {
	var info Info
	if v == nil {
		return info, nil
	}
	if v.Kind != Object {
		return info, v.errorf("the configuration must be a JSON object")
	}
	if err := json.Unmarshal(v.JSON(), &info); err != nil {
		at, path, err := locate(v, reflect.TypeFor[Info](), nil, err)
		what := err.Error()
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			what = fmt.Sprintf("%s given, want %s", te.Value, friendlyType(te.Type))
		}
		if len(path) > 0 {
			what = strings.Join(path, ".") + ": " + what
		}
		return info, at.errorf("%s", what)
	}
	if err := validate(v); err != nil {
		return info, err
	}
	return info, nil
}

// elemTyper is implemented by the ordered objects: the type of their values.
type elemTyper interface{ elemType() reflect.Type }

func (Entries[T]) elemType() reflect.Type { return reflect.TypeFor[T]() }

func (Permission) elemType() reflect.Type { return reflect.TypeFor[PermissionValue]() }

// locate finds the deepest value under v that does not decode into t (the
// Go type it is decoded into), with its path and its own error: where a
// type error is reported, since encoding/json's paths skip map keys.
func locate(v *Value, t reflect.Type, path []string, err error) (*Value, []string, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	type child struct {
		key string
		v   *Value
		t   reflect.Type
	}
	var children []child
	switch {
	case t.Implements(reflect.TypeFor[elemTyper]()) && v.Kind == Object:
		et := reflect.Zero(t).Interface().(elemTyper).elemType()
		for i, k := range v.Keys {
			children = append(children, child{k, v.Vals[i], et})
		}
	case t.Kind() == reflect.Struct && v.Kind == Object:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if c := v.Get(name); c != nil {
				children = append(children, child{name, c, f.Type})
			}
		}
	case t.Kind() == reflect.Map && v.Kind == Object:
		for i, k := range v.Keys {
			children = append(children, child{k, v.Vals[i], t.Elem()})
		}
	case t.Kind() == reflect.Slice && v.Kind == Array:
		for i, it := range v.Items {
			children = append(children, child{fmt.Sprint(i), it, t.Elem()})
		}
	}
	for _, c := range children {
		if cerr := json.Unmarshal(c.v.JSON(), reflect.New(c.t).Interface()); cerr != nil {
			return locate(c.v, c.t, append(path, c.key), cerr)
		}
	}
	return v, path, err
}

func friendlyType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice:
		if t.Implements(reflect.TypeFor[elemTyper]()) {
			return "an object"
		}
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "a number"
	}
	return t.String()
}
