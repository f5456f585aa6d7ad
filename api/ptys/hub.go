package ptys

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/supervisor"
	"github.com/sessionrt/sessionrt/toolactors/pty"
)

// Errors callers branch on with errors.Is.
var (
	ErrNotFound = errors.New("no such terminal")
	ErrExited   = errors.New("the terminal has exited")
	ErrClosed   = errors.New("the terminal hub is closed (server shutting down)")
	ErrCut      = errors.New("reader fell behind the terminal's scrollback")
	ErrTooMany  = errors.New("too many running terminals: remove one first")
)

// InvalidError is a bad Spec: Field names what is wrong.
type InvalidError struct {
	Field, Message string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

// CutError says a reader lost output: the bytes from Offset to Start were
// dropped from the scrollback before it read them.
type CutError struct {
	Offset, Start int64
}

func (e *CutError) Error() string {
	return fmt.Sprintf("terminal output from offset %d was dropped before it was read (the scrollback now starts at %d)", e.Offset, e.Start)
}

func (e *CutError) Is(target error) bool { return target == ErrCut }

// Config configures New. Locations is required.
type Config struct {
	// Locations supervises the PTY actors (one Location per directory).
	Locations *supervisor.Locations
	// Overlay is the host's PTY environment overlay; nil means none.
	Overlay pty.EnvOverlay
	// Scrollback is the output kept per terminal, in bytes; default 256 KiB.
	Scrollback int
	// KeepExited bounds the exited terminals kept for their exit status;
	// default 32 (the oldest go first).
	KeepExited int
	// MaxRunning bounds the running terminals; Create refuses more
	// (ErrTooMany). Default 128.
	MaxRunning int
	// Timeout bounds each wait on a PTY actor (start, stop); default 10 s.
	Timeout time.Duration
	// Logger receives diagnostics; default discards.
	Logger *slog.Logger
}

// Spec describes a terminal to create. Location is required.
type Spec struct {
	// Location is the directory whose Location supervisor owns the PTY.
	Location string
	// Dir is the working directory, absolute or relative to Location;
	// default Location.
	Dir string
	// Command runs in the terminal, with Args; default $SHELL, else /bin/sh.
	Command string
	Args    []string
	// Env are the caller's environment values (the host overlay and the
	// forced TERM override them).
	Env   map[string]string
	Title string
	// Rows and Cols are the initial size; default 24×80.
	Rows, Cols uint16
}

// Info describes a terminal.
type Info struct {
	ID       string
	Title    string
	Command  string
	Args     []string
	Location string // canonical Location directory
	Dir      string // working directory
	PID      int    // the program's process (0 if it never started)
	Rows     uint16
	Cols     uint16
	Created  time.Time
	// Offset is how many bytes of output the terminal has produced.
	Offset int64
	// Running is false once the program exited or was killed; then
	// ExitCode (-1 when killed by a signal), Signal and Err say how.
	Running  bool
	ExitCode int
	Signal   string
	Err      string
}

// Hub owns the server's terminals. It is safe for concurrent use.
type Hub struct {
	cfg Config
	sys *actor.ActorSystem

	mu       sync.Mutex
	terms    map[string]*terminal
	exited   []string // IDs of exited terminals, oldest first
	starting int      // Creates between the MaxRunning check and registration
	closed   bool
}

// New returns an empty hub.
func New(cfg Config) (*Hub, error) {
	if cfg.Locations == nil {
		return nil, errors.New("ptys: Config.Locations is required")
	}
	if cfg.Scrollback <= 0 {
		cfg.Scrollback = 256 << 10
	}
	if cfg.KeepExited <= 0 {
		cfg.KeepExited = 32
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = 128
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Hub{cfg: cfg, sys: cfg.Locations.System(), terms: map[string]*terminal{}}, nil
}

// terminal is one PTY and its output.
type terminal struct {
	hub   *Hub
	actor *actor.PID // the PTY actor
	fwd   *actor.PID // receives the actor's Output and Exited

	retired bool // on the hub's exited list; guarded by Hub.mu

	mu      sync.Mutex
	info    Info
	sb      *scrollback
	changed chan struct{} // closed and replaced at each write and at exit
	done    chan struct{} // closed at exit
}

func (t *terminal) snapshot() Info {
	t.mu.Lock()
	defer t.mu.Unlock()
	in := t.info
	in.Args = slices.Clone(in.Args)
	in.Offset = t.sb.end
	return in
}

// receive is the forwarder actor's behaviour: the PTY actor's messages
// into the scrollback. It never blocks.
func (t *terminal) receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *pty.Output:
		t.mu.Lock()
		t.sb.write(m.Data)
		close(t.changed)
		t.changed = make(chan struct{})
		t.mu.Unlock()
	case *pty.Exited:
		t.exit(m)
		c.Stop(c.Self())
	}
}

