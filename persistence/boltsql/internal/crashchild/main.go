// Command crashchild is the subprocess of boltsql's crash and in-use tests.
// The tests build it once with `go build`, without -race: a race-built test
// binary re-executed as the child spent seconds (up to ~14 s on a loaded
// machine) in go-mysql-server's package initialization on every start, and
// the crash test starts twenty children.
//
//	crashchild -mode hold -dir D         open D, print "ready", hold it until stdin closes
//	crashchild -mode crash -dir D -round N
//
// In crash mode it writes forever with 4 goroutines: autocommit inserts into
// t1 ("A id") and two-table transactions into t1 and t2 ("T id"), printing
// each id only after its statement or COMMIT returned, until it is killed.
// Errors are printed as "error: ...". It is not used outside those tests.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

func main() {
	mode := flag.String("mode", "", "hold or crash")
	dir := flag.String("dir", "", "data directory")
	round := flag.Int64("round", 0, "crash round; ids are unique per round")
	flag.Parse()
	e, err := boltsql.Open(*dir, boltsql.Options{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	switch *mode {
	case "hold":
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
		e.Close()
	case "crash":
		crash(e, *round)
	default:
		fmt.Println("error: unknown mode", *mode)
		os.Exit(2)
	}
}

func crash(e *boltsql.Engine, round int64) {
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
	var out sync.Mutex
	say := func(s string) {
		out.Lock()
		os.Stdout.WriteString(s + "\n")
		out.Unlock()
	}
	say("ready")
	pad := []byte(strings.Repeat("p", 3000)) // rows large enough to split pages
	var wg sync.WaitGroup
	for g := int64(0); g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(0); ; i++ {
				id := round*10_000_000 + g*1_000_000 + i
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
		}()
	}
	wg.Wait()
}
