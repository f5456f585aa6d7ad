package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// crashCycles is how many SIGKILLs a crash run makes on a backend: the
// acceptance counts (50 embedded, 20 MariaDB) with SESSIONRT_CRASH_FULL set,
// SESSIONRT_CRASH_CYCLES=n for n on each, else a few (CI).
func crashCycles(embedded bool) int {
	if n, err := strconv.Atoi(os.Getenv("SESSIONRT_CRASH_CYCLES")); err == nil && n > 0 {
		return n
	}
	full := os.Getenv("SESSIONRT_CRASH_FULL") != ""
	switch {
	case full && embedded:
		return 50
	case full:
		return 20
	case embedded:
		return 6
	default:
		return 3
	}
}

// receipt is one acknowledged prompt of the client-side ledger.
type receipt struct {
	session, message string
	atKill           string // what the journal held when the server died
}

// TestServeKilledRightAfterAReceiptActsOnEveryAcknowledgedPrompt SIGKILLs
// `sessionrt serve` the moment a prompt's 2xx receipt arrives, restarts it
// on the same journal, and waits — without run, retry or any other prompt,
// only reading the session's event stream — for that prompt to be promoted
// and answered; at the end every acknowledged prompt must have been
// promoted exactly once and answered. Most kills land before the drain
// promoted the prompt (the journal is read after each kill and the run
// reports where they landed): before start-up recovery woke every session
// with admitted input, those sessions stayed idle with the prompt
// unpromoted, and this test timed out waiting. The counts are small unless
// SESSIONRT_CRASH_FULL is set (50 embedded, 20 MariaDB).
func TestServeKilledRightAfterAReceiptActsOnEveryAcknowledgedPrompt(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("builds and runs the binary")
	}
	bin := build(t)
	for _, backend := range []string{"embedded", "mariadb"} {
		t.Run(backend, func(t *testing.T) {
			var journalURL string
			var args []string
			if backend == "mariadb" {
				db := testdb.MariaDB(t)
				journalURL, args = db.URL(), []string{"--journal", db.URL()}
			}
			data, loc := t.TempDir(), t.TempDir()
			cycles := crashCycles(backend == "embedded")
			var ledger []receipt
			for i := 0; ; i++ {
				srv := serve(t, bin, data, args...)
				c, _ := client.New(client.Config{BaseURL: srv.url, Token: token})
				if i > 0 {
					// Progress bound: the restarted server's recovery; the
					// backstop is for a prompt nobody acts on.
					awaitAnswered(t, c, ledger[len(ledger)-1], 3*time.Minute)
				}
				if i == cycles {
					srv.stop(t)
					break
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: loc}})
				if err != nil {
					cancel()
					t.Fatal(err)
				}
				id := fmt.Sprintf("msg_crash_%s_%03d", backend, i)
				_, err = c.Prompt(ctx, s.ID, wire.PromptRequest{ID: id, Prompt: &wire.Prompt{Text: fmt.Sprintf("crash cycle %d", i)}})
				// The receipt is in: kill at once, before the drain can start.
				_ = srv.cmd.Process.Kill()
				_ = srv.cmd.Wait()
				cancel()
				if err != nil {
					t.Fatalf("cycle %d: prompt: %v", i, err)
				}
				ledger = append(ledger, receipt{session: s.ID, message: id, atKill: stateAtKill(t, data, journalURL, s.ID, id)})
			}
			at := map[string]int{}
			for _, r := range ledger {
				at[r.atKill]++
			}
			promotedOnce, answered := checkLedger(t, data, journalURL, ledger)
			t.Logf("%s: %d SIGKILLs right after a receipt; at the kill the prompt was: unpromoted %d, promoted (mid-drain) %d, answered %d; receipts %d, promoted once %d, answered %d, lost %d",
				backend, len(ledger), at["unpromoted"], at["mid-drain"], at["answered"], len(ledger), promotedOnce, answered, len(ledger)-promotedOnce)
		})
	}
}

// awaitAnswered reads r's session events from the start until the drain
// that promoted r's prompt ends; it only reads (no run, no retry).
func awaitAnswered(t *testing.T, c *client.Client, r receipt, backstop time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), backstop)
	defer cancel()
	st, err := c.Events(ctx, r.session, 0)
	if err != nil {
		t.Fatalf("events of %s: %v", r.session, err)
	}
	defer st.Close()
	promoted := false
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("prompt %s of %s (journal at the kill: %s): not answered after the restart: %v", r.message, r.session, r.atKill, err)
		}
		switch ev.Event.Type {
		case "session.next.prompted":
			var d struct{ MessageIDs []string }
			_ = json.Unmarshal(ev.Event.Data, &d)
			for _, m := range d.MessageIDs {
				promoted = promoted || m == r.message
			}
		case "session.next.idle":
			if promoted {
				return
			}
		}
	}
}

// openJournal opens the journal a stopped server used.
func openJournal(t *testing.T, data, journalURL string) *persistence.Journal {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	j, err := persistence.OpenURL(ctx, filepath.Join(data, "journal"), journalURL, true, persistence.Config{})
	if err != nil {
		t.Fatalf("open the journal after the kill: %v", err)
	}
	return j
}

