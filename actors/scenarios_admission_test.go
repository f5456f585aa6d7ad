package actors

import (
	"reflect"
	"testing"
)

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
