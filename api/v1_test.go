package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
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

// v1 sends one V1 request authenticated as OpenCode's clients do (HTTP
// Basic, opencode:<token>) and decodes a 2xx answer into out.
func v1(t *testing.T, rt *apitest.Runtime, method, path, body string, out any) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, rt.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("opencode", rt.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 == 2 && out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

type v1Ev struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Properties json.RawMessage `json:"properties"`
	// /global/event
	Directory string `json:"directory"`
	Payload   *v1Ev  `json:"payload"`
}

type v1PartOut struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
	Type      string `json:"type"`
	Text      string `json:"text"`
	Tool      string `json:"tool"`
	CallID    string `json:"callID"`
	Time      *struct {
		Start int64 `json:"start"`
		End   int64 `json:"end"`
	} `json:"time"`
	State *struct {
		Status   string          `json:"status"`
		Input    json.RawMessage `json:"input"`
		Output   string          `json:"output"`
		Metadata struct {
			Output string `json:"output"`
			Exit   *int   `json:"exit"`
		} `json:"metadata"`
	} `json:"state"`
}

type v1EvProps struct {
	SessionID string          `json:"sessionID"`
	Info      json.RawMessage `json:"info"`
	Part      v1PartOut       `json:"part"`
	Status    struct{ Type string }
	PartID    string `json:"partID"`
	Delta     string `json:"delta"`
	ID        string `json:"id"`
	Error     *struct {
		Name string `json:"name"`
	} `json:"error"`
}

func (e v1Ev) props(t *testing.T) v1EvProps {
	var p v1EvProps
	if err := json.Unmarshal(e.Properties, &p); err != nil {
		t.Fatalf("%s properties: %v", e.Type, err)
	}
	return p
}

// v1Subscribe reads a V1 event stream into a channel until the test ends.
func v1Subscribe(t *testing.T, rt *apitest.Runtime, path string) <-chan v1Ev {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", rt.URL+path, nil)
	req.SetBasicAuth("opencode", rt.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan v1Ev, 4096)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev v1Ev
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Errorf("undecodable event %q: %v", data, err)
				return
			}
			out <- ev
		}
	}()
	first := <-out
	if first.Payload != nil {
		first = *first.Payload
	}
	if first.Type != "server.connected" || !strings.HasPrefix(first.ID, "evt_") {
		t.Fatalf("first event %+v, want server.connected", first)
	}
	return out
}

// v1Until collects events until one satisfies done (bounded by 30 s).
func v1Until(t *testing.T, ch <-chan v1Ev, done func(v1Ev) bool) []v1Ev {
	t.Helper()
	var got []v1Ev
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended; saw %d events", len(got))
			}
			got = append(got, ev)
			if done(ev) {
				return got
			}
		case <-deadline:
			types := []string{}
			for _, e := range got {
				types = append(types, e.Type)
			}
			t.Fatalf("no awaited event within 30 s; saw %v", types)
		}
	}
}

func isIdle(t *testing.T, sid string) func(v1Ev) bool {
	return func(ev v1Ev) bool {
		return ev.Type == "session.status" && ev.props(t).SessionID == sid && ev.props(t).Status.Type == "idle"
	}
}

type v1Msg struct {
	Info struct {
		ID       string `json:"id"`
		Role     string `json:"role"`
		ParentID string `json:"parentID"`
		Agent    string `json:"agent"`
		ModelID  string `json:"modelID"`
		Time     struct {
			Created   int64 `json:"created"`
			Completed int64 `json:"completed"`
		} `json:"time"`
		Error *struct {
			Name string `json:"name"`
		} `json:"error"`
		Finish string `json:"finish"`
	} `json:"info"`
	Parts []v1PartOut `json:"parts"`
}

type v1SessionOut struct {
	ID        string `json:"id"`
	Directory string `json:"directory"`
	ProjectID string `json:"projectID"`
	Title     string `json:"title"`
	Version   string `json:"version"`
	Time      struct{ Created, Updated int64 }
}

