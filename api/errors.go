package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/persistence"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(wire.Error{Tag: wire.TagUnknown, Message: "encode response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, e wire.Error) { writeJSON(w, status, e) }

func badRequest(w http.ResponseWriter, field, kind, format string, args ...any) {
	writeError(w, http.StatusBadRequest, wire.Error{Tag: wire.TagInvalidRequest, Field: field, Kind: kind, Message: fmt.Sprintf(format, args...)})
}

func sessionNotFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, wire.Error{Tag: wire.TagSessionNotFound, SessionID: id, Message: fmt.Sprintf("session %s not found", id)})
}

// fail answers a runtime error with the status its code maps to:
// invalid 400, not found 404, conflict 409, backlog 429, fenced 503.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, sessionID string, err error) {
	var ce *actors.CommandError
	code := ""
	if errors.As(err, &ce) {
		code = ce.Code
	}
	switch {
	case code == actors.CodeInvalid:
		writeError(w, http.StatusBadRequest, wire.Error{Tag: wire.TagInvalidRequest, Kind: "invalid", Message: err.Error()})
	case code == actors.CodeNotFound || errors.Is(err, persistence.ErrNotFound):
		sessionNotFound(w, sessionID)
	case code == actors.CodeConflict || errors.Is(err, persistence.ErrPromptConflict):
		writeError(w, http.StatusConflict, wire.Error{Tag: wire.TagConflict, Resource: sessionID, Message: err.Error()})
	case code == actors.CodeBacklog || errors.Is(err, persistence.ErrBacklogFull):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, wire.Error{Tag: wire.TagBacklog, Message: err.Error()})
	case code == actors.CodeBusy:
		writeError(w, http.StatusConflict, wire.Error{Tag: wire.TagConflict, Resource: sessionID, Message: err.Error()})
	case code == actors.CodeFenced:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, wire.Error{Tag: wire.TagServiceUnavailable, Service: "session", Message: err.Error()})
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads an answer.
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusServiceUnavailable, wire.Error{Tag: wire.TagServiceUnavailable, Service: "session", Message: err.Error()})
	default:
		s.cfg.Logger.Error("api request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, wire.Error{Tag: wire.TagUnknown, Message: err.Error()})
	}
}

// decode reads a JSON body strictly into dst: unknown fields, malformed
// JSON, wrong types, trailing data, duplicate keys, keys in the wrong case
// and bytes that are not UTF-8 are refused with a 400 naming the field or
// the byte offset; a body over the limit gets a 413. An empty body is
// accepted only when optional is set. It reports whether dst was filled
// (or legitimately left empty).
func decode(w http.ResponseWriter, r *http.Request, dst any, optional bool) bool {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeError(w, http.StatusRequestEntityTooLarge, wire.Error{Tag: wire.TagTooLarge, Message: fmt.Sprintf("request body larger than %d bytes", mb.Limit)})
			return false
		}
		badRequest(w, "", "body", "read request body: %v", err)
		return false
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		if optional {
			return true
		}
		badRequest(w, "", "body", "request body is empty: want a JSON object")
		return false
	}
	if err := checkUTF8(body); err != nil {
		badRequest(w, "", "json", "%s", err)
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		field, msg := describeJSONError(err)
		badRequest(w, field, "json", "%s", msg)
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		badRequest(w, "", "json", "unexpected data after the JSON object (byte offset %d)", dec.InputOffset())
		return false
	}
	if err := checkStrict(body, reflect.TypeOf(dst)); err != nil {
		var se *strictError
		if errors.As(err, &se) {
			badRequest(w, se.field, "json", "%s", se.msg)
		} else {
			badRequest(w, "", "json", "invalid JSON: %v", err)
		}
		return false
	}
	return true
}

func describeJSONError(err error) (field, msg string) {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return "", fmt.Sprintf("malformed JSON at byte offset %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		f := typ.Field
		if f == "" {
			return "", fmt.Sprintf("request body: want a JSON object, got %s", typ.Value)
		}
		return f, fmt.Sprintf("field %q: want %s, got %s", f, typ.Type, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "", "malformed JSON: the body ends in the middle of a value"
	}
	s := err.Error()
	if i := strings.Index(s, "unknown field "); i >= 0 {
		f := strings.Trim(s[i+len("unknown field "):], `"`)
		return f, fmt.Sprintf("unknown field %q", f)
	}
	return "", "invalid JSON: " + s
}
