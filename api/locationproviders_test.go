package api_test

import (
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
)

// v1ProviderModels lists, per provider ID, the model IDs that the V1 route
// path (/provider or /config/providers) gives for dir, with each model's
// API ID.
func v1ProviderModels(t *testing.T, rt *apitest.Runtime, path, dir string) map[string]map[string]string {
	t.Helper()
	var body struct {
		All       []v1ListedProvider `json:"all"`
		Providers []v1ListedProvider `json:"providers"`
	}
	if code := v1(t, rt, "GET", path+"?directory="+url.QueryEscape(dir), "", &body); code != 200 {
		t.Fatalf("GET %s: %d", path, code)
	}
	out := map[string]map[string]string{}
	for _, p := range append(body.All, body.Providers...) {
		out[p.ID] = map[string]string{}
		for id, m := range p.Models {
			out[p.ID][id] = m.API.ID
		}
	}
	return out
}

type v1ListedProvider struct {
	ID     string `json:"id"`
	Models map[string]struct {
		API struct {
			ID string `json:"id"`
		} `json:"api"`
	} `json:"models"`
}

// v2Models lists "provider/model" of GET /api/model for dir.
func v2Models(t *testing.T, rt *apitest.Runtime, dir string) []string {
	t.Helper()
	var models wire.Located[[]wire.Model]
	getJSON(t, rt, "/api/model?location[directory]="+url.QueryEscape(dir), &models)
	var out []string
	for _, m := range models.Data {
		out = append(out, m.ProviderID+"/"+m.ID+"@"+m.API.ID)
	}
	sort.Strings(out)
	return out
}

// Providers are configured per Location: a project's opencode.json that
// adds a provider and makes it the default serves that project's sessions
// and is listed by the catalog for that project only, and a project file
// changing a model's options takes effect at the session's next turn.
// Before, the providers were the server's working directory's, for every
// Location.
func TestProvidersAreConfiguredPerLocation(t *testing.T) {
	fakeA, fakeB := &fakeChat{}, &fakeChat{}
	srvA, srvB := httptest.NewServer(fakeA), httptest.NewServer(fakeB)
	t.Cleanup(srvA.Close)
	t.Cleanup(srvB.Close)
	cf := newConfigured(t)
	cf.global(t, `{
		"provider": {"local": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "`+srvA.URL+`/v1"},
			"models": {"general": {"options": {"temperature": 0.7}}}}},
		"model": "local/general",
	}`)
	other := t.TempDir()
	if err := os.Mkdir(filepath.Join(other, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(other, "opencode.json"), `{
		"provider": {"teamb": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "`+srvB.URL+`/v1"},
			"models": {"b1": {"name": "Team B model"}}}},
		"model": "teamb/b1"
	}`)
	rt := cf.start(t, apitest.Options{ConfiguredProviders: true})
	c := newClient(t, rt)
	ctx := ctxT(t)
	turn := func(id, text string) {
		t.Helper()
		prompt(t, c, id, text)
		if out, err := c.WaitOutcome(ctx, id); err != nil || out.Error != "" {
			t.Fatalf("wait: %+v %v", out, err)
		}
	}

	sb, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: other}})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Model.ProviderID != "teamb" || sb.Model.ID != "b1" {
		t.Fatalf("session of the other project runs on %+v, want its teamb/b1", sb.Model)
	}
	turn(sb.ID, "hi b")
	if got := fakeB.seen(); len(got) != 1 || got[0].Model != "b1" || len(fakeA.seen()) != 0 {
		t.Fatalf("requests: team B's server %+v, the global one %d; want one b1 request at team B's", got, len(fakeA.seen()))
	}

	for _, path := range []string{"/provider", "/config/providers"} {
		if ps := v1ProviderModels(t, rt, path, other); ps["teamb"] == nil || ps["local"] == nil {
			t.Fatalf("%s for the other project: %v, want teamb and local", path, ps)
		}
		if ps := v1ProviderModels(t, rt, path, cf.project); ps["teamb"] != nil || ps["local"] == nil {
			t.Fatalf("%s for the project: %v, want local and not the other project's teamb", path, ps)
		}
	}
	if ms := v2Models(t, rt, other); !slices.Contains(ms, "teamb/b1@b1") {
		t.Fatalf("/api/model for the other project: %v", ms)
	}
	if ms := v2Models(t, rt, cf.project); slices.ContainsFunc(ms, func(m string) bool { return strings.HasPrefix(m, "teamb/") }) {
		t.Fatalf("/api/model for the project lists the other project's provider: %v", ms)
	}
	// A session of the project cannot pick the other project's model.
	sa, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: cf.project}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SwitchModel(ctx, sa.ID, wire.ModelRef{ProviderID: "teamb", ID: "b1"}); err == nil || !strings.Contains(err.Error(), `"teamb"`) {
		t.Fatalf("switch to another project's model: %v, want a refusal naming teamb", err)
	}

	turn(sa.ID, "one")
	if got := fakeA.seen(); len(got) != 1 || got[0].Temperature == nil || *got[0].Temperature != 0.7 {
		t.Fatalf("first request of the project: %+v", got)
	}
	// The project's own file changes the model's options: the next turn
	// of the running session sends them.
	writeFile(t, filepath.Join(cf.project, "opencode.json"), `{"provider": {"local": {"models": {"general": {"options": {"temperature": 0.3}}}}}}`)
	turn(sa.ID, "two")
	if got := fakeA.seen(); len(got) != 2 || got[1].Temperature == nil || *got[1].Temperature != 0.3 {
		t.Fatalf("request after the project's file changed: %+v, want temperature 0.3", got[len(got)-1])
	}
	if n := len(fakeB.seen()); n != 1 {
		t.Fatalf("team B's server got %d requests, want still 1", n)
	}
}

