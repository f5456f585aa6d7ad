package cluster_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/cluster/clustertest"
	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// TestMemberSIGKILLedHoldingAdmittedInputIsTakenOverAndAnsweredOnce: the
// member hosting a session dies by SIGKILL the moment a prompt to it is
// durable (before the receipt is sent and before any drain starts), so the
// journal shows the session idle with admitted, unpromoted input. A
// survivor that takes the session over (the orphan sweep lists
// persistence.Journal.Owed, not only mid-drain sessions) promotes the
// prompt once and answers it once, with no client touching the session
// again. Before Owed, the sweep listed mid-drain sessions only and the
// prompt waited for a client's retry.
func TestMemberSIGKILLedHoldingAdmittedInputIsTakenOverAndAnsweredOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (3 member processes, needs MariaDB)")
	}
	db := testdb.MariaDB(t)
	bin := buildMember(t, "chaosmember")
	ctx, cancel := context.WithTimeout(context.Background(), 3*stepBackstop)
	defer cancel()
	j, err := persistence.Open(ctx, persistence.Config{DB: db.DB})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	data := t.TempDir()
	loc := filepath.Join(data, "project")
	if err := os.MkdirAll(loc, 0o755); err != nil {
		t.Fatal(err)
	}
	const sid, msg = "ses_owed_takeover", "msg_owed_takeover"
	var mu sync.Mutex
	var turns []clustertest.Turn
	cfg := clustertest.Config{Data: data, JournalURL: db.URL(), Members: 3, DieAfterAdmitting: sid,
		Command: clustertest.MemberCommand(bin),
		OnTurn: func(tn clustertest.Turn) {
			mu.Lock()
			defer mu.Unlock()
			if tn.Session == sid {
				turns = append(turns, tn)
			}
		}}
	ms, err := clustertest.StartMembers(ctx, cfg)
	defer func() {
		for _, m := range ms {
			m.Kill()
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	if err := clustertest.WaitTopology(ctx, ms); err != nil {
		t.Fatal(err)
	}
	if err := clustertest.Get(ctx, ms[0].Ctl, "/create", url.Values{"id": {sid}, "loc": {loc}}, nil); err != nil {
		t.Fatal(err)
	}
	var addr string
	if err := clustertest.Get(ctx, ms[0].Ctl, "/where", url.Values{"id": {sid}}, &addr); err != nil {
		t.Fatal(err)
	}
	victim := -1
	for _, m := range ms {
		if m.Addr == addr {
			victim = m.I
		}
	}
	if victim < 0 {
		t.Fatalf("session placed on %q, not a member", addr)
	}
	// Through the host itself: no router on a surviving member retries
	// the prompt (a retry would wake the session by itself).
	err = clustertest.Get(ctx, ms[victim].Ctl, "/admit", url.Values{"id": {sid}, "msg": {msg}, "text": {"plain s=" + sid}}, nil)
	if err == nil {
		t.Fatal("the host answered the admission: it was to die first")
	}
	werr := ms[victim].Cmd.Wait()
	killed := time.Now()
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("host m%d ended with %v, want SIGKILL", victim, werr)
	}
	eventually(t, "the survivor promoted and answered the prompt with no caller", func() error {
		ok, err := clustertest.Settled(ctx, j, sid)
		if err == nil && !ok {
			err = errors.New("not settled")
		}
		return err
	})
	took := time.Since(killed)
	envs, err := j.ReadEvents(ctx, sid, 0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	promoted, answered := 0, 0
	for _, e := range envs {
		switch ev := e.Event.(type) {
		case messages.PromptPromoted:
			for _, id := range ev.MessageIDs {
				if id == msg {
					promoted++
				}
			}
		case messages.TurnEnded:
			answered++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if promoted != 1 || answered != 1 || len(turns) != 1 || turns[0].Member == victim {
		t.Fatalf("promoted %d, answered %d, provider turns %+v (host m%d): want one each, on a survivor", promoted, answered, turns, victim)
	}
	t.Logf("host m%d killed holding %s; m%d took it over: promoted once, answered once; kill → settled in %v (turn %v after the kill)",
		victim, msg, turns[0].Member, took.Round(time.Millisecond), turns[0].At.Sub(killed).Round(time.Millisecond))
}
