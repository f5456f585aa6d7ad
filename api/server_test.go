package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api"
	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t *testing.T, rt *apitest.Runtime) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{BaseURL: rt.URL, Token: rt.Token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// raw sends one request with the test token (unless noAuth) and returns the
// status and the decoded error body (zero for a success).
func raw(t *testing.T, rt *apitest.Runtime, method, path, body string, noAuth bool) (int, wire.Error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, rt.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if !noAuth {
		req.Header.Set("Authorization", "Bearer "+rt.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e wire.Error
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s %s: %d with a body that is not a JSON error: %q", method, path, resp.StatusCode, b)
		}
		if e.Message == "" || e.Tag == "" {
			t.Fatalf("%s %s: %d error body without _tag or message: %s", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, e
}

func create(t *testing.T, c *client.Client, rt *apitest.Runtime) wire.Session {
	t.Helper()
	s, err := c.CreateSession(ctxT(t), wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: rt.Loc}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func prompt(t *testing.T, c *client.Client, id, text string) wire.InputAdmitted {
	t.Helper()
	r, err := c.Prompt(ctxT(t), id, wire.PromptRequest{Prompt: &wire.Prompt{Text: text}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitEvent reads the session's stream from the start until an event of typ.
func waitEvent(t *testing.T, c *client.Client, id, typ string) wire.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("waiting for %s in session %s: %v", typ, id, err)
		}
		if ev.Event.Type == typ {
			return ev.Event
		}
	}
}

func TestNewRequiresTokenUnlessInsecure(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	if _, err := api.New(api.Config{Sessions: rt.Node.Sessions}); err == nil || !strings.Contains(err.Error(), "Token") {
		t.Fatalf("New without token: %v, want an error naming the Token", err)
	}
	if _, err := api.New(api.Config{}); err == nil || !strings.Contains(err.Error(), "Sessions") {
		t.Fatalf("New without Sessions: %v, want an error naming Sessions", err)
	}
}

func TestEveryRouteRefusesMissingOrWrongToken(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	routes := []struct{ method, path string }{
		{"GET", "/api/health"}, {"GET", "/api/session"}, {"POST", "/api/session"}, {"GET", "/api/session/active"},
		{"GET", "/api/session/ses_x"}, {"POST", "/api/session/ses_x/prompt"}, {"GET", "/api/session/ses_x/message"},
		{"GET", "/api/session/ses_x/event"}, {"GET", "/api/event"}, {"POST", "/api/session/ses_x/interrupt"},
		{"GET", "/api/session/ses_x/trace"}, {"GET", "/metrics"}, {"GET", "/api/nowhere"},
	}
	for _, r := range routes {
		if code, e := raw(t, rt, r.method, r.path, "", true); code != http.StatusUnauthorized || e.Tag != wire.TagUnauthorized {
			t.Errorf("%s %s without token: %d %s, want 401 UnauthorizedError", r.method, r.path, code, e.Tag)
		}
	}
	req, _ := http.NewRequest("GET", rt.URL+"/api/health", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("wrong token: %d (WWW-Authenticate %q), want 401 with a challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if code, _ := raw(t, rt, "GET", "/api/health", "", false); code != http.StatusOK {
		t.Fatalf("right token: %d", code)
	}
}

// OpenCode's own clients authenticate only with HTTP Basic:
// opencode:$OPENCODE_SERVER_PASSWORD.
func TestBasicAuthWithTheTokenAsPasswordIsAccepted(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	status := func(user, pass string) int {
		req, _ := http.NewRequest("GET", rt.URL+"/api/health", nil)
		req.SetBasicAuth(user, pass)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := status("opencode", rt.Token); code != http.StatusOK {
		t.Fatalf("Basic opencode:<token>: %d, want 200", code)
	}
	if code := status("someone", rt.Token); code != http.StatusOK {
		t.Fatalf("Basic with another user name and the token: %d, want 200 (OPENCODE_SERVER_USERNAME may be anything)", code)
	}
	if code := status("opencode", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("Basic with a wrong password: %d, want 401", code)
	}
	if code := status(rt.Token, ""); code != http.StatusUnauthorized {
		t.Fatalf("Basic with the token as user name and no password: %d, want 401", code)
	}
}

func TestInsecureAdmitsLoopbackWithoutToken(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{API: func(c *api.Config) { c.Token, c.Insecure = "", true }})
	if code, _ := raw(t, rt, "GET", "/api/session", "", true); code != http.StatusOK {
		t.Fatalf("insecure loopback without token: %d, want 200", code)
	}
}

// A web page the user visits must not drive the API through their loopback: a
// text/plain cross-site POST needs no preflight, and Insecure asks no token.
func TestOtherOriginsAreRefused(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{API: func(c *api.Config) { c.Token, c.Insecure = "", true }})
	post := func(origin string) int {
		req, _ := http.NewRequestWithContext(ctxT(t), "POST", rt.URL+"/api/session", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "text/plain")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("http://evil.example"); code != http.StatusForbidden {
		t.Errorf("cross-origin create: %d, want 403", code)
	}
	if code := post(""); code != http.StatusOK {
		t.Errorf("create without Origin (CLI, SDK): %d, want 200", code)
	}
	if code := post(rt.URL); code != http.StatusOK {
		t.Errorf("create from the server's own origin: %d, want 200", code)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	if err := c.Health(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if code, _ := raw(t, rt, "GET", "/metrics", "", false); code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
}

func TestCreateGetAndListSessions(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	ctx := ctxT(t)
	a := create(t, c, rt)
	if !strings.HasPrefix(a.ID, "ses_") || a.Location.Directory == "" || a.Time.Created == 0 || a.Agent != "build" ||
		a.Model == nil || a.Model.ProviderID != "scripted" || a.ProjectID == "" || a.LastSeq != 1 {
		t.Fatalf("created session: %+v", a)
	}
	b, err := c.CreateSession(ctx, wire.CreateSessionRequest{ID: "ses_chosen", Model: &wire.ModelRef{ID: "m2", ProviderID: "scripted"}})
	if err != nil {
		t.Fatal(err)
	}
	if b.ID != "ses_chosen" || b.Location.Directory != rt.Loc || b.Model.ID != "m2" {
		t.Fatalf("session with chosen ID and default location: %+v", b)
	}
	again, err := c.CreateSession(ctx, wire.CreateSessionRequest{ID: "ses_chosen"})
	if err != nil || again.ID != "ses_chosen" || again.LastSeq != 1 {
		t.Fatalf("re-create returns the existing session: %+v %v", again, err)
	}
	got, err := c.Session(ctx, a.ID)
	if err != nil || got.ID != a.ID || got.Time.Created != a.Time.Created {
		t.Fatalf("get: %+v %v", got, err)
	}
	c3 := create(t, c, rt)

	page, err := c.ListSessions(ctx, client.ListOptions{Order: "asc", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 2 || page.Cursor.Next == "" {
		t.Fatalf("first page: %d sessions, next %q", len(page.Data), page.Cursor.Next)
	}
	rest, err := c.ListSessions(ctx, client.ListOptions{Order: "asc", Limit: 2, Cursor: page.Cursor.Next})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest.Data) != 1 || rest.Cursor.Next != "" {
		t.Fatalf("second page: %+v", rest)
	}
	seen := map[string]bool{}
	for _, s := range append(page.Data, rest.Data...) {
		seen[s.ID] = true
	}
	if !seen[a.ID] || !seen[b.ID] || !seen[c3.ID] {
		t.Fatalf("pages miss a session: %v", seen)
	}
	desc, err := c.ListSessions(ctx, client.ListOptions{})
	if err != nil || len(desc.Data) != 3 || desc.Data[0].ID < desc.Data[2].ID {
		t.Fatalf("default order is newest first: %+v %v", desc.Data, err)
	}
	other := t.TempDir()
	if _, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: other}}); err != nil {
		t.Fatal(err)
	}
	byDir, err := c.ListSessions(ctx, client.ListOptions{Directory: other})
	if err != nil || len(byDir.Data) != 1 || byDir.Data[0].Location.Directory != other {
		t.Fatalf("directory filter: %+v %v", byDir.Data, err)
	}
	if _, err := c.Prompt(ctx, c3.ID, wire.PromptRequest{Prompt: &wire.Prompt{Text: "Find The Needle"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, c3.ID); err != nil {
		t.Fatal(err)
	}
	found, err := c.ListSessions(ctx, client.ListOptions{Search: "the needle"})
	if err != nil || len(found.Data) != 1 || found.Data[0].ID != c3.ID || found.Data[0].Title != "Find The Needle" {
		t.Fatalf("search by title: %+v %v", found.Data, err)
	}
	if _, err := c.ListSessions(ctx, client.ListOptions{Cursor: "ses_nope"}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("unknown cursor: %v, want 400", err)
	}
}

func TestUnknownSessionIs404OnEveryRouteAndCreatesNothing(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	routes := []struct{ method, path, body string }{
		{"GET", "", ""}, {"POST", "/prompt", `{"prompt":{"text":"hi"}}`}, {"POST", "/interrupt", ""}, {"POST", "/wait", ""},
		{"POST", "/run", ""}, {"POST", "/compact", ""}, {"POST", "/move", `{"location":{"directory":"/tmp"}}`},
		{"POST", "/agent", `{"agent":"build"}`}, {"POST", "/model", `{"model":{"id":"m","providerID":"p"}}`},
		{"GET", "/context", ""}, {"GET", "/history", ""}, {"GET", "/event", ""}, {"GET", "/message", ""},
		{"GET", "/message/msg_x", ""}, {"GET", "/permission", ""}, {"GET", "/permission/per_x", ""},
		{"POST", "/permission/per_x/reply", `{"reply":"once"}`}, {"GET", "/question", ""},
		{"POST", "/question/que_x/reply", `{"answers":[]}`}, {"POST", "/question/que_x/reject", ""}, {"GET", "/trace", ""},
	}
	for _, r := range routes {
		code, e := raw(t, rt, r.method, "/api/session/ses_missing"+r.path, r.body, false)
		if code != http.StatusNotFound || e.Tag != wire.TagSessionNotFound || e.SessionID != "ses_missing" || !strings.Contains(e.Message, "ses_missing") {
			t.Errorf("%s %s: %d %+v, want 404 SessionNotFoundError naming ses_missing", r.method, r.path, code, e)
		}
	}
	ids, err := rt.Node.Journal.SessionIDs(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 0 {
		t.Fatalf("requests for an unknown session left streams behind: %v", ids)
	}
}

func TestBadInputIsRefusedWithTheFieldNamed(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{API: func(c *api.Config) { c.MaxBodyBytes = 4096 }})
	c := newClient(t, rt)
	s := create(t, c, rt)
	p := "/api/session/" + s.ID
	cases := []struct {
		name, method, path, body string
		status                   int
		field, contains          string
	}{
		{"unknown field", "POST", p + "/prompt", `{"prompt":{"text":"hi"},"bogus":1}`, 400, "bogus", "bogus"},
		{"nested unknown field", "POST", p + "/prompt", `{"prompt":{"text":"hi","colour":"red"}}`, 400, "colour", "colour"},
		{"unknown field on create", "POST", "/api/session", `{"directory":"/tmp"}`, 400, "directory", "directory"},
		{"malformed JSON", "POST", p + "/prompt", `{"prompt":`, 400, "", "malformed"},
		{"syntax error", "POST", p + "/prompt", `{"prompt" {}}`, 400, "", "byte offset"},
		{"wrong type", "POST", p + "/prompt", `{"prompt":{"text":42}}`, 400, "prompt.text", "prompt.text"},
		{"trailing data", "POST", p + "/prompt", `{"prompt":{"text":"a"}} {}`, 400, "", "after the JSON"},
		{"empty body", "POST", p + "/prompt", ``, 400, "", "empty"},
		{"missing prompt", "POST", p + "/prompt", `{}`, 400, "prompt", "prompt"},
		{"empty text", "POST", p + "/prompt", `{"prompt":{"text":""}}`, 400, "prompt.text", "empty"},
		{"bad delivery", "POST", p + "/prompt", `{"prompt":{"text":"a"},"delivery":"later"}`, 400, "delivery", "later"},
		{"bad message id", "POST", p + "/prompt", `{"id":"nope","prompt":{"text":"a"}}`, 400, "id", "msg_"},
		{"bad session id", "POST", "/api/session", `{"id":"x y"}`, 400, "id", "ses"},
		{"empty location", "POST", "/api/session", `{"location":{"directory":""}}`, 400, "location.directory", "directory"},
		{"body on a bodiless route", "POST", p + "/interrupt", `{"now":true}`, 400, "now", "now"},
		{"missing agent", "POST", p + "/agent", `{}`, 400, "agent", "agent"},
		{"unknown agent", "POST", p + "/agent", `{"agent":"ghost"}`, 400, "", "ghost"},
		{"model without provider", "POST", p + "/model", `{"model":{"id":"m"}}`, 400, "model", "providerID"},
		{"bad reply", "POST", p + "/permission/per_x/reply", `{"reply":"maybe"}`, 400, "reply", "maybe"},
		{"bad limit", "GET", p + "/message?limit=0", ``, 400, "limit", "limit"},
		{"bad order", "GET", p + "/message?order=up", ``, 400, "order", "up"},
		{"bad cursor", "GET", p + "/message?cursor=zzz", ``, 400, "", "cursor"},
		{"bad after", "GET", p + "/history?after=-1", ``, 400, "after", "after"},
		{"bad event cursor", "GET", p + "/event?after=x", ``, 400, "after", "after"},
		// The cursor after which nothing can be a seq (issue #21: a SQL "negative limit" 500).
		{"after at the int64 limit", "GET", p + "/history?after=9223372036854775807", ``, 400, "after", "9223372036854775806"},
		{"event cursor at the int64 limit", "GET", p + "/event?after=9223372036854775807", ``, 400, "after", "9223372036854775806"},
		// Strict means no duplicate keys, no case-folded keys, UTF-8 only (encoding/json
		// took the last duplicate, matched "Prompt" to prompt and replaced bad bytes).
		{"duplicate key", "POST", p + "/prompt", `{"prompt":{"text":"a","text":"b"}}`, 400, "prompt.text", "duplicate key"},
		{"duplicate top-level key", "POST", p + "/prompt", `{"prompt":{"text":"a"},"prompt":{"text":"b"}}`, 400, "prompt", "duplicate key"},
		{"key in another case", "POST", p + "/prompt", `{"Prompt":{"text":"a"}}`, 400, "Prompt", "case-sensitive"},
		{"nested key in another case", "POST", p + "/prompt", `{"prompt":{"TEXT":"a"}}`, 400, "prompt.TEXT", `want "prompt.text"`},
		{"invalid UTF-8", "POST", p + "/prompt", "{\"prompt\":{\"text\":\"a\xffb\"}}", 400, "", "not valid UTF-8 (byte offset 20)"},
		{"bad trace format", "GET", p + "/trace?format=xml", ``, 400, "format", "xml"},
		{"too large", "POST", p + "/prompt", `{"prompt":{"text":"` + strings.Repeat("a", 5000) + `"}}`, 413, "", "4096"},
	}
	for _, tc := range cases {
		code, e := raw(t, rt, tc.method, tc.path, tc.body, false)
		if code != tc.status || e.Field != tc.field || !strings.Contains(e.Message, tc.contains) {
			t.Errorf("%s: %d field %q message %q; want %d field %q and a message containing %q", tc.name, code, e.Field, e.Message, tc.status, tc.field, tc.contains)
		}
	}
	// Nothing was admitted by any of them.
	h, err := c.History(ctxT(t), s.ID, 0, 100)
	if err != nil || len(h.Data) != 1 {
		t.Fatalf("bad requests changed the session: %d events, %v", len(h.Data), err)
	}
}

func TestPromptReceiptMessagesAndCursors(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{Turns: func(req *provider.Request, n int) (scripted.Turn, error) {
		return scripted.Turn{Text: "answer " + req.Messages[len(req.Messages)-1].Text}, nil
	}})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	r := prompt(t, c, s.ID, "one")
	if r.AdmittedSeq < 2 || !strings.HasPrefix(r.ID, "msg_") || r.SessionID != s.ID || r.Delivery != "steer" || r.Prompt.Text != "one" || r.TimeCreated == 0 {
		t.Fatalf("receipt: %+v", r)
	}
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	prompt(t, c, s.ID, "two")
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Session(ctx, s.ID); err != nil || got.Title != "one" {
		t.Fatalf("title from the first prompt: %q %v", got.Title, err)
	}
	all, err := c.Messages(ctx, s.ID, client.MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range all.Data {
		switch m.Type {
		case "user":
			got = append(got, "U:"+m.Text)
		case "assistant":
			if len(m.Content) != 1 || m.Content[0].Type != "text" || m.Model == nil || m.Agent != "build" || m.Finish == "" {
				t.Fatalf("assistant message: %+v", m)
			}
			got = append(got, "A:"+m.Content[0].Text)
		}
		if m.Time.Created == 0 || m.Metadata.Seq == 0 {
			t.Fatalf("message without time or seq: %+v", m)
		}
	}
	if strings.Join(got, "|") != "U:one|A:answer one|U:two|A:answer two" {
		t.Fatalf("messages: %v", got)
	}
	if all.Cursor.Next != "" {
		t.Fatalf("one page holds all: next %q", all.Cursor.Next)
	}
	// Page by one: the same four, in order, then no cursor.
	var paged []string
	cursor := ""
	for i := 0; i < 10; i++ {
		page, err := c.Messages(ctx, s.ID, client.MessagesOptions{Limit: 1, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Data {
			paged = append(paged, m.ID)
		}
		if cursor = page.Cursor.Next; cursor == "" {
			break
		}
	}
	if len(paged) != 4 || paged[0] != all.Data[0].ID || paged[3] != all.Data[3].ID {
		t.Fatalf("paged by one: %v", paged)
	}
	desc, err := c.Messages(ctx, s.ID, client.MessagesOptions{Limit: 3, Order: "desc"})
	if err != nil || len(desc.Data) != 3 || desc.Data[0].ID != all.Data[3].ID || desc.Cursor.Next == "" {
		t.Fatalf("desc page: %+v %v", desc, err)
	}
	older, err := c.Messages(ctx, s.ID, client.MessagesOptions{Limit: 3, Order: "desc", Cursor: desc.Cursor.Next})
	if err != nil || len(older.Data) != 1 || older.Data[0].ID != all.Data[0].ID || older.Cursor.Next != "" {
		t.Fatalf("desc second page: %+v %v", older, err)
	}
	one, err := c.Message(ctx, s.ID, all.Data[1].ID)
	if err != nil || one.ID != all.Data[1].ID || one.Type != "assistant" {
		t.Fatalf("message by ID: %+v %v", one, err)
	}
	code, e := raw(t, rt, "GET", "/api/session/"+s.ID+"/message/msg_nope", "", false)
	if code != 404 || e.Tag != wire.TagMessageNotFound || e.MessageID != "msg_nope" {
		t.Fatalf("unknown message: %d %+v", code, e)
	}
}

func TestPromptReuseIsDuplicateOrConflict(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	no := false
	req := wire.PromptRequest{ID: "msg_fixed", Prompt: &wire.Prompt{Text: "same"}, Resume: &no}
	first, err := c.Prompt(ctx, s.ID, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Prompt(ctx, s.ID, req)
	if err != nil || !again.Duplicate || again.AdmittedSeq != first.AdmittedSeq {
		t.Fatalf("exact retry: %+v %v, want the original receipt marked duplicate", again, err)
	}
	req.Prompt = &wire.Prompt{Text: "different"}
	_, err = c.Prompt(ctx, s.ID, req)
	var apiErr *client.Error
	if !errors.Is(err, client.ErrConflict) || !errors.As(err, &apiErr) || apiErr.Body.Tag != wire.TagConflict {
		t.Fatalf("reuse with other text: %v, want 409 ConflictError", err)
	}
	// resume false admitted only: the inbox holds it, no drain ran.
	inbox, err := rt.Node.Journal.PendingInbox(ctx, s.ID)
	if err != nil || len(inbox) != 1 {
		t.Fatalf("pending inbox: %v %v", inbox, err)
	}
}

func TestHistoryAndContext(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	prompt(t, c, s.ID, "hello")
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	first, err := c.History(ctx, s.ID, 0, 3)
	if err != nil || len(first.Data) != 3 || !first.HasMore {
		t.Fatalf("first history page: %+v %v", first, err)
	}
	rest, err := c.History(ctx, s.ID, 3, 1000)
	if err != nil || rest.HasMore {
		t.Fatalf("rest: %+v %v", rest, err)
	}
	all := append(first.Data, rest.Data...)
	types := map[string]bool{}
	for i, ev := range all {
		if ev.Durable == nil || ev.Durable.Seq != int64(i+1) || ev.Durable.AggregateID != s.ID || !strings.HasPrefix(ev.ID, "evt_") {
			t.Fatalf("event %d: %+v", i, ev)
		}
		types[ev.Type] = true
	}
	for _, want := range []string{"session.next.created", "session.next.prompt.admitted", "session.next.prompted", "session.next.step.started", "session.next.text.ended", "session.next.step.ended", "session.next.idle"} {
		if !types[want] {
			t.Errorf("history lacks %s: %v", want, types)
		}
	}
	cx, err := c.Context(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cx.Epoch == nil || cx.Epoch.Baseline == "" || cx.Epoch.Location != rt.Loc || len(cx.Epoch.Snapshot) == 0 || len(cx.Data) != 2 {
		t.Fatalf("context: %+v", cx)
	}
}

func TestSwitchesMoveRunAndCompact(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{Agents: map[string]actors.Agent{
		"build": {Rules: []permission.Rule{{Action: "*", Resource: "*", Effect: permission.Allow}}},
		"plan":  {Rules: []permission.Rule{{Action: "*", Resource: "*", Effect: permission.Deny}}},
	}})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	if err := c.SwitchAgent(ctx, s.ID, "plan"); err != nil {
		t.Fatal(err)
	}
	if err := c.SwitchModel(ctx, s.ID, wire.ModelRef{ID: "other", ProviderID: "scripted"}); err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	moved, err := c.Move(ctx, s.ID, dest)
	if err != nil {
		t.Fatal(err)
	}
	if moved.Agent != "plan" || moved.Model.ID != "other" || moved.Location.Directory != dest {
		t.Fatalf("after switches and move: %+v", moved)
	}
	out, err := c.Run(ctx, s.ID)
	if err != nil || out.Error != "" || out.LastSeq <= moved.LastSeq {
		t.Fatalf("run: %+v %v", out, err)
	}
	msgs, err := c.Messages(ctx, s.ID, client.MessagesOptions{})
	if err != nil || len(msgs.Data) == 0 || msgs.Data[len(msgs.Data)-1].Agent != "plan" {
		t.Fatalf("run answered with the switched agent: %+v %v", msgs.Data, err)
	}
	for _, path := range []string{"/permission"} {
		if code, e := raw(t, rt, "POST", "/api/session/"+s.ID+path, `{}`, false); code != http.StatusNotImplemented || e.Tag != wire.TagNotImplemented {
			t.Errorf("POST %s: %d %+v, want 501", path, code, e)
		}
	}
	// A short session has nothing older than its recent context to compact:
	// the attempt fails and says why, and nothing is stored.
	err = c.Compact(ctx, s.ID)
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusServiceUnavailable || !strings.Contains(apiErr.Body.Message, "nothing to compact") {
		t.Fatalf("compact: %v, want 503 saying there is nothing to compact", err)
	}
}

func TestQuestionsAreEmptyAndRepliesNameTheRequest(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	qs, err := c.Questions(ctx, s.ID)
	if err != nil || qs == nil || len(qs) != 0 {
		t.Fatalf("questions: %v %v, want an empty list", qs, err)
	}
	for _, call := range []func() error{
		func() error { return c.ReplyQuestion(ctx, s.ID, "que_1", [][]string{{"yes"}}) },
		func() error { return c.RejectQuestion(ctx, s.ID, "que_1") },
	} {
		err := call()
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Body.Tag != wire.TagQuestionNotFound || apiErr.Body.RequestID != "que_1" || !strings.Contains(apiErr.Body.Message, "que_1") {
			t.Fatalf("question reply/reject: %v, want 404 QuestionNotFoundError naming que_1", err)
		}
	}
}

func TestPermissionListGetAndReply(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{
		Agents: map[string]actors.Agent{"build": {Rules: []permission.Rule{{Action: "*", Resource: "*", Effect: permission.Ask}}}},
		Turns: func(req *provider.Request, n int) (scripted.Turn, error) {
			if n == 0 {
				return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "bash", Args: []byte(`{"command":"echo permitted","description":"say"}`)}}}, nil
			}
			return scripted.Turn{Text: "done"}, nil
		},
	})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	prompt(t, c, s.ID, "run it")
	asked := waitEvent(t, c, s.ID, "session.next.permission.asked")
	var data struct{ ID, Action string }
	if err := json.Unmarshal(asked.Data, &data); err != nil || data.ID == "" {
		t.Fatalf("permission.asked data %s: %v", asked.Data, err)
	}
	list, err := c.Permissions(ctx, s.ID)
	if err != nil || len(list) != 1 || list[0].ID != data.ID || list[0].Action != "bash" || list[0].Source == nil || list[0].Source.CallID == "" {
		t.Fatalf("pending permissions: %+v %v", list, err)
	}
	one, err := c.Permission(ctx, s.ID, data.ID)
	if err != nil || one.ID != data.ID || one.SessionID != s.ID {
		t.Fatalf("get permission: %+v %v", one, err)
	}
	if err := c.ReplyPermission(ctx, s.ID, data.ID, "once", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	left, err := c.Permissions(ctx, s.ID)
	if err != nil || len(left) != 0 {
		t.Fatalf("after reply: %+v %v", left, err)
	}
	err = c.ReplyPermission(ctx, s.ID, data.ID, "once", "")
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Body.Tag != wire.TagPermissionNotFound || apiErr.Body.RequestID != data.ID {
		t.Fatalf("second reply: %v, want 404 PermissionNotFoundError", err)
	}
	msgs, err := c.Messages(ctx, s.ID, client.MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var tool *wire.Content
	for _, m := range msgs.Data {
		for i := range m.Content {
			if m.Content[i].Type == "tool" {
				tool = &m.Content[i]
			}
		}
	}
	if tool == nil || tool.Name != "bash" || tool.State == nil || tool.State.Status != "completed" || len(tool.State.Content) != 1 || !strings.Contains(tool.State.Content[0].Text, "permitted") {
		t.Fatalf("tool part after the approved call: %+v", tool)
	}
}

func TestActiveListsARunningDrainAndInterruptStopsIt(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{Turns: func(*provider.Request, int) (scripted.Turn, error) {
		return scripted.Turn{Text: "thinking", Hang: true}, nil
	}})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	prompt(t, c, s.ID, "go")
	waitEvent(t, c, s.ID, "session.next.step.started")
	active, err := c.ActiveSessions(ctx)
	if err != nil || active[s.ID].Type != "running" {
		t.Fatalf("active while hanging: %v %v", active, err)
	}
	if err := c.Interrupt(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	active, err = c.ActiveSessions(ctx)
	if err != nil || len(active) != 0 {
		t.Fatalf("active after interrupt: %v %v", active, err)
	}
	got, err := c.Session(ctx, s.ID)
	if err != nil || got.Status != "idle" {
		t.Fatalf("status after interrupt: %+v %v", got, err)
	}
}

func TestTraceServesSpansAsJSONAndTree(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	prompt(t, c, s.ID, "trace me")
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	spans, err := c.Trace(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, sp := range spans {
		names[sp.Name] = true
		if sp.SessionID != s.ID {
			t.Fatalf("span of another session: %+v", sp)
		}
	}
	if !names["invoke_agent build"] && !names["invoke_agent"] {
		t.Fatalf("no invoke_agent span: %v", names)
	}
	text, err := c.TraceText(ctx, s.ID)
	if err != nil || !strings.Contains(text, "invoke_agent") || !strings.Contains(text, "chat") {
		t.Fatalf("tree: %q %v", text, err)
	}
}

// S56's "always" is saved for the project in the journal: after a restart, the same
// call in another session of the same Location runs without asking.
func TestAlwaysApprovalOutlivesARestart(t *testing.T) {
	data, loc := t.TempDir(), t.TempDir()
	opts := apitest.Options{
		Data: data, Loc: loc,
		Agents: map[string]actors.Agent{"build": {Rules: []permission.Rule{{Action: "*", Resource: "*", Effect: permission.Ask}}}},
		Turns: func(req *provider.Request, n int) (scripted.Turn, error) {
			if n%2 == 0 {
				return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "bash", Args: []byte(`{"command":"echo permitted","description":"say"}`)}}}, nil
			}
			return scripted.Turn{Text: "done"}, nil
		},
	}
	rt := apitest.Start(t, opts)
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	prompt(t, c, s.ID, "run it")
	asked := waitEvent(t, c, s.ID, "session.next.permission.asked")
	var data1 struct{ ID string }
	if err := json.Unmarshal(asked.Data, &data1); err != nil || data1.ID == "" {
		t.Fatalf("permission.asked data %s: %v", asked.Data, err)
	}
	if err := c.ReplyPermission(ctx, s.ID, data1.ID, "always", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	rt.Stop()

	rt2 := apitest.Start(t, opts)
	c2 := newClient(t, rt2)
	s2 := create(t, c2, rt2)
	prompt(t, c2, s2.ID, "run it again")
	if err := c2.Wait(ctx, s2.ID); err != nil {
		t.Fatal(err)
	}
	evs, err := rt2.Node.Journal.ReadEvents(ctx, s2.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	for _, e := range evs {
		switch e.Type {
		case messages.PermissionAsked{}.EventType():
			t.Fatalf("asked again after the restart: %+v", e)
		case messages.ToolSucceeded{}.EventType():
			ran = true
		}
	}
	if !ran {
		types := make([]string, len(evs))
		for i, e := range evs {
			types[i] = e.Type.Name
		}
		t.Fatalf("the approved call did not succeed; events %v", types)
	}
}

// TestLastEventIDAtTheInt64LimitIsRefused: a reconnecting stream's Last-Event-ID names
// the last seq seen; 2^63−1 leaves no seq after it, so it is a 400 naming the header
// (before: a SQL "negative limit" error inside the stream).
func TestLastEventIDAtTheInt64LimitIsRefused(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	s := create(t, newClient(t, rt), rt)
	req, err := http.NewRequestWithContext(ctxT(t), "GET", rt.URL+"/api/session/"+s.ID+"/event", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+rt.Token)
	req.Header.Set("Last-Event-ID", "9223372036854775807")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e wire.Error
	_ = json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != 400 || e.Field != "Last-Event-ID" {
		t.Fatalf("%d %+v; want 400 naming Last-Event-ID", resp.StatusCode, e)
	}
}
