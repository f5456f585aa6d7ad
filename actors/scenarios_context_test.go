package actors

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/contextsources/instructions"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/supervisor"
)

func counting() func(*provider.Request, int) (scripted.Turn, error) {
	return func(_ *provider.Request, n int) (scripted.Turn, error) { return answer("a")(nil, n), nil }
}

func (h *harness) ask(id, text string) {
	h.t.Helper()
	h.prompt(id, "", text, "", true)
	if out := h.waitIdle(id); out.Err != "" {
		h.t.Fatalf("drain after %q: %+v", text, out)
	}
}

func (h *harness) lastRequest() provider.Request {
	h.t.Helper()
	reqs := h.prov.Requests()
	if len(reqs) == 0 {
		h.t.Fatal("no provider request")
	}
	return reqs[len(reqs)-1]
}

func (h *harness) countEvents(id, name string) int {
	n := 0
	for _, e := range h.events(id) {
		if e == name {
			n++
		}
	}
	return n
}

func TestS31_UnavailableInitialContextBlocksWithoutAnEpoch(t *testing.T) {
	h := newHarness(t, counting())
	h.sources["env"].set(contextsources.Unavailable[string](os.ErrDeadlineExceeded))
	id := h.create("")
	h.prompt(id, "", "hello", "", true)
	out := h.waitIdle(id)
	if out.Kind != "context_blocked" {
		t.Fatalf("outcome %+v, want context_blocked", out)
	}
	if n := h.prov.Count(); n != 0 {
		t.Fatalf("%d requests with blocked context", n)
	}
	if _, ok, _ := h.journal.Epoch(h.ctx(), id); ok {
		t.Fatal("an epoch was stored from an incomplete observation")
	}
	if p, _ := h.journal.PendingInbox(h.ctx(), id); len(p) != 1 {
		t.Fatalf("pending %v: the prompt must stay pending", p)
	}
	h.sources["env"].set(contextsources.Present("env v1"))
	if out := h.run(id); out.Err != "" {
		t.Fatalf("retry: %+v", out)
	}
	if got := h.history(id); !reflect.DeepEqual(got, []string{"U:hello", "A:a1"}) {
		t.Fatalf("history %v", got)
	}
	h.checkReplay()
}

func TestS32_ChangedSourceBecomesOneChronologicalUpdate(t *testing.T) {
	h := newHarness(t, counting())
	id := h.create("")
	h.ask(id, "u1")
	first := h.lastRequest()
	h.sources["env"].set(contextsources.Present("env v2"))
	h.ask(id, "u2")
	second := h.lastRequest()
	if second.System != first.System {
		t.Fatalf("baseline changed:\n%q\n%q", first.System, second.System)
	}
	got := requestRoles(second)
	want := []string{"user:u1", "assistant:a1", "user:u2", "system:test/env: env v2"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("request %q, want %q", got, want)
	}
	if n := h.countEvents(id, "context.updated"); n != 1 {
		t.Fatalf("%d context updates, want 1", n)
	}
	ep, _, _ := h.journal.Epoch(h.ctx(), id)
	if !strings.Contains(string(ep.Snapshot), "env v2") {
		t.Fatalf("snapshot %s did not advance with the update", ep.Snapshot)
	}
	h.ask(id, "u3")
	if n := h.countEvents(id, "context.updated"); n != 1 {
		t.Fatalf("an unchanged source was announced again (%d updates)", n)
	}
	h.checkReplay()
}

func TestS33_TwoChangesAtOneBoundaryCombine(t *testing.T) {
	h := newHarness(t, counting())
	id := h.create("")
	h.ask(id, "u1")
	h.sources["env"].set(contextsources.Present("env v2"))
	h.sources["rules"].set(contextsources.Present("rules v2"))
	h.ask(id, "u2")
	msgs := h.lastRequest().Messages
	last := msgs[len(msgs)-1]
	if last.Role != provider.RoleSystem || !strings.Contains(last.Text, "env v2") || !strings.Contains(last.Text, "rules v2") {
		t.Fatalf("last message %+v, want one combined system update", last)
	}
	if n := h.countEvents(id, "context.updated"); n != 1 {
		t.Fatalf("%d updates, want 1", n)
	}
	h.checkReplay()
}