func toolTurn(marker string) apitest.TurnFunc {
	return func(req *provider.Request, n int) (scripted.Turn, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == provider.RoleTool {
			return scripted.Turn{Text: "the answer is 42", Chunk: 4}, nil
		}
		return scripted.Turn{Text: "Let me check.", Chunk: 5, ToolCalls: []scripted.ToolCall{{Name: "bash",
			Args: json.RawMessage(`{"command":"echo ` + marker + `","description":"print the marker"}`)}}}, nil
	}
}

// What `opencode run --attach` does: create a session, subscribe to
// /event, post a synchronous prompt; it prints the finished tool parts and
// the text parts with an end time, and stops at session.status idle.
func TestV1RunFlowStreamsAndListsTheSameParts(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{Turns: toolTurn("v1-marker")})
	var sess v1SessionOut
	if code := v1(t, rt, "POST", "/session", `{"permission":[{"permission":"question","action":"deny","pattern":"*"}]}`, &sess); code != 200 {
		t.Fatalf("POST /session: %d", code)
	}
	if !strings.HasPrefix(sess.ID, "ses") || sess.Directory != rt.Loc || sess.Version == "" || sess.Time.Created == 0 {
		t.Fatalf("created %+v", sess)
	}
	events := v1Subscribe(t, rt, "/event")
	var reply v1Msg
	if code := v1(t, rt, "POST", "/session/"+sess.ID+"/message", `{"agent":"build","model":{"providerID":"scripted","modelID":"test-model"},"parts":[{"type":"text","text":"run it"}]}`, &reply); code != 200 {
		t.Fatalf("POST message: %d", code)
	}
	if reply.Info.Role != "assistant" || reply.Info.Finish != "stop" || reply.Info.Time.Completed == 0 {
		t.Fatalf("sync reply info %+v, want the finished last assistant message", reply.Info)
	}
	if i := slices.IndexFunc(reply.Parts, func(p v1PartOut) bool { return p.Type == "text" }); i < 0 || reply.Parts[i].Text != "the answer is 42" {
		t.Fatalf("sync reply parts %+v, want the answer's text", reply.Parts)
	}
	got := v1Until(t, events, isIdle(t, sess.ID))

	// The events run prints from.
	var userID string
	live := map[string]v1PartOut{}
	sawBusy, sawDelta := false, false
	for _, ev := range got {
		p := ev.props(t)
		switch ev.Type {
		case "message.updated":
			var info struct{ ID, Role, ParentID string }
			_ = json.Unmarshal(p.Info, &info)
			if info.Role == "user" {
				userID = info.ID
			} else if info.ParentID != userID || userID == "" {
				t.Errorf("assistant %s parentID %q, want the user message %q", info.ID, info.ParentID, userID)
			}
		case "message.part.updated":
			live[p.Part.ID] = p.Part
		case "message.part.delta":
			sawDelta = true
			if _, ok := live[p.PartID]; !ok {
				t.Errorf("delta for part %s before message.part.updated announced it", p.PartID)
			}
		case "session.status":
			sawBusy = sawBusy || p.Status.Type == "busy"
		}
	}
	if !sawBusy || !sawDelta {
		t.Fatalf("busy %v, deltas %v: want both", sawBusy, sawDelta)
	}
	var tool *v1PartOut
	texts := []string{}
	for _, p := range live {
		switch p.Type {
		case "tool":
			tool = &p
		case "text":
			if p.Time != nil && p.Time.End > 0 {
				texts = append(texts, p.Text)
			}
		}
	}
	if tool == nil || tool.State.Status != "completed" || tool.Tool != "bash" || !strings.Contains(tool.State.Output, "v1-marker") ||
		!strings.Contains(tool.State.Metadata.Output, "v1-marker") || strings.Contains(tool.State.Metadata.Output, "bash_metadata") ||
		tool.State.Metadata.Exit == nil || *tool.State.Metadata.Exit != 0 {
		t.Fatalf("tool part %+v, want bash completed with the marker in output and metadata.output (no trailer), exit 0", tool)
	}
	slices.Sort(texts)
	if !slices.Equal(texts, []string{"Let me check.", "the answer is 42"}) {
		t.Fatalf("finished text parts %q", texts)
	}

	// The list a reconnecting client reads has the same parts under the
	// same IDs, sorted by ID in each message.
	var list []v1Msg
	if code := v1(t, rt, "GET", "/session/"+sess.ID+"/message?limit=100", "", &list); code != 200 {
		t.Fatalf("GET messages: %d", code)
	}
	if len(list) != 3 || list[0].Info.Role != "user" || list[0].Info.ID != userID || list[1].Info.ParentID != userID || list[2].Info.ParentID != userID {
		t.Fatalf("list %+v, want the user message and two assistant messages answering it", list)
	}
	listed := 0
	for _, m := range list {
		if !slices.IsSortedFunc(m.Parts, func(a, b v1PartOut) int { return strings.Compare(a.ID, b.ID) }) {
			t.Errorf("message %s parts not sorted by ID", m.Info.ID)
		}
		for _, p := range m.Parts {
			l, ok := live[p.ID]
			if !ok {
				t.Errorf("listed part %s (%s) never streamed", p.ID, p.Type)
				continue
			}
			listed++
			if l.Type != p.Type || l.Text != p.Text || l.MessageID != m.Info.ID {
				t.Errorf("part %s listed %+v, streamed %+v", p.ID, p, l)
			}
		}
	}
	if listed != len(live) {
		t.Fatalf("%d parts listed, %d streamed", listed, len(live))
	}
	var last []v1Msg
	if v1(t, rt, "GET", "/session/"+sess.ID+"/message?limit=1", "", &last); len(last) != 1 || last[0].Info.ID != list[2].Info.ID {
		t.Fatalf("limit=1: %+v, want the newest message", last)
	}
	var sessions []v1SessionOut
	if v1(t, rt, "GET", "/session", "", &sessions); len(sessions) != 1 || sessions[0].ID != sess.ID || sessions[0].Title != "run it" {
		t.Fatalf("GET /session: %+v", sessions)
	}
	if v1(t, rt, "GET", "/session?start=99999999999999", "", &sessions); len(sessions) != 0 {
		t.Fatalf("GET /session?start=<future>: %+v, want none", sessions)
	}
	var status map[string]any
	if v1(t, rt, "GET", "/session/status", "", &status); len(status) != 0 {
		t.Fatalf("status of an idle server: %v, want {}", status)
	}

	// The stream forgot the idle session; a second prompt brings it back
	// whole: the new user message, and the answers' parent.
	v1(t, rt, "POST", "/session/"+sess.ID+"/prompt_async", `{"parts":[{"type":"text","text":"again"}]}`, nil)
	second := v1Until(t, events, isIdle(t, sess.ID))
	var again string
	answered := 0
	for _, ev := range second {
		if ev.Type != "message.updated" {
			continue
		}
		var info struct{ ID, Role, ParentID string }
		_ = json.Unmarshal(ev.props(t).Info, &info)
		switch {
		case info.Role == "user":
			again = info.ID
		case info.ParentID != again || again == "" || again == userID:
			t.Errorf("second prompt: assistant %s parentID %q, want the new user message %q", info.ID, info.ParentID, again)
		default:
			answered++
		}
	}
	if answered == 0 {
		t.Fatalf("second prompt: no assistant message on the stream: %d events", len(second))
	}
}

