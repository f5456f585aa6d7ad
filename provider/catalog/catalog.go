package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sessionrt/sessionrt/provider"
)

// Adapter kinds.
const (
	KindOpenAI    = "openai"
	KindAnthropic = "anthropic"
	KindScripted  = "scripted"
)

// Model describes one model.
type Model struct {
	Name string `json:"name,omitempty"`
	// APIID is the model ID sent to the provider when it differs from the
	// catalog's (OpenCode's model "id": a configured alias); "" sends the
	// catalog's.
	APIID string `json:"api_id,omitempty"`
	// ContextWindow is the total token window (input + output).
	ContextWindow int `json:"context_window"`
	// OutputLimit is the maximum output tokens per turn.
	OutputLimit int  `json:"output_limit"`
	Tools       bool `json:"tools"`
	Reasoning   bool `json:"reasoning"`
	Attachments bool `json:"attachments,omitempty"`
	// Controls are default Generation Controls (the request's own win).
	Controls provider.Controls `json:"controls,omitempty"`
	// Options are default Model Request Options (the request's own win).
	Options provider.Options `json:"options,omitempty"`
	// Wire are default raw compatibility body fields (the request's own win).
	Wire map[string]json.RawMessage `json:"wire,omitempty"`
	// Params is a flat option map in the legacy / models.dev AI-SDK shape
	// ("temperature", "topP", "reasoningEffort", "thinking", anything else);
	// Parse partitions it into Controls, Options and Wire (see Partition)
	// and clears it.
	Params map[string]json.RawMessage `json:"params,omitempty"`
	// Variants are named option sets a session may select (OpenCode's
	// model "variants": "high", "max"), each a flat option map in the
	// Params shape. The selected one's settings win over the request's own
	// and the model's defaults (Registry.Stream). A reasoning model gets
	// the ones its adapter kind understands too (DefaultVariants); a
	// configured variant of the same name replaces that one, and a nil one
	// removes it.
	Variants map[string]map[string]json.RawMessage `json:"variants,omitempty"`
}

