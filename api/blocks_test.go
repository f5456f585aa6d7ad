package api_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// v2Schemas reads the data schemas of OpenCode's V2 session events from
// ../shared/api/opencode-v2-session.openapi.json (the schema the SDK's types
// are generated from), by event type; it skips when the file is absent.
func v2Schemas(t *testing.T) map[string]struct {
	Required   []string
	Properties map[string]json.RawMessage
} {
	t.Helper()
	// shared/ sits beside the repository (CI's clone, /work/main) or beside
	// the folder of worktrees.
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..")
	var b []byte
	var err error
	var tried []string
	for range 3 {
		dir = filepath.Dir(dir)
		path := filepath.Join(dir, "shared", "api", "opencode-v2-session.openapi.json")
		tried = append(tried, path)
		if b, err = os.ReadFile(path); err == nil {
			break
		}
	}
	if err != nil {
		t.Skipf("SKIP (loud): no OpenCode V2 OpenAPI document at %v", tried)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties struct {
					Type struct{ Enum []string }
					Data struct {
						Required   []string
						Properties map[string]json.RawMessage
					}
				}
			}
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]struct {
		Required   []string
		Properties map[string]json.RawMessage
	}{}
	for _, s := range doc.Components.Schemas {
		if len(s.Properties.Type.Enum) == 1 && strings.HasPrefix(s.Properties.Type.Enum[0], "session.next.") {
			out[s.Properties.Type.Enum[0]] = s.Properties.Data
		}
	}
	return out
}

// The V2 wire opens every streamed block: text.started/reasoning.started
// with the ID their deltas and end repeat, tool.input.started/ended before
// tool.called; each event's data has exactly the fields of OpenCode's
// schema (required present, nothing else).
func TestV2WireOpensBlocksWithTheSDKFields(t *testing.T) {
	schemas := v2Schemas(t)
	rt := apitest.Start(t, apitest.Options{Turns: func(req *provider.Request, n int) (scripted.Turn, error) {
		if req.Messages[len(req.Messages)-1].Role == provider.RoleTool {
			return scripted.Turn{Text: "done", Chunk: 2}, nil
		}
		return scripted.Turn{Reasoning: "think first", Text: "calling", Chunk: 3,
			ToolCalls: []scripted.ToolCall{{ID: "call_a", Name: "bash", Args: json.RawMessage(`{"command":"echo hi","description":"say"}`)}}}, nil
	}})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	global, err := c.GlobalEvents(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer global.Close()
	if ev, err := global.Next(); err != nil || ev.Event.Type != wire.EventConnected {
		t.Fatalf("first global event %+v %v", ev, err)
	}
	prompt(t, c, s.ID, "go")
	var live []wire.Event
	for {
		ev, err := global.Next()
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, ev.Event)
		if ev.Event.Type == "session.next.idle" {
			break
		}
	}
	durable, err := c.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer durable.Close()
	var replay []wire.Event
	for {
		ev, err := durable.Next()
		if err != nil {
			t.Fatal(err)
		}
		replay = append(replay, ev.Event)
		if ev.Event.Type == "session.next.idle" {
			break
		}
	}

	for name, evs := range map[string][]wire.Event{"global": live, "session": replay} {
		opened := map[string]int{} // block ID → index of its opening
		counts := map[string]int{}
		for i, ev := range evs {
			var data map[string]any
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				t.Fatal(err)
			}
			if sc, ok := schemas[ev.Type]; ok {
				for _, k := range sc.Required {
					if _, ok := data[k]; !ok {
						t.Errorf("%s: %s lacks required %q: %s", name, ev.Type, k, ev.Data)
					}
				}
				for k := range data {
					if _, ok := sc.Properties[k]; !ok && blockEvent(ev.Type) {
						t.Errorf("%s: %s has %q, which the schema does not: %s", name, ev.Type, k, ev.Data)
					}
				}
			}
			str := func(k string) string { v, _ := data[k].(string); return v }
			counts[ev.Type]++
			switch ev.Type {
			case "session.next.text.started", "session.next.reasoning.started":
				id := str("textID") + str("reasoningID")
				if _, dup := opened[id]; dup || ev.Durable != nil {
					t.Errorf("%s: %s %q opened twice or durable", name, ev.Type, id)
				}
				opened[id] = i
			case "session.next.text.delta", "session.next.text.ended", "session.next.reasoning.delta", "session.next.reasoning.ended":
				if _, ok := opened[str("textID")+str("reasoningID")]; !ok {
					t.Errorf("%s: %s at %d for a block never opened: %s", name, ev.Type, i, ev.Data)
				}
			case "session.next.tool.input.started":
				if str("callID") != "call_a" || str("name") != "bash" {
					t.Errorf("%s: tool.input.started %s", name, ev.Data)
				}
				opened["input:"+str("callID")] = i
			case "session.next.tool.input.ended":
				if _, ok := opened["input:"+str("callID")]; !ok || !strings.Contains(str("text"), "echo hi") {
					t.Errorf("%s: tool.input.ended %s without its start or input", name, ev.Data)
				}
				opened["ended:"+str("callID")] = i
			case "session.next.tool.called":
				if _, ok := opened["ended:"+str("callID")]; !ok {
					t.Errorf("%s: tool.called before tool.input.ended: %s", name, ev.Data)
				}
			}
		}
		for _, typ := range []string{"session.next.text.started", "session.next.text.ended", "session.next.reasoning.started", "session.next.reasoning.ended",
			"session.next.tool.input.started", "session.next.tool.input.ended", "session.next.tool.called"} {
			want := 1
			if typ == "session.next.text.started" || typ == "session.next.text.ended" {
				want = 2 // one text block per turn, two turns
			}
			if counts[typ] != want {
				t.Errorf("%s stream: %d %s, want %d (counts %v)", name, counts[typ], typ, want, sortedKeys(counts))
			}
		}
		if name == "global" && counts["session.next.text.delta"] < 2 {
			t.Errorf("global stream: %d text deltas", counts["session.next.text.delta"])
		}
	}
}

