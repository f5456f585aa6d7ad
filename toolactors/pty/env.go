package pty

import (
	"context"
	"sort"
	"strings"
)

// Forced terminal invariants, applied last. OPENCODE_TERMINAL is the variable the spec
// names (glossary 000: "Core-forced terminal invariants such as TERM and
// OPENCODE_TERMINAL"), which programs written for OpenCode check;
// SESSIONRT_TERMINAL is sessionrt's own name for the same fact. Both are "1".
const (
	ForcedTERM             = "xterm-256color"
	OpenCodeTerminalEnvVar = "OPENCODE_TERMINAL"
	TerminalEnvVar         = "SESSIONRT_TERMINAL"
)

// EnvOverlay supplies the host's environment overlay for a PTY created in location
// with working directory dir.
type EnvOverlay interface {
	Overlay(ctx context.Context, location, dir string) (map[string]string, error)
}

// EnvOverlayFunc adapts a function to EnvOverlay.
type EnvOverlayFunc func(ctx context.Context, location, dir string) (map[string]string, error)

// Overlay calls f.
func (f EnvOverlayFunc) Overlay(ctx context.Context, location, dir string) (map[string]string, error) {
	return f(ctx, location, dir)
}

// Environment merges base (KEY=VALUE entries, usually os.Environ()), then caller, then
// overlay, then the forced TERM, OPENCODE_TERMINAL=1 and SESSIONRT_TERMINAL=1. The
// result is sorted.
func Environment(base []string, caller, overlay map[string]string) []string {
	m := make(map[string]string, len(base)+len(caller)+len(overlay)+2)
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			m[k] = v
		}
	}
	for k, v := range caller {
		m[k] = v
	}
	for k, v := range overlay {
		m[k] = v
	}
	m["TERM"] = ForcedTERM
	m[OpenCodeTerminalEnvVar] = "1"
	m[TerminalEnvVar] = "1"
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
