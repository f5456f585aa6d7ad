// Package client is the Go client of sessionrt's HTTP API: one method per
// route of package api, the wire shapes of package wire, typed errors that
// callers branch on with errors.Is, and an SSE reader for the event streams.
//
//	c, _ := client.New(client.Config{BaseURL: "http://127.0.0.1:4096", Token: tok})
//	s, _ := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: dir}})
//	r, _ := c.Prompt(ctx, s.ID, wire.PromptRequest{Prompt: &wire.Prompt{Text: "hello"}})
//	st, _ := c.Events(ctx, s.ID, 0) // replay, then tail
//	for { ev, err := st.Next(); … }
//
// It holds no state beyond its configuration and does no retries except in
// Follow, which resumes a stream from its last seq.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/telemetry/spanstore"
)

// DefaultBaseURL is where `sessionrt serve` listens by default.
const DefaultBaseURL = "http://127.0.0.1:4096"

// Config configures New.
type Config struct {
	// BaseURL of the server; default DefaultBaseURL.
	BaseURL string
	// Token is sent as "Authorization: Bearer <token>" when not empty.
	Token string
	// HTTP is the transport; default a client without a timeout (event
	// streams are long; bound calls with their context).
	HTTP *http.Client
}

// Client calls one server. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// New checks the configuration and returns a client.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want http://host:port", cfg.BaseURL)
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{}
	}
	return &Client{base: u, token: cfg.Token, http: cfg.HTTP}, nil
}

// Error is an error answer of the server.
type Error struct {
	Status int        // HTTP status
	Body   wire.Error // the decoded body (its Message, Tag, Field, …)
}

func (e *Error) Error() string {
	msg := e.Body.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Body.Tag != "" {
		return fmt.Sprintf("%s (%d %s)", msg, e.Status, e.Body.Tag)
	}
	return fmt.Sprintf("%s (%d)", msg, e.Status)
}

// Is matches the sentinels by HTTP status.
func (e *Error) Is(target error) bool {
	s, ok := target.(statusError)
	return ok && int(s) == e.Status
}

type statusError int

func (s statusError) Error() string { return http.StatusText(int(s)) }

// Sentinels for errors.Is on what a call returned.
var (
	ErrInvalid        error = statusError(http.StatusBadRequest)
	ErrUnauthorized   error = statusError(http.StatusUnauthorized)
	ErrNotFound       error = statusError(http.StatusNotFound)
	ErrConflict       error = statusError(http.StatusConflict)
	ErrTooLarge       error = statusError(http.StatusRequestEntityTooLarge)
	ErrBacklog        error = statusError(http.StatusTooManyRequests)
	ErrNotImplemented error = statusError(http.StatusNotImplemented)
	ErrUnavailable    error = statusError(http.StatusServiceUnavailable)
)

func (c *Client) url(p string, q url.Values) string {
	u := *c.base
	u.Path = c.base.Path + p
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func path(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(p))
	}
	return b.String()
}

func sessionPath(id string, rest ...string) string {
	return "/api/session" + path(append([]string{id}, rest...)...)
}

func (c *Client) newRequest(ctx context.Context, method, p string, q url.Values, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode body: %w", method, p, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url(p, q), rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, p, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// do sends one request and decodes a 2xx JSON answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, p string, q url.Values, body, out any) error {
	req, err := c.newRequest(ctx, method, p, q, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, p, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return readError(resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if s, ok := out.(*string); ok {
		b, err := io.ReadAll(resp.Body)
		*s = string(b)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, p, err)
	}
	return nil
}

func readError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &Error{Status: resp.StatusCode}
	if json.Unmarshal(b, &e.Body) != nil || e.Body.Message == "" {
		e.Body.Message = strings.TrimSpace(string(b))
	}
	return e
}

// Health reports whether the server answers.
func (c *Client) Health(ctx context.Context) error {
	var h wire.Health
	if err := c.do(ctx, http.MethodGet, "/api/health", nil, nil, &h); err != nil {
		return err
	}
	if !h.Healthy {
		return errors.New("server reports unhealthy")
	}
	return nil
}

// CreateSession creates a session (or returns the one with req.ID).
func (c *Client) CreateSession(ctx context.Context, req wire.CreateSessionRequest) (wire.Session, error) {
	var out wire.Data[wire.Session]
	err := c.do(ctx, http.MethodPost, "/api/session", nil, req, &out)
	return out.Data, err
}

// ListOptions select a page of sessions.
type ListOptions struct {
	Limit     int
	Order     string // "asc" or "desc" (default)
	Cursor    string // a Cursor.Next of a previous page
	Directory string
	Search    string
}