// A V1 client and a V2 client write one ordered history.
func TestV1AndV2PromptsShareOneHistory(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{Turns: func(req *provider.Request, n int) (scripted.Turn, error) {
		return scripted.Turn{Text: "answer " + req.Messages[len(req.Messages)-1].Text}, nil
	}})
	var sess v1SessionOut
	v1(t, rt, "POST", "/session", `{}`, &sess)
	var reply v1Msg
	v1(t, rt, "POST", "/session/"+sess.ID+"/message", `{"parts":[{"type":"text","text":"one"}]}`, &reply)
	c := newClient(t, rt)
	if _, err := c.Prompt(ctxT(t), sess.ID, wire.PromptRequest{Prompt: &wire.Prompt{Text: "two"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctxT(t), sess.ID); err != nil {
		t.Fatal(err)
	}
	var list []v1Msg
	v1(t, rt, "GET", "/session/"+sess.ID+"/message", "", &list)
	var compact []string
	for _, m := range list {
		for _, p := range m.Parts {
			if p.Type == "text" {
				compact = append(compact, m.Info.Role+":"+p.Text)
			}
		}
	}
	if !slices.Equal(compact, []string{"user:one", "assistant:answer one", "user:two", "assistant:answer two"}) {
		t.Fatalf("history %q", compact)
	}
}

// The TUI's permission dialog: permission.asked on the bus, the pending
// list, the reply by request ID alone.
func TestV1PermissionIsAskedListedAndAnswered(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{
		Agents: map[string]actors.Agent{"build": {Rules: []permission.Rule{{Action: "*", Resource: "*", Effect: permission.Ask}}}},
		Turns:  toolTurn("asked-marker"),
	})
	var sess v1SessionOut
	v1(t, rt, "POST", "/session", `{}`, &sess)
	events := v1Subscribe(t, rt, "/global/event")
	if code := v1(t, rt, "POST", "/session/"+sess.ID+"/prompt_async", `{"parts":[{"type":"text","text":"go"}]}`, nil); code != 204 {
		t.Fatalf("prompt_async: %d, want 204", code)
	}
	got := v1Until(t, events, func(ev v1Ev) bool { return ev.Payload != nil && ev.Payload.Type == "permission.asked" })
	asked := got[len(got)-1]
	if asked.Directory != rt.Loc {
		t.Fatalf("global event directory %q, want %q", asked.Directory, rt.Loc)
	}
	var perm struct {
		ID, SessionID, Permission string
		Patterns, Always          []string
		Tool                      *struct{ MessageID, CallID string }
	}
	_ = json.Unmarshal(asked.Payload.Properties, &perm)
	if !strings.HasPrefix(perm.ID, "per") || perm.SessionID != sess.ID || perm.Permission != "bash" || perm.Tool == nil || perm.Tool.CallID == "" {
		t.Fatalf("permission.asked %+v", perm)
	}
	var pending []struct{ ID string }
	if v1(t, rt, "GET", "/permission", "", &pending); len(pending) != 1 || pending[0].ID != perm.ID {
		t.Fatalf("GET /permission: %+v", pending)
	}
	if code := v1(t, rt, "POST", "/permission/per_nope/reply", `{"reply":"once"}`, nil); code != 404 {
		t.Fatalf("reply to an unknown request: %d, want 404", code)
	}
	var ok bool
	if code := v1(t, rt, "POST", "/permission/"+perm.ID+"/reply", `{"reply":"once"}`, &ok); code != 200 || !ok {
		t.Fatalf("reply: %d %v", code, ok)
	}
	rest := v1Until(t, events, func(ev v1Ev) bool {
		return ev.Payload != nil && ev.Payload.Type == "session.idle"
	})
	replied, done := false, false
	for _, ev := range rest {
		if ev.Payload.Type == "permission.replied" {
			replied = true
		}
		if ev.Payload.Type == "message.part.updated" {
			p := ev.Payload.props(t)
			done = done || (p.Part.Type == "tool" && p.Part.State.Status == "completed" && strings.Contains(p.Part.State.Output, "asked-marker"))
		}
	}
	if !replied || !done {
		t.Fatalf("after the reply: replied %v, tool completed %v", replied, done)
	}
}

