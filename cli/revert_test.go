package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

func TestSessionRevertStagesCommitsAndClears(t *testing.T) {
	// Each prompt's first turn writes the prompt's text to a.txt.
	c := newCLIRun(t, apitest.Options{Turns: func(req *provider.Request, n int) (scripted.Turn, error) {
		if n%2 == 1 {
			return scripted.Turn{Text: "written"}, nil
		}
		word := req.Messages[len(req.Messages)-1].Text
		return scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call", Name: "bash",
			Args: []byte(`{"command":"printf ` + word + ` > a.txt","description":"write"}`)}}}, nil
	}})
	id := strings.TrimSpace(c.ok("session", "create", "--dir", c.rt.Loc))
	c.ok("session", "prompt", id, "one")
	var pr struct{ Receipt struct{ ID string } }
	if err := json.Unmarshal([]byte(c.ok("session", "prompt", id, "two", "--json")), &pr); err != nil || pr.Receipt.ID == "" {
		t.Fatalf("prompt --json: %+v %v", pr, err)
	}
	file := filepath.Join(c.rt.Loc, "a.txt")
	read := func() string { b, _ := os.ReadFile(file); return string(b) }
	if got := read(); got != "two" {
		t.Fatalf("a.txt is %q after two prompts", got)
	}
	if out := c.ok("session", "diff", id, pr.Receipt.ID, "--patch"); !strings.Contains(out, "modified  a.txt") || !strings.Contains(out, "-one") {
		t.Fatalf("diff: %q", out)
	}
	if out := c.ok("session", "revert", id, pr.Receipt.ID); !strings.Contains(out, "a.txt") || !strings.Contains(out, "staged") || read() != "two" {
		t.Fatalf("revert (stage): %q, a.txt %q", out, read())
	}
	if out := c.ok("session", "revert", id, pr.Receipt.ID, "--commit"); !strings.Contains(out, "reverted") || read() != "one" {
		t.Fatalf("revert --commit: %q, a.txt %q", out, read())
	}
	if out := c.ok("session", "revert", id, "--clear"); !strings.Contains(out, "cleared") || read() != "two" {
		t.Fatalf("revert --clear: %q, a.txt %q", out, read())
	}
	if code, _, errs := c.do("session", "revert", id); code != exitUsage || !strings.Contains(errs, "MESSAGE") {
		t.Fatalf("revert without a message: exit %d %q", code, errs)
	}
	if code, _, errs := c.do("session", "revert", id, "msg_nope"); code != exitNotFound {
		t.Fatalf("revert of an unknown message: exit %d %q", code, errs)
	}
}

func TestSessionForkCopiesTheHistory(t *testing.T) {
	c := newCLIRun(t, apitest.Options{})
	id := strings.TrimSpace(c.ok("session", "create", "--dir", c.rt.Loc))
	c.ok("session", "prompt", id, "one")
	var pr struct{ Receipt struct{ ID string } }
	if err := json.Unmarshal([]byte(c.ok("session", "prompt", id, "two", "--json")), &pr); err != nil || pr.Receipt.ID == "" {
		t.Fatalf("prompt --json: %+v %v", pr, err)
	}
	fork := strings.TrimSpace(c.ok("session", "fork", id, pr.Receipt.ID))
	if out := c.ok("session", "messages", fork); fork == id || !strings.Contains(out, "one") || strings.Contains(out, "two") {
		t.Fatalf("fork %s of %s before the second prompt: messages %q", fork, id, out)
	}
	if out := c.ok("session", "messages", strings.TrimSpace(c.ok("session", "fork", id))); !strings.Contains(out, "two") {
		t.Fatalf("fork of the whole history: messages %q", out)
	}
	if code, _, errs := c.do("session", "fork", id, "msg_nope"); code != exitNotFound {
		t.Fatalf("fork before an unknown message: exit %d %q", code, errs)
	}
}
