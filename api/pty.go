package api

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/websocket"

	"github.com/sessionrt/sessionrt/api/ptys"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/messages"
)

// PTY routes: OpenCode's pty.list/create/get/update/remove/connect under
// /api/pty, plus sessionrt's input and SSE output routes.
//
//	GET    /api/pty                      every terminal, oldest first
//	POST   /api/pty                      create {command?,args?,cwd?,title?,env?,location?,size?}
//	GET    /api/pty/{ptyID}              one terminal
//	PUT    /api/pty/{ptyID}              {title?, size?{rows,cols}}: retitle, resize
//	DELETE /api/pty/{ptyID}              kill (every process of the terminal) and forget; the final state
//	POST   /api/pty/{ptyID}/input        {data} or {base64}: type bytes, 204
//	GET    /api/pty/{ptyID}/output?after SSE: pty.output {offset,data(base64)}, id = end offset; pty.exited; server.cut
//	GET    /api/pty/{ptyID}/connect?after  WebSocket: every frame in is input; binary frames out are
//	                                     output, text frames out are JSON control (pty.exited, server.cut);
//	                                     pings every Config.PTYPing, answered by the client's pongs
//
// Both streams start at byte offset ?after (default 0: whatever the
// scrollback still holds) and end after the terminal's last output with
// its exit; a reader that falls a whole scrollback behind is cut.
func (s *Server) ptyRoutes() {
	m := s.mux
	m.HandleFunc("GET /api/pty", s.ptyGuard(s.listPTYs))
	m.HandleFunc("POST /api/pty", s.ptyGuard(s.createPTY))
	m.HandleFunc("GET /api/pty/{ptyID}", s.ptyGuard(s.getPTY))
	m.HandleFunc("PUT /api/pty/{ptyID}", s.ptyGuard(s.updatePTY))
	m.HandleFunc("DELETE /api/pty/{ptyID}", s.ptyGuard(s.removePTY))
	m.HandleFunc("POST /api/pty/{ptyID}/input", s.ptyGuard(s.inputPTY))
	m.HandleFunc("GET /api/pty/{ptyID}/output", s.ptyGuard(s.ptyOutput))
	m.HandleFunc("GET /api/pty/{ptyID}/connect", s.ptyGuard(s.connectPTY))
}

// ptyMaxFrame bounds one WebSocket input frame.
const ptyMaxFrame = 64 << 10

// ptyChunk bounds the output sent in one frame or event.
const ptyChunk = 32 << 10

// ptyGuard answers 503 without terminals (ServeHTTP has already refused
// browser pages of other origins).
func (s *Server) ptyGuard(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.ptys == nil {
			writeError(w, http.StatusServiceUnavailable, wire.Error{Tag: wire.TagServiceUnavailable, Service: "pty",
				Message: "this server has no terminals (no Locations configured)"})
			return
		}
		h(w, r)
	}
}

func toPTY(in ptys.Info) wire.PTY {
	p := wire.PTY{ID: in.ID, Title: in.Title, Command: in.Command, Args: nonNil(in.Args), Cwd: in.Dir, Status: wire.PTYRunning,
		PID: in.PID, Location: wire.LocationRef{Directory: in.Location}, Size: wire.PTYSize{Rows: int(in.Rows), Cols: int(in.Cols)},
		Offset: in.Offset, Time: wire.PTYTime{Created: millis(in.Created)}}
	if !in.Running {
		code := in.ExitCode
		p.Status, p.ExitCode, p.Signal, p.Error = wire.PTYExited, &code, in.Signal, in.Err
	}
	return p
}

