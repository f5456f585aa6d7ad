package compaction

import (
	"encoding/json"
	"fmt"
)

// Defaults of Config (OpenCode's values).
const (
	// DefaultBuffer is the minimum headroom, in tokens, kept free below the
	// context window for the model's output.
	DefaultBuffer = 20000
	// DefaultKeep is the token budget of the recent context kept verbatim
	// (serialized) after a compaction.
	DefaultKeep = 8000
)

// Config is the `compaction` section of the configuration:
//
//	{"auto": true, "buffer": 20000, "keep": 8000}
//
// Start from DefaultConfig: the zero Config has Auto off. Buffer and Keep
// of 0 mean their defaults; JSON keys that are absent keep the defaults.
type Config struct {
	// Auto enables automatic compaction: before a turn whose request is over
	// budget, and after a provider context overflow. Off, an over-budget
	// request is sent as is and an overflow is a terminal error. Manual
	// compaction works either way.
	Auto bool `json:"auto"`
	// Buffer is the minimum reserved headroom in tokens (default 20000): the
	// request budget is the window minus max(output allowance, Buffer).
	Buffer int `json:"buffer,omitempty"`
	// Keep is the token budget of the recent context (default 8000).
	Keep int `json:"keep,omitempty"`
}

// DefaultConfig is {Auto: true, Buffer: 20000, Keep: 8000}.
func DefaultConfig() Config {
	return Config{Auto: true, Buffer: DefaultBuffer, Keep: DefaultKeep}
}

// UnmarshalJSON reads a config section, keeping the defaults for absent keys,
// and refuses negative values.
func (c *Config) UnmarshalJSON(b []byte) error {
	var raw struct {
		Auto   *bool `json:"auto"`
		Buffer *int  `json:"buffer"`
		Keep   *int  `json:"keep"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("compaction config: %w", err)
	}
	out := DefaultConfig()
	if raw.Auto != nil {
		out.Auto = *raw.Auto
	}
	if raw.Buffer != nil {
		out.Buffer = *raw.Buffer
	}
	if raw.Keep != nil {
		out.Keep = *raw.Keep
	}
	if err := out.Validate(); err != nil {
		return err
	}
	*c = out.withDefaults()
	return nil
}

// Validate refuses negative budgets.
func (c Config) Validate() error {
	if c.Buffer < 0 {
		return fmt.Errorf("compaction config: buffer %d is negative (tokens of headroom; 0 means %d)", c.Buffer, DefaultBuffer)
	}
	if c.Keep < 0 {
		return fmt.Errorf("compaction config: keep %d is negative (tokens of recent context; 0 means %d)", c.Keep, DefaultKeep)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Buffer <= 0 {
		c.Buffer = DefaultBuffer
	}
	if c.Keep <= 0 {
		c.Keep = DefaultKeep
	}
	return c
}

// Budget is the largest request, in tokens, that may be sent to a model with
// this context window: window − max(outputAllowance, Buffer). It is 0 when
// the window is unknown (≤ 0) and may be negative for a tiny window.
func Budget(window, outputAllowance int, cfg Config) int {
	if window <= 0 {
		return 0
	}
	return window - max(outputAllowance, cfg.withDefaults().Buffer)
}

// Needed reports whether a request of estimate tokens is over budget and
// automatic compaction applies. It is false when the window is unknown (0)
// or cfg.Auto is off.
func Needed(estimate, window, outputAllowance int, cfg Config) bool {
	if !cfg.Auto || window <= 0 {
		return false
	}
	return estimate > Budget(window, outputAllowance, cfg)
}

// OutputAllowance is the output reserve of a request: its MaxOutputTokens
// when set, else the model's output limit (0 when neither is known).
func OutputAllowance(maxOutputTokens, modelOutputLimit int) int {
	if maxOutputTokens > 0 {
		return maxOutputTokens
	}
	return max(modelOutputLimit, 0)
}