// The TUI's Esc Esc: abort interrupts a streaming turn; the message shows
// as aborted, not failed, and the session goes idle.
func TestV1AbortInterruptsAStreamingTurn(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{Turns: func(*provider.Request, int) (scripted.Turn, error) {
		return scripted.Turn{Text: "streaming", Hang: true}, nil
	}})
	var sess v1SessionOut
	v1(t, rt, "POST", "/session", `{}`, &sess)
	events := v1Subscribe(t, rt, "/event?directory="+rt.Loc)
	v1(t, rt, "POST", "/session/"+sess.ID+"/prompt_async", `{"parts":[{"type":"text","text":"go"}]}`, nil)
	v1Until(t, events, func(ev v1Ev) bool { return ev.Type == "message.part.delta" })
	var busy map[string]struct{ Type string }
	if v1(t, rt, "GET", "/session/status", "", &busy); busy[sess.ID].Type != "busy" {
		t.Fatalf("status while streaming: %v", busy)
	}
	var ok bool
	if code := v1(t, rt, "POST", "/session/"+sess.ID+"/abort", "", &ok); code != 200 || !ok {
		t.Fatalf("abort: %d %v", code, ok)
	}
	got := v1Until(t, events, isIdle(t, sess.ID))
	for _, ev := range got {
		if ev.Type == "session.error" {
			t.Fatalf("an abort published session.error: %s", ev.Properties)
		}
	}
	var list []v1Msg
	v1(t, rt, "GET", "/session/"+sess.ID+"/message", "", &list)
	if n := len(list); n != 2 || list[1].Info.Error == nil || list[1].Info.Error.Name != "MessageAbortedError" {
		t.Fatalf("messages after abort: %+v", list)
	}
}

