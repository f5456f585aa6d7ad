package api_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// A drain that fails says why: wait reports the kind and message (also
// after a restart), the V2 stream carries session.error with the kind, the
// V1 stream (OpenCode's TUI) session.error with the message.
func TestFailedDrainIsVisibleThroughWaitAndTheEventStreams(t *testing.T) {
	data, loc := t.TempDir(), t.TempDir()
	opts := apitest.Options{Data: data, Loc: loc, Turns: func(*provider.Request, int) (scripted.Turn, error) {
		return scripted.Turn{}, &provider.Error{Kind: provider.KindAuth, Message: "the model is down: invalid key"}
	}}
	rt := apitest.Start(t, opts)
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	v1 := v1Subscribe(t, rt, "/event?directory="+loc)
	prompt(t, c, s.ID, "hello")
	out, err := c.WaitOutcome(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != "provider" || !strings.Contains(out.Error, "the model is down") {
		t.Fatalf("wait: %+v, want kind provider with the provider's message", out)
	}

	ev := waitEvent(t, c, s.ID, "session.error")
	var d struct {
		SessionID string `json:"sessionID"`
		Kind      string `json:"kind"`
		Error     struct {
			Name string `json:"name"`
			Data struct {
				Message string `json:"message"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		t.Fatal(err)
	}
	if ev.Durable == nil || d.SessionID != s.ID || d.Kind != "provider" || d.Error.Name != "APIError" || !strings.Contains(d.Error.Data.Message, "the model is down") {
		t.Fatalf("session.error: %s (durable %+v)", ev.Data, ev.Durable)
	}

	var v1Err string
	v1Until(t, v1, func(e v1Ev) bool {
		if e.Type == "session.error" {
			var p struct {
				SessionID string `json:"sessionID"`
				Error     struct {
					Data struct {
						Message string `json:"message"`
					} `json:"data"`
				} `json:"error"`
			}
			if json.Unmarshal(e.Properties, &p) == nil && p.SessionID == s.ID {
				v1Err = p.Error.Data.Message
			}
		}
		return isIdle(t, s.ID)(e)
	})
	if !strings.Contains(v1Err, "the model is down") {
		t.Fatalf("V1 session.error before idle: %q", v1Err)
	}

	// A new activation (after a restart) reads how the last drain ended.
	rt.Stop()
	rt2 := apitest.Start(t, opts)
	c2 := newClient(t, rt2)
	out, err = c2.WaitOutcome(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != "provider" || !strings.Contains(out.Error, "the model is down") {
		t.Fatalf("wait after a restart: %+v", out)
	}

	// A drain that then succeeds reports nothing.
	rt2.SetTurns(func(*provider.Request, int) (scripted.Turn, error) { return scripted.Turn{Text: "fine"}, nil })
	prompt(t, c2, s.ID, "again")
	if out, err = c2.WaitOutcome(ctx, s.ID); err != nil || out.Error != "" || out.Kind != "" {
		t.Fatalf("wait after a good drain: %+v %v", out, err)
	}
}

// The turn limit (an agent's steps) ends a drain that still has work with
// kind turn_limit.
func TestTurnLimitFromConfigEndsTheDrainVisibly(t *testing.T) {
	cf := newConfigured(t)
	writeFile(t, filepath.Join(cf.project, "opencode.json"), `{"agent": {"build": {"steps": 2}}}`)
	rt := cf.start(t, apitest.Options{Turns: func(*provider.Request, int) (scripted.Turn, error) {
		return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "glob", Args: []byte(`{"pattern":"*.go"}`)}}}, nil
	}})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: cf.project}})
	if err != nil {
		t.Fatal(err)
	}
	prompt(t, c, s.ID, "loop")
	out, err := c.WaitOutcome(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != "turn_limit" || !strings.Contains(out.Error, "limit 2") {
		t.Fatalf("wait: %+v, want turn_limit (limit 2)", out)
	}
	turns := 0
	for _, typ := range journalTypes(t, rt, s.ID) {
		if typ == "session.turn.started" {
			turns++
		}
	}
	if turns != 2 {
		t.Fatalf("%d turns, want the agent's 2 steps", turns)
	}
}
