package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sessionrt/sessionrt/toolactors/schema"
)

// Definition is what the provider sees of a tool.
type Definition struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Input       *schema.Schema `json:"inputSchema"`
	// Action is the permission action the tool is checked as ("read", "bash", "edit").
	// A tool whose action is denied on every resource is hidden from the catalog.
	Action string `json:"-"`
	// inputJSON is Input's encoding, set on definitions built once (definitionOnce) so a
	// turn's catalog does not re-encode every schema.
	inputJSON json.RawMessage
}

// noInputSchema is the schema of a tool that declares no input.
var noInputSchema = json.RawMessage(`{"type":"object"}`)

// InputJSON is the JSON Schema of the tool's input as the provider receives it (an
// object without fields when Input is nil). The bytes may be shared: do not modify them.
func (d *Definition) InputJSON() (json.RawMessage, error) {
	if d.inputJSON != nil {
		return d.inputJSON, nil
	}
	return encodeInput(d.Input)
}

func encodeInput(in *schema.Schema) (json.RawMessage, error) {
	if in == nil {
		return noInputSchema, nil
	}
	b, err := json.Marshal(in)
	return slices.Clip(b), err
}

// definitionOnce holds a tool's Definition, built on first use: a built-in tool's
// definition depends only on its Config, and the registry asks for it every turn.
type definitionOnce struct {
	once sync.Once
	d    Definition
}

func (o *definitionOnce) get(build func() Definition) Definition {
	o.once.Do(func() {
		o.d = build()
		if b, err := encodeInput(o.d.Input); err == nil {
			o.d.inputJSON = b
		}
	})
	return o.d
}

// Tool is one executable tool.
type Tool interface {
	Definition() Definition
	// Run executes a call whose Input has been validated against Definition().Input.
	// It must return promptly when ctx ends. An error is a tool failure the model sees.
	Run(ctx context.Context, call Call) (Result, error)
}

// AuthorizeFunc checks a permission before the tool acts. action is the permission
// action, resources what it acts on, always the patterns an "always" reply saves (nil:
// the resources themselves), title a one-line description for the client.
type AuthorizeFunc func(ctx context.Context, action string, resources, always []string, title string) error

// Call is one execution.
type Call struct {
	SessionID string
	CallID    string
	Agent     string
	// Dir is the Location directory: absolute, symlinks resolved.
	Dir string
	// References are named project references a read may name instead of the Location.
	References map[string]string
	Input      json.RawMessage
	Authorize  AuthorizeFunc
	// ManagedDir is the managed tool-output directory; its tool_ files are readable by
	// absolute path.
	ManagedDir string
}

// Result is a successful execution.
type Result struct {
	Title string `json:"title,omitempty"`
	// Text is the complete model-visible projection, before the registry bounds it.
	Text string `json:"text"`
	// Structured is the validated structured value for Session consumers (JSON-encodable).
	Structured any `json:"structured,omitempty"`
	// ManagedPath is a managed output file the tool wrote itself; it survives bounding.
	ManagedPath string `json:"managedPath,omitempty"`
	// Dropped counts bytes of output the tool lost before it assembled Text (bash's
	// in-memory cap), so the bounding marker does not call the saved text complete.
	Dropped int64 `json:"droppedBytes,omitempty"`
}

// decode unmarshals validated input into v.
func decode(raw json.RawMessage, v any) error {
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode validated input: %w", err)
	}
	return nil
}

// Builtins returns the built-in tools configured by cfg.
func Builtins(cfg Config) []Tool {
	cfg = cfg.withDefaults()
	out := []Tool{
		&Read{cfg: cfg},
		&Bash{cfg: cfg},
		&ApplyPatch{},
		&Glob{cfg: cfg},
		&Grep{cfg: cfg},
	}
	if cfg.Skills != nil {
		out = append(out, &Skill{cfg: cfg})
	}
	if cfg.Question {
		out = append(out, &Question{})
	}
	return out
}