func TestV1CatalogAndPanelRoutesAnswerTheirShapes(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{API: func(c *api.Config) {
		c.Catalog = func(context.Context, string) api.Catalog {
			return api.Catalog{DefaultAgent: "build", DefaultModel: messages.ModelRef{Provider: "local", ID: "m1"},
				Agents:    []api.CatalogAgent{{Name: "build", Mode: "primary"}, {Name: "plan", Mode: "primary", Description: "read only"}},
				Providers: []api.CatalogProvider{{ID: "local", Name: "Local", Models: []api.CatalogModel{{ID: "m0"}, {ID: "m1", Context: 1000, Output: 100, Tools: true}}}}}
		}
	}})
	var agents []struct{ Name, Mode string }
	if v1(t, rt, "GET", "/agent", "", &agents); len(agents) != 2 || agents[1].Name != "plan" {
		t.Fatalf("agents %+v", agents)
	}
	var providers struct {
		Providers []struct {
			ID     string
			Models map[string]struct {
				ID, ProviderID string
				Limit          struct{ Context, Output int }
			}
		}
		Default map[string]string
	}
	if v1(t, rt, "GET", "/config/providers", "", &providers); len(providers.Providers) != 1 || providers.Default["local"] != "m1" ||
		providers.Providers[0].Models["m1"].Limit.Context != 1000 {
		t.Fatalf("config/providers %+v", providers)
	}
	var cfg map[string]any
	if v1(t, rt, "GET", "/config", "", &cfg); cfg["model"] != "local/m1" {
		t.Fatalf("config %v", cfg)
	}
	var path map[string]string
	if v1(t, rt, "GET", "/path?directory=/elsewhere", "", &path); path["directory"] != "/elsewhere" {
		t.Fatalf("path %v", path)
	}
	for _, r := range []struct{ path, want string }{
		{"/lsp", "[]"}, {"/formatter", "[]"}, {"/command", "[]"}, {"/mcp", "{}"}, {"/experimental/resource", "{}"},
		{"/experimental/workspace", "[]"}, {"/experimental/workspace/status", "[]"}, {"/provider/auth", "{}"},
		{"/question", "[]"}, {"/permission", "[]"}, {"/session/status", "{}"},
	} {
		var raw json.RawMessage
		if code := v1(t, rt, "GET", r.path, "", &raw); code != 200 || strings.TrimSpace(string(raw)) != r.want {
			t.Errorf("GET %s: %d %s, want %s", r.path, code, raw, r.want)
		}
	}
	var sess v1SessionOut
	v1(t, rt, "POST", "/session", `{}`, &sess)
	for _, r := range []struct{ method, path, body, want string }{
		{"PATCH", "/session/" + sess.ID, `{"time":{"archived":1}}`, "archiving a session"},
		{"POST", "/session/" + sess.ID + "/share", "", "sessionrt has no share service"},
		{"DELETE", "/session/" + sess.ID + "/share", "", "sessionrt has no share service"},
	} {
		code, body := v1Raw(t, rt, r.method, r.path)
		if r.body != "" {
			code, body = v1RawBody(t, rt, r.method, r.path, r.body)
		}
		if code != 501 || !strings.Contains(body, r.want) {
			t.Errorf("%s %s: %d %s, want 501 saying %q", r.method, r.path, code, body, r.want)
		}
	}
	if code, body := v1Raw(t, rt, "POST", "/session/ses_nope/share"); code != 404 {
		t.Errorf("share of an unknown session: %d %s, want 404", code, body)
	}
	if code := v1(t, rt, "POST", "/session/"+sess.ID+"/command", `{"command":"init","arguments":""}`, nil); code != 400 {
		t.Errorf("unknown command: %d, want 400", code)
	}
	if code := v1(t, rt, "POST", "/session", `{"parentID":"ses_x"}`, nil); code != 400 {
		t.Errorf("child session: %d, want 400", code)
	}
}

