package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// IDs a client may choose: OpenCode's prefixes, a bounded safe alphabet.
var (
	sessionIDPattern = regexp.MustCompile(`^ses[A-Za-z0-9_-]{1,125}$`)
	messageIDPattern = regexp.MustCompile(`^msg_[A-Za-z0-9_-]{1,124}$`)
)

// session reads the projection row, answering 404 (or the read error)
// itself; commands check first so that an unknown ID never activates an actor.
func (s *Server) session(w http.ResponseWriter, r *http.Request) (persistence.Session, bool) {
	id := r.PathValue("sessionID")
	sess, err := s.cfg.Journal.Session(r.Context(), id)
	if err != nil {
		s.fail(w, r, id, err)
		return sess, false
	}
	return sess, true
}

// eventTime is the commit time of one event (zero when unreadable).
func (s *Server) eventTime(ctx context.Context, id string, seq int64) time.Time {
	if seq <= 0 {
		return time.Time{}
	}
	envs, err := s.cfg.Journal.ReadEvents(ctx, id, seq-1, 1)
	if err != nil || len(envs) == 0 {
		return time.Time{}
	}
	return envs[0].Time
}

// admittedAt is a receipt's commit time: carried by a fresh admission, read
// back for a duplicate (whose event was committed by the first delivery).
func admittedAt(rec *actors.Receipt, read func() time.Time) time.Time {
	if !rec.Admitted.IsZero() {
		return rec.Admitted
	}
	return read()
}

func (s *Server) info(ctx context.Context, sess persistence.Session) wire.Session {
	created := s.eventTime(ctx, sess.ID, max(sess.CreatedSeq, 1))
	updated := created
	if sess.LastSeq > 1 {
		updated = s.eventTime(ctx, sess.ID, sess.LastSeq)
	}
	out := toSession(sess, created, updated)
	out.Title = sess.Title
	if out.Title == "" {
		out.Title = s.title(ctx, sess.ID)
	}
	return out
}

// title is the start of the session's first message when it is a user
// prompt: the default a session shows until its client or its title model
// names it (OpenCode shows sessions by title).
func (s *Server) title(ctx context.Context, id string) string {
	page, err := s.cfg.Journal.Messages(ctx, id, persistence.Cursor{}, 1)
	if err != nil {
		return ""
	}
	return actors.DefaultTitle(page.Messages)
}

// fresh re-reads the session after a command (the command's answer may
// predate its own events' projection in other processes' views).
func (s *Server) fresh(w http.ResponseWriter, r *http.Request, id string) {
	sess, err := s.cfg.Journal.Session(r.Context(), id)
	if err != nil {
		s.fail(w, r, id, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Data[wire.Session]{Data: s.info(r.Context(), sess)})
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req wire.CreateSessionRequest
	if !decode(w, r, &req, true) {
		return
	}
	if req.ID != "" && !sessionIDPattern.MatchString(req.ID) {
		badRequest(w, "id", "pattern", "id %q: want \"ses\" followed by 1-125 letters, digits, '_' or '-'", req.ID)
		return
	}
	c := actors.Create{Location: s.cfg.DefaultLocation, Agent: req.Agent}
	if req.Location != nil {
		if req.Location.Directory == "" {
			badRequest(w, "location.directory", "required", "location.directory is empty")
			return
		}
		c.Location = req.Location.Directory
	}
	if req.Model != nil {
		if req.Model.ID == "" || req.Model.ProviderID == "" {
			badRequest(w, "model", "required", "model needs both id and providerID")
			return
		}
		c.Model = fromModel(*req.Model)
	}
	info, err := s.cfg.Sessions.Create(r.Context(), req.ID, c)
	if err != nil {
		s.fail(w, r, req.ID, err)
		return
	}
	s.fresh(w, r, info.Session.ID)
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, wire.Data[wire.Session]{Data: s.info(r.Context(), sess)})
}

