package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// editsPerPrompt: prompt k's first turn runs a bash call (k=0 rewrites
// a.txt, k=1 creates b.txt), its second answers.
func editsPerPrompt(req *provider.Request, n int) (scripted.Turn, error) {
	cmds := []string{`printf 'one\n' > a.txt`, `printf 'two\n' > b.txt`}
	if n%2 == 1 || n/2 >= len(cmds) {
		return scripted.Turn{Text: "done"}, nil
	}
	return scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_" + string(rune('a'+n)), Name: "bash",
		Args: []byte(`{"command":"` + cmds[n/2] + `","description":"edit"}`)}}}, nil
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[de.Name()] = string(b)
	}
	return out
}

// twoEditingPrompts runs both prompts and returns their message IDs.
func twoEditingPrompts(t *testing.T, rt *apitest.Runtime) (sessionID string, first, second string) {
	t.Helper()
	c := newClient(t, rt)
	os.WriteFile(filepath.Join(rt.Loc, "a.txt"), []byte("zero\n"), 0o644)
	s := create(t, c, rt)
	var ids []string
	for _, text := range []string{"first", "second"} {
		ids = append(ids, prompt(t, c, s.ID, text).ID)
		if err := c.Wait(ctxT(t), s.ID); err != nil {
			t.Fatal(err)
		}
	}
	return s.ID, ids[0], ids[1]
}

func TestV2RevertStageCommitClearAndDiff(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{Turns: editsPerPrompt})
	c := newClient(t, rt)
	id, first, second := twoEditingPrompts(t, rt)
	after := map[string]string{"a.txt": "one\n", "b.txt": "two\n"}
	if got := readDir(t, rt.Loc); !reflect.DeepEqual(got, after) {
		t.Fatalf("after two prompts %v", got)
	}
	diff, err := c.Diff(ctxT(t), id, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(diff) != 2 || diff[0].Path != "a.txt" || diff[0].Status != "modified" || diff[1].Path != "b.txt" || diff[1].Status != "added" {
		t.Fatalf("session diff %+v", diff)
	}
	if diff, err = c.Diff(ctxT(t), id, second); err != nil || len(diff) != 1 || diff[0].Path != "b.txt" || diff[0].Additions != 1 {
		t.Fatalf("diff of the second prompt %+v %v", diff, err)
	}
	st, err := c.RevertStage(ctxT(t), id, first)
	if err != nil {
		t.Fatal(err)
	}
	if st.MessageID != first || st.Snapshot == "" || len(st.Files) != 2 || !strings.Contains(st.Diff, "-one\n+zero\n") {
		t.Fatalf("staged %+v", st)
	}
	if err := c.RevertCommit(ctxT(t), id); err != nil {
		t.Fatal(err)
	}
	if got := readDir(t, rt.Loc); !reflect.DeepEqual(got, map[string]string{"a.txt": "zero\n"}) {
		t.Fatalf("after commit %v", got)
	}
	msgs, err := c.Messages(ctxT(t), id, client.MessagesOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(msgs); strings.Contains(string(b), "first") || strings.Contains(string(b), "second") {
		t.Fatalf("the reverted prompts are still listed: %s", b)
	}
	if err := c.RevertClear(ctxT(t), id); err != nil {
		t.Fatal(err)
	}
	if got := readDir(t, rt.Loc); !reflect.DeepEqual(got, after) {
		t.Fatalf("after clear %v", got)
	}
	if code, e := raw(t, rt, "POST", "/api/session/"+id+"/revert/stage", `{"messageID":"msg_nope"}`, false); code != 404 || e.Tag != wire.TagMessageNotFound {
		t.Fatalf("stage of an unknown message: %d %+v", code, e)
	}
	if code, e := raw(t, rt, "POST", "/api/session/"+id+"/revert/stage", `{}`, false); code != 400 || e.Field != "messageID" {
		t.Fatalf("stage without a message: %d %+v", code, e)
	}
	if code, e := raw(t, rt, "POST", "/api/session/"+id+"/revert/commit", ``, false); code != 400 {
		t.Fatalf("commit with nothing staged: %d %+v", code, e)
	}
	if code, e := raw(t, rt, "POST", "/api/session/ses_nope/revert/clear", ``, false); code != 404 || e.Tag != wire.TagSessionNotFound {
		t.Fatalf("clear of an unknown session: %d %+v", code, e)
	}
}

func v1Call(t *testing.T, rt *apitest.Runtime, method, path, body string, out any) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctxT(t), method, rt.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+rt.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 && out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

func TestV1RevertUnrevertAndDiff(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{Turns: editsPerPrompt})
	id, _, second := twoEditingPrompts(t, rt)
	var diffs []struct {
		File      string `json:"file"`
		Status    string `json:"status"`
		Additions int    `json:"additions"`
		Deletions int    `json:"deletions"`
		Patch     string `json:"patch"`
	}
	if code := v1Call(t, rt, "GET", "/session/"+id+"/diff?messageID="+second, "", &diffs); code != 200 || len(diffs) != 1 || diffs[0].File != "b.txt" || diffs[0].Status != "added" {
		t.Fatalf("V1 diff: %d %+v", code, diffs)
	}
	var sess struct {
		ID     string `json:"id"`
		Revert *struct {
			MessageID string `json:"messageID"`
		} `json:"revert"`
	}
	if code := v1Call(t, rt, "POST", "/session/"+id+"/revert", `{"messageID":"`+second+`"}`, &sess); code != 200 || sess.Revert == nil || sess.Revert.MessageID != second {
		t.Fatalf("V1 revert: %d %+v", code, sess)
	}
	if got := readDir(t, rt.Loc); !reflect.DeepEqual(got, map[string]string{"a.txt": "one\n"}) {
		t.Fatalf("after the V1 revert %v", got)
	}
	sess.Revert = nil
	if code := v1Call(t, rt, "GET", "/session/"+id, "", &sess); code != 200 || sess.Revert == nil {
		t.Fatalf("V1 session after revert: %d %+v", code, sess)
	}
	sess.Revert = nil
	if code := v1Call(t, rt, "POST", "/session/"+id+"/unrevert", "", &sess); code != 200 || sess.Revert != nil {
		t.Fatalf("V1 unrevert: %d %+v", code, sess)
	}
	if got := readDir(t, rt.Loc); !reflect.DeepEqual(got, map[string]string{"a.txt": "one\n", "b.txt": "two\n"}) {
		t.Fatalf("after unrevert %v", got)
	}
}