// ListSessions returns one page of sessions.
func (c *Client) ListSessions(ctx context.Context, o ListOptions) (wire.SessionsResponse, error) {
	q := url.Values{}
	setInt(q, "limit", o.Limit)
	set(q, "order", o.Order)
	set(q, "cursor", o.Cursor)
	set(q, "directory", o.Directory)
	set(q, "search", o.Search)
	var out wire.SessionsResponse
	err := c.do(ctx, http.MethodGet, "/api/session", q, nil, &out)
	return out, err
}

func set(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

func setInt(q url.Values, k string, v int) {
	if v > 0 {
		q.Set(k, strconv.Itoa(v))
	}
}

// ActiveSessions lists the sessions with a drain in progress.
func (c *Client) ActiveSessions(ctx context.Context) (map[string]wire.SessionActive, error) {
	var out wire.Data[map[string]wire.SessionActive]
	err := c.do(ctx, http.MethodGet, "/api/session/active", nil, nil, &out)
	return out.Data, err
}

// Session reads one session.
func (c *Client) Session(ctx context.Context, id string) (wire.Session, error) {
	var out wire.Data[wire.Session]
	err := c.do(ctx, http.MethodGet, sessionPath(id), nil, nil, &out)
	return out.Data, err
}

// Prompt admits one input; the receipt is durable when it returns.
func (c *Client) Prompt(ctx context.Context, id string, req wire.PromptRequest) (wire.InputAdmitted, error) {
	var out wire.Data[wire.InputAdmitted]
	err := c.do(ctx, http.MethodPost, sessionPath(id, "prompt"), nil, req, &out)
	return out.Data, err
}

// MessagesOptions select a page of messages.
type MessagesOptions struct {
	Limit  int
	Order  string // "asc" (default) or "desc"
	Cursor string // a Cursor.Next of a previous page
}

// Messages returns one page of a session's projected messages.
func (c *Client) Messages(ctx context.Context, id string, o MessagesOptions) (wire.MessagesResponse, error) {
	q := url.Values{}
	setInt(q, "limit", o.Limit)
	set(q, "order", o.Order)
	set(q, "cursor", o.Cursor)
	var out wire.MessagesResponse
	err := c.do(ctx, http.MethodGet, sessionPath(id, "message"), q, nil, &out)
	return out, err
}

// Message reads one message by ID.
func (c *Client) Message(ctx context.Context, id, messageID string) (wire.Message, error) {
	var out wire.Data[wire.Message]
	err := c.do(ctx, http.MethodGet, sessionPath(id, "message", messageID), nil, nil, &out)
	return out.Data, err
}

// History returns up to limit durable events after a seq.
func (c *Client) History(ctx context.Context, id string, after int64, limit int) (wire.HistoryResponse, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	setInt(q, "limit", limit)
	var out wire.HistoryResponse
	err := c.do(ctx, http.MethodGet, sessionPath(id, "history"), q, nil, &out)
	return out, err
}

// Context returns the model-visible history and the Context Epoch.
func (c *Client) Context(ctx context.Context, id string) (wire.ContextResponse, error) {
	var out wire.ContextResponse
	err := c.do(ctx, http.MethodGet, sessionPath(id, "context"), nil, nil, &out)
	return out, err
}

// Interrupt stops the session's drain (a no-op when idle).
func (c *Client) Interrupt(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "interrupt"), nil, nil, nil)
}

// Wait blocks until the session is idle.
func (c *Client) Wait(ctx context.Context, id string) error {
	_, err := c.WaitOutcome(ctx, id)
	return err
}

// WaitOutcome blocks until the session is idle and returns how its last
// drain ended: Error and Kind say why a failed one stopped (turn limit,
// blocked context, unknown model, provider error, failed compaction,
// interrupted).
func (c *Client) WaitOutcome(ctx context.Context, id string) (wire.Outcome, error) {
	var out wire.Data[wire.Outcome]
	err := c.do(ctx, http.MethodPost, sessionPath(id, "wait"), nil, nil, &out)
	return out.Data, err
}

// Compact runs a manual compaction of an idle session (204); a failed one
// is an error saying why, with nothing stored.
func (c *Client) Compact(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "compact"), nil, nil, nil)
}

// Run resumes the session explicitly and returns how the drain ended.
func (c *Client) Run(ctx context.Context, id string) (wire.Outcome, error) {
	var out wire.Data[wire.Outcome]
	err := c.do(ctx, http.MethodPost, sessionPath(id, "run"), nil, nil, &out)
	return out.Data, err
}

// Move changes the session's Location.
func (c *Client) Move(ctx context.Context, id, directory string) (wire.Session, error) {
	var out wire.Data[wire.Session]
	err := c.do(ctx, http.MethodPost, sessionPath(id, "move"), nil, wire.MoveRequest{Location: &wire.LocationRef{Directory: directory}}, &out)
	return out.Data, err
}

