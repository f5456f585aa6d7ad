package boltsql

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	childModeEnv  = "BOLTSQL_TEST_CHILD"
	childDirEnv   = "BOLTSQL_TEST_DIR"
	childRoundEnv = "BOLTSQL_TEST_ROUND"
)

// TestMain lets tests re-execute this binary as a child process that holds
// or writes to a data directory.
func TestMain(m *testing.M) {
	switch os.Getenv(childModeEnv) {
	case "hold":
		e, err := Open(os.Getenv(childDirEnv), Options{})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
		e.Close()
		os.Exit(0)
	case "crash":
		crashChild()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashChild writes forever: autocommit inserts into t1 ("A id") and
// two-table transactions into t1 and t2 ("T id"), printing each id only
// after its statement or COMMIT returned.
func crashChild() {
	e, err := Open(os.Getenv(childDirEnv), Options{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	db := e.DB()
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS t1 (id BIGINT PRIMARY KEY, kind VARCHAR(8) NOT NULL, pad LONGBLOB)",
		"CREATE TABLE IF NOT EXISTS t2 (id BIGINT PRIMARY KEY, pad LONGBLOB)",
	} {
		if _, err := db.Exec(q); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	round, _ := strconv.Atoi(os.Getenv(childRoundEnv))
	var out sync.Mutex
	say := func(s string) {
		out.Lock()
		os.Stdout.WriteString(s + "\n")
		out.Unlock()
	}
	say("ready")
	pad := []byte(strings.Repeat("p", 3000)) // rows large enough to split pages
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				id := int64(round)*10_000_000 + int64(g)*1_000_000 + int64(i)
				if i%2 == 0 {
					if _, err := db.Exec("INSERT INTO t1 VALUES (?, 'a', ?)", id, pad); err != nil {
						say("error: " + err.Error())
						return
					}
					say(fmt.Sprintf("A %d", id))
					continue
				}
				tx, err := db.BeginTx(context.Background(), nil)
				if err != nil {
					say("error: " + err.Error())
					return
				}
				if _, err := tx.Exec("INSERT INTO t1 VALUES (?, 't', ?)", id, pad); err != nil {
					say("error: " + err.Error())
					return
				}
				if _, err := tx.Exec("INSERT INTO t2 VALUES (?, ?)", id, pad); err != nil {
					say("error: " + err.Error())
					return
				}
				if err := tx.Commit(); err != nil {
					say("error: " + err.Error())
					return
				}
				say(fmt.Sprintf("T %d", id))
			}
		}(g)
	}
	wg.Wait()
}

func TestCrashLosesNoAcknowledgedWriteAndShowsNoHalfTransaction(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	totalAcked := 0
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	for round := 1; round <= rounds; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childModeEnv+"=crash", childDirEnv+"="+dir, childRoundEnv+"="+strconv.Itoa(round))
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
		case <-time.After(2 * time.Minute): // a race-instrumented child starts slowly (GMS init compiles wasm)
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
