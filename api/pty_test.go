package api_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/api"
	"github.com/sessionrt/sessionrt/api/apitest"
	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
)

// processGone reports whether no process (not even a zombie) has the pid.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// wsScreen reads a terminal's WebSocket until its output matches.
type wsScreen struct {
	t    *testing.T
	conn *client.PTYConn
	out  strings.Builder
	ctl  *wire.PTYControl
}

func (s *wsScreen) waitFor(re *regexp.Regexp) string {
	s.t.Helper()
	for {
		if m := re.FindStringSubmatch(s.out.String()); m != nil {
			s.out.Reset() // the next wait looks at new output only
			return m[len(m)-1]
		}
		f, err := s.conn.Next()
		if err != nil {
			s.t.Fatalf("waiting for %s: %v; output so far:\n%s", re, err, s.out.String())
		}
		if f.Control != nil {
			s.ctl = f.Control
			s.t.Fatalf("waiting for %s: control frame %+v; output so far:\n%s", re, *f.Control, s.out.String())
		}
		s.out.Write(f.Output)
	}
}

func createPTY(t *testing.T, c *client.Client, req wire.CreatePTYRequest) wire.PTY {
	t.Helper()
	p, err := c.CreatePTY(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != wire.PTYRunning || p.PID == 0 || !strings.HasPrefix(p.ID, "pty_") {
		t.Fatalf("created %+v", p)
	}
	return p
}

func TestPTYWebSocketEchoResizeRemove(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	ctx := ctxT(t)
	p := createPTY(t, c, wire.CreatePTYRequest{Command: "/bin/sh", Env: map[string]string{"GREETING": "hi"}, Size: &wire.PTYSize{Rows: 24, Cols: 80}})
	if p.Cwd != rt.Loc && !strings.HasSuffix(p.Cwd, rt.Loc) || p.Size != (wire.PTYSize{Rows: 24, Cols: 80}) {
		t.Fatalf("created %+v, want cwd %s and 24×80", p, rt.Loc)
	}
	conn, err := c.ConnectPTY(ctx, p.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	scr := &wsScreen{t: t, conn: conn}

	if _, err := conn.Write([]byte("echo \"<$GREETING>\"\n")); err != nil {
		t.Fatal(err)
	}
	// Not anchored at a line start: under load the shell may print its
	// prompt after the terminal echoed the typed-ahead line ("# <hi>").
	scr.waitFor(regexp.MustCompile(`<hi>`))

	if p, err = c.ResizePTY(ctx, p.ID, 40, 100); err != nil || p.Size != (wire.PTYSize{Rows: 40, Cols: 100}) {
		t.Fatalf("resize: %+v, %v", p, err)
	}
	if _, err := conn.Write([]byte("stty size\n")); err != nil {
		t.Fatal(err)
	}
	scr.waitFor(regexp.MustCompile(`40 100\r?\n`))

	// The listing shows it; removing kills and reaps the shell.
	list, err := c.PTYs(ctx)
	if err != nil || len(list) != 1 || list[0].ID != p.ID || list[0].Offset == 0 {
		t.Fatalf("list %+v, %v", list, err)
	}
	if processGone(p.PID) {
		t.Fatal("shell not running before remove")
	}
	final, err := c.RemovePTY(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if final.Status != wire.PTYExited || final.ExitCode == nil || *final.ExitCode != -1 {
		t.Fatalf("removed %+v, want exited by a signal", final)
	}
	if !processGone(p.PID) {
		t.Fatalf("shell %d still exists after DELETE returned", p.PID)
	}
	// The socket ends with the exit.
	for {
		f, err := conn.Next()
		if err != nil {
			break // closed by the server after the control frame
		}
		if f.Control != nil {
			if f.Control.Type != wire.EventPTYExited || f.Control.PTY == nil || f.Control.PTY.Status != wire.PTYExited {
				t.Fatalf("control frame %+v", *f.Control)
			}
		}
	}
	if _, err := c.PTY(ctx, p.ID); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("GET after DELETE: %v, want 404", err)
	}
}

func TestPTYSSEOutputResumesByOffsetAndEndsWithExit(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	ctx := ctxT(t)
	p := createPTY(t, c, wire.CreatePTYRequest{Command: "/bin/sh", Title: "sse"})
	st, err := c.PTYOutput(ctx, p.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := c.InputPTY(ctx, p.ID, []byte("echo sse-$((40+2))\n")); err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	var lastID string
	next := int64(0)
	for !strings.Contains(seen.String(), "sse-42") {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("stream: %v after %q", err, seen.String())
		}
		if ev.Name != wire.EventPTYOutput {
			t.Fatalf("event %s before the echo", ev.Name)
		}
		var o wire.PTYOutput
		if err := json.Unmarshal(ev.Event.Data, &o); err != nil {
			t.Fatal(err)
		}
		if o.Offset != next {
			t.Fatalf("chunk at offset %d, want %d (no gap, no overlap)", o.Offset, next)
		}
		next = o.Offset + int64(len(o.Data))
		if lastID = ev.ID; lastID != strconv.FormatInt(next, 10) {
			t.Fatalf("SSE id %s, want the end offset %d", ev.ID, next)
		}
		seen.Write(o.Data)
	}
	st.Close()

	// A second reader resumes where the first stopped, and sees the exit.
	st2, err := c.PTYOutput(ctx, p.ID, next)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if err := c.InputPTY(ctx, p.ID, []byte("exit 3\n")); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := st2.Next()
		if err != nil {
			t.Fatalf("stream ended without pty.exited: %v", err)
		}
		if ev.Name == wire.EventPTYOutput {
			var o wire.PTYOutput
			_ = json.Unmarshal(ev.Event.Data, &o)
			if o.Offset != next {
				t.Fatalf("resumed chunk at %d, want %d", o.Offset, next)
			}
			next += int64(len(o.Data))
			continue
		}
		if ev.Name != wire.EventPTYExited {
			t.Fatalf("event %s", ev.Name)
		}
		var fin wire.PTY
		if err := json.Unmarshal(ev.Event.Data, &fin); err != nil {
			t.Fatal(err)
		}
		if fin.Status != wire.PTYExited || fin.ExitCode == nil || *fin.ExitCode != 3 || fin.Title != "sse" || fin.Offset != next {
			t.Fatalf("exit %+v (offset want %d)", fin, next)
		}
		break
	}
	if _, err := st2.Next(); err != io.EOF {
		t.Fatalf("after pty.exited: %v, want the end of the stream", err)
	}
	// Exited terminals stay listed until removed; typing into one is a conflict.
	if err := c.InputPTY(ctx, p.ID, []byte("x")); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("input after exit: %v, want 409", err)
	}
	if got, err := c.PTY(ctx, p.ID); err != nil || got.Status != wire.PTYExited {
		t.Fatalf("exited terminal: %+v, %v", got, err)
	}
}

