package engine

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

const (
	eventsDDL = `CREATE TABLE IF NOT EXISTS events (
		session_id VARCHAR(64) NOT NULL, seq BIGINT NOT NULL, kind VARCHAR(32) NOT NULL,
		body LONGBLOB, at DATETIME(6) NOT NULL, PRIMARY KEY (session_id, seq))`
	sqliteEventsDDL = eventsDDL + " WITHOUT ROWID"
	headsDDL        = `CREATE TABLE IF NOT EXISTS heads (session_id VARCHAR(64) NOT NULL PRIMARY KEY, last_seq BIGINT NOT NULL, epoch BIGINT NOT NULL)`
	perSession      = 100
	at              = "2026-01-01 00:00:00.000000"
)

var body = []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// Sizes: the memory backend is loaded to 10k rows by default, not 1M: its
// statements cost O(table size) (loading 10k rows already takes ~20s), so
// its growth is shown from 1k to 10k.
var (
	largeRows    = envInt("BENCH_LARGE_ROWS", 1_000_000)
	memLargeRows = envInt("BENCH_MEMORY_LARGE_ROWS", 10_000)
)

type fixture struct {
	p    peer
	err  error
	rows int
}

var (
	fixMu    sync.Mutex
	fixtures = map[string]*fixture{}
	tmpRoot  string
	seqGen   atomic.Int64
)

func TestMain(m *testing.M) {
	var err error
	tmpRoot, err = os.MkdirTemp("", "bench-engine-")
	if err != nil {
		panic(err)
	}
	code := m.Run()
	for _, f := range fixtures {
		if f.p != nil {
			f.p.close()
		}
	}
	os.RemoveAll(tmpRoot)
	os.Exit(code)
}

func open(kind, key string) (peer, error) {
	dir, err := os.MkdirTemp(tmpRoot, kind)
	if err != nil {
		return nil, err
	}
	var p peer
	switch kind {
	case "boltsql":
		p, err = openBoltsql(dir)
	case "sqlite":
		p, err = openSQLite(dir)
	case "memory":
		p, err = openMemory()
	}
	if err != nil {
		return nil, err
	}
	ddl := eventsDDL
	if kind == "sqlite" {
		ddl = sqliteEventsDDL
	}
	if err := p.exec(ddl); err != nil {
		return nil, err
	}
	if err := p.exec(headsDDL); err != nil {
		return nil, err
	}
	return p, nil
}

// loaded returns a peer whose events table holds rows rows: rows/100
// sessions of 100 events each, loaded with multi-row inserts.
func loaded(b *testing.B, kind string, rows int) peer {
	key := fmt.Sprintf("%s/%d", kind, rows)
	fixMu.Lock()
	defer fixMu.Unlock()
	if f, ok := fixtures[key]; ok {
		if f.err != nil {
			b.Fatal(f.err)
		}
		return f.p
	}
	start := time.Now()
	p, err := open(kind, key)
	if err == nil {
		err = load(p, rows)
	}
	fixtures[key] = &fixture{p: p, err: err, rows: rows}
	if err != nil {
		b.Fatalf("load %s: %v", key, err)
	}
	b.Logf("loaded %s in %s", key, time.Since(start).Round(time.Millisecond))
	return p
}