// A session keeps the title a V1 client gives it at creation, and a
// rename (PATCH title) is durable: the session list and a restarted server
// show it. Before, the title was ignored and a rename answered 501.
func TestV1TitleAtCreationAndRenameAreKept(t *testing.T) {
	data := t.TempDir()
	rt := apitest.Start(t, apitest.Options{Data: data})
	var created struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if code := v1(t, rt, "POST", "/session", `{"title": "Fix the login bug"}`, &created); code != 200 || created.Title != "Fix the login bug" {
		t.Fatalf("create with a title: %d %+v", code, created)
	}
	var renamed struct {
		Title string `json:"title"`
	}
	if code := v1(t, rt, "PATCH", "/session/"+created.ID, `{"title": "Login bug, take two"}`, &renamed); code != 200 || renamed.Title != "Login bug, take two" {
		t.Fatalf("rename: %d %+v", code, renamed)
	}
	if code := v1(t, rt, "PATCH", "/session/"+created.ID, `{"title": "`+strings.Repeat("x", 1025)+`"}`, nil); code != 400 {
		t.Fatalf("a 1025-byte title: %d, want 400", code)
	}
	if code := v1(t, rt, "PATCH", "/session/"+created.ID, `{"time": {"archived": 1}}`, nil); code != 501 {
		t.Fatalf("archive: %d, want a clear 501", code)
	}
	rt.Stop()
	rt = apitest.Start(t, apitest.Options{Data: data})
	var list []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if code := v1(t, rt, "GET", "/session", "", &list); code != 200 || len(list) != 1 || list[0].Title != "Login bug, take two" {
		t.Fatalf("after a restart the session list is %d %+v, want the renamed title", code, list)
	}
	c := newClient(t, rt)
	if s, err := c.Session(ctxT(t), created.ID); err != nil || s.Title != "Login bug, take two" {
		t.Fatalf("V2 session %+v %v, want the renamed title", s, err)
	}
}