// Provider describes one provider endpoint.
type Provider struct {
	// Kind is the adapter: "openai" (any Chat Completions server),
	// "anthropic" or "scripted".
	Kind string `json:"kind"`
	Name string `json:"name,omitempty"`
	// BaseURL is the API root (openai: ".../v1").
	BaseURL string `json:"base_url,omitempty"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// APIKey is the key itself, when the operator's configuration gives it
	// (opencode.json's options.apiKey, usually "{env:VAR}"); the APIKeyEnv
	// variable wins when set. Never read from or written to a catalog file.
	APIKey string `json:"-"`
	// BaseURLEnv names an environment variable overriding BaseURL.
	BaseURLEnv string `json:"base_url_env,omitempty"`
	// Headers are extra request headers.
	Headers map[string]string `json:"headers,omitempty"`
	// MidSystem (openai kind): "native", "wrapped" or "" (native only for
	// api.openai.com).
	MidSystem string `json:"mid_system,omitempty"`
	// MaxTokensField (openai kind): "max_tokens" or "max_completion_tokens".
	MaxTokensField string `json:"max_tokens_field,omitempty"`
	// IdleTimeout (openai and anthropic kinds), a Go duration such as "10m",
	// ends a stream on which no byte arrived for that long with a retryable
	// error. Default none: the spec's runner imposes no idle timeout, so only
	// an operator who knows a server may hang silently sets one.
	IdleTimeout string `json:"idle_timeout,omitempty"`
	// Script (scripted kind) is a JSON script file, relative to the catalog
	// file; empty means the demo.
	Script string `json:"script,omitempty"`
	// AllowUnlisted lets requests name models missing from Models (local
	// servers serve whatever was pulled); they get Unlisted()'s limits.
	AllowUnlisted bool `json:"allow_unlisted,omitempty"`
	// Models by model ID.
	Models map[string]Model `json:"models,omitempty"`
	// Blocked are model IDs refused even when AllowUnlisted (OpenCode's
	// provider "blacklist"). Never read from or written to a catalog file.
	Blocked []string `json:"-"`
	// Whitelist: only these model IDs are served (OpenCode's provider
	// "whitelist"), whatever the environment says of the server: for a
	// local OPENAI_BASE_URL, Open serves the whitelisted models it does
	// not list instead of every unlisted model. Never read from or
	// written to a catalog file.
	Whitelist []string `json:"-"`
}

// Unlisted is the description assumed for a model a provider allows without
// listing it: conservative limits, tools on.
func Unlisted() Model { return Model{ContextWindow: 32768, OutputLimit: 4096, Tools: true} }

// Catalog is the set of known providers. It is a plain value: Builtin
// returns a fresh one, Load a merged one; nothing is shared.
type Catalog struct {
	Providers map[string]Provider `json:"providers"`
	// Default is the model used when a session names none.
	Default *provider.ModelRef `json:"default,omitempty"`
}

// Builtin returns the built-in catalog.
func Builtin() *Catalog {
	openai := map[string]Model{
		"gpt-5":        {Name: "GPT-5", ContextWindow: 400000, OutputLimit: 128000, Tools: true, Reasoning: true, Attachments: true},
		"gpt-5-mini":   {Name: "GPT-5 mini", ContextWindow: 400000, OutputLimit: 128000, Tools: true, Reasoning: true, Attachments: true},
		"gpt-4.1":      {Name: "GPT-4.1", ContextWindow: 1047576, OutputLimit: 32768, Tools: true, Attachments: true},
		"gpt-4.1-mini": {Name: "GPT-4.1 mini", ContextWindow: 1047576, OutputLimit: 32768, Tools: true, Attachments: true},
		"gpt-4o":       {Name: "GPT-4o", ContextWindow: 128000, OutputLimit: 16384, Tools: true, Attachments: true},
		"gpt-4o-mini":  {Name: "GPT-4o mini", ContextWindow: 128000, OutputLimit: 16384, Tools: true, Attachments: true},
		"o3":           {Name: "o3", ContextWindow: 200000, OutputLimit: 100000, Tools: true, Reasoning: true, Attachments: true},
		"o4-mini":      {Name: "o4-mini", ContextWindow: 200000, OutputLimit: 100000, Tools: true, Reasoning: true, Attachments: true},
	}
	anthropic := map[string]Model{
		"claude-sonnet-4-5":       {Name: "Claude Sonnet 4.5", ContextWindow: 200000, OutputLimit: 64000, Tools: true, Reasoning: true, Attachments: true},
		"claude-haiku-4-5":        {Name: "Claude Haiku 4.5", ContextWindow: 200000, OutputLimit: 64000, Tools: true, Reasoning: true, Attachments: true},
		"claude-opus-4-1":         {Name: "Claude Opus 4.1", ContextWindow: 200000, OutputLimit: 32000, Tools: true, Reasoning: true, Attachments: true},
		"claude-sonnet-4-0":       {Name: "Claude Sonnet 4", ContextWindow: 200000, OutputLimit: 64000, Tools: true, Reasoning: true, Attachments: true},
		"claude-3-5-haiku-latest": {Name: "Claude Haiku 3.5", ContextWindow: 200000, OutputLimit: 8192, Tools: true, Attachments: true},
	}
	return &Catalog{Providers: map[string]Provider{
		"openai": {Kind: KindOpenAI, Name: "OpenAI", BaseURL: "https://api.openai.com/v1",
			APIKeyEnv: "OPENAI_API_KEY", BaseURLEnv: "OPENAI_BASE_URL", Models: openai},
		"anthropic": {Kind: KindAnthropic, Name: "Anthropic", BaseURL: "https://api.anthropic.com",
			APIKeyEnv: "ANTHROPIC_API_KEY", BaseURLEnv: "ANTHROPIC_BASE_URL", Models: anthropic},
		"scripted": {Kind: KindScripted, Name: "Offline demo", AllowUnlisted: true,
			Models: map[string]Model{"demo": {Name: "Offline demo", ContextWindow: 200000, OutputLimit: 8192, Tools: true}}},
	}}
}

// Load reads a catalog JSON file and merges it over Builtin: a provider in
// the file replaces the built-in fields it sets, and its models are added to
// (or replace) the built-in ones by ID.
func Load(path string) (*Catalog, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	// A script path is relative to the catalog file, not to the process.
	for id, p := range c.Providers {
		if p.Script != "" && !filepath.IsAbs(p.Script) {
			p.Script = filepath.Join(filepath.Dir(path), p.Script)
			c.Providers[id] = p
		}
	}
	return c, nil
}

// Parse decodes catalog JSON (unknown fields refused) merged over Builtin.
func Parse(b []byte) (*Catalog, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var file Catalog
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	c := Builtin()
	for id, fp := range file.Providers {
		for mid, m := range fp.Models {
			pm, err := applyParams(m)
			if err != nil {
				return nil, fmt.Errorf("provider %q model %q: %w", id, mid, err)
			}
			fp.Models[mid] = pm
		}
		base, ok := c.Providers[id]
		if !ok {
			c.Providers[id] = fp
			continue
		}
		c.Providers[id] = mergeProvider(base, fp)
	}
	if file.Default != nil {
		c.Default = file.Default
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func mergeProvider(base, over Provider) Provider {
	if over.Kind != "" {
		base.Kind = over.Kind
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&base.Name, over.Name)
	set(&base.BaseURL, over.BaseURL)
	set(&base.APIKeyEnv, over.APIKeyEnv)
	set(&base.BaseURLEnv, over.BaseURLEnv)
	set(&base.MidSystem, over.MidSystem)
	set(&base.MaxTokensField, over.MaxTokensField)
	set(&base.Script, over.Script)
	base.AllowUnlisted = base.AllowUnlisted || over.AllowUnlisted
	if len(over.Headers) > 0 {
		h := make(map[string]string, len(base.Headers)+len(over.Headers))
		for k, v := range base.Headers {
			h[k] = v
		}
		for k, v := range over.Headers {
			h[k] = v
		}
		base.Headers = h
	}
	models := make(map[string]Model, len(base.Models)+len(over.Models))
	for k, v := range base.Models {
		models[k] = v
	}
	for k, v := range over.Models {
		models[k] = v
	}
	base.Models = models
	return base
}

// Validate checks every provider and model, naming the first bad entry.
func (c *Catalog) Validate() error {
	for _, id := range c.ProviderIDs() {
		p := c.Providers[id]
		switch p.Kind {
		case KindOpenAI, KindAnthropic, KindScripted:
		default:
			return fmt.Errorf("provider %q: kind %q: want openai, anthropic or scripted", id, p.Kind)
		}
		if p.BaseURL != "" {
			if u, err := url.Parse(p.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("provider %q: base_url %q is not an http(s) URL", id, p.BaseURL)
			}
		}
		switch p.MidSystem {
		case "", "native", "wrapped":
		default:
			return fmt.Errorf("provider %q: mid_system %q: want native or wrapped", id, p.MidSystem)
		}
		switch p.MaxTokensField {
		case "", "max_tokens", "max_completion_tokens":
		default:
			return fmt.Errorf("provider %q: max_tokens_field %q: want max_tokens or max_completion_tokens", id, p.MaxTokensField)
		}
		if _, err := p.idleTimeout(); err != nil {
			return fmt.Errorf("provider %q: %w", id, err)
		}
		for mid, m := range p.Models {
			if m.ContextWindow < 0 || m.OutputLimit < 0 || (m.ContextWindow > 0 && m.OutputLimit > m.ContextWindow) {
				return fmt.Errorf("provider %q model %q: context_window %d / output_limit %d are inconsistent", id, mid, m.ContextWindow, m.OutputLimit)
			}
			for k, v := range m.Wire {
				if !json.Valid(v) {
					return fmt.Errorf("provider %q model %q: wire field %q is not JSON: %s", id, mid, k, provider.Quote(v))
				}
			}
			for _, name := range sortedKeys(m.Variants) {
				if _, _, _, err := Partition(m.Variants[name]); err != nil {
					return fmt.Errorf("provider %q model %q variant %q: %w", id, mid, name, err)
				}
			}
		}
	}
	if d := c.Default; d != nil {
		if _, err := c.Resolve(*d); err != nil {
			return fmt.Errorf("default model: %w", err)
		}
	}
	return nil
}

// ProviderIDs lists provider IDs, sorted.
func (c *Catalog) ProviderIDs() []string {
	ids := make([]string, 0, len(c.Providers))
	for id := range c.Providers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Resolve returns the model description for ref.
func (c *Catalog) Resolve(ref provider.ModelRef) (Model, error) {
	p, ok := c.Providers[ref.Provider]
	if !ok {
		return Model{}, fmt.Errorf("unknown provider %q (known: %s)", ref.Provider, strings.Join(c.ProviderIDs(), ", "))
	}
	if m, ok := p.Models[ref.Model]; ok {
		return m, nil
	}
	if p.AllowUnlisted && !slices.Contains(p.Blocked, ref.Model) {
		return Unlisted(), nil
	}
	ids := make([]string, 0, len(p.Models))
	for id := range p.Models {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return Model{}, fmt.Errorf("unknown model %q of provider %q (known: %s)", ref.Model, ref.Provider, strings.Join(ids, ", "))
}

// DefaultVariants are the variants a reasoning model of an adapter kind
// offers without configuration, as OpenCode derives them: reasoning effort
// for Chat Completions servers, a thinking budget for Anthropic. Other
// models have none.
func DefaultVariants(kind string, m Model) map[string]map[string]json.RawMessage {
	if !m.Reasoning {
		return nil
	}
	switch kind {
	case KindOpenAI:
		out := map[string]map[string]json.RawMessage{}
		for _, e := range []string{"low", "medium", "high"} {
			out[e] = map[string]json.RawMessage{"reasoningEffort": json.RawMessage(`"` + e + `"`)}
		}
		return out
	case KindAnthropic:
		return map[string]map[string]json.RawMessage{
			"high": {"thinking": json.RawMessage(`{"type":"enabled","budgetTokens":16000}`)},
			"max":  {"thinking": json.RawMessage(`{"type":"enabled","budgetTokens":31999}`)},
		}
	}
	return nil
}

// Variants are the variants ref's model offers: DefaultVariants of its
// provider's kind with the configured ones over them, by name.
func (c *Catalog) Variants(ref provider.ModelRef) (map[string]map[string]json.RawMessage, error) {
	m, err := c.Resolve(ref)
	if err != nil {
		return nil, err
	}
	out := DefaultVariants(c.Providers[ref.Provider].Kind, m)
	if len(m.Variants) > 0 && out == nil {
		out = make(map[string]map[string]json.RawMessage, len(m.Variants))
	}
	for name, v := range m.Variants {
		if v == nil {
			delete(out, name) // disabled by configuration
			continue
		}
		out[name] = v
	}
	return out, nil
}

// Variant returns the settings of ref's variant name, or an error naming
// the variants the model has.
func (c *Catalog) Variant(ref provider.ModelRef, name string) (provider.Controls, provider.Options, map[string]json.RawMessage, error) {
	vs, err := c.Variants(ref)
	if err != nil {
		return provider.Controls{}, provider.Options{}, nil, err
	}
	v, ok := vs[name]
	if !ok {
		known := "none"
		if len(vs) > 0 {
			known = strings.Join(sortedKeys(vs), ", ")
		}
		return provider.Controls{}, provider.Options{}, nil, fmt.Errorf("model %s has no variant %q (variants: %s)", ref, name, known)
	}
	return Partition(v)
}

// ApplyVariant returns a copy of req with a variant's settings over its
// own: every setting the variant gives wins (OpenCode merges the selected
// variant last, over the model's and the agent's options).
func ApplyVariant(req *provider.Request, c provider.Controls, o provider.Options, wire map[string]json.RawMessage) *provider.Request {
	out := *req
	if c.Temperature != nil {
		out.Controls.Temperature = c.Temperature
	}
	if c.TopP != nil {
		out.Controls.TopP = c.TopP
	}
	if c.MaxOutputTokens != 0 {
		out.Controls.MaxOutputTokens = c.MaxOutputTokens
	}
	if c.Stop != nil {
		out.Controls.Stop = c.Stop
	}
	if o.ReasoningEffort != "" {
		out.Options.ReasoningEffort = o.ReasoningEffort
	}
	if o.ReasoningBudget != 0 {
		out.Options.ReasoningBudget = o.ReasoningBudget
	}
	if o.ParallelToolCalls != nil {
		out.Options.ParallelToolCalls = o.ParallelToolCalls
	}
	if o.CacheKey != "" {
		out.Options.CacheKey = o.CacheKey
	}
	if len(wire) > 0 {
		w := make(map[string]json.RawMessage, len(req.Wire)+len(wire))
		for k, v := range req.Wire {
			w[k] = v
		}
		for k, v := range wire {
			w[k] = v
		}
		out.Wire = w
	}
	return &out
}

// MaxDefaultOutput caps the output allowance applied when neither the request
// nor the model's Controls set one (a 128k-token allowance would only shrink
// the room left for context).
const MaxDefaultOutput = 32000

// Apply returns a copy of req with the model's defaults filled in: Controls,
// Options and Wire fields the request leaves unset; MaxOutputTokens defaults
// to min(OutputLimit, MaxDefaultOutput); reasoning options are dropped for a
// model without reasoning support (its API would refuse them).
func Apply(m Model, req *provider.Request) *provider.Request {
	out := *req
	c := &out.Controls
	if c.Temperature == nil {
		c.Temperature = m.Controls.Temperature
	}
	if c.TopP == nil {
		c.TopP = m.Controls.TopP
	}
	if c.MaxOutputTokens == 0 {
		c.MaxOutputTokens = m.Controls.MaxOutputTokens
	}
	if c.MaxOutputTokens == 0 && m.OutputLimit > 0 {
		c.MaxOutputTokens = min(m.OutputLimit, MaxDefaultOutput)
	}
	if c.Stop == nil {
		c.Stop = m.Controls.Stop
	}
	o := &out.Options
	if o.ReasoningEffort == "" {
		o.ReasoningEffort = m.Options.ReasoningEffort
	}
	if o.ReasoningBudget == 0 {
		o.ReasoningBudget = m.Options.ReasoningBudget
	}
	if o.ParallelToolCalls == nil {
		o.ParallelToolCalls = m.Options.ParallelToolCalls
	}
	if o.CacheKey == "" {
		o.CacheKey = m.Options.CacheKey
	}
	if !m.Reasoning {
		o.ReasoningEffort, o.ReasoningBudget = "", 0
	}
	if len(m.Wire) > 0 {
		w := make(map[string]json.RawMessage, len(m.Wire)+len(req.Wire))
		for k, v := range m.Wire {
			w[k] = v
		}
		for k, v := range req.Wire {
			w[k] = v
		}
		out.Wire = w
	}
	return &out
}

// idleTimeout parses IdleTimeout; "" is none.
func (p Provider) idleTimeout() (time.Duration, error) {
	if p.IdleTimeout == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(p.IdleTimeout)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("idle_timeout %q: want a positive duration such as \"10m\" (or none)", p.IdleTimeout)
	}
	return d, nil
}
