package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/telemetry/spanstore"
)

// messageTimes finds the commit time of each message's creating event: one
// range read when the seqs are close together, else one read per seq.
func (s *Server) messageTimes(ctx context.Context, id string, msgs []messages.Message) (map[int64]time.Time, error) {
	out := map[int64]time.Time{}
	if len(msgs) == 0 {
		return out, nil
	}
	lo, hi := msgs[0].Seq, msgs[0].Seq
	for _, m := range msgs {
		lo, hi = min(lo, m.Seq), max(hi, m.Seq)
	}
	if span := hi - lo + 1; span <= int64(4*len(msgs)+64) {
		envs, err := s.cfg.Journal.ReadEvents(ctx, id, lo-1, int(span))
		if err != nil {
			return nil, err
		}
		for _, e := range envs {
			out[e.Seq] = e.Time
		}
		return out, nil
	}
	for _, m := range msgs {
		if _, ok := out[m.Seq]; !ok {
			out[m.Seq] = s.eventTime(ctx, id, m.Seq)
		}
	}
	return out, nil
}

func (s *Server) renderMessages(ctx context.Context, id string, msgs []messages.Message) ([]any, error) {
	times, err := s.messageTimes(ctx, id, msgs)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, toMessage(m, times[m.Seq]))
	}
	return out, nil
}

type messagesResponse struct {
	Data   []any       `json:"data"`
	Cursor wire.Cursor `json:"cursor"`
}

// messages pages through the projected history. asc (default) reads
// forward from the cursor; desc returns the newest messages first and its
// next cursor moves to older ones.
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := queryLimit(w, q.Get("limit"), 100, 1000)
	if !ok {
		return
	}
	order := q.Get("order")
	if order == "" {
		order = "asc"
	}
	if order != "asc" && order != "desc" {
		badRequest(w, "order", "enum", "order %q: want asc or desc", order)
		return
	}
	var cur persistence.Cursor
	hasCursor := q.Get("cursor") != ""
	if hasCursor {
		c, err := decodeCursor(q.Get("cursor"))
		if err != nil {
			writeError(w, http.StatusBadRequest, wire.Error{Tag: wire.TagInvalidCursor, Message: err.Error()})
			return
		}
		cur = c
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	var msgs []messages.Message
	resp := messagesResponse{}
	if order == "asc" {
		page, err := s.cfg.Journal.Messages(ctx, sess.ID, cur, limit)
		if err != nil {
			s.fail(w, r, sess.ID, err)
			return
		}
		msgs = page.Messages
		if page.More {
			resp.Cursor.Next = encodeCursor(page.Next)
		}
	} else {
		// The journal pages forward only: collect what precedes the cursor
		// and keep the newest limit of it.
		var all []messages.Message
		var at persistence.Cursor
		for {
			page, err := s.cfg.Journal.Messages(ctx, sess.ID, at, 1000)
			if err != nil {
				s.fail(w, r, sess.ID, err)
				return
			}
			for _, m := range page.Messages {
				if hasCursor && (m.Seq > cur.Seq || (m.Seq == cur.Seq && m.Index >= cur.Index)) {
					page.More = false
					break
				}
				all = append(all, m)
			}
			if !page.More {
				break
			}
			at = page.Next
		}
		start := max(0, len(all)-limit)
		msgs = all[start:]
		for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 {
			msgs[i], msgs[j] = msgs[j], msgs[i]
		}
		if start > 0 {
			last := msgs[len(msgs)-1]
			resp.Cursor.Next = encodeCursor(persistence.Cursor{Seq: last.Seq, Index: last.Index})
		}
	}
	data, err := s.renderMessages(ctx, sess.ID, msgs)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	resp.Data = data
	writeJSON(w, http.StatusOK, resp)
}

// message finds one message by ID (a scan of the history: the journal has
// no index by message ID).
func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	want := r.PathValue("messageID")
	var at persistence.Cursor
	for {
		page, err := s.cfg.Journal.Messages(r.Context(), sess.ID, at, 1000)
		if err != nil {
			s.fail(w, r, sess.ID, err)
			return
		}
		for _, m := range page.Messages {
			if m.ID == want {
				data, err := s.renderMessages(r.Context(), sess.ID, []messages.Message{m})
				if err != nil {
					s.fail(w, r, sess.ID, err)
					return
				}
				writeJSON(w, http.StatusOK, wire.Data[any]{Data: data[0]})
				return
			}
		}
		if !page.More {
			break
		}
		at = page.Next
	}
	writeError(w, http.StatusNotFound, wire.Error{Tag: wire.TagMessageNotFound, SessionID: sess.ID, MessageID: want,
		Message: fmt.Sprintf("message %s not found in session %s", want, sess.ID)})
}

type contextResponse struct {
	Data  []any       `json:"data"`
	Epoch *wire.Epoch `json:"epoch"`
}

