package boltsql

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	childOnce sync.Once
	childBin  string
	childErr  error
	childDir  string
)

// TestMain removes the child binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if childDir != "" {
		os.RemoveAll(childDir)
	}
	os.Exit(code)
}

// buildChild compiles internal/crashchild once, without -race (see its
// doc comment: a race-built child starts slowly, and the crash test starts
// twenty).
func buildChild(t *testing.T) string {
	t.Helper()
	childOnce.Do(func() {
		if childDir, childErr = os.MkdirTemp("", "boltsql-child-"); childErr != nil {
			return
		}
		childBin = filepath.Join(childDir, "crashchild")
		out, err := exec.Command("go", "build", "-o", childBin, "./internal/crashchild").CombinedOutput()
		if err != nil {
			childErr = fmt.Errorf("go build ./internal/crashchild: %v\n%s", err, out)
		}
	})
	if childErr != nil {
		t.Fatal(childErr)
	}
	return childBin
}

func TestCrashLosesNoAcknowledgedWriteAndShowsNoHalfTransaction(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	bin := buildChild(t)
	totalAcked := 0
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	for round := 1; round <= rounds; round++ {
		cmd := exec.Command(bin, "-mode", "crash", "-dir", dir, "-round", strconv.Itoa(round))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		select {
		case l := <-lines:
			if l != "ready" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: child said %q", round, l)
			}
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child never became ready", round)
		}
		kill := time.After(time.Duration(5+rng.Intn(200)) * time.Millisecond)
		acked := map[int64]byte{}
		killed := false
		for l := range lines {
			if !killed {
				select {
				case <-kill:
					_ = cmd.Process.Signal(syscall.SIGKILL)
					killed = true
				default:
				}
			}
			if strings.HasPrefix(l, "error:") {
				t.Fatalf("round %d: child %s", round, l)
			}
			kind, num, ok := strings.Cut(l, " ")
			id, err := strconv.ParseInt(num, 10, 64)
			if !ok || err != nil {
				t.Fatalf("round %d: bad line %q", round, l)
			}
			acked[id] = kind[0]
			if !killed && len(acked) > 0 && len(acked)%64 == 0 {
				select { // let the timer fire even while lines stream in
				case <-kill:
					_ = cmd.Process.Signal(syscall.SIGKILL)
					killed = true
				default:
				}
			}
		}
		if !killed {
			<-kill
			_ = cmd.Process.Signal(syscall.SIGKILL)
		}
		_ = cmd.Wait()
		totalAcked += len(acked)

		e, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		db := e.DB()
		t1 := map[int64]string{}
		rows, err := db.Query("SELECT id, kind FROM t1")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			var kind string
			if err := rows.Scan(&id, &kind); err != nil {
				t.Fatal(err)
			}
			t1[id] = kind
		}
		rows.Close()
		t2 := map[int64]bool{}
		for _, s := range queryStrings(t, db, "SELECT CAST(id AS CHAR) FROM t2") {
			id, _ := strconv.ParseInt(s, 10, 64)
			t2[id] = true
		}
		for id, kind := range acked {
			if _, ok := t1[id]; !ok {
				t.Fatalf("round %d: acknowledged %c %d missing from t1", round, kind, id)
			}
			if kind == 'T' && !t2[id] {
				t.Fatalf("round %d: acknowledged transaction %d missing from t2", round, id)
			}
		}
		for id, kind := range t1 {
			if (kind == "t") != t2[id] {
				t.Fatalf("round %d: half-committed transaction %d (t1 kind %q, in t2: %v)", round, id, kind, t2[id])
			}
		}
		for id := range t2 {
			if t1[id] != "t" {
				t.Fatalf("round %d: half-committed transaction %d only in t2", round, id)
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d kills, %d acknowledged writes all present", rounds, totalAcked)
}
