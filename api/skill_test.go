package api_test

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// toolSettlement is the output (or error) of the session's first settled call.
func toolSettlement(t *testing.T, rt *apitest.Runtime, id string) (output, failure string) {
	t.Helper()
	evs, err := rt.Node.Journal.ReadEvents(ctxT(t), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		switch ev := e.Event.(type) {
		case messages.ToolSucceeded:
			return ev.Output, ""
		case messages.ToolFailed:
			return "", ev.Error
		}
	}
	t.Fatalf("no settled call; events %v", journalTypes(t, rt, id))
	return "", ""
}

// The skill tool loads a project skill's SKILL.md; the model sees its body
// and folder, and the tool's guidance request lists the skill. A skill the
// agent's permission denies is refused by name, and an unknown one names
// the skills there are.
func TestSkillToolLoadsAProjectSkill(t *testing.T) {
	cf := newConfigured(t)
	skill := writeFile(t, filepath.Join(cf.project, ".opencode", "skill", "release", "SKILL.md"),
		"---\nname: release\ndescription: Cut a release\n---\nRun scripts/release.sh with the version.\n")
	writeFile(t, filepath.Join(cf.project, ".opencode", "skill", "secret", "SKILL.md"), "---\nname: secret\ndescription: Not for you\n---\nhidden\n")
	writeFile(t, filepath.Join(cf.project, "opencode.json"), `{"permission": {"skill": {"*": "allow", "secret": "deny"}}}`)
	var sawTool, sawGuidance atomic.Bool
	rt := cf.start(t, apitest.Options{Turns: func(req *provider.Request, n int) (scripted.Turn, error) {
		for _, tl := range req.Tools {
			if tl.Name == "skill" {
				sawTool.Store(true)
			}
		}
		if strings.Contains(req.System, "Cut a release") {
			sawGuidance.Store(true)
		}
		return callThenText("skill", `{"name":"release"}`)(req, n)
	}})
	c := newClient(t, rt)
	ctx := ctxT(t)
	newSession := func() string {
		s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: cf.project}})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	id := newSession()
	prompt(t, c, id, "release it")
	if err := c.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	out, fail := toolSettlement(t, rt, id)
	if fail != "" || !strings.Contains(out, "Run scripts/release.sh with the version.") || !strings.Contains(out, filepath.Dir(skill)) {
		t.Fatalf("skill release: output %q, error %q", out, fail)
	}
	if !sawTool.Load() || !sawGuidance.Load() {
		t.Fatalf("skill tool offered %v, guidance listed the skill %v", sawTool.Load(), sawGuidance.Load())
	}

	rt.SetTurns(callThenText("skill", `{"name":"secret"}`))
	id = newSession()
	prompt(t, c, id, "the secret one")
	if err := c.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	if out, fail := toolSettlement(t, rt, id); out != "" || !strings.Contains(fail, "permission denied: skill") {
		t.Fatalf("denied skill: output %q, error %q", out, fail)
	}

	rt.SetTurns(callThenText("skill", `{"name":"nope"}`))
	id = newSession()
	prompt(t, c, id, "unknown")
	if err := c.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, fail := toolSettlement(t, rt, id); !strings.Contains(fail, `skill "nope" not found`) || !strings.Contains(fail, "release") {
		t.Fatalf("unknown skill: %q", fail)
	}
}
