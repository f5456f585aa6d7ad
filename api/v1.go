package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// OpenCode's V1 routes, which its own clients speak: `opencode attach URL`
// (the TUI) and `opencode run --attach URL`. They are a second projection
// of the same journal beside the V2 routes: every write goes through the
// same Sessions door (so a prompt from the TUI and one from the SDK land in
// one ordered history, and survive a crash or failover the same way), and
// every read renders the journal's projections in V1 shapes.

func (s *Server) v1Routes() {
	m := s.mux
	m.HandleFunc("GET /session", s.v1ListSessions)
	m.HandleFunc("POST /session", s.v1CreateSession)
	m.HandleFunc("GET /session/status", s.v1SessionStatus)
	m.HandleFunc("GET /session/{sessionID}", s.v1GetSession)
	m.HandleFunc("PATCH /session/{sessionID}", s.v1UpdateSession)
	m.HandleFunc("DELETE /session/{sessionID}", s.v1DeleteSession)
	m.HandleFunc("GET /session/{sessionID}/children", s.v1Children)
	m.HandleFunc("GET /session/{sessionID}/message", s.v1Messages)
	m.HandleFunc("GET /session/{sessionID}/message/{messageID}", s.v1Message)
	m.HandleFunc("POST /session/{sessionID}/message", s.v1Prompt)
	m.HandleFunc("POST /session/{sessionID}/prompt_async", s.v1PromptAsync)
	m.HandleFunc("POST /session/{sessionID}/command", s.v1Command)
	m.HandleFunc("POST /session/{sessionID}/abort", s.v1Abort)
	m.HandleFunc("GET /session/{sessionID}/todo", s.v1EmptyListOfSession)
	m.HandleFunc("GET /session/{sessionID}/diff", s.v1Diff)
	m.HandleFunc("POST /session/{sessionID}/permissions/{requestID}", s.v1ReplySessionPermission)
	m.HandleFunc("POST /session/{sessionID}/fork", s.v1Fork)
	m.HandleFunc("POST /session/{sessionID}/share", s.v1Refused("sessionrt has no share service: sessions cannot be shared by link"))
	m.HandleFunc("DELETE /session/{sessionID}/share", s.v1Refused("sessionrt has no share service: no session is shared"))
	m.HandleFunc("POST /session/{sessionID}/revert", s.v1RevertSession)
	m.HandleFunc("POST /session/{sessionID}/unrevert", s.v1Unrevert)
	m.HandleFunc("POST /session/{sessionID}/shell", s.v1Unsupported("running a shell command outside a turn (use /api/pty)"))
	m.HandleFunc("GET /permission", s.v1Permissions)
	m.HandleFunc("POST /permission/{requestID}/reply", s.v1ReplyPermission)
	m.HandleFunc("GET /question", s.v1Questions)
	m.HandleFunc("POST /question/{requestID}/reply", s.v1ReplyQuestion)
	m.HandleFunc("POST /question/{requestID}/reject", s.v1RejectQuestion)
	m.HandleFunc("GET /event", s.v1Events)
	m.HandleFunc("GET /global/event", s.v1GlobalEvents)
	s.v1CatalogRoutes()
}

// v1Directory is the directory a V1 request is about: OpenCode's SDK sends
// it as ?directory= on reads and as the x-opencode-directory header
// (URL-encoded) on writes. Empty when neither is there.
func v1Directory(r *http.Request) string {
	if d := r.URL.Query().Get("directory"); d != "" {
		return d
	}
	if h := r.Header.Get("x-opencode-directory"); h != "" {
		if d, err := url.PathUnescape(h); err == nil {
			return d
		}
		return h
	}
	return ""
}

func (s *Server) v1Dir(r *http.Request) string {
	if d := v1Directory(r); d != "" {
		return d
	}
	return s.cfg.DefaultLocation
}

func (s *Server) v1Info(ctx context.Context, sess persistence.Session) v1Session {
	in := s.info(ctx, sess)
	return toV1Session(sess, in.Title, time.UnixMicro(int64(in.Time.Created*1000)), time.UnixMicro(int64(in.Time.Updated*1000)))
}