// A rename, a revert and an unrevert reach the other attached V1 clients
// as session.updated with the session's info as GET /session/{id} answers
// it: the new title, then revert.messageID (OpenCode's TUI hides the
// messages from there on), then no revert. Before, the V1 stream sent
// nothing for them.
func TestV1StreamSendsSessionUpdatedOnRenameAndRevert(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{Turns: editsPerPrompt})
	events := v1Subscribe(t, rt, "/event")
	id, _, second := twoEditingPrompts(t, rt)
	type info struct {
		ID     string `json:"id"`
		Title  string `json:"title"`
		Revert *struct {
			MessageID string `json:"messageID"`
		} `json:"revert"`
	}
	next := func(what string, ok func(info) bool) info {
		t.Helper()
		var got info
		v1Until(t, events, func(ev v1Ev) bool {
			if ev.Type != "session.updated" {
				return false
			}
			p := ev.props(t)
			if p.SessionID != id {
				return false
			}
			got = info{}
			if err := json.Unmarshal(p.Info, &got); err != nil {
				t.Fatalf("session.updated info %s: %v", p.Info, err)
			}
			return ok(got)
		})
		var want info
		if code := v1Call(t, rt, "GET", "/session/"+id, "", &want); code != 200 || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: session.updated info %+v, GET /session/%s %d %+v", what, got, id, code, want)
		}
		return got
	}
	if code := v1Call(t, rt, "PATCH", "/session/"+id, `{"title":"renamed"}`, nil); code != 200 {
		t.Fatalf("rename: %d", code)
	}
	next("rename", func(i info) bool { return i.ID == id && i.Title == "renamed" })
	if code := v1Call(t, rt, "POST", "/session/"+id+"/revert", `{"messageID":"`+second+`"}`, nil); code != 200 {
		t.Fatalf("revert: %d", code)
	}
	next("revert", func(i info) bool { return i.Revert != nil && i.Revert.MessageID == second })
	if code := v1Call(t, rt, "POST", "/session/"+id+"/unrevert", "", nil); code != 200 {
		t.Fatalf("unrevert: %d", code)
	}
	next("unrevert", func(i info) bool { return i.Revert == nil && i.Title == "renamed" })
}