func load(p peer, rows int) error {
	const perStmt = 500
	sessions := rows / perSession
	args := make([]any, 0, perStmt*3)
	stmt := func(n int) string {
		s := "INSERT INTO events VALUES "
		for i := 0; i < n; i++ {
			if i > 0 {
				s += ","
			}
			s += "(?, ?, 'k', ?, '" + at + "')"
		}
		return s
	}
	full := stmt(perStmt)
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		q := full
		if len(args) != perStmt*3 {
			q = stmt(len(args) / 3)
		}
		err := p.inTx(func(exec func(string, ...any) error, _ func(string, ...any) (int, error)) error {
			return exec(q, args...)
		})
		args = args[:0]
		return err
	}
	for s := 0; s < sessions; s++ {
		for q := 1; q <= perSession; q++ {
			args = append(args, sessionID(s), q, body)
			if len(args) == perStmt*3 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

func sessionID(i int) string { return fmt.Sprintf("ses_%08d", i) }

func p50(d []time.Duration) float64 {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[len(d)/2].Nanoseconds()) / 1e3
}

type readCase struct {
	kind string
	rows int
}

func readCases() []readCase {
	return []readCase{
		{"boltsql", 1000}, {"boltsql", largeRows},
		{"sqlite", 1000}, {"sqlite", largeRows},
		{"memory", 1000}, {"memory", memLargeRows},
	}
}

func BenchmarkPointLookup(b *testing.B) {
	for _, c := range readCases() {
		b.Run(fmt.Sprintf("%s/rows=%d", c.kind, c.rows), func(b *testing.B) {
			p := loaded(b, c.kind, c.rows)
			rng := rand.New(rand.NewSource(1))
			sessions := c.rows / perSession
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s, q := rng.Intn(sessions), 1+rng.Intn(perSession)
				t0 := time.Now()
				n, err := p.count("SELECT session_id, seq, kind, body, at FROM events WHERE session_id = ? AND seq = ?", sessionID(s), q)
				lat = append(lat, time.Since(t0))
				if err != nil || n != 1 {
					b.Fatalf("point lookup: %d rows, %v", n, err)
				}
			}
			b.ReportMetric(p50(lat), "p50-µs")
		})
	}
}

func BenchmarkRange100(b *testing.B) {
	for _, c := range readCases() {
		b.Run(fmt.Sprintf("%s/rows=%d", c.kind, c.rows), func(b *testing.B) {
			p := loaded(b, c.kind, c.rows)
			rng := rand.New(rand.NewSource(2))
			sessions := c.rows / perSession
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s := rng.Intn(sessions)
				t0 := time.Now()
				n, err := p.count("SELECT session_id, seq, kind, body, at FROM events WHERE session_id = ? AND seq >= 1 ORDER BY session_id, seq LIMIT 100", sessionID(s))
				lat = append(lat, time.Since(t0))
				if err != nil || n != perSession {
					b.Fatalf("range: %d rows, %v", n, err)
				}
			}
			b.ReportMetric(p50(lat), "p50-µs")
		})
	}
}

// empty returns the peer with an empty events table that the write
// benchmarks share; keys come from seqGen, so they never collide.
func empty(b *testing.B, kind string) peer { return loaded(b, kind, 0) }

// reportCommits adds boltsql's group-commit figures: SQL transactions per
// fsync and the mean bbolt commit time.
func reportCommits(b *testing.B, p peer, before boltsql.Stats) {
	dp, ok := p.(*dbPeer)
	if !ok || dp.eng == nil {
		return
	}
	st := dp.eng.Stats()
	if n := st.Commits - before.Commits; n > 0 {
		b.ReportMetric(float64(st.Transactions-before.Transactions)/float64(n), "tx/fsync")
		b.ReportMetric(float64((st.CommitTime-before.CommitTime).Microseconds())/float64(n), "µs/commit")
	}
}

func statsOf(p peer) boltsql.Stats {
	if dp, ok := p.(*dbPeer); ok && dp.eng != nil {
		return dp.eng.Stats()
	}
	return boltsql.Stats{}
}

func runParallel(b *testing.B, workers int, op func(w int, i int64) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := op(w, i); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	el := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "ops/s")
	// CPU per operation (the whole process's) survives a shared machine
	// and disk; ops/s follows whatever fsync costs at the moment.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkInsertAutocommit(b *testing.B) {
	for _, kind := range []string{"boltsql", "sqlite", "memory"} {
		for _, writers := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/writers=%d", kind, writers), func(b *testing.B) {
				p := empty(b, kind)
				defer reportCommits(b, p, statsOf(p))
				runParallel(b, writers, func(w int, i int64) error {
					return p.exec("INSERT INTO events VALUES (?, ?, 'k', ?, '"+at+"')", fmt.Sprintf("ins_%03d", w), seqGen.Add(1), body)
				})
			})
		}
	}
}