func (s *Server) v1ListSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := queryLimit(w, q.Get("limit"), 1000, 10000)
	if !ok {
		return
	}
	ids, err := s.cfg.Journal.SessionIDs(r.Context())
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	slices.Reverse(ids) // newest first
	dir, search := v1Directory(r), q.Get("search")
	var since int64 // ?start=: sessions updated at or after this time (ms), as the TUI asks
	if v := q.Get("start"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			badRequest(w, "start", "range", "start %q: want a time in milliseconds", v)
			return
		}
		since = int64(f)
	}
	out := []v1Session{}
	for _, id := range ids {
		if len(out) == limit {
			break
		}
		sess, err := s.cfg.Journal.Session(r.Context(), id)
		if errors.Is(err, persistence.ErrNotFound) {
			continue
		} else if err != nil {
			s.fail(w, r, id, err)
			return
		}
		if dir != "" && sess.Location != dir {
			continue
		}
		info := s.v1Info(r.Context(), sess)
		if info.Time.Updated < since {
			continue
		}
		if search != "" && !containsFold(info.Title, search) && !containsFold(info.ID, search) {
			continue
		}
		out = append(out, info)
	}
	// OpenCode lists by last update, newest first.
	slices.SortStableFunc(out, func(a, b v1Session) int { return int(b.Time.Updated - a.Time.Updated) })
	writeJSON(w, http.StatusOK, out)
}