func TestPTYServerCloseKillsTerminals(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{})
	c := newClient(t, rt)
	a := createPTY(t, c, wire.CreatePTYRequest{Command: "sleep", Args: []string{"300"}})
	b := createPTY(t, c, wire.CreatePTYRequest{Command: "/bin/sh"})
	rt.API.Close()
	for _, p := range []wire.PTY{a, b} {
		if !processGone(p.PID) {
			t.Fatalf("terminal %s (pid %d) survived the server's Close", p.ID, p.PID)
		}
	}
	if _, err := c.CreatePTY(ctxT(t), wire.CreatePTYRequest{}); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("create after Close: %v, want 503", err)
	}
}

func TestPTYBadRequests(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{API: func(c *api.Config) { c.MaxBodyBytes = 4 << 10 }})
	c := newClient(t, rt)
	p := createPTY(t, c, wire.CreatePTYRequest{Command: "/bin/sh"})
	defer c.RemovePTY(ctxT(t), p.ID)
	big := `{"data":"` + strings.Repeat("x", 8<<10) + `"}`
	for _, tc := range []struct {
		method, path, body string
		status             int
		field              string
	}{
		{"POST", "/api/pty", `{"shell":"/bin/sh"}`, 400, "shell"},
		{"POST", "/api/pty", `{"command":1}`, 400, "command"},
		{"POST", "/api/pty", `{"size":{"rows":0,"cols":80}}`, 400, "size.rows"},
		{"POST", "/api/pty", `{"size":{"rows":10,"cols":70000}}`, 400, "size.cols"},
		{"POST", "/api/pty", `{"size":{"rows":"10","cols":80}}`, 400, "size.rows"},
		{"POST", "/api/pty", `{"command":"no-such-command-xyz"}`, 400, "command"},
		{"POST", "/api/pty", `{"cwd":"no/such/dir"}`, 400, "cwd"},
		{"POST", "/api/pty", `{"location":{"directory":"/no/such/dir"}}`, 400, "location"},
		{"POST", "/api/pty", `{"env":{"A=B":"x"}}`, 400, "env"},
		{"POST", "/api/pty", `{"args":["a"]} {}`, 400, ""},
		{"PUT", "/api/pty/" + p.ID, `{"size":{"rows":10}}`, 400, "size.cols"},
		{"PUT", "/api/pty/" + p.ID, ``, 400, ""},
		{"POST", "/api/pty/" + p.ID + "/input", `{}`, 400, "data"},
		{"POST", "/api/pty/" + p.ID + "/input", `{"data":"a","base64":"YQ=="}`, 400, "base64"},
		{"POST", "/api/pty/" + p.ID + "/input", `{"base64":"%%%"}`, 400, "base64"},
		{"POST", "/api/pty/" + p.ID + "/input", big, 413, ""},
		{"GET", "/api/pty/" + p.ID + "/output?after=-1", ``, 400, "after"},
		{"GET", "/api/pty/" + p.ID + "/output?after=999999999", ``, 400, "after"},
		{"GET", "/api/pty/" + p.ID + "/connect", ``, 400, "Upgrade"},
		{"GET", "/api/pty/pty_nope", ``, 404, ""},
		{"PUT", "/api/pty/pty_nope", `{"title":"x"}`, 404, ""},
		{"DELETE", "/api/pty/pty_nope", ``, 404, ""},
		{"POST", "/api/pty/pty_nope/input", `{"data":"x"}`, 404, ""},
		{"GET", "/api/pty/pty_nope/output", ``, 404, ""},
	} {
		status, e := raw(t, rt, tc.method, tc.path, tc.body, false)
		if status != tc.status || e.Field != tc.field {
			t.Errorf("%s %s %.60s: %d field %q (%s), want %d field %q", tc.method, tc.path, tc.body, status, e.Field, e.Message, tc.status, tc.field)
		}
	}
	if status, _ := raw(t, rt, "GET", "/api/pty", "", true); status != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", status)
	}
	// A browser page of another origin cannot reach a terminal.
	req, _ := http.NewRequestWithContext(ctxT(t), "POST", rt.URL+"/api/pty/"+p.ID+"/input", strings.NewReader(`{"data":"x"}`))
	req.Header.Set("Authorization", "Bearer "+rt.Token)
	req.Header.Set("Origin", "http://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin input: %d, want 403", resp.StatusCode)
	}
	// A WebSocket frame over the limit ends the connection, not the terminal.
	conn, err := c.ConnectPTY(ctxT(t), p.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(make([]byte, 100<<10)); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := conn.Next(); err != nil {
			break
		}
	}
	conn.Close()
	if got, err := c.PTY(ctxT(t), p.ID); err != nil || got.Status != wire.PTYRunning {
		t.Errorf("after an oversized frame: %+v, %v; want the terminal running", got, err)
	}
	// The WebSocket needs the token too, and names an unknown terminal.
	noTok, _ := client.New(client.Config{BaseURL: rt.URL})
	if _, err := noTok.ConnectPTY(ctxT(t), p.ID, 0); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("connect without token: %v, want 401", err)
	}
	if _, err := c.ConnectPTY(ctxT(t), "pty_nope", 0); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("connect to an unknown terminal: %v, want 404", err)
	}
}

