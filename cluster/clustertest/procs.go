package clustertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config configures a set of member processes on one shared journal.
type Config struct {
	Data       string // the run's directory: member logs and data directories
	JournalURL string // the shared mysql:// journal
	Members    int    // default 3
	// ToolSleep is how long a "tool" prompt's tool runs after its side
	// effect (see MemberConfig).
	ToolSleep time.Duration
	Refresh   time.Duration // automanaged poll interval; default 300 ms
	// Command builds the command that runs Member with cfg (a test's
	// member binary, or `sessionrt chaos member`).
	Command func(cfg MemberConfig) *exec.Cmd
	// LocationRoots, AskBash, Spans and ResumeAtStart are given to every
	// member (see MemberConfig).
	LocationRoots map[string]string
	AskBash       bool
	Spans         bool
	ResumeAtStart bool
	// DieAfterAdmitting is given to every member (see MemberConfig).
	DieAfterAdmitting string
	// OnTurn, if set, is told of every provider turn a member starts.
	OnTurn func(Turn)
}

// Turn is a provider turn a member started for a session.
type Turn struct {
	At      time.Time
	Session string
	Member  int
}

func (c *Config) defaults() error {
	if c.JournalURL == "" || c.Command == nil || c.Data == "" {
		return errors.New("cluster members: Data, JournalURL and Command are required")
	}
	if c.Members <= 0 {
		c.Members = 3
	}
	if c.Refresh <= 0 {
		c.Refresh = 300 * time.Millisecond
	}
	if c.OnTurn == nil {
		c.OnTurn = func(Turn) {}
	}
	return nil
}

// Proc is one member process as its driver sees it.
type Proc struct {
	I      int
	Config MemberConfig
	Cmd    *exec.Cmd
	Addr   string // actor address
	Ctl    string // control API address
	Log    string // the member's stderr
}

// Kill SIGKILLs the member and waits for it to exit.
func (p *Proc) Kill() {
	if p != nil && p.Cmd.Process != nil {
		_ = p.Cmd.Process.Kill()
		_ = p.Cmd.Wait()
	}
}

// StartMembers starts cfg.Members member processes (member i is named
// "m<i>", logs to member<i>.log in cfg.Data) and waits until each printed
// READY: a member that exits first fails it at once, one that is merely
// slow (a loaded machine starts processes slowly) is waited for as long as
// ctx lasts. On error, the members started are returned for the caller to
// kill.
func StartMembers(ctx context.Context, cfg Config) ([]*Proc, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	var peers []string
	var ports []int
	for range cfg.Members {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports = append(ports, p)
		peers = append(peers, net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	}
	ms := make([]*Proc, cfg.Members)
	ready := make(chan error, cfg.Members)
	for i := range cfg.Members {
		mc := MemberConfig{Name: fmt.Sprintf("m%d", i), Health: ports[i], Members: peers, Refresh: cfg.Refresh,
			JournalURL: cfg.JournalURL, Data: filepath.Join(cfg.Data, fmt.Sprintf("member%d", i)), ToolSleep: cfg.ToolSleep,
			LocationRoots: cfg.LocationRoots, AskBash: cfg.AskBash, Spans: cfg.Spans, ResumeAtStart: cfg.ResumeAtStart,
			DieAfterAdmitting: cfg.DieAfterAdmitting}
		m, err := launch(cfg, mc, i, fmt.Sprintf("member%d.log", i), ready)
		if err != nil {
			return ms, err
		}
		ms[i] = m
	}
	return ms, awaitReady(ctx, ready, cfg.Members)
}

// Restart starts member old.I again with its configuration (same name and
// health port: it rejoins the cluster; it logs to member<i>-rejoined.log)
// and waits for READY.
func Restart(ctx context.Context, cfg Config, old *Proc) (*Proc, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	ready := make(chan error, 1)
	m, err := launch(cfg, old.Config, old.I, fmt.Sprintf("member%d-rejoined.log", old.I), ready)
	if err != nil {
		return nil, err
	}
	if err := awaitReady(ctx, ready, 1); err != nil {
		m.Kill()
		return nil, err
	}
	return m, nil
}

func launch(cfg Config, mc MemberConfig, i int, logName string, ready chan<- error) (*Proc, error) {
	cmd := cfg.Command(mc)
	logf, err := os.Create(filepath.Join(cfg.Data, logName))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start member %d: %w", i, err)
	}
	m := &Proc{I: i, Cmd: cmd, Config: mc, Log: logf.Name()}
	go func() {
		defer logf.Close()
		sc := bufio.NewScanner(stdout)
		isReady := false
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 3 && f[0] == "READY" && !isReady:
				m.Addr, m.Ctl, isReady = f[1], f[2], true
				ready <- nil
			case len(f) == 3 && f[0] == "turn":
				if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					cfg.OnTurn(Turn{At: time.Unix(0, ns), Session: f[2], Member: i})
				}
			}
		}
		if !isReady {
			// The log goes with the test's temporary directory: its end
			// travels in the error (the member writes it directly, so
			// what it wrote before closing stdout is there).
			ready <- fmt.Errorf("member %d exited before READY (see %s); its log ends:\n%s", i, logf.Name(), logTail(logf.Name(), 2000))
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	return m, nil
}

