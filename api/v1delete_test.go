package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/wire"
)

// A deleted session's ID stays taken: creating a session with it is a 409
// saying the session was deleted, never a 500 nor the old session back.
// OpenCode's session.deleted carries the session's info (its title and its
// times, as Session.Info has them), so clients can name what went away.
func TestDeletedSessionIDIsNotReusedAndItsEventNamesIt(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{ID: "ses_reused"})
	if err != nil {
		t.Fatal(err)
	}
	if code := v1(t, rt, "PATCH", "/session/"+s.ID, `{"title": "Release notes"}`, nil); code != 200 {
		t.Fatalf("rename: %d", code)
	}
	var before v1SessionOut
	if code := v1(t, rt, "GET", "/session/"+s.ID, "", &before); code != 200 {
		t.Fatalf("GET session: %d", code)
	}
	events := v1Subscribe(t, rt, "/event?directory="+rt.Loc)
	if code := v1(t, rt, "DELETE", "/session/"+s.ID, "", nil); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	got := v1Until(t, events, func(ev v1Ev) bool { return ev.Type == "session.deleted" })
	var props struct {
		SessionID string       `json:"sessionID"`
		Info      v1SessionOut `json:"info"`
	}
	if err := json.Unmarshal(got[len(got)-1].Properties, &props); err != nil {
		t.Fatal(err)
	}
	if props.Info.ID != s.ID || props.Info.Title != "Release notes" || props.Info.Time.Created != before.Time.Created ||
		props.Info.Time.Updated < before.Time.Updated || props.Info.Directory != before.Directory {
		t.Fatalf("session.deleted info %+v, want the session's title, directory and times (before: %+v)", props.Info, before)
	}

	for _, attempt := range []string{"V2", "again"} {
		_, err := c.CreateSession(ctx, wire.CreateSessionRequest{ID: s.ID})
		if err == nil || !strings.Contains(err.Error(), "409") || !strings.Contains(err.Error(), "session ses_reused was deleted; its ID cannot be reused") {
			t.Fatalf("%s: create with the deleted session's ID: %v, want a 409 saying it was deleted", attempt, err)
		}
	}
	if code := v1(t, rt, "GET", "/session/"+s.ID, "", nil); code != 404 {
		t.Fatalf("the deleted session after the refused create: %d, want 404", code)
	}
}
