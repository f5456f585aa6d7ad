package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api/wire"
)

// A drain waiting for its journal is shown with OpenCode's session.status
// shape: retry with attempt, message and the next attempt's time in ms,
// then busy with nothing else.
func TestSessionStatusEventsHaveOpenCodesShape(t *testing.T) {
	next := time.UnixMilli(1_800_000_000_123)
	ev := toStatus("ses_1", actors.SessionStatus{Type: "retry", Attempt: 0, Message: "journal refused a write: disk full", Next: next})
	if ev.Type != wire.EventSessionStatus || ev.Durable != nil {
		t.Fatalf("event %+v", ev)
	}
	var got map[string]any
	if err := json.Unmarshal(ev.Data, &got); err != nil {
		t.Fatal(err)
	}
	st := got["status"].(map[string]any)
	if got["sessionID"] != "ses_1" || st["type"] != "retry" || st["attempt"] != 0.0 || st["next"] != 1_800_000_000_123.0 || st["message"] != "journal refused a write: disk full" {
		t.Fatalf("retry data %s", ev.Data)
	}
	ev = toStatus("ses_1", actors.SessionStatus{Type: "busy"})
	if string(ev.Data) != `{"sessionID":"ses_1","status":{"type":"busy"}}` {
		t.Fatalf("busy data %s", ev.Data)
	}
	// The V1 stream (OpenCode's TUI) gets the same status.
	v1 := newV1Translator(func(string) (v1Sess, bool) { return v1Sess{}, false }).translate(
		actors.Live{SessionID: "ses_1", Status: &actors.SessionStatus{Type: "retry", Attempt: 2, Message: "m", Next: next}}, time.Now())
	b, err := json.Marshal(v1)
	if err != nil || len(v1) != 1 || v1[0].Type != "session.status" {
		t.Fatalf("v1 events %s %v", b, err)
	}
	if want := `"properties":{"sessionID":"ses_1","status":{"type":"retry","attempt":2,"message":"m","next":1800000000123}}`; !json.Valid(b) || !strings.Contains(string(b), want) {
		t.Fatalf("v1 event %s, want %s", b, want)
	}
}