// ptyFail maps a hub error: invalid 400 naming the field, unknown 404,
// exited 409, too many running 429, closed 503.
func (s *Server) ptyFail(w http.ResponseWriter, r *http.Request, id string, err error) {
	var inv *ptys.InvalidError
	switch {
	case errors.As(err, &inv):
		badRequest(w, inv.Field, "invalid", "%s", inv.Message)
	case errors.Is(err, ptys.ErrNotFound):
		writeError(w, http.StatusNotFound, wire.Error{Tag: wire.TagNotFound, Resource: id, Message: fmt.Sprintf("terminal %s not found", id)})
	case errors.Is(err, ptys.ErrExited):
		writeError(w, http.StatusConflict, wire.Error{Tag: wire.TagConflict, Resource: id, Message: err.Error()})
	case errors.Is(err, ptys.ErrTooMany):
		writeError(w, http.StatusTooManyRequests, wire.Error{Tag: wire.TagBacklog, Message: err.Error()})
	case errors.Is(err, ptys.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, wire.Error{Tag: wire.TagServiceUnavailable, Service: "pty", Message: err.Error()})
	default:
		s.fail(w, r, "", err)
	}
}

func ptySize(w http.ResponseWriter, sz *wire.PTYSize) (rows, cols uint16, ok bool) {
	if sz == nil {
		return 0, 0, true
	}
	if sz.Rows < 1 || sz.Rows > 65535 {
		badRequest(w, "size.rows", "range", "size.rows %d: want 1-65535", sz.Rows)
		return 0, 0, false
	}
	if sz.Cols < 1 || sz.Cols > 65535 {
		badRequest(w, "size.cols", "range", "size.cols %d: want 1-65535", sz.Cols)
		return 0, 0, false
	}
	return uint16(sz.Rows), uint16(sz.Cols), true
}

func (s *Server) listPTYs(w http.ResponseWriter, r *http.Request) {
	list := s.ptys.List()
	out := make([]wire.PTY, 0, len(list))
	for _, in := range list {
		out = append(out, toPTY(in))
	}
	writeJSON(w, http.StatusOK, wire.Data[[]wire.PTY]{Data: out})
}

