package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/node"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
	"github.com/sessionrt/sessionrt/provider"
)

// WorkerConfig configures one worker process of a process-kill run.
type WorkerConfig struct {
	Data     string // the run's directory (shared by every worker)
	Sessions int
	Prompts  int
	// Round numbers the worker: its sessions are its own (ses_proc_<round>_<i>),
	// so that no prompt a killed worker had acknowledged is ever sent again
	// and no later prompt wakes its session: only start-up recovery can.
	Round int
	// Final: admit nothing, wait for every session of the run to settle.
	Final bool
}

// Worker is the body of a worker process: it starts a node on the run's
// journal (recovering whatever earlier workers left: mid-drain sessions and
// acknowledged prompts no drain promoted), creates its round's sessions,
// admits each session's prompts once (an unacknowledged one is retried with
// its ID), prints "ack <session> <message>" for each receipt, and waits for
// its sessions to settle without ever asking for a run. A parent kills it
// at random moments or right after a receipt; the final worker admits
// nothing and waits for every session of the run, printing "unsettled
// <session> <state>" for any that does not, then "settled".
func Worker(ctx context.Context, cfg WorkerConfig, out io.Writer) error {
	loc := filepath.Join(cfg.Data, "project")
	if err := os.MkdirAll(loc, 0o755); err != nil {
		return err
	}
	prov, err := newProvider(fmt.Sprintf("w%d", os.Getpid()))
	if err != nil {
		return err
	}
	n, err := node.Start(ctx, node.Config{
		Data:         filepath.Join(cfg.Data, "data"),
		Providers:    func(messages.ModelRef) (provider.Provider, error) { return prov, nil },
		DefaultModel: Model,
		Logger:       slog.New(slog.DiscardHandler),
		NoSpanStore:  true,
	})
	if err != nil {
		return err
	}
	defer n.Stop(context.Background())
	if _, err := n.Sessions.Recover(ctx, nil); err != nil {
		return err
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(out, format, args...)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Sessions)
	if cfg.Final {
		ids, err := n.Journal.SessionIDs(ctx)
		if err != nil {
			return err
		}
		sem := make(chan struct{}, 8)
		for _, sid := range ids {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if err := awaitSettled(ctx, n, sid); err != nil {
					say("unsettled %s %s\n", sid, strings.ReplaceAll(err.Error(), "\n", " "))
				}
			}()
		}
		wg.Wait()
		say("settled\n")
		return nil
	}
	for i := 0; i < cfg.Sessions; i++ {
		sid := fmt.Sprintf("ses_proc_%d_%d", cfg.Round, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			more := func(k int) bool { return k < cfg.Prompts }
			_, err := driveSessionAcked(ctx, n, sid, loc, more, i, func(id string) { say("ack %s %s\n", sid, id) })
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	say("settled\n")
	return nil
}

// ProcessConfig configures a run that SIGKILLs whole worker processes.
type ProcessConfig struct {
	Data     string
	Sessions int // default 6
	Prompts  int // per session, default 8
	Kills    int // default 12; every other one right after a receipt
	Seed     uint64
	// Command builds the command that runs Worker with the given arguments
	// (the test binary re-executing itself, or `sessionrt chaos worker`).
	Command func(cfg WorkerConfig) *exec.Cmd
	// Timeout bounds the whole run, a backstop only (a stuck final worker
	// is killed when it ends): under -race at load 44 on two cores a
	// healthy run took over 6 minutes. Default 20 minutes.
	Timeout time.Duration
}

// RunProcessKills starts workers and SIGKILLs them, every other one right
// after a receipt (between the receipt and its drain's start, on purpose),
// the others at a random moment, then lets a final worker wait for every
// session and checks the invariants and the client-side ledger: every
// acknowledged prompt promoted exactly once, though nobody asked for a run
// and no prompt was sent twice; and that no tool process outlived its
// killed worker.
func RunProcessKills(ctx context.Context, cfg ProcessConfig) (Report, error) {
	if cfg.Sessions <= 0 {
		cfg.Sessions = 6
	}
	if cfg.Prompts <= 0 {
		cfg.Prompts = 8
	}
	if cfg.Kills <= 0 {
		cfg.Kills = 12
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 20 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	rep := Report{Mode: "process-kills", Faults: map[string]int{}}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed>>1))
	// The client-side ledger: every receipt, by session.
	acked := map[string][]string{}
	seen := map[string]bool{}
	record := func(line string) (receipt bool) {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "ack" && !seen[f[2]]:
			seen[f[2]] = true
			acked[f[1]] = append(acked[f[1]], f[2])
			return true
		case len(f) >= 2 && f[0] == "unsettled":
			rep.problem("session %s did not settle without a run: %s", f[1], strings.Join(f[2:], " "))
		}
		return false
	}
	journalDir := filepath.Join(cfg.Data, "data", "journal")
	unpromotedAtKill := map[string]bool{}
	for kill := 0; kill < cfg.Kills; kill++ {
		cmd := cfg.Command(WorkerConfig{Data: cfg.Data, Sessions: cfg.Sessions, Prompts: cfg.Prompts, Round: kill})
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return rep, err
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return rep, err
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Let it work for a random while (start-up included), then kill
		// it: every other time at the first receipt after that, before
		// its drain can start.
		afterReceipt := kill%2 == 0
		deadline := time.After(time.Duration(300+rng.IntN(900)) * time.Millisecond)
		due := false
	wait:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break wait
				}
				if record(l) && due {
					rep.KillsAfterReceipt++
					break wait
				}
			case <-deadline:
				deadline = nil
				if !afterReceipt {
					break wait
				}
				due = true
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		for l := range lines {
			record(l)
		}
		_ = cmd.Wait()
		rep.ProcessKills++
		if err := orphans(filepath.Join(cfg.Data, "project")); err != nil {
			rep.problem("%v", err)
		}
		if err := unpromoted(ctx, journalDir, acked, unpromotedAtKill); err != nil {
			return rep, err
		}
	}
	rep.UnpromotedAtKill = len(unpromotedAtKill)
	// The final worker admits nothing: it recovers, and waits.
	cmd := cfg.Command(WorkerConfig{Data: cfg.Data, Sessions: cfg.Sessions, Prompts: cfg.Prompts, Round: cfg.Kills, Final: true})
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return rep, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return rep, err
	}
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
		case <-stopped:
		}
	}()
	settled := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		record(sc.Text())
		settled = settled || sc.Text() == "settled"
	}
	if err := cmd.Wait(); err != nil || !settled {
		return rep, fmt.Errorf("final worker: %v (settled %v)", err, settled)
	}
	j, err := persistence.OpenURL(ctx, journalDir, "", true, persistence.Config{})
	if err != nil {
		return rep, err
	}
	defer j.Close()
	err = check(ctx, j, filepath.Join(cfg.Data, "project"), acked, &rep)
	return rep, err
}