func (h *harness) contextPID() *supervisorPID {
	h.t.Helper()
	pid, err := h.locs.Child(h.ctx(), h.loc, supervisor.ContextRegistryName)
	if err != nil {
		h.t.Fatal(err)
	}
	return &supervisorPID{h: h, pid: pid}
}

func TestS34_RemovalTextAndNewSourcesAnnouncedOnce(t *testing.T) {
	h := newHarness(t, counting())
	id := h.create("")
	h.ask(id, "u1")
	h.sources["rules"].set(contextsources.Absent[string]())
	h.contextPID().register("extra", fixed(t, "test/extra", "extra facts"))
	h.ask(id, "u2")
	msgs := h.lastRequest().Messages
	last := msgs[len(msgs)-1].Text
	if !strings.Contains(last, "test/rules no longer applies") || !strings.Contains(last, "extra facts") {
		t.Fatalf("update %q: want the removal text and the new source's baseline", last)
	}
	h.ask(id, "u3")
	if n := h.countEvents(id, "context.updated"); n != 1 {
		t.Fatalf("%d updates: the new source must be announced once", n)
	}
	h.checkReplay()
}

func TestS35_UnavailableSourceKeepsItsLastValueSilently(t *testing.T) {
	h := newHarness(t, counting())
	id := h.create("")
	h.ask(id, "u1")
	h.sources["env"].set(contextsources.Unavailable[string](os.ErrDeadlineExceeded))
	h.ask(id, "u2")
	h.sources["env"].set(contextsources.Present("env v1"))
	h.ask(id, "u3")
	if n := h.countEvents(id, "context.updated"); n != 0 {
		t.Fatalf("%d updates for an unavailable-then-unchanged source", n)
	}
	h.checkReplay()
}

func TestS36_CorruptStoredValueIsReannounced(t *testing.T) {
	h := newHarness(t, counting())
	id := h.create("")
	h.ask(id, "u1")
	ep, _, _ := h.journal.Epoch(h.ctx(), id)
	var w map[string]any
	if err := json.Unmarshal(ep.Snapshot, &w); err != nil {
		t.Fatal(err)
	}
	w["sources"].(map[string]any)["test/env"] = map[string]any{"value": 42} // not a string: the codec refuses it
	corrupt, _ := json.Marshal(w)
	// Another owner corrupts the stored snapshot (the running activation is fenced).
	own, err := h.journal.Acquire(h.ctx(), id, "corrupter")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.journal.Append(h.ctx(), id, own.LastSeq, own.Epoch, messages.ContextUpdated{Text: "(test)", Snapshot: corrupt}); err != nil {
		t.Fatal(err)
	}
	h.ask(id, "u2")
	msgs := h.lastRequest().Messages
	if last := msgs[len(msgs)-1]; last.Role != provider.RoleSystem || last.Text != "test/env: env v1" {
		t.Fatalf("last message %+v, want the source re-announced", last)
	}
	h.checkReplay()
}

// compact records a completed compaction as the compaction issue will.
func (h *harness) compact(id, summary string) {
	h.t.Helper()
	own, err := h.journal.Acquire(h.ctx(), id, "compactor")
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.journal.Append(h.ctx(), id, own.LastSeq, own.Epoch,
		messages.CompactionStarted{CompactionID: "cmp_1"},
		messages.CompactionEnded{CompactionID: "cmp_1", Summary: summary, RecentContext: "recent"},
		messages.Idle{}); err != nil {
		h.t.Fatal(err)
	}
}

