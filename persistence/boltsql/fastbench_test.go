package boltsql

import (
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

// The fast paths' micro-benchmarks on the journal's shapes: a 5-column
// event row inserted autocommit, its stream-head point read, and a 20-row
// replay page. Allocations per statement are the figure to watch (the
// server's CPU per turn is dominated by them).

func openBench(b *testing.B) *Engine {
	b.Helper()
	e, err := Open(b.TempDir(), Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	if _, err := e.DB().Exec(rangeEventsDDL); err != nil {
		b.Fatal(err)
	}
	return e
}

// benchFast times op, run with the iteration's index, on openBench's engine
// with seed events in ev, then fails unless the fast path that taken names
// ran every iteration: a statement that fell back to go-mysql-server would
// measure the wrong thing.
func benchFast(b *testing.B, seed int, taken func(*Engine) *atomic.Uint64, op func(db *sql.DB, i int)) {
	b.Helper()
	e := openBench(b)
	if seed > 0 {
		seedBenchEvents(b, e, seed)
	}
	db := e.DB()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op(db, i)
	}
	b.StopTimer()
	if taken(e).Load() < uint64(b.N) {
		b.Fatal("fast path not taken")
	}
}

func benchInserts(e *Engine) *atomic.Uint64 { return &e.fastInserts }
func benchSelects(e *Engine) *atomic.Uint64 { return &e.fastSelects }
func benchUpdates(e *Engine) *atomic.Uint64 { return &e.fastUpdates }

func BenchmarkFastInsertEvent(b *testing.B) {
	payload := []byte(strings.Repeat("p", 200))
	const q = "INSERT INTO ev (session_id, seq, type, n, payload) VALUES (?, ?, ?, ?, ?)"
	benchFast(b, 0, benchInserts, func(db *sql.DB, i int) {
		if _, err := db.Exec(q, []byte("ses_0123456789"), int64(i), "message.appended", int64(1), payload); err != nil {
			b.Fatal(err)
		}
	})
}

func seedBenchEvents(b *testing.B, e *Engine, n int) {
	b.Helper()
	var vals []string
	for i := 1; i <= n; i++ {
		vals = append(vals, fmt.Sprintf("('ses_0123456789', %d, 'message.appended', 1, '%s')", i, strings.Repeat("p", 200)))
	}
	if _, err := e.DB().Exec("INSERT INTO ev VALUES " + strings.Join(vals, ", ")); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkFastPointEvent(b *testing.B) {
	const q = "SELECT type, n, payload FROM ev WHERE session_id = ? AND seq = ?"
	benchFast(b, 50, benchSelects, func(db *sql.DB, i int) {
		var typ string
		var n int64
		var payload []byte
		if err := db.QueryRow(q, []byte("ses_0123456789"), int64(i%50+1)).Scan(&typ, &n, &payload); err != nil || n != 1 {
			b.Fatal(n, err)
		}
	})
}

func BenchmarkFastRange20(b *testing.B) {
	benchFast(b, 100, benchSelects, func(db *sql.DB, i int) {
		rows, err := db.Query(replayEvents, []byte("ses_0123456789"), int64(i%50), int64(20))
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Close(); err != nil || n != 20 {
			b.Fatal(n, err)
		}
	})
}

func BenchmarkFastUpdateHead(b *testing.B) {
	const q = "UPDATE ev SET payload = ? WHERE session_id = ? AND seq = ? AND type = ?"
	benchFast(b, 1, benchUpdates, func(db *sql.DB, i int) {
		if _, err := db.Exec(q, []byte(fmt.Sprint(i)), []byte("ses_0123456789"), int64(1), "message.appended"); err != nil {
			b.Fatal(err)
		}
	})
}
