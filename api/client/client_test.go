package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestStreamParsesSSEFraming(t *testing.T) {
	body := ": ping\n\n" +
		"id: 7\r\nevent: session.next.idle\r\ndata: {\"id\":\"evt_1\",\"type\":\"session.next.idle\",\r\ndata: \"data\":{}}\r\n\r\n" +
		"retry: 100\n\n" +
		"event: server.connected\ndata:{\"id\":\"evt_2\",\"type\":\"server.connected\",\"data\":{}}\n\n"
	st := &Stream{body: io.NopCloser(strings.NewReader(body))}
	st.r = newReader(st.body)
	ev, err := st.Next()
	if err != nil || ev.ID != "7" || ev.Name != "session.next.idle" || ev.Event.ID != "evt_1" || string(ev.Event.Data) != "{}" {
		t.Fatalf("first event: %+v %v", ev, err)
	}
	ev, err = st.Next()
	if err != nil || ev.ID != "" || ev.Event.Type != "server.connected" {
		t.Fatalf("second event (no space after data:): %+v %v", ev, err)
	}
	if _, err := st.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v, want io.EOF", err)
	}
	cut := &Stream{body: io.NopCloser(strings.NewReader("id: 1\ndata: {"))}
	cut.r = newReader(cut.body)
	if _, err := cut.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated event: %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestErrorsCarryStatusTagAndPlainBodies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "plain refusal", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"_tag":"ConflictError","message":"reused","resource":"ses_1"}`))
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/", Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Session(context.Background(), "ses_1")
	var e *Error
	if !errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) || !errors.As(err, &e) || e.Body.Resource != "ses_1" || !strings.Contains(err.Error(), "reused") {
		t.Fatalf("conflict: %v", err)
	}
	anon, _ := New(Config{BaseURL: srv.URL})
	err = anon.Health(context.Background())
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "plain refusal") {
		t.Fatalf("plain-text 401: %v", err)
	}
	if _, err := New(Config{BaseURL: "127.0.0.1:4096"}); err == nil {
		t.Fatal("a URL without a scheme was accepted")
	}
}