func TestS37_CompactionRendersAFreshBaselineAndDropsOldUpdates(t *testing.T) {
	h := newHarness(t, counting())
	id := h.create("")
	h.ask(id, "u1")
	h.sources["env"].set(contextsources.Present("env v2"))
	h.ask(id, "u2") // an update S is admitted
	h.compact(id, "the summary")
	h.ask(id, "u3")
	req := h.lastRequest()
	if !strings.Contains(req.System, "env v2") {
		t.Fatalf("baseline %q: want a fresh rendering of current context", req.System)
	}
	for _, m := range req.Messages {
		if m.Role == provider.RoleSystem {
			t.Fatalf("an earlier update survived the compaction: %q", requestRoles(req))
		}
	}
	if n := h.countEvents(id, "context.updated"); n != 1 {
		t.Fatalf("the earlier update must stay in the journal (%d)", n)
	}
	if n := h.countEvents(id, "context.epoch.replaced"); n != 1 {
		t.Fatalf("%d replacements, want 1", n)
	}
	h.checkReplay()
}

func TestS38_ReplacementRestatesAnUnavailableSource(t *testing.T) {
	h := newHarness(t, counting())
	id := h.create("")
	h.ask(id, "u1")
	h.compact(id, "summary")
	h.sources["env"].set(contextsources.Unavailable[string](os.ErrDeadlineExceeded))
	h.ask(id, "u2")
	if req := h.lastRequest(); !strings.Contains(req.System, "env v1") {
		t.Fatalf("baseline %q: want the last admitted value restated", req.System)
	}
	h.checkReplay()
}

func skillsAgents(t *testing.T) harnessOption {
	return func(c *Config) {
		c.Agents = map[string]Agent{
			"build": {Rules: allowAll, Context: []contextsources.SystemContext{fixed(t, "agent/skills", "skills: build-things")}},
			"plan":  {Rules: allowAll, Context: []contextsources.SystemContext{fixed(t, "agent/skills", "skills: plan-things")}},
		}
	}
}