func BenchmarkTxn3(b *testing.B) {
	for _, kind := range []string{"boltsql", "sqlite", "memory"} {
		for _, clients := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/clients=%d", kind, clients), func(b *testing.B) {
				p := empty(b, kind)
				defer reportCommits(b, p, statsOf(p))
				for c := 0; c < clients; c++ {
					_ = p.exec("INSERT INTO heads VALUES (?, 0, 1)", fmt.Sprintf("tx3_%03d", c))
				}
				runParallel(b, clients, func(w int, i int64) error {
					sid := fmt.Sprintf("tx3_%03d", w)
					return p.inTx(func(exec func(string, ...any) error, _ func(string, ...any) (int, error)) error {
						s := seqGen.Add(2)
						if err := exec("INSERT INTO events VALUES (?, ?, 'k', ?, '"+at+"')", sid, s, body); err != nil {
							return err
						}
						if err := exec("UPDATE heads SET last_seq = ? WHERE session_id = ?", s+1, sid); err != nil {
							return err
						}
						return exec("INSERT INTO events VALUES (?, ?, 'k', ?, '"+at+"')", sid, s+1, body)
					})
				})
			})
		}
	}
}

// BenchmarkJournalAppend is the journal's write path: 100 sessions, each
// appending in explicit transactions that first read the session's epoch
// (ownership fencing), then insert the events and advance the head.
func BenchmarkJournalAppend(b *testing.B) {
	const sessions = 100
	for _, kind := range []string{"boltsql", "sqlite"} {
		for _, shape := range []struct {
			perTx    int
			multiRow bool
		}{{1, false}, {4, false}, {4, true}, {16, true}} {
			perTx := shape.perTx
			name := fmt.Sprintf("%s/sessions=%d/events-per-tx=%d", kind, sessions, perTx)
			if shape.multiRow {
				name += "/one-insert"
			}
			b.Run(name, func(b *testing.B) {
				p := empty(b, kind)
				defer reportCommits(b, p, statsOf(p))
				for c := 0; c < sessions; c++ {
					_ = p.exec("INSERT INTO heads VALUES (?, 0, 1)", fmt.Sprintf("jr_%03d", c))
				}
				start := time.Now()
				var events atomic.Int64
				runParallel(b, sessions, func(w int, i int64) error {
					sid := fmt.Sprintf("jr_%03d", w)
					return p.inTx(func(exec func(string, ...any) error, count func(string, ...any) (int, error)) error {
						if n, err := count("SELECT epoch FROM heads WHERE session_id = ?", sid); err != nil || n != 1 {
							return fmt.Errorf("epoch: %d %v", n, err)
						}
						s := seqGen.Add(int64(perTx))
						if shape.multiRow {
							q := "INSERT INTO events VALUES "
							args := make([]any, 0, 3*perTx)
							for k := 0; k < perTx; k++ {
								if k > 0 {
									q += ","
								}
								q += "(?, ?, 'k', ?, '" + at + "')"
								args = append(args, sid, s-int64(k), body)
							}
							if err := exec(q, args...); err != nil {
								return err
							}
						}
						for k := 0; k < perTx && !shape.multiRow; k++ {
							if err := exec("INSERT INTO events VALUES (?, ?, 'k', ?, '"+at+"')", sid, s-int64(k), body); err != nil {
								return err
							}
						}
						events.Add(int64(perTx))
						return exec("UPDATE heads SET last_seq = ? WHERE session_id = ?", s, sid)
					})
				})
				b.ReportMetric(float64(events.Load())/time.Since(start).Seconds(), "events/s")
			})
		}
	}
}
