package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/title"
)

// titleChat is an OpenAI-compatible server that tells a title request
// (title.Instructions in its body) from a session's turn: a turn is
// answered at once; a title request waits for release (when set), then
// answers name, or fails with failStatus.
type titleChat struct {
	name       string
	failStatus int
	release    chan struct{}
	asked      chan string // each title request's model, as it arrives

	mu     sync.Mutex
	titles []fakeChatRequest
	turns  []fakeChatRequest
}

func newTitleChat(name string) *titleChat {
	return &titleChat{name: name, asked: make(chan string, 16)}
}

func (f *titleChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	model, _ := body["model"].(string)
	req := fakeChatRequest{Model: model, Body: body, Text: strings.Join(bodyTexts(body, nil), "\n")}
	answer := "hello from the configured model"
	if strings.Contains(req.Text, title.Instructions) {
		f.mu.Lock()
		f.titles = append(f.titles, req)
		f.mu.Unlock()
		f.asked <- model
		if f.release != nil {
			select {
			case <-f.release:
			case <-r.Context().Done():
				return
			}
		}
		if f.failStatus != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.failStatus)
			fmt.Fprint(w, `{"error":{"message":"the title model is unavailable","type":"invalid_request_error"}}`)
			return
		}
		answer = f.name
	} else {
		f.mu.Lock()
		f.turns = append(f.turns, req)
		f.mu.Unlock()
	}
	content, _ := json.Marshal(answer)
	w.Header().Set("Content-Type", "text/event-stream")
	for _, chunk := range []string{
		`{"id":"c1","object":"chat.completion.chunk","model":"` + model + `","choices":[{"index":0,"delta":{"role":"assistant","content":` + string(content) + `},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"` + model + `","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
		`[DONE]`,
	} {
		fmt.Fprintf(w, "data: %s\n\n", chunk)
	}
}

func (f *titleChat) seen() (titles, turns []fakeChatRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeChatRequest(nil), f.titles...), append([]fakeChatRequest(nil), f.turns...)
}

// waitAsked waits for the next title request and returns its model.
func (f *titleChat) waitAsked(t *testing.T) string {
	t.Helper()
	select {
	case m := <-f.asked:
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no title request reached the provider")
		return ""
	}
}

// titleConfig is a global opencode.json with one provider served by f: the
// sessions' model local/big, small (when set) as small_model, and extra
// keys.
func titleConfig(t *testing.T, cf configured, srv *httptest.Server, small, extra string) {
	t.Helper()
	sm := ""
	if small != "" {
		sm = `"small_model": "` + small + `",`
	}
	cf.global(t, `{
		"provider": {"local": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "`+srv.URL+`/v1"},
			"models": {"big": {}, "tiny": {}, "mid": {}}}},
		"model": "local/big",
		`+sm+extra+`
	}`)
}

// v1Title is the title GET /session/{id} (V1) shows.
func v1Title(t *testing.T, rt *apitest.Runtime, id string) string {
	t.Helper()
	var s v1SessionOut
	if code := v1(t, rt, "GET", "/session/"+id, "", &s); code != 200 {
		t.Fatalf("GET /session/%s: %d", id, code)
	}
	return s.Title
}

// metricsShow waits (at most 30 s) until GET /metrics has the line want:
// a failed title request leaves no event to wait for, only its count.
func metricsShow(t *testing.T, rt *apitest.Runtime, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for wait := time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		req, _ := http.NewRequestWithContext(ctxT(t), "GET", rt.URL+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+rt.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "\n"+want+"\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics (%d) lacks %s", resp.StatusCode, want)
		}
		time.Sleep(wait)
	}
}

// OpenCode names a session from its first prompt with small_model. So
// does sessionrt: the first prompt's turn also asks the small model for a
// title, off the turn's way (the turn's answer arrives while the title
// request is still held), and the session is renamed durably: V1 clients
// get session.updated with it, GET /session/{id} and the lists show it. A
// later prompt, also after a restart, asks nothing more. Before, the
// session kept its first prompt's start and small_model did nothing.
func TestSmallModelTitlesTheSessionBesideItsFirstTurn(t *testing.T) {
	fake := newTitleChat("Postgres API connection")
	fake.release = make(chan struct{})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cf := newConfigured(t)
	titleConfig(t, cf, srv, "local/tiny", "")
	data := t.TempDir()
	rt := cf.start(t, apitest.Options{ConfiguredProviders: true, Titles: true, Data: data})
	c := newClient(t, rt)
	ctx := ctxT(t)
	events := v1Subscribe(t, rt, "/event?directory="+url.QueryEscape(cf.project))

	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: cf.project}})
	if err != nil {
		t.Fatal(err)
	}
	const first = "how do I connect postgres to my API"
	prompt(t, c, s.ID, first)
	if m := fake.waitAsked(t); m != "tiny" {
		t.Fatalf("the title request went to %q, want small_model's tiny", m)
	}
	// The title request is held: the turn does not wait for it.
	if out, err := c.WaitOutcome(ctx, s.ID); err != nil || out.Error != "" {
		t.Fatalf("wait with the title request held: %+v %v", out, err)
	}
	if got := v1Title(t, rt, s.ID); got != first {
		t.Fatalf("title before the title model answered: %q, want the default (the first prompt)", got)
	}
	close(fake.release)
	v1Until(t, events, func(ev v1Ev) bool {
		if ev.Type != "session.updated" {
			return false
		}
		var info v1SessionOut
		p := ev.props(t)
		return json.Unmarshal(p.Info, &info) == nil && info.ID == s.ID && info.Title == "Postgres API connection"
	})
	if got := v1Title(t, rt, s.ID); got != "Postgres API connection" {
		t.Fatalf("V1 title %q", got)
	}
	metricsShow(t, rt, `sessionrt_session_titles_total{result="titled"} 1`)
	if got, err := c.Session(ctx, s.ID); err != nil || got.Title != "Postgres API connection" {
		t.Fatalf("V2 session %+v %v", got, err)
	}
	titles, turns := fake.seen()
	if len(titles) != 1 || len(turns) != 1 || turns[0].Model != "big" {
		t.Fatalf("%d title requests, turns %+v: want one title request and one turn on big", len(titles), turns)
	}
	if b := titles[0].Body; b["tools"] != nil || !strings.Contains(titles[0].Text, first) || strings.Contains(turns[0].Text, title.Instructions) {
		t.Fatalf("title request %v: want the prompt, no tools; the turn must not carry the title instructions", b)
	}
	// The title request is no part of the session's history.
	msgs, err := c.Messages(ctx, s.ID, client.MessagesOptions{})
	if err != nil || strings.Contains(fmt.Sprint(msgs), "Postgres API connection") {
		t.Fatalf("messages %+v %v: the title request is in the history", msgs, err)
	}

	prompt(t, c, s.ID, "and with TLS?")
	if out, err := c.WaitOutcome(ctx, s.ID); err != nil || out.Error != "" {
		t.Fatalf("wait: %+v %v", out, err)
	}
	rt.Stop()
	rt = cf.start(t, apitest.Options{ConfiguredProviders: true, Titles: true, Data: data})
	c = newClient(t, rt)
	prompt(t, c, s.ID, "and after a restart?")
	if out, err := c.WaitOutcome(ctx, s.ID); err != nil || out.Error != "" {
		t.Fatalf("wait after the restart: %+v %v", out, err)
	}
	var list []v1SessionOut
	if code := v1(t, rt, "GET", "/session?directory="+url.QueryEscape(cf.project), "", &list); code != 200 || len(list) != 1 || list[0].Title != "Postgres API connection" {
		t.Fatalf("V1 list after a restart: %d %+v", code, list)
	}
	if titles, turns := fake.seen(); len(titles) != 1 || len(turns) != 3 {
		t.Fatalf("%d title requests and %d turns after three prompts and a restart, want 1 and 3", len(titles), len(turns))
	}
}

// A title the client gave is kept (no title request is made); without
// small_model the session's own model is asked; a failing title request
// leaves the default title, and the prompt's answer arrives regardless.
func TestClientTitleIsKeptAndAFailedTitleRequestChangesNothing(t *testing.T) {
	fake := newTitleChat("unused")
	fake.failStatus = http.StatusBadRequest
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cf := newConfigured(t)
	titleConfig(t, cf, srv, "", "")
	rt := cf.start(t, apitest.Options{ConfiguredProviders: true, Titles: true})
	c := newClient(t, rt)
	ctx := ctxT(t)

	var mine v1SessionOut
	if code := v1(t, rt, "POST", "/session?directory="+url.QueryEscape(cf.project), `{"title": "Mine"}`, &mine); code != 200 {
		t.Fatalf("create: %d", code)
	}
	var reply v1Msg
	if code := v1(t, rt, "POST", "/session/"+mine.ID+"/message", `{"parts":[{"type":"text","text":"fix the login bug"}]}`, &reply); code != 200 {
		t.Fatalf("prompt: %d", code)
	}
	if titles, turns := fake.seen(); len(titles) != 0 || len(turns) != 1 || v1Title(t, rt, mine.ID) != "Mine" {
		t.Fatalf("a session titled by its client: %d title requests, %d turns, title %q", len(titles), len(turns), v1Title(t, rt, mine.ID))
	}

	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: cf.project}})
	if err != nil {
		t.Fatal(err)
	}
	prompt(t, c, s.ID, "refactor user service")
	if m := fake.waitAsked(t); m != "big" {
		t.Fatalf("without small_model the title request went to %q, want the session's big", m)
	}
	if out, err := c.WaitOutcome(ctx, s.ID); err != nil || out.Error != "" {
		t.Fatalf("wait with a failing title request: %+v %v", out, err)
	}
	msgs, err := c.Messages(ctx, s.ID, client.MessagesOptions{})
	if err != nil || !strings.Contains(fmt.Sprint(msgs), "hello from the configured model") {
		t.Fatalf("messages %+v %v lack the answer", msgs, err)
	}
	// Once the failure came back, the session still shows its default, and
	// a later prompt asks nothing.
	metricsShow(t, rt, `sessionrt_session_titles_total{result="failed"} 1`)
	prompt(t, c, s.ID, "again")
	if out, err := c.WaitOutcome(ctx, s.ID); err != nil || out.Error != "" {
		t.Fatalf("wait: %+v %v", out, err)
	}
	if got := v1Title(t, rt, s.ID); got != "refactor user service" {
		t.Fatalf("title after a failed title request: %q, want the default", got)
	}
	if titles, _ := fake.seen(); len(titles) != 1 {
		t.Fatalf("%d title requests, want 1 (a failure is not retried)", len(titles))
	}
}

// OpenCode's title agent: its model names sessions over small_model, and
// "disable" turns titles off (here for one project). Neither makes "title"
// an agent a client selects.
func TestTitleAgentModelWinsAndDisableTurnsTitlesOff(t *testing.T) {
	fake := newTitleChat("Rate limiting implementation")
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cf := newConfigured(t)
	titleConfig(t, cf, srv, "local/tiny", `"agent": {"title": {"model": "local/mid"}},`)
	off := t.TempDir()
	writeFile(t, filepath.Join(off, ".git", "HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(off, "opencode.json"), `{"agent": {"title": {"disable": true}}}`)
	rt := cf.start(t, apitest.Options{ConfiguredProviders: true, Titles: true})
	c := newClient(t, rt)
	ctx := ctxT(t)

	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: cf.project}})
	if err != nil {
		t.Fatal(err)
	}
	prompt(t, c, s.ID, "implement rate limiting")
	if m := fake.waitAsked(t); m != "mid" {
		t.Fatalf("the title request went to %q, want the title agent's mid", m)
	}
	if out, err := c.WaitOutcome(ctx, s.ID); err != nil || out.Error != "" {
		t.Fatalf("wait: %+v %v", out, err)
	}
	var agents []struct {
		Name   string `json:"name"`
		Hidden bool   `json:"hidden"`
	}
	if code := v1(t, rt, "GET", "/agent?directory="+url.QueryEscape(cf.project), "", &agents); code != 200 {
		t.Fatalf("GET /agent: %d", code)
	}
	for _, a := range agents {
		if a.Name == "title" && !a.Hidden {
			t.Fatalf("the title agent is listed as selectable: %+v", agents)
		}
	}

	d, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: off}})
	if err != nil {
		t.Fatal(err)
	}
	prompt(t, c, d.ID, "refactor user service")
	if out, err := c.WaitOutcome(ctx, d.ID); err != nil || out.Error != "" {
		t.Fatalf("wait: %+v %v", out, err)
	}
	prompt(t, c, d.ID, "again") // after the first prompt's title request would have come back
	if out, err := c.WaitOutcome(ctx, d.ID); err != nil || out.Error != "" {
		t.Fatalf("wait: %+v %v", out, err)
	}
	if titles, turns := fake.seen(); len(titles) != 1 || len(turns) != 3 || v1Title(t, rt, d.ID) != "refactor user service" {
		t.Fatalf("with titles off in the project: %d title requests (want the other project's 1), %d turns, title %q", len(titles), len(turns), v1Title(t, rt, d.ID))
	}
}

// Without small_model or a title agent's model, OpenCode asks its pick of
// the session's provider's models (catalog.SmallModel): here gpt-5-nano,
// its gpt-nano family before claude-haiku. Before, the session's own big
// was asked.
func TestProvidersSmallModelTitlesWhenNoneIsConfigured(t *testing.T) {
	fake := newTitleChat("Login bug fix")
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cf := newConfigured(t)
	cf.global(t, `{
		"provider": {"local": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "`+srv.URL+`/v1"},
			"models": {"big": {}, "claude-haiku-4-5": {}, "gpt-5-nano": {}}}},
		"model": "local/big"
	}`)
	rt := cf.start(t, apitest.Options{ConfiguredProviders: true, Titles: true})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: cf.project}})
	if err != nil {
		t.Fatal(err)
	}
	prompt(t, c, s.ID, "fix the login bug")
	if m := fake.waitAsked(t); m != "gpt-5-nano" {
		t.Fatalf("the title request went to %q, want the provider's small gpt-5-nano", m)
	}
	if out, err := c.WaitOutcome(ctx, s.ID); err != nil || out.Error != "" {
		t.Fatalf("wait: %+v %v", out, err)
	}
	if _, turns := fake.seen(); len(turns) != 1 || turns[0].Model != "big" {
		t.Fatalf("turns %+v: want one on the session's big", turns)
	}
}