// listSessions pages through the sessions in ID order (IDs are time
// ordered): order asc (oldest first) or desc (default, newest first),
// filtered by directory and by a search string (case-insensitive) in ID,
// directory or title.
// Unknown query parameters are ignored (OpenCode's SDK adds its own).
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := queryLimit(w, q.Get("limit"), 50, 1000)
	if !ok {
		return
	}
	order := q.Get("order")
	if order == "" {
		order = "desc"
	}
	if order != "asc" && order != "desc" {
		badRequest(w, "order", "enum", "order %q: want asc or desc", order)
		return
	}
	ids, err := s.cfg.Journal.SessionIDs(r.Context())
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	if order == "desc" {
		slices.Reverse(ids)
	}
	if c := q.Get("cursor"); c != "" {
		i := slices.Index(ids, c)
		if i < 0 {
			writeError(w, http.StatusBadRequest, wire.Error{Tag: wire.TagInvalidCursor, Message: fmt.Sprintf("cursor %q: no such session; want a cursor from a previous response", c)})
			return
		}
		ids = ids[i+1:]
	}
	dir, search := q.Get("directory"), q.Get("search")
	resp := wire.SessionsResponse{Data: []wire.Session{}}
	for _, id := range ids {
		if len(resp.Data) == limit {
			resp.Cursor.Next = resp.Data[len(resp.Data)-1].ID
			break
		}
		sess, err := s.cfg.Journal.Session(r.Context(), id)
		if errors.Is(err, persistence.ErrNotFound) {
			continue // a stream without a created session
		} else if err != nil {
			s.fail(w, r, id, err)
			return
		}
		if dir != "" && sess.Location != dir {
			continue
		}
		info := s.info(r.Context(), sess)
		if search != "" && !containsFold(info.ID, search) && !containsFold(info.Location.Directory, search) && !containsFold(info.Title, search) {
			continue
		}
		resp.Data = append(resp.Data, info)
	}
	writeJSON(w, http.StatusOK, resp)
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func queryLimit(w http.ResponseWriter, v string, def, most int) (int, bool) {
	if v == "" {
		return def, true
	}
	n, err := strconv.ParseFloat(v, 64) // OpenCode declares limits as numbers
	if err != nil || n < 1 || n != float64(int(n)) {
		badRequest(w, "limit", "range", "limit %q: want a whole number from 1 to %d", v, most)
		return 0, false
	}
	return min(int(n), most), true
}

// activeSessions lists the sessions with a drain in progress.
func (s *Server) activeSessions(w http.ResponseWriter, r *http.Request) {
	ids, err := s.cfg.Journal.MidDrain(r.Context())
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	out := make(map[string]wire.SessionActive, len(ids))
	for _, id := range ids {
		out[id] = wire.SessionActive{Type: "running"}
	}
	writeJSON(w, http.StatusOK, wire.Data[map[string]wire.SessionActive]{Data: out})
}