func TestPTYRoutesWithoutLocationsAnswer503(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{API: func(c *api.Config) { c.Locations = nil }})
	if status, e := raw(t, rt, "GET", "/api/pty", "", false); status != http.StatusServiceUnavailable || e.Service != "pty" {
		t.Fatalf("%d %+v, want 503 naming pty", status, e)
	}
}

// BenchmarkPTYWebSocketOutput: bytes a terminal program writes, read over
// the WebSocket (MB/s is terminal output end to end: PTY, actor, scrollback,
// frames).
//
// The scrollback holds the whole output: with the default 256 KiB, a
// program writing flat out (head -c of /dev/zero) outruns even a reader
// reading at full speed and the reader is cut, by design.
func BenchmarkPTYWebSocketOutput(b *testing.B) {
	const size = 8 << 20
	rt := apitest.Start(b, apitest.Options{API: func(c *api.Config) { c.PTYScrollback = 2 * size }})
	c, _ := client.New(client.Config{BaseURL: rt.URL, Token: rt.Token})
	ctx := context.Background()
	b.SetBytes(size)
	for b.Loop() {
		p, err := c.CreatePTY(ctx, wire.CreatePTYRequest{Command: "/bin/sh", Args: []string{"-c", "stty raw -echo; head -c " + strconv.Itoa(size) + " /dev/zero"}})
		if err != nil {
			b.Fatal(err)
		}
		conn, err := c.ConnectPTY(ctx, p.ID, 0)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			f, err := conn.Next()
			if err != nil {
				b.Fatal(err)
			}
			if f.Control != nil {
				if f.Control.Type != wire.EventPTYExited {
					b.Fatalf("control %+v after %d bytes", *f.Control, n)
				}
				break
			}
			n += len(f.Output)
		}
		conn.Close()
		if n < size {
			b.Fatalf("read %d bytes, want %d", n, size)
		}
		_, _ = c.RemovePTY(ctx, p.ID)
	}
}