// A configured model may be an alias ("id" is what the provider knows it
// by), and a provider's whitelist and blacklist decide which of its models
// exist: the catalog routes list only those, a switch to another is
// refused naming the known ones, and the request carries the provider's
// own ID. enabled_providers leaves out every other provider.
func TestProviderModelAliasesWhitelistAndBlacklist(t *testing.T) {
	fake := &fakeChat{}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cf := newConfigured(t)
	cf.global(t, `{
		"provider": {
			"local": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "`+srv.URL+`/v1"},
				"models": {"fast": {"id": "vendor/fast-v2"}, "big": {}, "old": {}},
				"whitelist": ["fast", "big"], "blacklist": ["big"]},
			"any": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "`+srv.URL+`/v1"}, "blacklist": ["bad"]},
		},
		"model": "local/fast",
		"enabled_providers": ["local", "any"],
	}`)
	rt := cf.start(t, apitest.Options{ConfiguredProviders: true, Env: map[string]string{"HOME": cf.home, "OPENAI_API_KEY": "sk-unused"}})
	c := newClient(t, rt)
	ctx := ctxT(t)

	for _, path := range []string{"/provider", "/config/providers"} {
		ps := v1ProviderModels(t, rt, path, cf.project)
		if len(ps["local"]) != 1 || ps["local"]["fast"] != "vendor/fast-v2" || ps["openai"] != nil {
			t.Fatalf("%s: %v, want local with only fast (API ID vendor/fast-v2), no openai", path, ps)
		}
	}
	if ms := v2Models(t, rt, cf.project); !slices.Contains(ms, "local/fast@vendor/fast-v2") || slices.ContainsFunc(ms, func(m string) bool {
		return strings.HasPrefix(m, "local/big") || strings.HasPrefix(m, "local/old") || strings.HasPrefix(m, "openai/")
	}) {
		t.Fatalf("/api/model: %v", ms)
	}

	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: cf.project}})
	if err != nil {
		t.Fatal(err)
	}
	prompt(t, c, s.ID, "hi")
	if out, err := c.WaitOutcome(ctx, s.ID); err != nil || out.Error != "" {
		t.Fatalf("wait: %+v %v", out, err)
	}
	if got := fake.seen(); len(got) != 1 || got[0].Model != "vendor/fast-v2" {
		t.Fatalf("requests %+v, want one for the provider's vendor/fast-v2", got)
	}
	msgs, err := c.Messages(ctx, s.ID, client.MessagesOptions{})
	if err != nil || len(msgs.Data) == 0 {
		t.Fatalf("messages: %+v %v", msgs, err)
	}
	for _, refused := range []wire.ModelRef{{ProviderID: "local", ID: "big"}, {ProviderID: "local", ID: "old"}, {ProviderID: "any", ID: "bad"}} {
		if err := c.SwitchModel(ctx, s.ID, refused); err == nil || !strings.Contains(err.Error(), "unknown model") {
			t.Fatalf("switch to %s/%s: %v, want refused as unknown", refused.ProviderID, refused.ID, err)
		}
	}
	if err := c.SwitchModel(ctx, s.ID, wire.ModelRef{ProviderID: "openai", ID: "gpt-4.1"}); err == nil {
		t.Fatal("switch to a provider enabled_providers leaves out: accepted")
	}
	if err := c.SwitchModel(ctx, s.ID, wire.ModelRef{ProviderID: "any", ID: "good"}); err != nil {
		t.Fatalf("switch to an unlisted model of a provider serving any: %v", err)
	}
}
