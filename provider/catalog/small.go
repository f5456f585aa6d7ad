package catalog

import (
	"slices"
	"strings"
)

// smallFamilies are the small model families OpenCode (1.18,
// Provider.getSmallModel) names sessions with when no small model is
// configured, in its order of preference.
var smallFamilies = []string{"gemini-flash", "gpt-nano", "claude-haiku"}

// SmallModel is the model of provider id, among models (its model IDs),
// that OpenCode picks to name sessions when neither small_model nor the
// title agent's model is configured; "" when it picks none (the session's
// own model names it then). OpenCode's choice: none for Azure; for an
// "opencode…" provider only "gpt-nano", for a "github-copilot…" one
// "gpt-mini" first; then the first family the provider serves, its newest
// model (on Bedrock the "global." one, else one without a region prefix:
// OpenCode's step between, the configured region's, needs an option the
// catalog does not keep).
//
// OpenCode reads the family and the release date from models.dev; the
// catalog keeps neither, so the family is told from the ID's words and the
// newest is the greatest ID (OpenCode's own tie-break). A model that is no
// text model (tts, image, audio, realtime…) or a "lite" one is in none of
// these families.
func SmallModel(id string, models []string) string {
	if id == "azure" || id == "azure-cognitive-services" {
		return ""
	}
	families := smallFamilies
	switch {
	case strings.HasPrefix(id, "opencode"):
		families = []string{"gpt-nano"}
	case strings.HasPrefix(id, "github-copilot"):
		families = append([]string{"gpt-mini"}, smallFamilies...)
	}
	newest := slices.Clone(models)
	slices.Sort(newest)
	slices.Reverse(newest)
	for _, f := range families {
		var in []string
		for _, m := range newest {
			if smallFamily(m) == f {
				in = append(in, m)
			}
		}
		if id != "amazon-bedrock" {
			if len(in) > 0 {
				return in[0]
			}
			continue
		}
		for _, m := range in {
			if strings.HasPrefix(m, "global.") {
				return m
			}
		}
		for _, m := range in {
			if !strings.HasPrefix(m, "us.") && !strings.HasPrefix(m, "eu.") {
				return m
			}
		}
	}
	return ""
}

// smallFamily is model ID's family when it is one SmallModel knows, else "".
func smallFamily(id string) string {
	id = strings.ToLower(id)
	for _, w := range []string{"tts", "image", "audio", "transcribe", "realtime", "live", "search", "codex", "lite"} {
		if strings.Contains(id, w) {
			return ""
		}
	}
	has := func(a, b string) bool { return strings.Contains(id, a) && strings.Contains(id, b) }
	switch {
	case strings.Contains(id, "haiku"):
		return "claude-haiku"
	case has("gpt", "nano"):
		return "gpt-nano"
	case has("gpt", "mini"):
		return "gpt-mini"
	case has("gemini", "flash"):
		return "gemini-flash"
	}
	return ""
}

// SmallModel is SmallModel of provider id's models in c (its blocked ones
// left out); "" for an unknown provider.
func (c *Catalog) SmallModel(id string) string {
	p, ok := c.Providers[id]
	if !ok {
		return ""
	}
	models := make([]string, 0, len(p.Models))
	for m := range p.Models {
		if !slices.Contains(p.Blocked, m) {
			models = append(models, m)
		}
	}
	return SmallModel(id, models)
}
