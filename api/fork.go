package api

import (
	"net/http"

	"github.com/sessionrt/sessionrt/actors"
)

// v1ForkRequest is the body of POST /session/{id}/fork (optional).
type v1ForkRequest struct {
	MessageID string `json:"messageID,omitempty"`
}

// v1Fork creates a new session holding the session's history before
// messageID (all of it without one): actors.ForkOf says what is copied.
// The answer is the new session, which is no child of the source (no
// parentID), as OpenCode's.
func (s *Server) v1Fork(w http.ResponseWriter, r *http.Request) {
	var req v1ForkRequest
	if !decode(w, r, &req, true) {
		return
	}
	src, ok := s.session(w, r)
	if !ok {
		return
	}
	c, err := actors.ForkOf(r.Context(), s.cfg.Journal, src.ID, req.MessageID)
	if err != nil {
		s.revertFail(w, r, src.ID, req.MessageID, err) // an unknown message is a MessageNotFoundError
		return
	}
	info, err := s.cfg.Sessions.Create(r.Context(), "", c)
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	sess, err := s.cfg.Journal.Session(r.Context(), info.Session.ID)
	if err != nil {
		s.fail(w, r, info.Session.ID, err)
		return
	}
	// The open streams follow the fork from its start: its creation and
	// copied messages, as OpenCode publishes them.
	from := sess
	from.LastSeq = 0
	s.v1Watchers.notify(from)
	writeJSON(w, http.StatusOK, s.v1Info(r.Context(), sess))
}