// The TUI's session list "delete": a deleted session leaves the V1 and V2
// lists and answers 404 everywhere, also after a restart; a second delete
// is a 404 (as OpenCode's own server answers); a running session is refused
// with a 409 naming the cause, and deleted once interrupted.
func TestV1DeleteSessionIsDurable(t *testing.T) {
	data := t.TempDir()
	turns := func(req *provider.Request, _ int) (scripted.Turn, error) {
		if req.Messages[len(req.Messages)-1].Text == "hang" {
			return scripted.Turn{Text: "streaming", Hang: true}, nil
		}
		return scripted.Turn{Text: "ok"}, nil
	}
	rt := apitest.Start(t, apitest.Options{Data: data, Turns: turns})
	var gone, busy, kept v1SessionOut
	v1(t, rt, "POST", "/session", `{"title": "to delete"}`, &gone)
	v1(t, rt, "POST", "/session", `{"title": "busy"}`, &busy)
	v1(t, rt, "POST", "/session", `{"title": "kept"}`, &kept)
	var reply v1Msg
	if code := v1(t, rt, "POST", "/session/"+gone.ID+"/message", `{"parts":[{"type":"text","text":"hello"}]}`, &reply); code != 200 {
		t.Fatalf("prompt: %d", code)
	}
	events := v1Subscribe(t, rt, "/event?directory="+rt.Loc)
	var deleted bool
	if code := v1(t, rt, "DELETE", "/session/"+gone.ID, "", &deleted); code != 200 || !deleted {
		t.Fatalf("delete: %d %v, want 200 true", code, deleted)
	}
	v1Until(t, events, func(ev v1Ev) bool {
		return ev.Type == "session.deleted" && strings.Contains(string(ev.Properties), gone.ID)
	})

	v1(t, rt, "POST", "/session/"+busy.ID+"/prompt_async", `{"parts":[{"type":"text","text":"hang"}]}`, nil)
	v1Until(t, events, func(ev v1Ev) bool { return ev.Type == "message.part.delta" })
	if code, refusal := v1Raw(t, rt, "DELETE", "/session/"+busy.ID); code != 409 || !strings.Contains(refusal, "is running; interrupt it before deleting it") {
		t.Fatalf("delete while busy: %d %s, want 409 naming the running session", code, refusal)
	}

	check := func(when string) {
		t.Helper()
		var list []v1SessionOut
		if code := v1(t, rt, "GET", "/session", "", &list); code != 200 || len(list) != 2 {
			t.Fatalf("%s: V1 list %d %+v, want the 2 sessions not deleted", when, code, list)
		}
		for _, s := range list {
			if s.ID == gone.ID {
				t.Fatalf("%s: the deleted session is listed: %+v", when, list)
			}
		}
		c := newClient(t, rt)
		page, err := c.ListSessions(ctxT(t), client.ListOptions{})
		if err != nil || len(page.Data) != 2 {
			t.Fatalf("%s: V2 list: %d sessions, %v; want 2", when, len(page.Data), err)
		}
		for _, s := range page.Data {
			if s.ID == gone.ID {
				t.Fatalf("%s: the deleted session is in the V2 list", when)
			}
		}
		for _, path := range []string{"/session/" + gone.ID, "/session/" + gone.ID + "/message"} {
			if code := v1(t, rt, "GET", path, "", nil); code != 404 {
				t.Fatalf("%s: GET %s: %d, want 404", when, path, code)
			}
		}
		if code := v1(t, rt, "POST", "/session/"+gone.ID+"/message", `{"parts":[{"type":"text","text":"again"}]}`, nil); code != 404 {
			t.Fatalf("%s: prompt to the deleted session: %d, want 404", when, code)
		}
		if _, err := c.Session(ctxT(t), gone.ID); err == nil {
			t.Fatalf("%s: V2 session read of the deleted session succeeded", when)
		}
		if code, nf := v1Raw(t, rt, "DELETE", "/session/"+gone.ID); code != 404 || !strings.Contains(nf, "not found") {
			t.Fatalf("%s: a second delete: %d %s, want 404 not found", when, code, nf)
		}
	}
	check("before a restart")

	var ok bool
	if code := v1(t, rt, "POST", "/session/"+busy.ID+"/abort", "", &ok); code != 200 || !ok {
		t.Fatalf("abort: %d %v", code, ok)
	}
	v1Until(t, events, isIdle(t, busy.ID))
	rt.Stop()
	rt = apitest.Start(t, apitest.Options{Data: data, Turns: turns})
	check("after a restart")
	if code := v1(t, rt, "DELETE", "/session/"+busy.ID, "", &deleted); code != 200 || !deleted {
		t.Fatalf("delete once interrupted: %d %v, want 200 true", code, deleted)
	}
	var list []v1SessionOut
	if code := v1(t, rt, "GET", "/session", "", &list); code != 200 || len(list) != 1 || list[0].ID != kept.ID {
		t.Fatalf("list after both deletes: %d %+v, want only %s", code, list, kept.ID)
	}
}

// v1RawBody sends a V1 request with a JSON body and returns the status
// and the body whatever the status.
func v1RawBody(t *testing.T, rt *apitest.Runtime, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, rt.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("opencode", rt.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// v1Raw sends a bodiless V1 request and returns the status and the body
// whatever the status (v1 decodes only a success).
func v1Raw(t *testing.T, rt *apitest.Runtime, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, rt.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("opencode", rt.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