// context answers the model-visible history and the current Context Epoch.
func (s *Server) context(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	msgs, err := s.cfg.Journal.ModelHistory(ctx, sess.ID)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	ep, found, err := s.cfg.Journal.Epoch(ctx, sess.ID)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	data, err := s.renderMessages(ctx, sess.ID, msgs)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	resp := contextResponse{Data: data}
	if found {
		e := &wire.Epoch{Revision: ep.Revision, Baseline: ep.Baseline, Location: ep.Location, BaselineSeq: ep.BaselineSeq, UpdatedSeq: ep.UpdatedSeq}
		if json.Valid(ep.Snapshot) {
			e.Snapshot = json.RawMessage(ep.Snapshot)
		} else if len(ep.Snapshot) > 0 {
			e.Snapshot, _ = json.Marshal(ep.Snapshot) // opaque bytes: base64
		}
		resp.Epoch = e
	}
	writeJSON(w, http.StatusOK, resp)
}

// history pages through the durable events after a seq.
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := queryLimit(w, q.Get("limit"), 100, 1000)
	if !ok {
		return
	}
	after, ok := parseSeq(w, "after", q.Get("after"))
	if !ok {
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	envs, err := s.cfg.Journal.ReadEvents(r.Context(), sess.ID, after, limit+1)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	resp := wire.HistoryResponse{Data: []wire.Event{}, HasMore: len(envs) > limit}
	now := time.Now()
	admitted := admissions{}
	for i, e := range envs {
		if i == limit {
			break
		}
		if e, err = s.withPrompt(r.Context(), admitted, e); err != nil {
			s.fail(w, r, sess.ID, err)
			return
		}
		resp.Data = append(resp.Data, toEvent(e, now))
	}
	writeJSON(w, http.StatusOK, resp)
}

func parseSeq(w http.ResponseWriter, field, v string) (int64, bool) {
	if v == "" {
		return 0, true
	}
	// A cursor names the last seq seen; the next one, n+1, must be a seq too.
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n == math.MaxInt64 {
		badRequest(w, field, "range", "%s %q: want a seq (a whole number from 0 to %d)", field, v, int64(math.MaxInt64-1))
		return 0, false
	}
	return n, true
}

func (s *Server) permissions(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	perms, err := s.cfg.Journal.PendingPermissions(r.Context(), sess.ID)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	out := make([]wire.PermissionRequest, 0, len(perms))
	for _, p := range perms {
		out = append(out, toPermission(p))
	}
	writeJSON(w, http.StatusOK, wire.Data[[]wire.PermissionRequest]{Data: out})
}

func permissionNotFound(w http.ResponseWriter, sessionID, requestID string) {
	writeError(w, http.StatusNotFound, wire.Error{Tag: wire.TagPermissionNotFound, SessionID: sessionID, RequestID: requestID,
		Message: fmt.Sprintf("permission request %s is not pending in session %s", requestID, sessionID)})
}

func (s *Server) pendingPermission(w http.ResponseWriter, r *http.Request, sessionID string) (persistence.Permission, bool) {
	want := r.PathValue("requestID")
	perms, err := s.cfg.Journal.PendingPermissions(r.Context(), sessionID)
	if err != nil {
		s.fail(w, r, sessionID, err)
		return persistence.Permission{}, false
	}
	for _, p := range perms {
		if p.RequestID == want {
			return p, true
		}
	}
	permissionNotFound(w, sessionID, want)
	return persistence.Permission{}, false
}

func (s *Server) permission(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	if p, ok := s.pendingPermission(w, r, sess.ID); ok {
		writeJSON(w, http.StatusOK, wire.Data[wire.PermissionRequest]{Data: toPermission(p)})
	}
}

// trace serves the session's stored spans: JSON, or with ?format=text the
// rendered tree.
func (s *Server) trace(w http.ResponseWriter, r *http.Request) {
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "text" {
		badRequest(w, "format", "enum", "format %q: want json or text", format)
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	if s.cfg.Telemetry == nil || s.cfg.Telemetry.Store == nil {
		writeError(w, http.StatusServiceUnavailable, wire.Error{Tag: wire.TagServiceUnavailable, Service: "span store",
			Message: "this server keeps no span store (telemetry without a database)"})
		return
	}
	// Finished spans may still sit in the batcher; bounded, because the
	// flush also waits for other exporters (an unreachable OTLP endpoint).
	fctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	_ = s.cfg.Telemetry.ForceFlush(fctx)
	cancel()
	spans, err := s.cfg.Telemetry.Store.Trace(r.Context(), sess.ID)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	if format == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(spanstore.RenderTree(spans)))
		return
	}
	if spans == nil {
		spans = []spanstore.Span{}
	}
	writeJSON(w, http.StatusOK, wire.Data[[]spanstore.Span]{Data: spans})
}

func (s *Server) replyPermission(w http.ResponseWriter, r *http.Request) {
	var req wire.PermissionReplyRequest
	if !decode(w, r, &req, false) {
		return
	}
	reply := messages.PermissionReply(req.Reply)
	if reply != messages.ReplyOnce && reply != messages.ReplyAlways && reply != messages.ReplyReject {
		badRequest(w, "reply", "enum", "reply %q: want once, always or reject", req.Reply)
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	p, ok := s.pendingPermission(w, r, sess.ID)
	if !ok {
		return
	}
	err := s.cfg.Sessions.ReplyPermission(r.Context(), sess.ID, actors.ReplyPermission{RequestID: p.RequestID, Reply: reply, Feedback: req.Message})
	if errors.Is(err, actors.ErrNotFound) {
		permissionNotFound(w, sess.ID, p.RequestID) // answered meanwhile
		return
	} else if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