func (s *Server) prompt(w http.ResponseWriter, r *http.Request) {
	var req wire.PromptRequest
	if !decode(w, r, &req, false) {
		return
	}
	if req.Prompt == nil {
		badRequest(w, "prompt", "required", "prompt is required: {\"prompt\":{\"text\":\"…\"}}")
		return
	}
	if req.Prompt.Text == "" && len(req.Prompt.Files) == 0 {
		badRequest(w, "prompt.text", "required", "prompt.text is empty and there are no files")
		return
	}
	for i, f := range req.Prompt.Files {
		if f.URI == "" {
			badRequest(w, fmt.Sprintf("prompt.files[%d].uri", i), "required", "prompt.files[%d].uri is empty", i)
			return
		}
	}
	if req.ID != "" && !messageIDPattern.MatchString(req.ID) {
		badRequest(w, "id", "pattern", "id %q: want \"msg_\" followed by 1-124 letters, digits, '_' or '-'", req.ID)
		return
	}
	d := messages.Delivery(req.Delivery)
	if d == "" {
		d = messages.Steer
	}
	if !d.Valid() {
		badRequest(w, "delivery", "enum", "delivery %q: want steer or queue", req.Delivery)
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	resume := req.Resume == nil || *req.Resume
	rec, err := s.cfg.Sessions.Prompt(r.Context(), sess.ID, actors.Prompt{MessageID: req.ID, Prompt: fromPrompt(*req.Prompt), Delivery: d, Resume: resume})
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	out := wire.InputAdmitted{AdmittedSeq: rec.AdmittedSeq, ID: rec.MessageID, SessionID: sess.ID, Prompt: toPrompt(fromPrompt(*req.Prompt)),
		Delivery: string(rec.Delivery), TimeCreated: millis(admittedAt(rec, func() time.Time { return s.eventTime(r.Context(), sess.ID, rec.AdmittedSeq) })), Duplicate: rec.Duplicate}
	writeJSON(w, http.StatusOK, wire.Data[wire.InputAdmitted]{Data: out})
}

// noBody accepts an empty body or an empty JSON object on routes that take
// no input, and refuses anything else.
func noBody(w http.ResponseWriter, r *http.Request) bool {
	var none struct{}
	return decode(w, r, &none, true)
}

func (s *Server) interrupt(w http.ResponseWriter, r *http.Request) {
	if !noBody(w, r) {
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	if err := s.cfg.Sessions.Interrupt(r.Context(), sess.ID); err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) wait(w http.ResponseWriter, r *http.Request) {
	if !noBody(w, r) {
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	out, err := s.cfg.Sessions.WaitIdle(r.Context(), sess.ID)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	// How the last drain ended: a failed one says why (kind and message),
	// so a caller never mistakes "nothing happened" for an answer.
	writeJSON(w, http.StatusOK, wire.Data[wire.Outcome]{Data: wire.Outcome{Error: out.Err, Kind: string(out.Kind), LastSeq: out.LastSeq}})
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	if !noBody(w, r) {
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	out, err := s.cfg.Sessions.Run(r.Context(), sess.ID)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Data[wire.Outcome]{Data: wire.Outcome{Error: out.Err, Kind: string(out.Kind), LastSeq: out.LastSeq}})
}

func (s *Server) compact(w http.ResponseWriter, r *http.Request) {
	if !noBody(w, r) {
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	out, err := s.cfg.Sessions.Compact(r.Context(), sess.ID)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	if out.Err != "" {
		// Nothing was stored: the previous history boundary stays.
		writeError(w, http.StatusServiceUnavailable, wire.Error{Tag: wire.TagServiceUnavailable, Service: "compaction", Message: out.Err})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) switchAgent(w http.ResponseWriter, r *http.Request) {
	var req wire.SwitchAgentRequest
	if !decode(w, r, &req, false) {
		return
	}
	if req.Agent == "" {
		badRequest(w, "agent", "required", "agent is required")
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	if _, err := s.cfg.Sessions.SwitchAgent(r.Context(), sess.ID, req.Agent); err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) switchModel(w http.ResponseWriter, r *http.Request) {
	var req wire.SwitchModelRequest
	if !decode(w, r, &req, false) {
		return
	}
	if req.Model == nil || req.Model.ID == "" || req.Model.ProviderID == "" {
		badRequest(w, "model", "required", "model is required with both id and providerID")
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	if _, err := s.cfg.Sessions.SwitchModel(r.Context(), sess.ID, fromModel(*req.Model)); err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) move(w http.ResponseWriter, r *http.Request) {
	var req wire.MoveRequest
	if !decode(w, r, &req, false) {
		return
	}
	if req.Location == nil || req.Location.Directory == "" {
		badRequest(w, "location.directory", "required", "location.directory is required")
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	if _, err := s.cfg.Sessions.Move(r.Context(), sess.ID, req.Location.Directory); err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	s.fresh(w, r, sess.ID)
}
