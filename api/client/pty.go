package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"unicode/utf8"

	"golang.org/x/net/websocket"

	"github.com/sessionrt/sessionrt/api/wire"
)

func ptyPath(id string, rest ...string) string {
	return "/api/pty" + path(append([]string{id}, rest...)...)
}

// CreatePTY starts a terminal on the server.
func (c *Client) CreatePTY(ctx context.Context, req wire.CreatePTYRequest) (wire.PTY, error) {
	var out wire.Data[wire.PTY]
	err := c.do(ctx, http.MethodPost, "/api/pty", nil, req, &out)
	return out.Data, err
}

// PTYs lists the server's terminals, oldest first (exited ones too, until removed).
func (c *Client) PTYs(ctx context.Context) ([]wire.PTY, error) {
	var out wire.Data[[]wire.PTY]
	err := c.do(ctx, http.MethodGet, "/api/pty", nil, nil, &out)
	return out.Data, err
}

// PTY reads one terminal.
func (c *Client) PTY(ctx context.Context, id string) (wire.PTY, error) {
	var out wire.Data[wire.PTY]
	err := c.do(ctx, http.MethodGet, ptyPath(id), nil, nil, &out)
	return out.Data, err
}

// UpdatePTY retitles and/or resizes a terminal.
func (c *Client) UpdatePTY(ctx context.Context, id string, req wire.UpdatePTYRequest) (wire.PTY, error) {
	var out wire.Data[wire.PTY]
	err := c.do(ctx, http.MethodPut, ptyPath(id), nil, req, &out)
	return out.Data, err
}

// ResizePTY changes a terminal's size; input sent after it returns sees
// the new size.
func (c *Client) ResizePTY(ctx context.Context, id string, rows, cols int) (wire.PTY, error) {
	return c.UpdatePTY(ctx, id, wire.UpdatePTYRequest{Size: &wire.PTYSize{Rows: rows, Cols: cols}})
}

// RemovePTY kills a terminal (every process of it) and returns its final
// state; the program has been reaped when it returns.
func (c *Client) RemovePTY(ctx context.Context, id string) (wire.PTY, error) {
	var out wire.Data[wire.PTY]
	err := c.do(ctx, http.MethodDelete, ptyPath(id), nil, nil, &out)
	return out.Data, err
}

// InputPTY types bytes into a terminal (sent as text when they are UTF-8,
// else as base64).
func (c *Client) InputPTY(ctx context.Context, id string, data []byte) error {
	req := wire.PTYInputRequest{Base64: base64.StdEncoding.EncodeToString(data)}
	if utf8.Valid(data) {
		req = wire.PTYInputRequest{Data: string(data)}
	}
	return c.do(ctx, http.MethodPost, ptyPath(id, "input"), nil, req, nil)
}

// PTYOutput opens a terminal's output as SSE from byte offset after:
// "pty.output" events (wire.PTYOutput, SSE id = the offset after them),
// then "pty.exited" (wire.PTY) when the program ended, or "server.cut"
// (wire.PTYCut) when this reader fell behind.
func (c *Client) PTYOutput(ctx context.Context, id string, after int64) (*Stream, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	return c.stream(ctx, ptyPath(id, "output"), q, "")
}

// PTYConn is a terminal's WebSocket: Write types, Next reads. Write and
// Next may run concurrently with each other; Close from any goroutine.
type PTYConn struct {
	ws   *websocket.Conn
	wmu  sync.Mutex
	stop func() bool
}

// ConnectPTY opens a terminal's WebSocket, reading output from byte offset
// after. The connection ends with ctx.
func (c *Client) ConnectPTY(ctx context.Context, id string, after int64) (*PTYConn, error) {
	u := *c.base
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	u.Path = c.base.Path + ptyPath(id, "connect")
	if after > 0 {
		u.RawQuery = url.Values{"after": {strconv.FormatInt(after, 10)}}.Encode()
	}
	// The origin is the server itself: the server refuses other origins.
	cfg, err := websocket.NewConfig(u.String(), c.base.String())
	if err != nil {
		return nil, fmt.Errorf("connect terminal %s: %w", id, err)
	}
	if c.token != "" {
		cfg.Header.Set("Authorization", "Bearer "+c.token)
	}
	ws, err := cfg.DialContext(ctx)
	if err != nil {
		// The handshake hides the server's answer; ask for it plainly.
		if _, perr := c.PTY(ctx, id); perr != nil {
			return nil, perr
		}
		return nil, fmt.Errorf("connect terminal %s: %w", id, err)
	}
	ws.MaxPayloadBytes = 1 << 20
	return &PTYConn{ws: ws, stop: context.AfterFunc(ctx, func() { ws.Close() })}, nil
}

// Write types p into the terminal (one binary frame).
func (p *PTYConn) Write(b []byte) (int, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if err := websocket.Message.Send(p.ws, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// PTYFrame is one frame from the server: output, or a control message
// (Control.Type is wire.EventPTYExited or wire.EventCut).
type PTYFrame struct {
	Output  []byte
	Control *wire.PTYControl
}

var frameCodec = websocket.Codec{
	Marshal: nil,
	Unmarshal: func(data []byte, payloadType byte, v any) error {
		f := v.(*PTYFrame)
		if payloadType != websocket.TextFrame {
			f.Output = data
			return nil
		}
		var c wire.PTYControl
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("terminal control frame %q: %w", data, err)
		}
		f.Control = &c
		return nil
	},
}

// Next returns the next frame. After an exited or cut control frame the
// server closes the connection; Next then fails.
func (p *PTYConn) Next() (PTYFrame, error) {
	var f PTYFrame
	err := frameCodec.Receive(p.ws, &f)
	return f, err
}

// Close ends the connection (the terminal keeps running).
func (p *PTYConn) Close() error {
	p.stop()
	err := p.ws.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