func TestS39_AgentSwitchUpdatesGuidanceModelSwitchKeepsTheEpoch(t *testing.T) {
	h := newHarness(t, counting(), skillsAgents(t))
	id := h.create("")
	h.ask(id, "u1")
	first := h.lastRequest()
	if _, err := h.sessions.SwitchAgent(h.ctx(), id, "plan"); err != nil {
		t.Fatal(err)
	}
	h.ask(id, "u2")
	req := h.lastRequest()
	if req.System != first.System {
		t.Fatal("an agent switch replaced the baseline")
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != provider.RoleSystem || !strings.Contains(last.Text, "plan-things") {
		t.Fatalf("last message %+v, want the new guidance as one update", last)
	}
	if _, err := h.sessions.SwitchModel(h.ctx(), id, messages.ModelRef{Provider: "scripted", ID: "m2"}); err != nil {
		t.Fatal(err)
	}
	h.ask(id, "u3")
	req = h.lastRequest()
	if req.Model.Model != "m2" || req.System != first.System {
		t.Fatalf("model switch: model %v, baseline kept %v", req.Model, req.System == first.System)
	}
	if n := h.countEvents(id, "context.epoch.initialized") + h.countEvents(id, "context.epoch.replaced"); n != 1 {
		t.Fatalf("%d epochs, want 1", n)
	}
	h.checkReplay()
}

func TestS40_SwitchDuringATurnAppliesNextCallKeepsItsAgent(t *testing.T) {
	g := newGate()
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			if err := g.wait(context.Background(), n); err != nil {
				return scripted.Turn{}, err
			}
			return bashEcho("x"), nil
		}
		return scripted.Turn{Text: "done"}, nil
	}, skillsAgents(t))
	id := h.create("")
	h.prompt(id, "", "go", "", true)
	g.awaitStart(t)
	if _, err := h.sessions.SwitchAgent(h.ctx(), id, "plan"); err != nil {
		t.Fatal(err)
	}
	g.open()
	h.waitIdle(id)
	envs, err := h.journal.ReadEvents(h.ctx(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var turnAgents, callAgents []string
	for _, e := range envs {
		switch ev := e.Event.(type) {
		case messages.TurnStarted:
			turnAgents = append(turnAgents, ev.Agent)
		case messages.ToolCalled:
			callAgents = append(callAgents, ev.Agent)
		}
	}
	if !reflect.DeepEqual(turnAgents, []string{"build", "plan"}) || !reflect.DeepEqual(callAgents, []string{"build"}) {
		t.Fatalf("turn agents %v, call agents %v", turnAgents, callAgents)
	}
	h.checkReplay()
}

func TestS41_MoveClearsTheEpochAndFencesTheOldLocation(t *testing.T) {
	g := newGate()
	h := newHarness(t, func(req *provider.Request, n int) (scripted.Turn, error) {
		if n == 0 {
			if err := g.wait(context.Background(), n); err != nil {
				return scripted.Turn{}, err
			}
			return bashEcho("x"), nil
		}
		return scripted.Turn{Text: "moved on"}, nil
	})
	id := h.create("")
	dest := t.TempDir()
	h.prompt(id, "", "go", "", true)
	g.awaitStart(t)
	if _, err := h.sessions.Move(h.ctx(), id, dest); err != nil {
		t.Fatal(err)
	}
	g.open()
	if out := h.waitIdle(id); out.Kind != "moved" {
		t.Fatalf("outcome %+v: the old Location must start no other turn", out)
	}
	// The moved turn's tool result is owed an answer: a drain at the
	// destination continues it (a fresh baseline first) with nothing
	// pending and no wake, and the session stayed busy until then.
	if out := h.waitIdle(id); out.Err != "" || h.prov.Count() != 2 {
		t.Fatalf("continuation at the destination: outcome %+v after %d requests, want one more request", out, h.prov.Count())
	}
	got := requestRoles(h.lastRequest())
	want := []string{"user:go", "assistant:[call bash]", "tool:x\n<bash_metadata>exit code 0</bash_metadata>\n"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("continuation request %q, want %q", got, want)
	}
	canon, _ := supervisor.Canonical(dest)
	if ep, ok, _ := h.journal.Epoch(h.ctx(), id); !ok || ep.Location != canon {
		t.Fatalf("epoch %+v, want a fresh one at %s", ep, canon)
	}
	evs := strings.Join(h.events(id), " ")
	if !strings.Contains(evs, "moved context.epoch.cleared") || !strings.Contains(evs, "tool.succeeded turn.ended context.epoch.initialized turn.started") {
		t.Fatalf("events %s: the moved turn's end, then the destination's baseline and continuation, with no idle between", evs)
	}
	h.prompt(id, "", "continue", "", false)
	h.run(id)
	if h.prov.Count() != 3 {
		t.Fatalf("%d requests after a run at the destination, want 3", h.prov.Count())
	}
	h.checkReplay()
}

func TestS42_ContextChangesNeverWakeAnIdleSession(t *testing.T) {
	h := newHarness(t, counting())
	id := h.create("")
	h.ask(id, "u1")
	before := len(h.events(id))
	h.sources["env"].set(contextsources.Present("env v9"))
	h.contextPID().register("extra", fixed(t, "test/extra", "new"))
	h.waitIdle(id)
	if after := len(h.events(id)); after != before || h.prov.Count() != 1 {
		t.Fatalf("a context change wrote %d events and made %d requests", after-before, h.prov.Count()-1)
	}
	h.checkReplay()
}

func TestS43_DuplicateSourceKeyIsRefusedByName(t *testing.T) {
	h := newHarness(t, counting())
	err := h.contextPID().tryRegister("dup", fixed(t, "test/env", "again"))
	if err == nil || !strings.Contains(err.Error(), "test/env") {
		t.Fatalf("duplicate key: %v, want an error naming test/env", err)
	}
	id := h.create("")
	h.ask(id, "u1")
	first := h.lastRequest().System
	for i := 0; i < 5; i++ {
		h.ask(id, "again")
		if got := h.lastRequest().System; got != first {
			t.Fatalf("baseline changed between observations: %q vs %q", got, first)
		}
	}
	if !strings.HasPrefix(first, "test/env: env v1") || !strings.Contains(first, "test/rules: rules v1") {
		t.Fatalf("baseline %q: want contribution-key order", first)
	}
	h.checkReplay()
}

func TestS44_AgentsMdThroughTheLocationRegistry(t *testing.T) {
	h := newHarness(t, counting())
	global := t.TempDir()
	writeFile(t, filepath.Join(global, "AGENTS.md"), "global rule")
	writeFile(t, filepath.Join(h.loc, "AGENTS.md"), "project rule")
	src, err := instructions.Source(instructions.Config{Directory: h.loc, GlobalDir: global, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := contextsources.New(src)
	h.contextPID().register("instructions", sc)
	id := h.create("")
	h.ask(id, "u1")
	sys := h.lastRequest().System
	if g, p := strings.Index(sys, "global rule"), strings.Index(sys, "project rule"); g < 0 || p < 0 || g > p {
		t.Fatalf("baseline %q: want the global file, then the project file", sys)
	}
	writeFile(t, filepath.Join(h.loc, "AGENTS.md"), "project rule, edited")
	h.ask(id, "u2")
	msgs := h.lastRequest().Messages
	upd := msgs[len(msgs)-1].Text
	if !strings.Contains(upd, "global rule") || !strings.Contains(upd, "project rule, edited") {
		t.Fatalf("update %q: want the complete current set", upd)
	}
	os.Remove(filepath.Join(h.loc, "AGENTS.md"))
	os.Remove(filepath.Join(global, "AGENTS.md"))
	h.ask(id, "u3")
	msgs = h.lastRequest().Messages
	if upd := msgs[len(msgs)-1].Text; upd != instructions.Revocation {
		t.Fatalf("after removing every file: %q, want the revocation", upd)
	}
	h.checkReplay()
}

func TestS45_BaselineIsReusedVerbatimAcrossRestarts(t *testing.T) {
	h := newHarness(t, counting())
	id := h.create("")
	h.ask(id, "u1")
	first := h.lastRequest().System
	h.sources["env"].set(contextsources.Present("env v2"))
	h.restart()
	h.ask(id, "u2")
	if got := h.lastRequest().System; got != first {
		t.Fatalf("after restart the baseline is\n%q\nwant byte-identical\n%q", got, first)
	}
	h.checkReplay()
}

// supervisorPID talks to a Location's context registry.
type supervisorPID struct {
	h   *harness
	pid *actorPID
}

func (s *supervisorPID) tryRegister(key string, sc contextsources.SystemContext) error {
	res, err := s.h.system.Root.RequestFuture(s.pid, &supervisor.RegisterContext{Key: key, Sources: sc}, requestWait).Result()
	if err != nil {
		return err
	}
	return res.(*supervisor.ContextRegistered).Err
}

func (s *supervisorPID) register(key string, sc contextsources.SystemContext) {
	s.h.t.Helper()
	if err := s.tryRegister(key, sc); err != nil {
		s.h.t.Fatal(err)
	}
}

func fixed(t *testing.T, key, value string) contextsources.SystemContext {
	t.Helper()
	src, err := contextsources.Make(contextsources.Spec[string]{
		Key:      key,
		Load:     func(context.Context) contextsources.Result[string] { return contextsources.Present(value) },
		Baseline: func(v string) string { return v },
		Removal:  func(string) string { return key + " removed" },
	})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := contextsources.New(src)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}