// BenchmarkPTYKeystrokeEcho: one key typed over the WebSocket until its
// echo comes back (ns/op is the interactive round trip).
func BenchmarkPTYKeystrokeEcho(b *testing.B) {
	rt := apitest.Start(b, apitest.Options{})
	c, _ := client.New(client.Config{BaseURL: rt.URL, Token: rt.Token})
	ctx := context.Background()
	p, err := c.CreatePTY(ctx, wire.CreatePTYRequest{Command: "/bin/sh", Args: []string{"-c", "stty raw -echo; echo ready; exec cat"}})
	if err != nil {
		b.Fatal(err)
	}
	conn, err := c.ConnectPTY(ctx, p.ID, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	var seen strings.Builder
	for !strings.Contains(seen.String(), "ready") {
		f, err := conn.Next()
		if err != nil {
			b.Fatal(err)
		}
		seen.Write(f.Output)
	}
	for b.Loop() {
		if _, err := conn.Write([]byte("x")); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < 1; {
			f, err := conn.Next()
			if err != nil {
				b.Fatal(err)
			}
			got += len(f.Output)
		}
	}
}

// rawWS is a hand-rolled WebSocket client: x/net's hides control frames,
// and these tests count pings and choose whether to answer them.
type rawWS struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
	out  strings.Builder // binary frames read
	n    int64           // bytes of output read
	pong bool            // answer pings
}

func dialRaw(t *testing.T, rt *apitest.Runtime, id string, after int64, pong bool) *rawWS {
	t.Helper()
	u, _ := url.Parse(rt.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// Bounded waits: a test that would hang fails instead.
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/pty/%s/connect?after=%d", rt.URL, id, after), nil)
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Sec-WebSocket-Key", base64.StdEncoding.EncodeToString(key))
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Authorization", "Bearer "+rt.Token)
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %s", resp.Status)
	}
	return &rawWS{t: t, conn: conn, br: br, pong: pong}
}