type v1CreateRequest struct {
	ParentID    string          `json:"parentID,omitempty"`
	Title       string          `json:"title,omitempty"`
	Agent       string          `json:"agent,omitempty"`
	Model       *wire.ModelRef  `json:"model,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	Permission  []v1RuleIgnored `json:"permission,omitempty"`
	WorkspaceID string          `json:"workspaceID,omitempty"`
}

// v1RuleIgnored is a session permission rule a V1 client sends at creation
// (`opencode run` denies the question and plan tools, which sessionrt does
// not have); the session's agent rules decide.
type v1RuleIgnored struct {
	Permission string `json:"permission"`
	Pattern    string `json:"pattern"`
	Action     string `json:"action"`
}

func (s *Server) v1CreateSession(w http.ResponseWriter, r *http.Request) {
	var req v1CreateRequest
	if !decode(w, r, &req, true) {
		return
	}
	if req.ParentID != "" {
		badRequest(w, "parentID", "unsupported", "parentID: sessionrt has no child sessions (no task tool); create a top-level session")
		return
	}
	c := actors.Create{Location: s.v1Dir(r), Agent: req.Agent, Title: req.Title}
	if req.Model != nil {
		if req.Model.ID == "" || req.Model.ProviderID == "" {
			badRequest(w, "model", "required", "model needs both id and providerID")
			return
		}
		c.Model = fromModel(*req.Model)
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
	s.v1Watchers.notify(sess)
	writeJSON(w, http.StatusOK, s.v1Info(r.Context(), sess))
}

func (s *Server) v1GetSession(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	s.v1Watchers.notify(sess)
	writeJSON(w, http.StatusOK, s.v1SessionInfo(r.Context(), sess))
}

type v1UpdateRequest struct {
	Title      *string          `json:"title,omitempty"`
	Metadata   json.RawMessage  `json:"metadata,omitempty"`
	Permission []v1RuleIgnored  `json:"permission,omitempty"`
	Time       *json.RawMessage `json:"time,omitempty"`
}

// v1UpdateSession renames a session (durably: session.renamed); an
// archive or a change of its permissions or metadata is refused by name
// rather than dropped silently.
func (s *Server) v1UpdateSession(w http.ResponseWriter, r *http.Request) {
	var req v1UpdateRequest
	if !decode(w, r, &req, false) {
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	if req.Time != nil || req.Permission != nil || req.Metadata != nil {
		writeError(w, http.StatusNotImplemented, wire.Error{Tag: wire.TagNotImplemented,
			Message: fmt.Sprintf("PATCH /session/%s: archiving a session or changing its permissions or metadata is not implemented by sessionrt (a rename is)", sess.ID)})
		return
	}
	if req.Title != nil {
		s.v1Watchers.notify(sess) // the streams follow the session to its session.updated
		if _, err := s.cfg.Sessions.Rename(r.Context(), sess.ID, *req.Title); err != nil {
			s.fail(w, r, sess.ID, err)
			return
		}
		var err error
		if sess, err = s.cfg.Journal.Session(r.Context(), sess.ID); err != nil {
			s.fail(w, r, sess.ID, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, s.v1SessionInfo(r.Context(), sess))
}

// v1DeleteSession deletes a session durably (session.deleted): it leaves
// the lists and its routes answer 404 from then on, as OpenCode's do; a
// second delete is therefore a 404 "not found" too, which is what
// OpenCode's own server answers (its remove reads the session first) and
// what its TUI shows as "Failed to delete session" without harm. A running
// session is refused with 409 naming the cause: OpenCode's TUI shows the
// message, and the user interrupts it first.
func (s *Server) v1DeleteSession(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	if err := s.cfg.Sessions.Delete(r.Context(), sess.ID); err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	writeJSON(w, http.StatusOK, true)
}

func (s *Server) v1Children(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.session(w, r); !ok {
		return
	}
	writeJSON(w, http.StatusOK, []v1Session{}) // no child sessions
}

func (s *Server) v1SessionStatus(w http.ResponseWriter, r *http.Request) {
	ids, err := s.cfg.Journal.MidDrain(r.Context())
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	dir := v1Directory(r)
	out := make(map[string]v1Status, len(ids))
	for _, id := range ids {
		if dir != "" {
			if sess, err := s.cfg.Journal.Session(r.Context(), id); err != nil || sess.Location != dir {
				continue
			}
		}
		out[id] = v1Status{Type: "busy"}
	}
	writeJSON(w, http.StatusOK, out)
}

// v1History reads a session's whole projected history.
func (s *Server) v1History(ctx context.Context, id string) ([]messages.Message, error) {
	var all []messages.Message
	var at persistence.Cursor
	for {
		page, err := s.cfg.Journal.Messages(ctx, id, at, 1000)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Messages...)
		if !page.More {
			return all, nil
		}
		at = page.Next
	}
}

// v1Render renders msgs[from:] of a session's history (msgs is the whole
// history, so the first rendered assistant message knows its parent).
func (s *Server) v1Render(ctx context.Context, sess persistence.Session, msgs []messages.Message, from int) ([]v1MessageWithParts, error) {
	p := &v1Projection{sessionID: sess.ID, directory: sess.Location, agent: sess.Agent, model: sess.Model}
	for _, m := range msgs[:from] {
		if m.Role == messages.RoleUser {
			p.parent = m.ID
		}
	}
	page := msgs[from:]
	times, err := s.v1Times(ctx, sess.ID, page)
	if err != nil {
		return nil, err
	}
	p.at = func(seq int64) time.Time { return times[seq] }
	return p.render(page), nil
}

// v1Times reads the commit times of the events that created the messages
// and their parts: one range read.
func (s *Server) v1Times(ctx context.Context, id string, msgs []messages.Message) (map[int64]time.Time, error) {
	out := map[int64]time.Time{}
	if len(msgs) == 0 {
		return out, nil
	}
	lo, hi := msgs[0].Seq, msgs[0].Seq
	for _, m := range msgs {
		lo, hi = min(lo, m.Seq), max(hi, m.Seq)
		for _, p := range m.Parts {
			lo, hi = min(lo, p.Seq), max(hi, p.Seq)
		}
	}
	for after := lo - 1; after < hi; {
		envs, err := s.cfg.Journal.ReadEvents(ctx, id, after, int(min(hi-after, 1000)))
		if err != nil {
			return nil, err
		}
		if len(envs) == 0 {
			break
		}
		for _, e := range envs {
			out[e.Seq] = e.Time
		}
		after = envs[len(envs)-1].Seq
	}
	return out, nil
}

// v1Messages lists a session's messages with their parts, oldest first:
// the newest limit of them (all without limit), before the message named
// by ?before= when given.
func (s *Server) v1Messages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := queryLimit(w, q.Get("limit"), 1<<30, 1<<30)
	if !ok {
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	s.v1Watchers.notify(sess)
	msgs, err := s.v1History(r.Context(), sess.ID)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	msgs = slices.DeleteFunc(msgs, func(m messages.Message) bool { return m.Role == messages.RoleSystem })
	end := len(msgs)
	if before := q.Get("before"); before != "" {
		end = slices.IndexFunc(msgs, func(m messages.Message) bool { return m.ID == before })
		if end < 0 {
			writeError(w, http.StatusBadRequest, wire.Error{Tag: wire.TagInvalidCursor, Message: fmt.Sprintf("before %q: no such message in session %s", before, sess.ID)})
			return
		}
	}
	msgs = msgs[:end]
	out, err := s.v1Render(r.Context(), sess, msgs, max(0, len(msgs)-limit))
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) v1Message(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	msgs, err := s.v1History(r.Context(), sess.ID)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	want := r.PathValue("messageID")
	i := slices.IndexFunc(msgs, func(m messages.Message) bool { return m.ID == want && m.Role != messages.RoleSystem })
	if i < 0 {
		writeError(w, http.StatusNotFound, wire.Error{Tag: wire.TagMessageNotFound, SessionID: sess.ID, MessageID: want,
			Message: fmt.Sprintf("message %s not found in session %s", want, sess.ID)})
		return
	}
	out, err := s.v1Render(r.Context(), sess, msgs[:i+1], i)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	writeJSON(w, http.StatusOK, out[0])
}

// v1PromptRequest is the body of POST /session/{id}/message and
// /prompt_async.
type v1PromptRequest struct {
	MessageID string            `json:"messageID,omitempty"`
	Model     *v1ModelRef       `json:"model,omitempty"`
	Agent     string            `json:"agent,omitempty"`
	NoReply   bool              `json:"noReply,omitempty"`
	Tools     map[string]bool   `json:"tools,omitempty"`
	Format    json.RawMessage   `json:"format,omitempty"`
	System    string            `json:"system,omitempty"`
	Variant   string            `json:"variant,omitempty"`
	Parts     []json.RawMessage `json:"parts"`
}

// v1InputPart is any of TextPartInput, FilePartInput, AgentPartInput,
// SubtaskPartInput: only the fields sessionrt uses are read.
type v1InputPart struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Synthetic bool   `json:"synthetic"`
	Ignored   bool   `json:"ignored"`
	Mime      string `json:"mime"`
	Filename  string `json:"filename"`
	URL       string `json:"url"`
	Name      string `json:"name"`
}

// v1PromptOf maps V1 input parts to a prompt: text parts joined (ignored
// ones left out), files as file attachments, agents as agent attachments.
func v1PromptOf(parts []json.RawMessage) (messages.Prompt, error) {
	var p messages.Prompt
	var texts []string
	for i, raw := range parts {
		var in v1InputPart
		if err := json.Unmarshal(raw, &in); err != nil {
			return p, fmt.Errorf("parts[%d]: %v", i, err)
		}
		switch in.Type {
		case "text":
			if !in.Ignored && in.Text != "" {
				texts = append(texts, in.Text)
			}
		case "file":
			if in.URL == "" {
				return p, fmt.Errorf("parts[%d].url is empty", i)
			}
			mt := in.Mime
			if mt == "" {
				mt = guessMime(in.URL, in.Filename)
			}
			p.Attachments = append(p.Attachments, messages.Attachment{Kind: "file", Name: in.Filename, MediaType: mt, URI: in.URL})
		case "agent":
			p.Attachments = append(p.Attachments, messages.Attachment{Kind: "agent", Name: in.Name})
		case "subtask":
			return p, fmt.Errorf("parts[%d]: subtask parts are not supported by sessionrt (no task tool)", i)
		default:
			return p, fmt.Errorf("parts[%d].type %q: want text, file or agent", i, in.Type)
		}
	}
	p.Text = strings.Join(texts, "\n")
	if p.Text == "" && len(p.Attachments) == 0 {
		return p, errors.New("parts: no text and no files")
	}
	return p, nil
}

// v1Admit applies a V1 prompt's agent and model to the session (OpenCode
// picks them per message; sessionrt switches the session for its next
// turn, durably) and admits the prompt. It answers errors itself.
func (s *Server) v1Admit(w http.ResponseWriter, r *http.Request) (persistence.Session, *actors.Receipt, bool) {
	var req v1PromptRequest
	if !decode(w, r, &req, false) {
		return persistence.Session{}, nil, false
	}
	prompt, err := v1PromptOf(req.Parts)
	if err != nil {
		badRequest(w, "parts", "invalid", "%v", err)
		return persistence.Session{}, nil, false
	}
	if req.MessageID != "" && !messageIDPattern.MatchString(req.MessageID) {
		badRequest(w, "messageID", "pattern", "messageID %q: want \"msg_\" followed by 1-124 letters, digits, '_' or '-'", req.MessageID)
		return persistence.Session{}, nil, false
	}
	sess, ok := s.session(w, r)
	if !ok {
		return sess, nil, false
	}
	ctx := r.Context()
	s.v1Watchers.notify(sess) // before the admission: the streams follow the turn from its first event
	if req.Agent != "" && req.Agent != sess.Agent {
		info, err := s.cfg.Sessions.SwitchAgent(ctx, sess.ID, req.Agent)
		if err != nil {
			s.fail(w, r, sess.ID, err)
			return sess, nil, false
		}
		sess.Agent, sess.Model = info.Session.Agent, info.Session.Model // the agent's model may come with it
	}
	// OpenCode's variant belongs to each message: a prompt naming a model
	// selects exactly the variant it sends (none: the model's defaults);
	// one naming only a variant selects it on the session's model.
	want := sess.Model
	if m := req.Model; m != nil && m.ModelID != "" {
		want = messages.ModelRef{Provider: m.ProviderID, ID: m.ModelID, Variant: req.Variant}
	} else if req.Variant != "" {
		want.Variant = req.Variant
	}
	if want != sess.Model {
		if _, err := s.cfg.Sessions.SwitchModel(ctx, sess.ID, want); err != nil {
			s.fail(w, r, sess.ID, err)
			return sess, nil, false
		}
	}
	rec, err := s.cfg.Sessions.Prompt(ctx, sess.ID, actors.Prompt{MessageID: req.MessageID, Prompt: prompt, Delivery: messages.Steer, Resume: !req.NoReply})
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return sess, nil, false
	}
	return sess, rec, true
}

// v1Prompt is OpenCode's synchronous prompt: admit, wait until the session
// is idle, answer the last assistant message the drain wrote.
func (s *Server) v1Prompt(w http.ResponseWriter, r *http.Request) {
	sess, rec, ok := s.v1Admit(w, r)
	if !ok {
		return
	}
	s.v1Reply(w, r, sess, rec.AdmittedSeq)
}

// v1DeliveryLimit bounds how long a synchronous prompt waits for the open
// V1 streams to write its drain's events (see v1Watchers.delivered).
const v1DeliveryLimit = 2 * time.Second

// v1Reply waits for the drain the prompt started and answers its last
// assistant message (or the drain's error when it wrote none).
func (s *Server) v1Reply(w http.ResponseWriter, r *http.Request, sess persistence.Session, admitted int64) {
	out, err := s.cfg.Sessions.WaitIdle(r.Context(), sess.ID)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	sess, err = s.cfg.Journal.Session(r.Context(), sess.ID)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	s.v1Watchers.delivered(r.Context(), sess.Location, sess.ID, sess.LastSeq, v1DeliveryLimit)
	msgs, err := s.v1History(r.Context(), sess.ID)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	last := len(msgs) - 1
	for last >= 0 && msgs[last].Role != messages.RoleAssistant {
		last--
	}
	if last < 0 || msgs[last].Seq < admitted {
		msg := "the prompt was admitted but no turn answered it"
		if out != nil && out.Err != "" {
			msg = out.Err
		}
		writeError(w, http.StatusInternalServerError, wire.Error{Tag: wire.TagUnknown, Message: msg})
		return
	}
	rendered, err := s.v1Render(r.Context(), sess, msgs[:last+1], last)
	if err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	writeJSON(w, http.StatusOK, rendered[0])
}

func (s *Server) v1PromptAsync(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := s.v1Admit(w, r); ok {
		w.WriteHeader(http.StatusNoContent)
	}
}

type v1CommandRequest struct {
	MessageID string            `json:"messageID,omitempty"`
	Agent     string            `json:"agent,omitempty"`
	Model     string            `json:"model,omitempty"`
	Arguments string            `json:"arguments"`
	Command   string            `json:"command"`
	Variant   string            `json:"variant,omitempty"`
	Parts     []json.RawMessage `json:"parts,omitempty"`
}

func (s *Server) v1Command(w http.ResponseWriter, r *http.Request) {
	var req v1CommandRequest
	if !decode(w, r, &req, false) {
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	cat := s.catalog(r.Context(), sess.Location)
	names := make([]string, 0, len(cat.Commands))
	for _, c := range cat.Commands {
		names = append(names, c.Name)
	}
	writeError(w, http.StatusBadRequest, wire.Error{Tag: wire.TagInvalidRequest, Field: "command", Kind: "enum",
		Message: fmt.Sprintf("command %q: not a configured command (configured: %s)", req.Command, orNone(names))})
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (s *Server) v1Abort(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	if err := s.cfg.Sessions.Interrupt(r.Context(), sess.ID); err != nil {
		s.fail(w, r, sess.ID, err)
		return
	}
	writeJSON(w, http.StatusOK, true)
}

func (s *Server) v1EmptyListOfSession(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.session(w, r); ok {
		writeJSON(w, http.StatusOK, []struct{}{})
	}
}

func (s *Server) v1EmptyList(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, []struct{}{})
}

func (s *Server) v1Unsupported(what string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.session(w, r); !ok {
			return
		}
		writeError(w, http.StatusNotImplemented, wire.Error{Tag: wire.TagNotImplemented,
			Message: fmt.Sprintf("%s %s: %s is not implemented by sessionrt", r.Method, r.URL.Path, what)})
	}
}

// v1Refused answers a 501 with msg for an existing session (a 404
// otherwise): what sessionrt does not offer, said plainly.
func (s *Server) v1Refused(msg string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.session(w, r); !ok {
			return
		}
		writeError(w, http.StatusNotImplemented, wire.Error{Tag: wire.TagNotImplemented, Message: msg})
	}
}

// v1PendingPermissions lists the pending permission requests of the
// sessions with a drain in progress (a request is only pending there).
func (s *Server) v1PendingPermissions(ctx context.Context, dir string) ([]persistence.Permission, error) {
	ids, err := s.cfg.Journal.MidDrain(ctx)
	if err != nil {
		return nil, err
	}
	var out []persistence.Permission
	for _, id := range ids {
		if dir != "" {
			sess, err := s.cfg.Journal.Session(ctx, id)
			if err != nil || sess.Location != dir {
				continue
			}
		}
		perms, err := s.cfg.Journal.PendingPermissions(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, perms...)
	}
	return out, nil
}

func (s *Server) v1Permissions(w http.ResponseWriter, r *http.Request) {
	perms, err := s.v1PendingPermissions(r.Context(), v1Directory(r))
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	out := make([]v1Permission, 0, len(perms))
	for _, p := range perms {
		out = append(out, toV1Permission(p.SessionID, p.RequestID, p.Action, p.Resources, p.AssistantMessageID, p.CallID))
	}
	writeJSON(w, http.StatusOK, out)
}

type v1PermissionReply struct {
	Reply   string `json:"reply"`
	Message string `json:"message,omitempty"`
}

func (s *Server) v1ReplyPermission(w http.ResponseWriter, r *http.Request) {
	var req v1PermissionReply
	if !decode(w, r, &req, false) {
		return
	}
	want := r.PathValue("requestID")
	perms, err := s.v1PendingPermissions(r.Context(), "")
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	i := slices.IndexFunc(perms, func(p persistence.Permission) bool { return p.RequestID == want })
	if i < 0 {
		writeError(w, http.StatusNotFound, wire.Error{Tag: wire.TagPermissionNotFound, RequestID: want,
			Message: fmt.Sprintf("permission request %s is not pending in any session", want)})
		return
	}
	s.v1Answer(w, r, perms[i], req.Reply, req.Message)
}

type v1SessionPermissionReply struct {
	Response string `json:"response"`
}

func (s *Server) v1ReplySessionPermission(w http.ResponseWriter, r *http.Request) {
	var req v1SessionPermissionReply
	if !decode(w, r, &req, false) {
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	if p, ok := s.pendingPermission(w, r, sess.ID); ok {
		s.v1Answer(w, r, p, req.Response, "")
	}
}

func (s *Server) v1Answer(w http.ResponseWriter, r *http.Request, p persistence.Permission, reply, feedback string) {
	rp := messages.PermissionReply(reply)
	if rp != messages.ReplyOnce && rp != messages.ReplyAlways && rp != messages.ReplyReject {
		badRequest(w, "reply", "enum", "reply %q: want once, always or reject", reply)
		return
	}
	err := s.cfg.Sessions.ReplyPermission(r.Context(), p.SessionID, actors.ReplyPermission{RequestID: p.RequestID, Reply: rp, Feedback: feedback})
	if errors.Is(err, actors.ErrNotFound) {
		permissionNotFound(w, p.SessionID, p.RequestID)
		return
	} else if err != nil {
		s.fail(w, r, p.SessionID, err)
		return
	}
	writeJSON(w, http.StatusOK, true)
}
