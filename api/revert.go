package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/persistence"
)

// The revert routes: V2 stage/commit/clear and the session's diff, V1
// revert/unrevert/diff for OpenCode's TUI. The Session actor does the work
// (session/revert.go decides, actors/shell/revert.go runs it); these only translate shapes.

func toFileDiffs(fs []filesnap.FileDiff) []wire.FileDiff {
	out := make([]wire.FileDiff, len(fs))
	for i, f := range fs {
		out[i] = wire.FileDiff{Path: f.Path, Status: string(f.Status), Additions: f.Additions, Deletions: f.Deletions, Patch: f.Patch}
	}
	return out
}

func toRevertState(info *actors.RevertInfo) wire.RevertState {
	var st wire.RevertState
	if o := info.Open; o != nil {
		st.MessageID, st.Snapshot = o.MessageID, o.Snapshot
	}
	st.Files = toFileDiffs(info.Files)
	var patch strings.Builder
	for _, f := range info.Files {
		patch.WriteString(f.Patch)
	}
	st.Diff = patch.String()
	return st
}

// revertFail answers a revert error; an unknown message is a
// MessageNotFoundError, not a missing session.
func (s *Server) revertFail(w http.ResponseWriter, r *http.Request, sessionID, messageID string, err error) {
	var ce *actors.CommandError
	if errors.As(err, &ce) && ce.Code == actors.CodeNotFound && messageID != "" {
		writeError(w, http.StatusNotFound, wire.Error{Tag: wire.TagMessageNotFound, SessionID: sessionID, MessageID: messageID, Message: err.Error()})
		return
	}
	s.fail(w, r, sessionID, err)
}

func (s *Server) revertStage(w http.ResponseWriter, r *http.Request) {
	var req wire.RevertStageRequest
	if !decode(w, r, &req, false) {
		return
	}
	if req.MessageID == "" {
		badRequest(w, "messageID", "required", "messageID is required")
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	info, err := s.cfg.Sessions.Revert(r.Context(), sess.ID, actors.Revert{Op: actors.RevertStage, MessageID: req.MessageID})
	if err != nil {
		s.revertFail(w, r, sess.ID, req.MessageID, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Data[wire.RevertState]{Data: toRevertState(info)})
}

func (s *Server) revertOp(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, ok := s.session(w, r)
		if !ok {
			return
		}
		if _, err := s.cfg.Sessions.Revert(r.Context(), sess.ID, actors.Revert{Op: op}); err != nil {
			s.fail(w, r, sess.ID, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// diff answers GET /api/session/{id}/diff[?messageID=]: the files the
// session changed (those of the turns answering messageID when given).
func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	mid := r.URL.Query().Get("messageID")
	info, err := s.cfg.Sessions.Revert(r.Context(), sess.ID, actors.Revert{Op: actors.RevertDiff, MessageID: mid})
	if err != nil {
		s.revertFail(w, r, sess.ID, mid, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Data[[]wire.FileDiff]{Data: toFileDiffs(info.Files)})
}

// v1SnapshotFileDiff is OpenCode V1's SnapshotFileDiff.
type v1SnapshotFileDiff struct {
	File      string `json:"file"`
	Patch     string `json:"patch"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Status    string `json:"status"`
}

// v1Revert is OpenCode V1's Session.revert.
type v1Revert struct {
	MessageID string `json:"messageID"`
	PartID    string `json:"partID,omitempty"`
	Snapshot  string `json:"snapshot,omitempty"`
	Diff      string `json:"diff,omitempty"`
}

func (s *Server) v1Diff(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	mid := r.URL.Query().Get("messageID")
	info, err := s.cfg.Sessions.Revert(r.Context(), sess.ID, actors.Revert{Op: actors.RevertDiff, MessageID: mid})
	if err != nil {
		s.revertFail(w, r, sess.ID, mid, err)
		return
	}
	out := make([]v1SnapshotFileDiff, len(info.Files))
	for i, f := range info.Files {
		out[i] = v1SnapshotFileDiff{File: f.Path, Patch: f.Patch, Additions: f.Additions, Deletions: f.Deletions, Status: string(f.Status)}
	}
	writeJSON(w, http.StatusOK, out)
}

type v1RevertRequest struct {
	MessageID string `json:"messageID"`
	PartID    string `json:"partID,omitempty"`
}

// v1RevertSession is OpenCode V1's revert: stage and commit at once (a
// revert already committed to another message is undone first).
func (s *Server) v1RevertSession(w http.ResponseWriter, r *http.Request) {
	var req v1RevertRequest
	if !decode(w, r, &req, false) {
		return
	}
	if req.MessageID == "" {
		badRequest(w, "messageID", "required", "messageID is required")
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	s.v1Watchers.notify(sess) // the streams follow the session to its session.updated
	for _, op := range []string{actors.RevertStage, actors.RevertCommit} {
		if _, err := s.cfg.Sessions.Revert(r.Context(), sess.ID, actors.Revert{Op: op, MessageID: req.MessageID}); err != nil {
			s.revertFail(w, r, sess.ID, req.MessageID, err)
			return
		}
	}
	s.v1RevertAnswer(w, r, sess.ID)
}

func (s *Server) v1Unrevert(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	s.v1Watchers.notify(sess)
	if _, err := s.cfg.Sessions.Revert(r.Context(), sess.ID, actors.Revert{Op: actors.RevertClear}); err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	s.v1RevertAnswer(w, r, sess.ID)
}

// v1RevertAnswer answers with the session as it is now, its revert included.
func (s *Server) v1RevertAnswer(w http.ResponseWriter, r *http.Request, id string) {
	sess, err := s.cfg.Journal.Session(r.Context(), id)
	if err != nil {
		s.fail(w, r, id, err)
		return
	}
	writeJSON(w, http.StatusOK, s.v1SessionInfo(r.Context(), sess))
}

// v1SessionInfo is the session as GET /session/{id} answers it, its revert
// included; the V1 streams send the same in session.updated.
func (s *Server) v1SessionInfo(ctx context.Context, sess persistence.Session) v1Session {
	info := s.v1Info(ctx, sess)
	info.Revert = s.v1RevertOf(ctx, sess.ID)
	return info
}

// v1RevertOf is the session's committed revert as V1 shows it (nil none).
func (s *Server) v1RevertOf(ctx context.Context, id string) *v1Revert {
	rv, err := s.cfg.Journal.Reverts(ctx, id)
	if err != nil || rv.Open == nil || !rv.Open.Committed {
		return nil
	}
	return &v1Revert{MessageID: rv.Open.MessageID, Snapshot: rv.Open.Snapshot}
}