func (s *Server) createPTY(w http.ResponseWriter, r *http.Request) {
	var req wire.CreatePTYRequest
	if !decode(w, r, &req, true) {
		return
	}
	spec := ptys.Spec{Location: s.cfg.DefaultLocation, Dir: req.Cwd, Command: req.Command, Args: req.Args, Env: req.Env, Title: req.Title}
	if req.Location != nil {
		if req.Location.Directory == "" {
			badRequest(w, "location.directory", "required", "location.directory is empty")
			return
		}
		spec.Location = req.Location.Directory
	}
	var ok bool
	if spec.Rows, spec.Cols, ok = ptySize(w, req.Size); !ok {
		return
	}
	in, err := s.ptys.Create(r.Context(), spec)
	if err != nil {
		s.ptyFail(w, r, "", err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Data[wire.PTY]{Data: toPTY(in)})
}

func (s *Server) getPTY(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("ptyID")
	in, err := s.ptys.Get(id)
	if err != nil {
		s.ptyFail(w, r, id, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Data[wire.PTY]{Data: toPTY(in)})
}

func (s *Server) updatePTY(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("ptyID")
	var req wire.UpdatePTYRequest
	if !decode(w, r, &req, false) {
		return
	}
	rows, cols, ok := ptySize(w, req.Size)
	if !ok {
		return
	}
	in, err := s.ptys.Update(id, req.Title, rows, cols)
	if err != nil {
		s.ptyFail(w, r, id, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Data[wire.PTY]{Data: toPTY(in)})
}

func (s *Server) removePTY(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("ptyID")
	in, err := s.ptys.Remove(r.Context(), id)
	if err != nil {
		s.ptyFail(w, r, id, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.Data[wire.PTY]{Data: toPTY(in)})
}

func (s *Server) inputPTY(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("ptyID")
	var req wire.PTYInputRequest
	if !decode(w, r, &req, false) {
		return
	}
	data := []byte(req.Data)
	switch {
	case req.Data != "" && req.Base64 != "":
		badRequest(w, "base64", "exclusive", "send data or base64, not both")
		return
	case req.Base64 != "":
		var err error
		if data, err = base64.StdEncoding.DecodeString(req.Base64); err != nil {
			badRequest(w, "base64", "base64", "base64: %v", err)
			return
		}
	case req.Data == "":
		badRequest(w, "data", "required", "data (or base64) is empty: nothing to type")
		return
	}
	if err := s.ptys.Input(id, data); err != nil {
		s.ptyFail(w, r, id, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// ptyReader opens a reader at ?after (or Last-Event-ID), answering errors.
func (s *Server) ptyReader(w http.ResponseWriter, r *http.Request) (*ptys.Reader, bool) {
	id := r.PathValue("ptyID")
	after, ok := parseOffset(w, "after", r.URL.Query().Get("after"))
	if !ok {
		return nil, false
	}
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		if after, ok = parseOffset(w, "Last-Event-ID", last); !ok {
			return nil, false
		}
	}
	rd, err := s.ptys.Reader(id, after)
	if err != nil {
		s.ptyFail(w, r, id, err)
		return nil, false
	}
	return rd, true
}

func parseOffset(w http.ResponseWriter, field, v string) (int64, bool) {
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		badRequest(w, field, "range", "%s %q: want a byte offset (a whole number ≥ 0)", field, v)
		return 0, false
	}
	return n, true
}

// ptyItem is one step of a reader, fed to a stream's loop by a goroutine
// (Next blocks; the loop also beats and watches for shutdown).
type ptyItem struct {
	chunk ptys.Chunk
	err   error
}

func (s *Server) readPTY(ctx context.Context, rd *ptys.Reader) <-chan ptyItem {
	items := make(chan ptyItem, 1)
	go func() {
		defer close(items)
		for {
			c, err := rd.Next(ctx, ptyChunk)
			select {
			case items <- ptyItem{c, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return items
}

func cutOf(err error) (wire.PTYCut, bool) {
	var cut *ptys.CutError
	if !errors.As(err, &cut) {
		return wire.PTYCut{}, false
	}
	return wire.PTYCut{Message: cut.Error(), Offset: cut.Offset, Start: cut.Start}, true
}

// ptyOutput streams a terminal's output as SSE.
func (s *Server) ptyOutput(w http.ResponseWriter, r *http.Request) {
	rd, ok := s.ptyReader(w, r)
	if !ok {
		return
	}
	ctx, cancel := s.streamContext(r)
	defer cancel()
	items := s.readPTY(ctx, rd)
	st := s.startSSE(w)
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	send := func(id, typ string, v any) error {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if err := st.event(id, wire.Event{ID: messages.NewID("evt"), Type: typ, Data: data}); err != nil {
			return err
		}
		return st.flush()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			if st.comment("ping") != nil || st.flush() != nil {
				return
			}
		case it, open := <-items:
			if !open {
				return
			}
			switch {
			case it.err == nil:
				if send(strconv.FormatInt(it.chunk.End(), 10), wire.EventPTYOutput, wire.PTYOutput{Offset: it.chunk.Offset, Data: it.chunk.Data}) != nil {
					return
				}
			case errors.Is(it.err, io.EOF):
				_ = send("", wire.EventPTYExited, toPTY(rd.Info()))
				return
			default:
				if cut, ok := cutOf(it.err); ok {
					_ = send("", wire.EventCut, cut)
				}
				return
			}
		}
	}
}

// connectPTY serves the WebSocket: input frames in, output frames out,
// and a ping every Config.PTYPing. A client that sends nothing for two
// intervals (browsers and x/net answer pings by themselves, so only a dead
// or stuck client does) is disconnected; the terminal keeps running and a
// new connection resumes at its offset.
func (s *Server) connectPTY(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		badRequest(w, "Upgrade", "websocket", "GET /api/pty/{id}/connect is a WebSocket: send Upgrade: websocket (or read GET /api/pty/{id}/output as SSE)")
		return
	}
	rd, ok := s.ptyReader(w, r)
	if !ok {
		return
	}
	id := r.PathValue("ptyID")
	ws := websocket.Server{
		// ptyGuard checked the origin; x/net's default would refuse clients
		// that send none.
		Handshake: func(*websocket.Config, *http.Request) error { return nil },
		Handler: func(conn *websocket.Conn) {
			defer conn.Close()
			conn.MaxPayloadBytes = ptyMaxFrame
			ctx, cancel := s.streamContext(r)
			defer cancel()
			go s.ptyInput(conn, id, cancel)
			s.ptyWrite(ctx, conn, rd)
			// Close writes a close frame: bound it too.
			_ = conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		},
	}
	ws.ServeHTTP(liveWriter{w, 2 * s.cfg.PTYPing}, r)
}

// ptyInput types every frame, text or binary, as it is, until the client
// leaves or falls silent past the read deadline liveConn keeps.
func (s *Server) ptyInput(conn *websocket.Conn, id string, cancel context.CancelFunc) {
	defer cancel()
	for {
		var msg []byte
		if err := websocket.Message.Receive(conn, &msg); err != nil {
			return
		}
		if len(msg) == 0 {
			continue
		}
		// Typing into an exited terminal is dropped: the output side
		// still sends the exit.
		_ = s.ptys.Input(id, msg)
	}
}

// pingFrame sends an empty ping control frame (x/net has no ping call,
// but its Codec writes any frame type).
var pingFrame = websocket.Codec{Marshal: func(any) ([]byte, byte, error) { return nil, websocket.PingFrame, nil }}

// ptyWrite is the connection's only writer: output, pings while it is
// idle or not, and the closing control frame. Every write has
// Config.WriteTimeout, so a client that stops reading is dropped within
// it once its buffers are full.
func (s *Server) ptyWrite(ctx context.Context, conn *websocket.Conn, rd *ptys.Reader) {
	send := func(c websocket.Codec, v any) error {
		_ = conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		return c.Send(conn, v)
	}
	control := func(c wire.PTYControl) {
		b, _ := json.Marshal(c)
		_ = send(websocket.Message, string(b))
	}
	ping := time.NewTicker(s.cfg.PTYPing)
	defer ping.Stop()
	items := s.readPTY(ctx, rd)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ping.C:
			if send(pingFrame, nil) != nil {
				return
			}
		case it, open := <-items:
			switch {
			case !open:
				return
			case it.err == nil:
				if send(websocket.Message, it.chunk.Data) != nil {
					return
				}
			case errors.Is(it.err, io.EOF):
				p := toPTY(rd.Info())
				control(wire.PTYControl{Type: wire.EventPTYExited, PTY: &p})
				return
			default:
				if cut, ok := cutOf(it.err); ok {
					control(wire.PTYControl{Type: wire.EventCut, Cut: &cut})
				}
				return
			}
		}
	}
}

// liveWriter hands x/net a hijacked connection whose read deadline moves
// idle ahead at every byte the client sends. x/net answers and swallows
// pongs inside Receive, so the handler never sees them; the deadline is
// how a pong keeps the connection, and how silence fails the pending
// Receive (which ends the connection).
type liveWriter struct {
	http.ResponseWriter
	idle time.Duration
}

func (w liveWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, buf, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	lc := &liveConn{Conn: conn, r: buf.Reader, idle: w.idle}
	_ = conn.SetReadDeadline(time.Now().Add(w.idle))
	return lc, bufio.NewReadWriter(bufio.NewReader(lc), buf.Writer), nil
}

// liveConn reads through the hijacked reader (it may hold bytes already
// received) and extends the read deadline whenever bytes arrive.
type liveConn struct {
	net.Conn
	r    io.Reader
	idle time.Duration
}

func (c *liveConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		_ = c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	}
	return n, err
}