// stateAtKill reads where the kill landed for prompt id: "unpromoted" (the
// drain had not promoted it: the case start-up recovery used to miss),
// "mid-drain" or "answered".
func stateAtKill(t *testing.T, data, journalURL, session, id string) string {
	t.Helper()
	j := openJournal(t, data, journalURL)
	defer j.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inbox, err := j.PendingInbox(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range inbox {
		if e.MessageID == id {
			return "unpromoted"
		}
	}
	s, err := j.Session(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status == persistence.StatusBusy {
		return "mid-drain"
	}
	return "answered"
}

// checkLedger reads the journal of the stopped servers and counts, per
// receipt, the promotions of its prompt and whether a finished answer
// followed them.
func checkLedger(t *testing.T, data, journalURL string, ledger []receipt) (promotedOnce, answered int) {
	t.Helper()
	j := openJournal(t, data, journalURL)
	defer j.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, r := range ledger {
		envs, err := j.ReadEvents(ctx, r.session, 0, 1_000_000)
		if err != nil {
			t.Fatal(err)
		}
		promotions, ended := 0, false
		for _, e := range envs {
			switch ev := e.Event.(type) {
			case messages.PromptPromoted:
				for _, m := range ev.MessageIDs {
					if m == r.message {
						promotions++
					}
				}
			case messages.TurnEnded:
				ended = ended || promotions > 0
			}
		}
		if promotions == 1 {
			promotedOnce++
		} else {
			t.Errorf("prompt %s of %s (journal at the kill: %s) promoted %d times, want once", r.message, r.session, r.atKill, promotions)
		}
		if ended {
			answered++
		} else {
			t.Errorf("prompt %s of %s (journal at the kill: %s): no answer", r.message, r.session, r.atKill)
		}
	}
	return promotedOnce, answered
}

// stop ends a server as its cleanup would (SIGTERM, then wait), so that
// its journal can be opened.
func (s *server) stop(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// TestServeOnAFullDiskActsOnAnAcknowledgedPromptOnceTheDiskIsFreed: serve is
// SIGKILLed right after a receipt and comes back on a full disk (a small
// tmpfs holding its data, filled up): it cannot take the session over, so
// the session waits for the journal (session.status retry, live)
// and, once the disk is freed, its prompt is promoted once and answered
// without any client action. Needs root to mount the tmpfs; runs with the
// long crash runs (SESSIONRT_CRASH_FULL=1).
func TestServeOnAFullDiskActsOnAnAcknowledgedPromptOnceTheDiskIsFreed(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("builds and runs the binary")
	}
	if os.Getenv("SESSIONRT_CRASH_FULL") == "" {
		t.Skip("part of the long crash runs: set SESSIONRT_CRASH_FULL=1")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("a full disk needs a small tmpfs, and mounting one failed: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	bin := build(t)
	data, loc := filepath.Join(dir, "data"), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The kill must land before the drain answers, or the restarted server
	// owes nothing and waits for no journal: the demo model answers within
	// milliseconds, and a loaded machine may let it before the SIGKILL
	// lands (the test then waited for a retry that never came). A kill
	// that came too late is tried again with a new prompt.
	var r receipt
	for try := 1; ; try++ {
		srv := serve(t, bin, data)
		c, _ := client.New(client.Config{BaseURL: srv.url, Token: token})
		if r.session == "" {
			s, err := c.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: loc}})
			if err != nil {
				t.Fatal(err)
			}
			r.session = s.ID
		}
		r.message = fmt.Sprintf("msg_full_disk_%d", try)
		_, err := c.Prompt(ctx, r.session, wire.PromptRequest{ID: r.message, Prompt: &wire.Prompt{Text: "after the disk"}})
		_ = srv.cmd.Process.Kill()
		_ = srv.cmd.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if r.atKill = stateAtKill(t, data, "", r.session, r.message); r.atKill != "answered" {
			break
		}
		if try == 10 {
			t.Fatalf("10 kills right after a receipt all landed after the answer: nothing left owed to test")
		}
		t.Logf("kill %d landed after the answer; again with a new prompt", try)
	}

	filler := filepath.Join(dir, "filler")
	fill(t, filler)
	var log2 syncBuffer
	srv2 := serveWith(t, bin, data, nil, &log2)
	defer func() {
		if t.Failed() {
			_ = srv2.cmd.Process.Signal(syscall.SIGQUIT) // its goroutines, on stderr
			_ = srv2.cmd.Wait()
			t.Logf("restarted server's log:\n%s", log2.String())
		}
	}()
	c2, _ := client.New(client.Config{BaseURL: srv2.url, Token: token})
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	st, err := c2.GlobalEvents(wctx, r.session) // live statuses travel there
	if err != nil {
		t.Fatal(err)
	}
	for waiting := false; !waiting; {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("no journal wait reported on a full disk (journal at the kill: %s): %v", r.atKill, err)
		}
		if ev.Event.Type == wire.EventSessionStatus && strings.Contains(string(ev.Event.Data), `"retry"`) {
			waiting = true
		}
		if ev.Event.Type == "session.next.prompted" {
			t.Fatalf("promoted on a full disk: %s", ev.Event.Data)
		}
	}
	st.Close()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	awaitAnswered(t, c2, r, 3*time.Minute)
	srv2.stop(t)
	promotedOnce, answered := checkLedger(t, data, "", []receipt{r})
	t.Logf("full disk: journal at the kill: %s; promoted once %d, answered %d", r.atKill, promotedOnce, answered)
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}
