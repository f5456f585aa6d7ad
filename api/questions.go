package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// The question tool's requests: listed per session, per Location (V2) and
// per directory (V1), answered or rejected through the session's actor,
// which settles the call and lets the model continue.

func toQuestionRequest(q persistence.QuestionRequest) wire.QuestionRequest {
	return wire.QuestionRequest{ID: q.RequestID, SessionID: q.SessionID, Questions: toQuestionInfos(q.Questions),
		Tool: &wire.QuestionTool{MessageID: q.AssistantMessageID, CallID: q.CallID}}
}

func toQuestionInfos(qs []messages.Question) []wire.QuestionInfo {
	out := make([]wire.QuestionInfo, 0, len(qs))
	for _, q := range qs {
		wq := wire.QuestionInfo{Question: q.Question, Header: q.Header, Options: []wire.QuestionOption{}, Multiple: q.Multiple, Custom: q.Custom}
		for _, o := range q.Options {
			wq.Options = append(wq.Options, wire.QuestionOption{Label: o.Label, Description: o.Description})
		}
		out = append(out, wq)
	}
	return out
}

// pendingQuestions lists the pending questions of the sessions in dir
// (every session when dir is "").
func (s *Server) pendingQuestions(ctx context.Context, dir string) ([]persistence.QuestionRequest, error) {
	all, err := s.cfg.Journal.AllPendingQuestions(ctx)
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return all, nil
	}
	out := all[:0]
	loc := map[string]string{}
	for _, q := range all {
		d, seen := loc[q.SessionID]
		if !seen {
			if sess, err := s.cfg.Journal.Session(ctx, q.SessionID); err == nil {
				d = sess.Location
			}
			loc[q.SessionID] = d
		}
		if d == dir {
			out = append(out, q)
		}
	}
	return out, nil
}

func (s *Server) questions(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	qs, err := s.cfg.Journal.Questions(r.Context(), sess.ID)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	out := []wire.QuestionRequest{}
	for _, q := range qs {
		if q.State == "pending" {
			out = append(out, toQuestionRequest(q))
		}
	}
	writeJSON(w, http.StatusOK, wire.Data[[]wire.QuestionRequest]{Data: out})
}

func (s *Server) locationQuestions(w http.ResponseWriter, r *http.Request) {
	loc, ok := s.locationInfo(w, r)
	if !ok {
		return
	}
	qs, err := s.pendingQuestions(r.Context(), loc.Directory)
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	out := make([]wire.QuestionRequest, 0, len(qs))
	for _, q := range qs {
		out = append(out, toQuestionRequest(q))
	}
	writeJSON(w, http.StatusOK, wire.Located[[]wire.QuestionRequest]{Location: loc, Data: out})
}

func questionNotFound(w http.ResponseWriter, sessionID, requestID string) {
	writeError(w, http.StatusNotFound, wire.Error{Tag: wire.TagQuestionNotFound, SessionID: sessionID, RequestID: requestID,
		Message: fmt.Sprintf("question request %s is not pending in session %s", requestID, sessionID)})
}

// answerQuestion replies to (answers nil and reject) or rejects a question.
func (s *Server) answerQuestion(w http.ResponseWriter, r *http.Request, sessionID, requestID string, answers [][]string, reject bool) bool {
	rp := actors.ReplyPermission{RequestID: requestID, Reply: messages.ReplyOnce, Answers: answers}
	if reject {
		rp.Reply = messages.ReplyReject
	}
	err := s.cfg.Sessions.ReplyPermission(r.Context(), sessionID, rp)
	if errors.Is(err, actors.ErrNotFound) {
		questionNotFound(w, sessionID, requestID)
		return false
	} else if err != nil {
		s.fail(w, r, sessionID, err)
		return false
	}
	return true
}

func (s *Server) replyQuestion(w http.ResponseWriter, r *http.Request) {
	var req wire.QuestionReplyRequest
	if !decode(w, r, &req, false) {
		return
	}
	if sess, ok := s.session(w, r); ok && s.answerQuestion(w, r, sess.ID, r.PathValue("requestID"), req.Answers, false) {
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) rejectQuestion(w http.ResponseWriter, r *http.Request) {
	if !noBody(w, r) {
		return
	}
	if sess, ok := s.session(w, r); ok && s.answerQuestion(w, r, sess.ID, r.PathValue("requestID"), nil, true) {
		w.WriteHeader(http.StatusNoContent)
	}
}

// v1QuestionReplied is question.replied's (and question.rejected's) properties.
type v1QuestionReplied struct {
	SessionID string     `json:"sessionID"`
	RequestID string     `json:"requestID"`
	Answers   [][]string `json:"answers,omitempty"`
}

// v1Question is OpenCode's V1 QuestionRequest.
type v1Question struct {
	ID        string              `json:"id"`
	SessionID string              `json:"sessionID"`
	Questions []wire.QuestionInfo `json:"questions"`
	Tool      *wire.QuestionTool  `json:"tool,omitempty"`
}

func (s *Server) v1Questions(w http.ResponseWriter, r *http.Request) {
	qs, err := s.pendingQuestions(r.Context(), v1Directory(r))
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	out := make([]v1Question, 0, len(qs))
	for _, q := range qs {
		wq := toQuestionRequest(q)
		out = append(out, v1Question(wq))
	}
	writeJSON(w, http.StatusOK, out)
}

// v1PendingQuestion finds a pending question by its ID alone (V1 routes
// name no session).
func (s *Server) v1PendingQuestion(w http.ResponseWriter, r *http.Request) (persistence.QuestionRequest, bool) {
	id := r.PathValue("requestID")
	qs, err := s.pendingQuestions(r.Context(), "")
	if err != nil {
		s.fail(w, r, "", err)
		return persistence.QuestionRequest{}, false
	}
	for _, q := range qs {
		if q.RequestID == id {
			return q, true
		}
	}
	writeError(w, http.StatusNotFound, wire.Error{Tag: wire.TagQuestionNotFound, RequestID: id,
		Message: fmt.Sprintf("question request %s is not pending in any session", id)})
	return persistence.QuestionRequest{}, false
}

func (s *Server) v1ReplyQuestion(w http.ResponseWriter, r *http.Request) {
	var req wire.QuestionReplyRequest
	if !decode(w, r, &req, false) {
		return
	}
	if q, ok := s.v1PendingQuestion(w, r); ok && s.answerQuestion(w, r, q.SessionID, q.RequestID, req.Answers, false) {
		writeJSON(w, http.StatusOK, true)
	}
}

func (s *Server) v1RejectQuestion(w http.ResponseWriter, r *http.Request) {
	if q, ok := s.v1PendingQuestion(w, r); ok && s.answerQuestion(w, r, q.SessionID, q.RequestID, nil, true) {
		writeJSON(w, http.StatusOK, true)
	}
}
