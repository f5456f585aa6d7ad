package catalog

import "testing"

// SmallModel picks as OpenCode's Provider.getSmallModel does, with the
// family told from the ID and the newest taken to be the greatest ID.
func TestSmallModelIsOpenCodesPick(t *testing.T) {
	for _, c := range []struct {
		provider string
		models   []string
		want     string
	}{
		{"anthropic", []string{"claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1", "claude-3-5-haiku-latest"}, "claude-haiku-4-5"},
		{"openai", []string{"gpt-5", "gpt-5-mini", "gpt-4o-mini", "o4-mini"}, ""}, // gpt-mini is Copilot's only
		{"openai", []string{"gpt-5", "gpt-4.1-nano", "gpt-5-nano", "gpt-5-mini"}, "gpt-5-nano"},
		{"openrouter", []string{"anthropic/claude-haiku-4.5", "openai/gpt-5-nano", "google/gemini-2.5-flash", "google/gemini-2.5-flash-lite"}, "google/gemini-2.5-flash"},
		{"google", []string{"gemini-2.5-pro", "gemini-2.5-flash-preview-tts", "gemini-2.5-flash-image", "gemini-2.0-flash-lite"}, ""},
		{"opencode", []string{"claude-haiku-4-5", "gpt-5-nano", "big-pickle"}, "gpt-5-nano"},
		{"opencode", []string{"claude-haiku-4-5", "big-pickle"}, ""},
		{"github-copilot", []string{"claude-haiku-4.5", "gpt-5-mini", "gpt-4o-mini", "gemini-2.5-pro"}, "gpt-5-mini"},
		{"github-copilot", []string{"claude-haiku-4.5", "gemini-2.5-pro"}, "claude-haiku-4.5"},
		{"azure", []string{"gpt-5-nano", "gpt-5"}, ""},
		{"azure-cognitive-services", []string{"gpt-5-nano"}, ""},
		{"amazon-bedrock", []string{"us.anthropic.claude-haiku-4-5-20251001-v1:0", "global.anthropic.claude-haiku-4-5-20251001-v1:0", "anthropic.claude-haiku-4-5-20251001-v1:0"}, "global.anthropic.claude-haiku-4-5-20251001-v1:0"},
		{"amazon-bedrock", []string{"us.anthropic.claude-haiku-4-5-20251001-v1:0", "eu.anthropic.claude-haiku-4-5-20251001-v1:0", "anthropic.claude-3-5-haiku-20241022-v1:0"}, "anthropic.claude-3-5-haiku-20241022-v1:0"},
		{"amazon-bedrock", []string{"us.anthropic.claude-haiku-4-5-20251001-v1:0"}, ""},
		{"local", []string{"big", "tiny"}, ""},
		{"scripted", []string{"demo"}, ""},
		{"local", nil, ""},
	} {
		if got := SmallModel(c.provider, c.models); got != c.want {
			t.Errorf("SmallModel(%q, %q) = %q, want %q", c.provider, c.models, got, c.want)
		}
	}
	cat := Builtin()
	p := cat.Providers["anthropic"]
	p.Blocked = []string{"claude-haiku-4-5"}
	cat.Providers["anthropic"] = p
	if got := cat.SmallModel("anthropic"); got != "claude-3-5-haiku-latest" {
		t.Errorf("built-in anthropic with claude-haiku-4-5 blocked: %q, want claude-3-5-haiku-latest", got)
	}
	if got := cat.SmallModel("nowhere"); got != "" {
		t.Errorf("unknown provider: %q", got)
	}
}