// exit records how the terminal ended (once) and wakes its readers.
func (t *terminal) exit(m *pty.Exited) {
	t.mu.Lock()
	select {
	case <-t.done:
		t.mu.Unlock()
		return
	default:
	}
	t.info.Running = false
	t.info.ExitCode, t.info.Signal, t.info.Err = m.ExitCode, m.Signal, m.Err
	if m.PID != 0 {
		t.info.PID = m.PID
	}
	close(t.done)
	close(t.changed)
	t.changed = make(chan struct{})
	t.mu.Unlock()
	t.hub.retire(t)
}

// retire moves an exited terminal to the exited list, dropping the oldest
// exited terminals beyond KeepExited.
func (h *Hub) retire(t *terminal) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.terms[t.info.ID] != t {
		return // not registered yet (Create retires it) or removed
	}
	h.retireLocked(t)
}

func (h *Hub) retireLocked(t *terminal) {
	if t.retired {
		return
	}
	t.retired = true
	h.exited = append(h.exited, t.info.ID)
	for len(h.exited) > h.cfg.KeepExited {
		delete(h.terms, h.exited[0])
		h.exited = h.exited[1:]
	}
}

// resolve checks a Spec and fills in its defaults.
func resolve(s Spec) (Spec, error) {
	if s.Location == "" {
		return s, &InvalidError{"location", "a Location directory is required"}
	}
	loc, err := supervisor.Canonical(s.Location)
	if err != nil {
		return s, &InvalidError{"location", err.Error()}
	}
	s.Location = loc
	switch {
	case s.Dir == "":
		s.Dir = loc
	case !filepath.IsAbs(s.Dir):
		s.Dir = filepath.Join(loc, s.Dir)
	}
	if fi, err := os.Stat(s.Dir); err != nil || !fi.IsDir() {
		return s, &InvalidError{"cwd", fmt.Sprintf("working directory %q does not exist or is not a directory", s.Dir)}
	}
	if s.Command == "" {
		s.Command = os.Getenv("SHELL")
	}
	if s.Command == "" {
		s.Command = "/bin/sh"
	}
	if strings.ContainsRune(s.Command, '/') {
		if !filepath.IsAbs(s.Command) {
			s.Command = filepath.Join(s.Dir, s.Command)
		}
		if fi, err := os.Stat(s.Command); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return s, &InvalidError{"command", fmt.Sprintf("%q is not an executable file", s.Command)}
		}
	} else if p, err := exec.LookPath(s.Command); err != nil {
		return s, &InvalidError{"command", fmt.Sprintf("%q not found in the server's PATH", s.Command)}
	} else {
		s.Command = p
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return s, &InvalidError{"env", fmt.Sprintf("environment name %q: want a non-empty name without '=' or NUL", k)}
		}
	}
	if s.Rows == 0 {
		s.Rows = 24
	}
	if s.Cols == 0 {
		s.Cols = 80
	}
	return s, nil
}