// blockEvent names the events whose data this change shapes; the schema
// check of the others' extra fields is their owners' (sessionrt adds
// fields to some, e.g. kind on errors).
func blockEvent(typ string) bool {
	for _, p := range []string{"session.next.text.", "session.next.reasoning.", "session.next.tool.input."} {
		if strings.HasPrefix(typ, p) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%d", strings.TrimPrefix(k, "session.next."), v))
	}
	sort.Strings(out)
	return out
}

// A stream that starts after a prompt's admission (a reconnect with
// Last-Event-ID, a page of history) still writes session.next.prompted
// with the prompt and its delivery: they come from the journal's inbox
// row, not only from the admission the stream carried.
func TestV2PromptedCarriesThePromptWhenTheStreamStartsAfterItsAdmission(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{Turns: func(req *provider.Request, n int) (scripted.Turn, error) {
		return scripted.Turn{Text: "ok"}, nil
	}})
	c := newClient(t, rt)
	ctx := ctxT(t)
	s := create(t, c, rt)
	r := prompt(t, c, s.ID, "after the cursor")
	waitEvent(t, c, s.ID, "session.next.idle")

	check := func(name string, ev wire.Event) {
		t.Helper()
		var d struct {
			MessageID string
			Prompt    *wire.Prompt
			Delivery  string
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.MessageID != r.ID || d.Prompt == nil || d.Prompt.Text != "after the cursor" || d.Delivery != r.Delivery {
			t.Errorf("%s: prompted %s, want message %s with its prompt and delivery %q", name, ev.Data, r.ID, r.Delivery)
		}
	}
	st, err := c.EventsFrom(ctx, s.ID, r.AdmittedSeq)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Event.Type == "session.next.prompted" {
			check("stream from Last-Event-ID", ev.Event)
			break
		}
	}
	page, err := c.History(ctx, s.ID, r.AdmittedSeq, 100)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range page.Data {
		if ev.Type == "session.next.prompted" {
			check("history page", ev)
			found = true
		}
	}
	if !found {
		t.Errorf("history after seq %d has no prompted: %d events", r.AdmittedSeq, len(page.Data))
	}
}
