package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/wire"
)

// getJSON GETs path with the test token and decodes a 200 answer into out.
func getJSON(t *testing.T, rt *apitest.Runtime, path string, out any) {
	t.Helper()
	status, body := do(t, rt, http.MethodGet, path)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

func do(t *testing.T, rt *apitest.Runtime, method, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, rt.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+rt.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestCatalogRoutesServeTheLocationsConfiguration(t *testing.T) {
	cf := newConfigured(t)
	cf.global(t, `{
		"model": "scripted/test-model",
		"agent": {"review": {"description": "Reviews code", "mode": "primary", "model": "scripted/other", "variant": "high",
			"prompt": "Review.", "temperature": 0.1, "steps": 4, "color": "#ff0000", "permission": {"edit": "deny"}}},
		"command": {"test": {"template": "Run $ARGUMENTS", "description": "tests", "model": "scripted/test-model"}},
		"references": {"docs": {"path": "../docs", "description": "The docs"}}
	}`)
	writeFile(t, filepath.Join(cf.project, ".opencode", "skill", "lint", "SKILL.md"), "---\nname: lint\ndescription: Lint the code\n---\nRun the linter.\n")
	rt := cf.start(t, apitest.Options{})
	q := "?location[directory]=" + url.QueryEscape(cf.project)

	var loc wire.LocationInfo
	getJSON(t, rt, "/api/location"+q, &loc)
	if loc.Directory != cf.project || loc.Project.Directory != cf.project || !strings.HasPrefix(loc.Project.ID, "prj_") {
		t.Fatalf("location %+v", loc)
	}

	var agents wire.Located[[]wire.Agent]
	getJSON(t, rt, "/api/agent"+q, &agents)
	var names []string
	var review wire.Agent
	for _, a := range agents.Data {
		names = append(names, a.ID)
		if a.ID == "review" {
			review = a
		}
	}
	if strings.Join(names, ",") != "build,plan,review" || agents.Location.Directory != cf.project {
		t.Fatalf("agents %v at %+v", names, agents.Location)
	}
	if review.Description != "Reviews code" || review.Model == nil || review.Model.ID != "other" || review.Model.Variant != "high" ||
		review.System != "Review." || review.Steps != 4 || review.Color != "#ff0000" || string(review.Request.Body["temperature"]) != "0.1" ||
		review.Permissions[len(review.Permissions)-2] != (wire.PermissionRule{Action: "edit", Resource: "*", Effect: "deny"}) {
		t.Fatalf("review %+v", review)
	}

	var models wire.Located[[]wire.Model]
	getJSON(t, rt, "/api/model"+q, &models)
	if len(models.Data) == 0 || models.Data[0].ProviderID != "scripted" || models.Data[0].Status != "active" || models.Data[0].Variants == nil {
		t.Fatalf("models %+v", models.Data)
	}
	var providers wire.Located[[]wire.Provider]
	getJSON(t, rt, "/api/provider"+q, &providers)
	if len(providers.Data) != 1 || providers.Data[0].ID != "scripted" {
		t.Fatalf("providers %+v", providers.Data)
	}
	var one wire.Located[wire.Provider]
	getJSON(t, rt, "/api/provider/scripted"+q, &one)
	if status, body := do(t, rt, http.MethodGet, "/api/provider/nope"+q); status != 404 || !strings.Contains(string(body), `provider \"nope\" is not configured`) {
		t.Fatalf("unknown provider: %d %s", status, body)
	}

	var cmds wire.Located[[]wire.Command]
	getJSON(t, rt, "/api/command"+q, &cmds)
	if len(cmds.Data) != 1 || cmds.Data[0].Name != "test" || cmds.Data[0].Template != "Run $ARGUMENTS" || cmds.Data[0].Model.ID != "test-model" {
		t.Fatalf("commands %+v", cmds.Data)
	}
	var sks wire.Located[[]wire.Skill]
	getJSON(t, rt, "/api/skill"+q, &sks)
	if len(sks.Data) != 1 || sks.Data[0].Name != "lint" || sks.Data[0].Content != "Run the linter." || !strings.HasSuffix(sks.Data[0].Location, "lint/SKILL.md") {
		t.Fatalf("skills %+v", sks.Data)
	}
	var refs wire.Located[[]wire.Reference]
	getJSON(t, rt, "/api/reference"+q, &refs)
	if len(refs.Data) != 1 || refs.Data[0].Name != "docs" || refs.Data[0].Path != filepath.Join(filepath.Dir(cf.project), "docs") || refs.Data[0].Source.Type != "local" {
		t.Fatalf("references %+v", refs.Data)
	}
	var ints wire.Located[[]wire.Integration]
	getJSON(t, rt, "/api/integration"+q, &ints)
	if status, body := do(t, rt, http.MethodPost, "/api/integration/openai/connect/key"); status != 501 || !strings.Contains(string(body), "opencode.json") {
		t.Fatalf("integration log-in: %d %s", status, body)
	}

	// A malformed file: 400 naming it, for this Location only.
	bad := writeFile(t, filepath.Join(cf.project, "opencode.json"), "{\"agent\": }")
	if status, body := do(t, rt, http.MethodGet, "/api/agent"+q); status != 400 || !strings.Contains(string(body), bad+":1:11") {
		t.Fatalf("malformed configuration: %d %s", status, body)
	}
	getJSON(t, rt, "/api/agent?location[directory]="+url.QueryEscape(t.TempDir()), &agents)
}

func TestFileRoutesStayInsideTheLocation(t *testing.T) {
	cf := newConfigured(t)
	writeFile(t, filepath.Join(cf.project, "src", "main.go"), "package main\n")
	writeFile(t, filepath.Join(cf.project, "src", "mainly.txt"), "x")
	writeFile(t, filepath.Join(cf.project, "README.md"), "# hi\n")
	outside := writeFile(t, filepath.Join(t.TempDir(), "secret.txt"), "secret")
	if err := os.Symlink(outside, filepath.Join(cf.project, "link.txt")); err != nil {
		t.Fatal(err)
	}
	rt := cf.start(t, apitest.Options{})
	q := "location[directory]=" + url.QueryEscape(cf.project)

	var list wire.Located[[]wire.FileSystemEntry]
	getJSON(t, rt, "/api/fs/list?"+q, &list)
	var got []string
	for _, e := range list.Data {
		got = append(got, e.Type[:1]+":"+e.Path)
	}
	if strings.Join(got, " ") != "d:.git d:src f:README.md f:link.txt" {
		t.Fatalf("list %v", got)
	}
	getJSON(t, rt, "/api/fs/list?path=src&"+q, &list)
	if len(list.Data) != 2 || list.Data[0].Path != "src/main.go" {
		t.Fatalf("list src %+v", list.Data)
	}
	var found wire.Located[[]wire.FileSystemEntry]
	getJSON(t, rt, "/api/fs/find?query=main&"+q, &found)
	if len(found.Data) != 2 || found.Data[0].Path != "src/main.go" || found.Data[1].Path != "src/mainly.txt" {
		t.Fatalf("find %+v", found.Data)
	}
	getJSON(t, rt, "/api/fs/find?query=src&type=directory&"+q, &found)
	if len(found.Data) != 1 || found.Data[0].Type != "directory" {
		t.Fatalf("find directories %+v", found.Data)
	}
	if status, body := do(t, rt, http.MethodGet, "/api/fs/read/README.md?"+q); status != 200 || string(body) != "# hi\n" {
		t.Fatalf("read: %d %q", status, body)
	}
	for _, p := range []string{"/api/fs/read/link.txt", "/api/fs/read/..%2Fx", "/api/fs/list?path=..", "/api/fs/list?path=" + url.QueryEscape(filepath.Dir(outside))} {
		sep := "?"
		if strings.Contains(p, "?") {
			sep = "&"
		}
		if status, body := do(t, rt, http.MethodGet, p+sep+q); status != 400 || string(body) == "secret" {
			t.Errorf("%s: %d %s, want 400", p, status, body)
		}
	}
	if status, _ := do(t, rt, http.MethodGet, "/api/fs/read/nothing.txt?"+q); status != 404 {
		t.Fatalf("missing file: %d", status)
	}
}

func TestProjectWidePermissionRequestsAndSavedApprovals(t *testing.T) {
	cf := newConfigured(t)
	cf.global(t, `{"permission": {"bash": "ask"}}`)
	rt := cf.start(t, apitest.Options{Turns: callThenText("bash", `{"command":"ls -a","description":"list"}`)})
	c := newClient(t, rt)
	ctx := ctxT(t)
	q := "?location[directory]=" + url.QueryEscape(cf.project)
	s := create(t, c, rt)
	prompt(t, c, s.ID, "list")
	id, _, _ := askedID(t, c, s.ID)

	var reqs wire.Located[[]wire.PermissionRequest]
	getJSON(t, rt, "/api/permission/request"+q, &reqs)
	if len(reqs.Data) != 1 || reqs.Data[0].ID != id || reqs.Data[0].SessionID != s.ID {
		t.Fatalf("pending in the Location: %+v", reqs.Data)
	}
	getJSON(t, rt, "/api/permission/request?location[directory]="+url.QueryEscape(t.TempDir()), &reqs)
	if len(reqs.Data) != 0 {
		t.Fatalf("pending elsewhere: %+v", reqs.Data)
	}
	var qs wire.Located[[]wire.QuestionRequest]
	getJSON(t, rt, "/api/question/request"+q, &qs)

	if err := c.ReplyPermission(ctx, s.ID, id, "always", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	var loc wire.LocationInfo
	getJSON(t, rt, "/api/location"+q, &loc)
	var saved wire.Data[[]wire.SavedPermission]
	getJSON(t, rt, "/api/permission/saved?projectID="+loc.Project.ID, &saved)
	if len(saved.Data) != 1 || saved.Data[0].Action != "bash" || saved.Data[0].Resource != "ls *" || saved.Data[0].ProjectID != loc.Project.ID {
		t.Fatalf("saved %+v", saved.Data)
	}
	if status, body := do(t, rt, http.MethodDelete, "/api/permission/saved/"+saved.Data[0].ID); status != 204 {
		t.Fatalf("delete: %d %s", status, body)
	}
	if status, _ := do(t, rt, http.MethodDelete, "/api/permission/saved/"+saved.Data[0].ID); status != 404 {
		t.Fatalf("second delete: %d", status)
	}
	// Removed, the next call asks again.
	s2 := create(t, c, rt)
	prompt(t, c, s2.ID, "list again")
	id2, _, _ := askedID(t, c, s2.ID)
	if err := c.ReplyPermission(ctx, s2.ID, id2, "once", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, s2.ID); err != nil {
		t.Fatal(err)
	}
}
