package catalog

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/sessionrt/sessionrt/provider"
)

// Partition splits a flat option map in the legacy / models.dev AI-SDK shape
// (camelCase or snake_case keys, as found in existing model configs) into the
// three separate catalog domains: Generation Controls, Model Request Options,
// and raw compatibility wire fields (every key it does not recognise, kept
// verbatim). A recognised key with a value of the wrong type is an error
// naming the key, never silently dropped.
func Partition(flat map[string]json.RawMessage) (provider.Controls, provider.Options, map[string]json.RawMessage, error) {
	var c provider.Controls
	var o provider.Options
	var wire map[string]json.RawMessage
	for _, k := range sortedKeys(flat) {
		v := flat[k]
		var err error
		switch k {
		case "temperature":
			c.Temperature, err = floatPtr(v)
		case "topP", "top_p":
			c.TopP, err = floatPtr(v)
		case "maxOutputTokens", "maxTokens", "max_tokens", "max_completion_tokens", "max_output_tokens":
			err = json.Unmarshal(v, &c.MaxOutputTokens)
		case "stop", "stopSequences", "stop_sequences":
			c.Stop, err = stringOrList(v)
		case "reasoningEffort", "reasoning_effort":
			err = json.Unmarshal(v, &o.ReasoningEffort)
		case "thinking":
			var t struct {
				Type          string `json:"type"`
				BudgetTokens  int    `json:"budgetTokens"`
				BudgetTokens2 int    `json:"budget_tokens"`
			}
			if err = json.Unmarshal(v, &t); err == nil && t.Type != "disabled" {
				o.ReasoningBudget = max(t.BudgetTokens, t.BudgetTokens2)
			}
		case "parallelToolCalls", "parallel_tool_calls":
			var b bool
			if err = json.Unmarshal(v, &b); err == nil {
				o.ParallelToolCalls = &b
			}
		case "promptCacheKey", "prompt_cache_key":
			err = json.Unmarshal(v, &o.CacheKey)
		default:
			if !json.Valid(v) {
				err = fmt.Errorf("not JSON: %s", provider.Quote(v))
				break
			}
			if wire == nil {
				wire = map[string]json.RawMessage{}
			}
			wire[k] = v
		}
		if err != nil {
			return provider.Controls{}, provider.Options{}, nil, fmt.Errorf("option %q: %w", k, err)
		}
	}
	return c, o, wire, nil
}

func floatPtr(v json.RawMessage) (*float64, error) {
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

func stringOrList(v json.RawMessage) ([]string, error) {
	var one string
	if json.Unmarshal(v, &one) == nil {
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, fmt.Errorf("want a string or a list of strings")
	}
	return list, nil
}

// ApplyParams folds a model's flat Params (OpenCode's model "options")
// into its three domains; the explicit Controls, Options and Wire of the
// entry win.
func ApplyParams(m Model) (Model, error) { return applyParams(m) }

func applyParams(m Model) (Model, error) {
	if len(m.Params) == 0 {
		return m, nil
	}
	c, o, w, err := Partition(m.Params)
	if err != nil {
		return m, err
	}
	fill := func(dst **float64, v *float64) {
		if *dst == nil {
			*dst = v
		}
	}
	fill(&m.Controls.Temperature, c.Temperature)
	fill(&m.Controls.TopP, c.TopP)
	if m.Controls.MaxOutputTokens == 0 {
		m.Controls.MaxOutputTokens = c.MaxOutputTokens
	}
	if m.Controls.Stop == nil {
		m.Controls.Stop = c.Stop
	}
	if m.Options.ReasoningEffort == "" {
		m.Options.ReasoningEffort = o.ReasoningEffort
	}
	if m.Options.ReasoningBudget == 0 {
		m.Options.ReasoningBudget = o.ReasoningBudget
	}
	if m.Options.ParallelToolCalls == nil {
		m.Options.ParallelToolCalls = o.ParallelToolCalls
	}
	if m.Options.CacheKey == "" {
		m.Options.CacheKey = o.CacheKey
	}
	if len(w) > 0 {
		merged := make(map[string]json.RawMessage, len(w)+len(m.Wire))
		for k, v := range w {
			merged[k] = v
		}
		for k, v := range m.Wire {
			merged[k] = v
		}
		m.Wire = merged
	}
	m.Params = nil
	return m, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
