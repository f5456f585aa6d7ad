package boltsql

import (
	"fmt"
	"strings"
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

func BenchmarkFastInsertEvent(b *testing.B) {
	e := openBench(b)
	db := e.DB()
	payload := []byte(strings.Repeat("p", 200))
	const q = "INSERT INTO ev (session_id, seq, type, n, payload) VALUES (?, ?, ?, ?, ?)"
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Exec(q, []byte("ses_0123456789"), int64(i), "message.appended", int64(1), payload); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if e.fastInserts.Load() < uint64(b.N) {
		b.Fatal("fast path not taken")
	}
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
	e := openBench(b)
	seedBenchEvents(b, e, 50)
	db := e.DB()
	const q = "SELECT type, n, payload FROM ev WHERE session_id = ? AND seq = ?"
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var typ string
		var n int64
		var payload []byte
		if err := db.QueryRow(q, []byte("ses_0123456789"), int64(i%50+1)).Scan(&typ, &n, &payload); err != nil || n != 1 {
			b.Fatal(n, err)
		}
	}
	b.StopTimer()
	if e.fastSelects.Load() < uint64(b.N) {
		b.Fatal("fast path not taken")
	}
}

func BenchmarkFastRange20(b *testing.B) {
	e := openBench(b)
	seedBenchEvents(b, e, 100)
	db := e.DB()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
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
	}
	b.StopTimer()
	if e.fastSelects.Load() < uint64(b.N) {
		b.Fatal("fast path not taken")
	}
}

func BenchmarkFastUpdateHead(b *testing.B) {
	e := openBench(b)
	seedBenchEvents(b, e, 1)
	db := e.DB()
	const q = "UPDATE ev SET payload = ? WHERE session_id = ? AND seq = ? AND type = ?"
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Exec(q, []byte(fmt.Sprint(i)), []byte("ses_0123456789"), int64(1), "message.appended"); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if e.fastUpdates.Load() < uint64(b.N) {
		b.Fatal("fast path not taken")
	}
}