// frame reads the next frame: its opcode and payload (the server does not mask).
func (w *rawWS) frame() (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(w.br, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(w.br, b[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(w.br, b[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	p := make([]byte, n)
	_, err := io.ReadFull(w.br, p)
	return h[0] & 0x0f, p, err
}

// send writes one masked frame (clients must mask), payload under 126 bytes.
func (w *rawWS) send(op byte, p []byte) error {
	mask := [4]byte{1, 2, 3, 4}
	b := append([]byte{0x80 | op, 0x80 | byte(len(p))}, mask[:]...)
	for i, c := range p {
		b = append(b, c^mask[i%4])
	}
	_, err := w.conn.Write(b)
	return err
}

// next reads frames until a ping (true) or until output matches re
// (false), keeping the output; it fails the test at the end of the stream.
func (w *rawWS) next(re *regexp.Regexp) bool {
	w.t.Helper()
	for {
		if re != nil && re.MatchString(w.out.String()) {
			w.out.Reset()
			return false
		}
		op, p, err := w.frame()
		if err != nil {
			w.t.Fatalf("connection ended (%v); output so far:\n%s", err, w.out.String())
		}
		switch op {
		case 0x9:
			if w.pong {
				if err := w.send(0xA, p); err != nil {
					w.t.Fatal(err)
				}
			}
			return true
		case 0x2:
			w.out.Write(p)
			w.n += int64(len(p))
		case 0x8:
			w.t.Fatalf("close frame; output so far:\n%s", w.out.String())
		}
	}
}

// The WebSocket pings an idle terminal's client, pongs keep it connected
// past the silence bound (two intervals), and x/net's client answers them
// by itself.
func TestPTYWebSocketPingsIdleClients(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{API: func(c *api.Config) { c.PTYPing = 200 * time.Millisecond }})
	c := newClient(t, rt)
	p := createPTY(t, c, wire.CreatePTYRequest{Command: "/bin/sh"})
	defer c.RemovePTY(ctxT(t), p.ID)
	conn, err := c.ConnectPTY(ctxT(t), p.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// x/net answers pings inside Next: keep one pending through the idle time.
	echoed := make(chan error, 1)
	go func() {
		_, err := readOutput(conn, "ka-42")
		echoed <- err
	}()
	raw := dialRaw(t, rt, p.ID, 0, true)
	for pings := 0; pings < 4; {
		if raw.next(nil) {
			pings++
		}
	}
	// Four intervals idle: both connections outlived the silence bound.
	if err := c.InputPTY(ctxT(t), p.ID, []byte("echo ka-$((40+2))\n")); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`ka-42`)
	for raw.next(re) {
	}
	if err := <-echoed; err != nil { // ConnectPTY's ctx bounds the wait
		t.Fatalf("x/net client: %v", err)
	}
}

// readOutput reads output until it contains want, returning all of it.
func readOutput(conn *client.PTYConn, want string) (string, error) {
	var out strings.Builder
	for !strings.Contains(out.String(), want) {
		f, err := conn.Next()
		if err != nil {
			return out.String(), fmt.Errorf("waiting for %q: %w; output so far:\n%s", want, err, out.String())
		}
		if f.Control != nil {
			return out.String(), fmt.Errorf("waiting for %q: control frame %+v", want, *f.Control)
		}
		out.Write(f.Output)
	}
	return out.String(), nil
}

// A client that answers nothing is disconnected within the bound; the
// terminal keeps running and a new connection resumes its output.
func TestPTYWebSocketDropsSilentClientKeepsTerminal(t *testing.T) {
	rt := apitest.Start(t, apitest.Options{API: func(c *api.Config) { c.PTYPing = 50 * time.Millisecond }})
	c := newClient(t, rt)
	p := createPTY(t, c, wire.CreatePTYRequest{Command: "/bin/sh"})
	defer c.RemovePTY(ctxT(t), p.ID)
	// The client answers pings until it has read the first output (a
	// loaded machine may take several 50 ms pings to echo it), then falls
	// silent.
	raw := dialRaw(t, rt, p.ID, 0, true)
	if err := c.InputPTY(ctxT(t), p.ID, []byte("echo before-$((1+1))\n")); err != nil {
		t.Fatal(err)
	}
	for raw.next(regexp.MustCompile(`before-2\r?\n`)) {
	}
	raw.pong = false
	// Now silent: pings arrive unanswered until the server closes (the
	// dial's 30 s deadline fails the test if it never does).
	pings := 0
	for {
		op, _, err := raw.frame()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the server kept a silent client for 30 s (%d pings)", pings)
		}
		if err != nil || op == 0x8 {
			break
		}
		if op == 0x9 {
			pings++
		}
	}
	if pings == 0 {
		t.Fatal("closed without a ping")
	}
	got, err := c.PTY(ctxT(t), p.ID)
	if err != nil || got.Status != wire.PTYRunning {
		t.Fatalf("after the drop: %+v, %v; want the terminal running", got, err)
	}
	if err := c.InputPTY(ctxT(t), p.ID, []byte("echo after-$((2+2))\n")); err != nil {
		t.Fatal(err)
	}
	// Resume where the dropped client stopped: only new output follows.
	conn, err := c.ConnectPTY(ctxT(t), p.ID, raw.n)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	out, err := readOutput(conn, "after-4")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "before-2") {
		t.Fatalf("resumed output repeats what the dropped client read:\n%s", out)
	}
}
