package actors

import (
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
)

func TestS1_CreateIsIdempotentByID(t *testing.T) {
	h := newHarness(t, text("ok"))
	a, err := h.sessions.Create(h.ctx(), "", Create{Location: h.loc})
	if err != nil || !a.Created || a.Session.ID == "" {
		t.Fatalf("create without ID: %+v, %v", a, err)
	}
	b, err := h.sessions.Create(h.ctx(), "ses_given", Create{Location: h.loc})
	if err != nil || !b.Created || b.Session.ID != "ses_given" {
		t.Fatalf("create with unused ID: %+v, %v", b, err)
	}
	again, err := h.sessions.Create(h.ctx(), "ses_given", Create{Location: t.TempDir()})
	if err != nil || again.Created || again.Session.Location != b.Session.Location {
		t.Fatalf("create with a used ID: %+v, %v; want the existing session", again, err)
	}
	var wg sync.WaitGroup
	created := make(chan bool, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := h.sessions.Create(h.ctx(), "ses_race", Create{Location: h.loc})
			if err != nil {
				t.Error(err)
				return
			}
			created <- info.Created
		}()
	}
	wg.Wait()
	close(created)
	n := 0
	for c := range created {
		if c {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("8 concurrent creates with one ID created %d sessions", n)
	}
	if got := h.events("ses_race"); !reflect.DeepEqual(got, []string{"created"}) {
		t.Fatalf("events %v", got)
	}
	h.checkReplay()
}

func TestS2_DefaultPromptMakesOneRequestAndOneUserMessage(t *testing.T) {
	h := newHarness(t, text("hello back"))
	id := h.create("")
	rec := h.prompt(id, "", "hello", "", true)
	if rec.AdmittedSeq != 2 {
		t.Fatalf("admitted seq %d, want 2 (after created)", rec.AdmittedSeq)
	}
	if out := h.waitIdle(id); out.Err != "" {
		t.Fatalf("drain failed: %+v", out)
	}
	if n := h.prov.Count(); n != 1 {
		t.Fatalf("%d provider requests, want 1", n)
	}
	if got, want := h.history(id), []string{"U:hello", "A:hello back"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	req := h.prov.Requests()[0]
	if req.System != "test/env: env v1\n\ntest/rules: rules v1" && req.System == "" {
		t.Fatalf("request has no baseline: %q", req.System)
	}
	h.checkReplay()
}

func TestS3_PromptRetryIsIdempotentAndConflictsAreRefused(t *testing.T) {
	h := newHarness(t, text("ok"))
	id := h.create("")
	other := h.create("")
	first := h.prompt(id, "msg_1", "hello", messages.Steer, false)
	again := h.prompt(id, "msg_1", "hello", messages.Steer, false)
	if again.AdmittedSeq != first.AdmittedSeq || !again.Duplicate {
		t.Fatalf("retry receipt %+v, want the original %+v", again, first)
	}
	for name, p := range map[string]struct {
		session string
		text    string
		d       messages.Delivery
	}{
		"other content":  {id, "goodbye", messages.Steer},
		"other delivery": {id, "hello", messages.Queue},
		"other session":  {other, "hello", messages.Steer},
	} {
		_, err := h.sessions.Prompt(h.ctx(), p.session, Prompt{MessageID: "msg_1", Prompt: messages.Prompt{Text: p.text}, Delivery: p.d})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("%s: got %v, want a conflict", name, err)
		}
	}
	if got := h.events(id); !reflect.DeepEqual(got, []string{"created", "prompt.admitted"}) {
		t.Fatalf("events %v: admitted twice?", got)
	}
	h.checkReplay()
}