// Create starts a terminal and returns once its program runs (or, for a
// program that ended at once, has ended).
func (h *Hub) Create(ctx context.Context, s Spec) (Info, error) {
	s, err := resolve(s)
	if err != nil {
		return Info{}, err
	}
	h.mu.Lock()
	closed, running := h.closed, len(h.terms)-len(h.exited)+h.starting
	if !closed && running < h.cfg.MaxRunning {
		h.starting++
	}
	h.mu.Unlock()
	switch {
	case closed:
		return Info{}, ErrClosed
	case running >= h.cfg.MaxRunning:
		return Info{}, fmt.Errorf("%w (%d running)", ErrTooMany, running)
	}
	defer func() {
		h.mu.Lock()
		h.starting--
		h.mu.Unlock()
	}()
	id := messages.NewID("pty")
	title := s.Title
	if title == "" {
		title = "Terminal " + id[len(id)-4:]
	}
	t := &terminal{
		hub: h,
		info: Info{ID: id, Title: title, Command: s.Command, Args: slices.Clone(s.Args), Location: s.Location, Dir: s.Dir,
			Rows: s.Rows, Cols: s.Cols, Created: time.Now(), Running: true},
		sb:      newScrollback(h.cfg.Scrollback),
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	if t.info.Args == nil {
		t.info.Args = []string{}
	}
	t.fwd = h.sys.Root.Spawn(actor.PropsFromFunc(t.receive))
	props, err := pty.Props(pty.Config{ID: id, Location: s.Location, Dir: s.Dir, Shell: s.Command, Args: s.Args, Env: s.Env,
		Overlay: h.cfg.Overlay, Rows: s.Rows, Cols: s.Cols, Subscribers: []*actor.PID{t.fwd}, Logger: h.cfg.Logger})
	if err != nil {
		h.sys.Root.Stop(t.fwd)
		return Info{}, err
	}
	pid, err := h.cfg.Locations.Spawn(s.Location, "pty", props)
	if err != nil {
		h.sys.Root.Stop(t.fwd)
		return Info{}, fmt.Errorf("start terminal: %w", err)
	}
	t.actor = pid // before t is registered: nobody else reads it yet
	res, askErr := h.sys.Root.RequestFuture(pid, &pty.Info{}, h.cfg.Timeout).Result()
	if reply, ok := res.(*pty.InfoReply); askErr == nil && ok && reply.PID != 0 {
		t.mu.Lock()
		if t.info.Running {
			t.info.PID = reply.PID
		}
		t.mu.Unlock()
	} else {
		// The actor is gone already: the program could not start, or it
		// ran and ended before the question arrived. Exited says which.
		var waitErr error
		select {
		case <-t.done:
		case <-time.After(h.cfg.Timeout):
			waitErr = fmt.Errorf("terminal %s did not start within %s", id, h.cfg.Timeout)
		case <-ctx.Done():
			waitErr = ctx.Err()
		}
		if in := t.snapshot(); waitErr == nil && in.Err != "" {
			waitErr = &InvalidError{"command", in.Err}
		}
		if waitErr != nil {
			h.kill(context.Background(), t)
			return Info{}, waitErr
		}
	}
	h.mu.Lock()
	if h.closed { // Close ran meanwhile and did not see this one
		h.mu.Unlock()
		h.kill(context.Background(), t)
		return Info{}, ErrClosed
	}
	h.terms[id] = t
	select {
	case <-t.done: // ended before it was registered: retire found nothing
		h.retireLocked(t)
	default:
	}
	h.mu.Unlock()
	return t.snapshot(), nil
}

func (h *Hub) get(id string) (*terminal, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.terms[id]
	if !ok {
		return nil, fmt.Errorf("terminal %s: %w", id, ErrNotFound)
	}
	return t, nil
}

// Get describes one terminal.
func (h *Hub) Get(id string) (Info, error) {
	t, err := h.get(id)
	if err != nil {
		return Info{}, err
	}
	return t.snapshot(), nil
}

// List describes every terminal, oldest first.
func (h *Hub) List() []Info {
	h.mu.Lock()
	ts := make([]*terminal, 0, len(h.terms))
	for _, t := range h.terms {
		ts = append(ts, t)
	}
	h.mu.Unlock()
	out := make([]Info, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.snapshot())
	}
	slices.SortFunc(out, func(a, b Info) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

func (h *Hub) running(id string) (*terminal, error) {
	t, err := h.get(id)
	if err != nil {
		return nil, err
	}
	select {
	case <-t.done:
		return nil, fmt.Errorf("terminal %s: %w", id, ErrExited)
	default:
		return t, nil
	}
}

// Input writes bytes to the terminal, in order with other inputs and resizes.
func (h *Hub) Input(id string, data []byte) error {
	t, err := h.running(id)
	if err != nil {
		return err
	}
	h.sys.Root.Send(t.actor, &pty.Input{Data: slices.Clone(data)})
	return nil
}

// Update retitles (title not nil) and resizes (rows and cols not zero) a
// terminal. Only a running terminal can be resized.
func (h *Hub) Update(id string, title *string, rows, cols uint16) (Info, error) {
	var t *terminal
	var err error
	if rows != 0 || cols != 0 {
		if rows == 0 || cols == 0 {
			return Info{}, &InvalidError{"size", "rows and cols must both be positive"}
		}
		if t, err = h.running(id); err != nil {
			return Info{}, err
		}
		h.sys.Root.Send(t.actor, &pty.Resize{Rows: rows, Cols: cols})
	} else if t, err = h.get(id); err != nil {
		return Info{}, err
	}
	t.mu.Lock()
	if title != nil {
		t.info.Title = *title
	}
	if rows != 0 {
		t.info.Rows, t.info.Cols = rows, cols
	}
	t.mu.Unlock()
	return t.snapshot(), nil
}

// Remove kills the terminal (every process of its session) and forgets it.
// When it returns, the program has been reaped. The Info says how it ended.
func (h *Hub) Remove(ctx context.Context, id string) (Info, error) {
	h.mu.Lock()
	t, ok := h.terms[id]
	if ok {
		delete(h.terms, id)
		h.exited = slices.DeleteFunc(h.exited, func(x string) bool { return x == id })
	}
	h.mu.Unlock()
	if !ok {
		return Info{}, fmt.Errorf("terminal %s: %w", id, ErrNotFound)
	}
	return h.kill(ctx, t), nil
}

// kill stops the PTY actor: its Stopping kills and reaps the program and
// publishes Exited before the actor counts as stopped.
func (h *Hub) kill(ctx context.Context, t *terminal) Info {
	select {
	case <-t.done:
		return t.snapshot()
	default:
	}
	if err := h.sys.Root.StopFuture(t.actor).Wait(); err != nil {
		h.cfg.Logger.Warn("pty: stop terminal", "terminal", t.info.ID, "err", err)
	}
	select {
	case <-t.done:
	case <-ctx.Done():
	case <-time.After(h.cfg.Timeout):
	}
	// The Exited message should have arrived; if not, say so ourselves.
	t.exit(&pty.Exited{ID: t.info.ID, ExitCode: -1, Signal: "killed"})
	h.sys.Root.Stop(t.fwd)
	return t.snapshot()
}

// Close kills every terminal and refuses new ones. Readers get io.EOF.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	ts := make([]*terminal, 0, len(h.terms))
	for _, t := range h.terms {
		ts = append(ts, t)
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, t := range ts {
		wg.Go(func() { h.kill(context.Background(), t) })
	}
	wg.Wait()
}

// Chunk is output at an offset.
type Chunk struct {
	Offset int64
	Data   []byte
}

// End is the offset just past the chunk.
func (c Chunk) End() int64 { return c.Offset + int64(len(c.Data)) }

// Reader follows a terminal's output from an offset. It is not safe for
// concurrent use.
type Reader struct {
	t   *terminal
	off int64
}

// Reader starts reading at offset after: output already dropped from the
// scrollback is skipped (Offset says where reading starts); an offset past
// the output so far is invalid.
func (h *Hub) Reader(id string, after int64) (*Reader, error) {
	t, err := h.get(id)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if after < 0 || after > t.sb.end {
		return nil, &InvalidError{"after", fmt.Sprintf("offset %d: the terminal has produced %d bytes", after, t.sb.end)}
	}
	return &Reader{t: t, off: max(after, t.sb.start())}, nil
}

// Offset is where the next read starts.
func (r *Reader) Offset() int64 { return r.off }

// Info describes the terminal read from (its exit status after io.EOF).
func (r *Reader) Info() Info { return r.t.snapshot() }

// Next returns up to max bytes of output at the reader's offset, waiting
// for some. It returns io.EOF once the terminal ended and every byte kept
// was read, a *CutError (ErrCut) when the output at the offset was dropped
// before it was read, or ctx's error.
func (r *Reader) Next(ctx context.Context, max int) (Chunk, error) {
	t := r.t
	for {
		t.mu.Lock()
		data, behind := t.sb.read(r.off, max)
		start, changed := t.sb.start(), t.changed
		ended := !t.info.Running
		t.mu.Unlock()
		switch {
		case behind:
			return Chunk{}, &CutError{Offset: r.off, Start: start}
		case data != nil:
			c := Chunk{Offset: r.off, Data: data}
			r.off = c.End()
			return c, nil
		case ended:
			return Chunk{}, io.EOF
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Chunk{}, ctx.Err()
		}
	}
}