// Paging the history over reverts (scenario 59, through the routes
// OpenCode's clients use): a revert finalized by the next prompt hides
// the middle of the history and a committed one its tail. At every page
// size, V2's cursor.next walks the visible messages once, in order (asc)
// or newest first (desc), in exactly ceil(n/size) requests: every page
// but the last is full and says next, the last says none, so no request
// answers an empty page with a next cursor. V1's limit/before walk pages
// back through the same messages, each page the newest limit before the
// previous one's oldest.
func TestHistoryPagingOverRevertsThroughTheAPI(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	say := func(text string) string {
		id := prompt(t, c, s.ID, text).ID
		if err := c.Wait(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		return id
	}
	revert := func(id string) {
		if _, err := c.RevertStage(ctx, s.ID, id); err != nil {
			t.Fatal(err)
		}
		if err := c.RevertCommit(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
	}
	say("one")
	say("two")
	revert(say("three"))
	say("four") // finalizes the revert: "three" is gone for good
	say("five")
	revert(say("six"))

	all, err := c.Messages(ctx, s.ID, client.MessagesOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var visible, texts []string
	for _, m := range all.Data {
		visible = append(visible, m.ID)
		if m.Type == "user" {
			texts = append(texts, m.Text)
		}
	}
	if strings.Join(texts, " ") != "one two four five" || len(visible) != 8 || all.Cursor.Next != "" {
		t.Fatalf("visible history: prompts %v, %d messages, next %q", texts, len(visible), all.Cursor.Next)
	}
	reversed := slices.Clone(visible)
	slices.Reverse(reversed)

	for size := 1; size <= len(visible)+1; size++ {
		for _, order := range []string{"asc", "desc"} {
			want := visible
			if order == "desc" {
				want = reversed
			}
			var got []string
			cursor := ""
			pages := (len(want) + size - 1) / size
			for n := 1; ; n++ {
				page, err := c.Messages(ctx, s.ID, client.MessagesOptions{Limit: size, Order: order, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range page.Data {
					got = append(got, m.ID)
				}
				full := len(page.Data) == size
				if last := n == pages; n > pages || (page.Cursor.Next == "") != last || (!last && !full) || len(page.Data) == 0 {
					t.Fatalf("%s by %d: page %d of %d holds %d, next %q", order, size, n, pages, len(page.Data), page.Cursor.Next)
				}
				if cursor = page.Cursor.Next; cursor == "" {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s by %d: paged %v, want %v", order, size, got, want)
			}
		}

		// V1: ?limit=size&before=<the oldest of the previous page>.
		var got []string
		before := ""
		for n := 1; n <= len(visible)+2; n++ {
			path := fmt.Sprintf("/session/%s/message?limit=%d", s.ID, size)
			if before != "" {
				path += "&before=" + before
			}
			var page []struct {
				Info struct {
					ID string `json:"id"`
				} `json:"info"`
			}
			if code := v1Call(t, rt, "GET", path, "", &page); code != 200 || len(page) > size {
				t.Fatalf("V1 by %d, page %d: %d, %d messages", size, n, code, len(page))
			}
			var ids []string
			for _, m := range page {
				ids = append(ids, m.Info.ID)
			}
			got = append(ids, got...)
			if len(page) < size {
				break
			}
			before = ids[0]
		}
		if !slices.Equal(got, visible) {
			t.Fatalf("V1 by %d: paged %v, want %v", size, got, visible)
		}
	}
}