// awaitReady waits until n members printed READY. A member that exits
// first fails it at once; one that is merely slow (a loaded machine
// starts processes slowly) is waited for as long as ctx lasts.
func awaitReady(ctx context.Context, ready <-chan error, n int) error {
	for range n {
		select {
		case err := <-ready:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return fmt.Errorf("members not ready: %w", ctx.Err())
		}
	}
	return nil
}

// freePort picks a free port for a member to bind later, below the
// kernel's ephemeral range: a port taken from 127.0.0.1:0 and freed again
// may be handed to any process's outgoing connection (the suite's other
// packages open many to MariaDB) before the member binds it, and the member
// then exits before READY. A port below the range is only ever taken by an
// explicit bind.
func freePort() (int, error) {
	lo := 32768 // Linux's default, when the range cannot be read
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				lo = n
			}
		}
	}
	if base := lo - 10000; base >= 10000 {
		for range 200 {
			p := base + rand.IntN(9000)
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
				ln.Close()
				return p, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// WaitTopology waits until every member sees all of ms (progress: the
// members they see, summed).
//
// A wait that fails carries the end of every member's log: what a member
// saw of the others (its topology updates, the health checks it failed)
// is the cause, and the logs go with the test's temporary directory.
func WaitTopology(ctx context.Context, ms []*Proc) error {
	err := WaitProgress(ctx, ProgressStall, func() (int, error) {
		seen, short := 0, ""
		for _, m := range ms {
			var n int
			if err := Get(ctx, m.Ctl, "/members", nil, &n); err != nil {
				return seen, err
			}
			seen += n
			if n != len(ms) && short == "" {
				short = fmt.Sprintf("member %d sees %d members", m.I, n)
			}
		}
		if short != "" {
			return seen, errors.New(short)
		}
		return seen, nil
	})
	if err != nil {
		var b strings.Builder
		for _, m := range ms {
			fmt.Fprintf(&b, "\n--- member %d (%s) log ends:\n%s", m.I, filepath.Base(m.Log), logTail(m.Log, 1500))
		}
		return fmt.Errorf("%w%s", err, b.String())
	}
	return nil
}

// logTail is the last max bytes of a member's log ("" when it cannot be
// read).
func logTail(path string, max int) []byte {
	b, _ := os.ReadFile(path)
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return b
}

// ProgressStall is how long a wait on members may see no progress (tools
// started, members seen, calls settled) before it fails. Waits are bounded
// by progress, not by wall time: on a loaded machine a healthy run is slow,
// a stuck one makes no progress.
const ProgressStall = 60 * time.Second

// WaitProgress polls cond until it holds (returns nil). cond also returns a
// measure of progress (how many sessions started their tool, …): the wait
// fails once that measure has not changed for stall, or when ctx ends.
func WaitProgress(ctx context.Context, stall time.Duration, cond func() (progress int, err error)) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last, since := -1, time.Now()
	for {
		n, err := cond()
		if err == nil {
			return nil
		}
		if n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) > stall {
			return fmt.Errorf("no progress for %v: %w", stall, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// ctlClient bounds a control call by a backstop only: /wait passes its
// own timeout to the member.
var ctlClient = &http.Client{Timeout: 90 * time.Second}

// Get calls a member's control API at ctl and decodes its JSON answer
// into out (unless nil).
func Get(ctx context.Context, ctl, path string, q url.Values, out any) error {
	u := "http://" + ctl + path
	if q != nil {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	res, err := ctlClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", path, res.Status, strings.TrimSpace(string(b)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// GetText reads a member's control API at ctl as text.
func GetText(ctx context.Context, ctl, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ctl+path, nil)
	if err != nil {
		return "", err
	}
	res, err := ctlClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", path, res.Status)
	}
	return string(b), err
}