// Fork creates a session holding session id's history before messageID
// (all of it when empty) and returns it. OpenCode has the route in its V1
// API only (POST /session/{id}/fork); the answer is read back as V2.
func (c *Client) Fork(ctx context.Context, id, messageID string) (wire.Session, error) {
	var out struct {
		ID string `json:"id"`
	}
	body := struct {
		MessageID string `json:"messageID,omitempty"`
	}{messageID}
	if err := c.do(ctx, http.MethodPost, "/session"+path(id, "fork"), nil, body, &out); err != nil {
		return wire.Session{}, err
	}
	return c.Session(ctx, out.ID)
}

// RevertStage stages (or moves) a revert to just before messageID and
// returns the files a commit would change.
func (c *Client) RevertStage(ctx context.Context, id, messageID string) (wire.RevertState, error) {
	var out wire.Data[wire.RevertState]
	err := c.do(ctx, http.MethodPost, sessionPath(id, "revert", "stage"), nil, wire.RevertStageRequest{MessageID: messageID}, &out)
	return out.Data, err
}

// RevertCommit restores the staged revert's files and hides its messages.
func (c *Client) RevertCommit(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "revert", "commit"), nil, nil, nil)
}

// RevertClear drops a staged revert or undoes a committed one.
func (c *Client) RevertClear(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "revert", "clear"), nil, nil, nil)
}

// Diff returns the files the session changed (those of the turns that
// answered messageID when it is not empty).
func (c *Client) Diff(ctx context.Context, id, messageID string) ([]wire.FileDiff, error) {
	var q url.Values
	if messageID != "" {
		q = url.Values{"messageID": {messageID}}
	}
	var out wire.Data[[]wire.FileDiff]
	err := c.do(ctx, http.MethodGet, sessionPath(id, "diff"), q, nil, &out)
	return out.Data, err
}

// SwitchAgent selects the agent for the next provider turn.
func (c *Client) SwitchAgent(ctx context.Context, id, agent string) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "agent"), nil, wire.SwitchAgentRequest{Agent: agent}, nil)
}

// SwitchModel selects the model for the next provider turn.
func (c *Client) SwitchModel(ctx context.Context, id string, m wire.ModelRef) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "model"), nil, wire.SwitchModelRequest{Model: &m}, nil)
}

// Permissions lists the session's pending permission requests.
func (c *Client) Permissions(ctx context.Context, id string) ([]wire.PermissionRequest, error) {
	var out wire.Data[[]wire.PermissionRequest]
	err := c.do(ctx, http.MethodGet, sessionPath(id, "permission"), nil, nil, &out)
	return out.Data, err
}

// Permission reads one pending permission request.
func (c *Client) Permission(ctx context.Context, id, requestID string) (wire.PermissionRequest, error) {
	var out wire.Data[wire.PermissionRequest]
	err := c.do(ctx, http.MethodGet, sessionPath(id, "permission", requestID), nil, nil, &out)
	return out.Data, err
}

// ReplyPermission answers a pending request: "once", "always" or "reject",
// with an optional message (the model sees it on reject).
func (c *Client) ReplyPermission(ctx context.Context, id, requestID, reply, message string) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "permission", requestID, "reply"), nil, wire.PermissionReplyRequest{Reply: reply, Message: message}, nil)
}

// Questions lists pending questions (always none: sessionrt has no question tool).
func (c *Client) Questions(ctx context.Context, id string) ([]wire.QuestionRequest, error) {
	var out wire.Data[[]wire.QuestionRequest]
	err := c.do(ctx, http.MethodGet, sessionPath(id, "question"), nil, nil, &out)
	return out.Data, err
}

// ReplyQuestion answers a question request.
func (c *Client) ReplyQuestion(ctx context.Context, id, requestID string, answers [][]string) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "question", requestID, "reply"), nil, wire.QuestionReplyRequest{Answers: answers}, nil)
}

// RejectQuestion rejects a question request.
func (c *Client) RejectQuestion(ctx context.Context, id, requestID string) error {
	return c.do(ctx, http.MethodPost, sessionPath(id, "question", requestID, "reject"), nil, nil, nil)
}

// Trace returns the session's stored spans, ordered by start time.
func (c *Client) Trace(ctx context.Context, id string) ([]spanstore.Span, error) {
	var out wire.Data[[]spanstore.Span]
	err := c.do(ctx, http.MethodGet, sessionPath(id, "trace"), nil, nil, &out)
	return out.Data, err
}

// TraceText returns the session's span tree as the server renders it.
func (c *Client) TraceText(ctx context.Context, id string) (string, error) {
	var out string
	err := c.do(ctx, http.MethodGet, sessionPath(id, "trace"), url.Values{"format": {"text"}}, nil, &out)
	return out, err
}
