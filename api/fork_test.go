package api_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// OpenCode's POST /session/{id}/fork: a new session (no child of the
// source: no parentID) titled "title (fork #1)" whose message list is the
// source's before messageID (all without one) under fresh IDs, listed by
// GET /session, and whose next prompt sends that history to the model.
// Unknown sessions and messages are 404s; a body field OpenCode does not
// have is a 400.
func TestV1ForkCopiesTheMessagesBeforeOne(t *testing.T) {
	var mu sync.Mutex
	var reqs []provider.Request
	rt := apitest.Start(t, apitest.Options{Turns: func(req *provider.Request, n int) (scripted.Turn, error) {
		mu.Lock()
		reqs = append(reqs, *req)
		mu.Unlock()
		if req.Messages[len(req.Messages)-1].Role == provider.RoleTool {
			return scripted.Turn{Text: fmt.Sprintf("answer %d", n)}, nil
		}
		// Two calls in one message: their parts must keep distinct IDs in a copy.
		return scripted.Turn{ToolCalls: []scripted.ToolCall{
			{Name: "bash", Args: json.RawMessage(`{"command":"echo a","description":"a"}`)},
			{Name: "bash", Args: json.RawMessage(`{"command":"echo b","description":"b"}`)}}}, nil
	}})
	var src v1SessionOut
	if code := v1(t, rt, "POST", "/session", `{"title":"Release notes"}`, &src); code != 200 {
		t.Fatalf("create: %d", code)
	}
	for _, text := range []string{"one", "two"} {
		if code := v1(t, rt, "POST", "/session/"+src.ID+"/message", `{"parts":[{"type":"text","text":"`+text+`"}]}`, nil); code != 200 {
			t.Fatalf("prompt %s: %d", text, code)
		}
	}
	var before []v1Msg
	v1(t, rt, "GET", "/session/"+src.ID+"/message", "", &before)
	if len(before) != 6 {
		t.Fatalf("source messages: %d, want 6 (two prompts, each with a turn of calls and its answer)", len(before))
	}

	events := v1Subscribe(t, rt, "/event?directory="+rt.Loc)
	var fork map[string]any
	if code := v1(t, rt, "POST", "/session/"+src.ID+"/fork", `{"messageID":"`+before[3].Info.ID+`"}`, &fork); code != 200 {
		t.Fatalf("fork: %d", code)
	}
	// Attached clients are told of the copied messages, as OpenCode tells them.
	var told []string
	v1Until(t, events, func(ev v1Ev) bool {
		var p struct {
			SessionID string `json:"sessionID"`
			Info      struct {
				ID string `json:"id"`
			} `json:"info"`
		}
		if ev.Type == "message.updated" && json.Unmarshal(ev.Properties, &p) == nil && p.SessionID == fork["id"] {
			told = append(told, p.Info.ID)
		}
		return len(told) == 3
	})
	if _, child := fork["parentID"]; child || fork["title"] != "Release notes (fork #1)" || fork["directory"] != src.Directory {
		t.Fatalf("fork %v: want no parentID, the title %q and the source's directory", fork, "Release notes (fork #1)")
	}
	id := fork["id"].(string)
	var got []v1Msg
	v1(t, rt, "GET", "/session/"+id+"/message", "", &got)
	if len(got) != 3 {
		t.Fatalf("fork messages: %d, want the 3 before the second prompt", len(got))
	}
	for i, m := range got {
		if told[i] != m.Info.ID {
			t.Fatalf("message.updated told %v, want the fork's messages %+v", told, got)
		}
	}
	partIDs := map[string]bool{}
	for i, m := range got {
		b := before[i]
		if m.Info.ID == b.Info.ID || m.Info.Role != b.Info.Role || len(m.Parts) != len(b.Parts) {
			t.Fatalf("message %d: %+v, want a copy of %+v under a fresh ID", i, m.Info, b.Info)
		}
		if m.Info.Role == "assistant" && m.Info.ParentID != got[0].Info.ID {
			t.Fatalf("copied answer %s has parent %s, want the copied prompt %s", m.Info.ID, m.Info.ParentID, got[0].Info.ID)
		}
		for j, p := range m.Parts {
			if p.MessageID != m.Info.ID || p.SessionID != id || partIDs[p.ID] || p.Type != b.Parts[j].Type || p.Text != b.Parts[j].Text || p.CallID != b.Parts[j].CallID {
				t.Fatalf("part %d of message %d: %+v, want a copy of %+v with its own ID", j, i, p, b.Parts[j])
			}
			partIDs[p.ID] = true
		}
	}
	var list []v1SessionOut
	v1(t, rt, "GET", "/session", "", &list)
	if !slices.ContainsFunc(list, func(s v1SessionOut) bool { return s.ID == id }) {
		t.Fatalf("GET /session %+v does not list the fork %s", list, id)
	}

	var whole v1SessionOut
	if code := v1(t, rt, "POST", "/session/"+src.ID+"/fork", "", &whole); code != 200 {
		t.Fatalf("fork without a body: %d", code)
	}
	var all []v1Msg
	v1(t, rt, "GET", "/session/"+whole.ID+"/message", "", &all)
	if len(all) != len(before) {
		t.Fatalf("fork of the whole session: %d messages, want %d", len(all), len(before))
	}

	// The fork's first turn sends the copied history.
	if code := v1(t, rt, "POST", "/session/"+id+"/message", `{"parts":[{"type":"text","text":"three"}]}`, nil); code != 200 {
		t.Fatalf("prompt the fork: %d", code)
	}
	mu.Lock()
	first := reqs[4] // 0-3: the source's turns
	mu.Unlock()
	var texts []string
	for _, m := range first.Messages {
		texts = append(texts, string(m.Role)+":"+m.Text+fmt.Sprint(len(m.ToolCalls)))
	}
	if want := []string{"user:one0", "assistant:2", "tool:0", "tool:0", "assistant:answer 10", "user:three0"}; !slices.Equal(texts, want) {
		t.Fatalf("the fork's first request %q, want %q", texts, want)
	}
	var after []v1Msg
	v1(t, rt, "GET", "/session/"+src.ID+"/message", "", &after)
	if len(after) != len(before) {
		t.Fatalf("the source has %d messages after the fork's prompt, want %d", len(after), len(before))
	}

	for _, c := range []struct{ path, body string }{
		{"/session/ses_unknown/fork", ""},
		{"/session/" + src.ID + "/fork", `{"messageID":"msg_unknown"}`},
		{"/session/" + src.ID + "/fork", `{"messageID":"` + got[0].Info.ID + `"}`}, // the fork's message
	} {
		if code := v1(t, rt, "POST", c.path, c.body, nil); code != 404 {
			t.Fatalf("POST %s %s: %d, want 404", c.path, c.body, code)
		}
	}
	if code := v1(t, rt, "POST", "/session/"+src.ID+"/fork", `{"messageId":"x"}`, nil); code != 400 {
		t.Fatalf("a misspelt field: %d, want 400", code)
	}
}