// unpromoted adds to found the acknowledged prompts the journal of a
// killed worker holds admitted and unpromoted.
func unpromoted(ctx context.Context, journalDir string, acked map[string][]string, found map[string]bool) error {
	if _, err := os.Stat(filepath.Join(journalDir, boltsql.FileName)); err != nil {
		return nil // killed before its journal existed
	}
	j, err := persistence.OpenURL(ctx, journalDir, "", true, persistence.Config{})
	if err != nil {
		return fmt.Errorf("open the journal after a kill: %w", err)
	}
	defer j.Close()
	for sid, ids := range acked {
		inbox, err := j.PendingInbox(ctx, sid)
		if err != nil {
			return err
		}
		ack := map[string]bool{}
		for _, id := range ids {
			ack[id] = true
		}
		for _, e := range inbox {
			if ack[e.MessageID] {
				found[e.MessageID] = true
			}
		}
	}
	return nil
}

// orphans fails when a tool process recorded in the pid file still runs
// after its server was killed.
func orphans(loc string) error {
	b, err := os.ReadFile(filepath.Join(loc, ToolPIDs))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		// The group leader may take a moment to be reaped by init; wait
		// boundedly for it to go.
		gone := false
		for i := 0; i < 200 && !gone; i++ {
			gone = syscall.Kill(pid, 0) == syscall.ESRCH || zombie(pid)
			if !gone {
				time.Sleep(10 * time.Millisecond)
			}
		}
		if !gone {
			return fmt.Errorf("tool process %d outlived its killed server", pid)
		}
	}
	return nil
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}
