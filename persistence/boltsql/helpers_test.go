package boltsql

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
)

func openTest(t *testing.T, opts Options) *Engine {
	t.Helper()
	e, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// openDifferential opens the two engines of a differential test, slow with
// a fast path turned off by off, runs the statements in setup on both, and
// returns a connection to each (closed at cleanup): a session's state
// (warnings, ROW_COUNT(), sql_mode) lives on its connection, so each engine's
// statements must all go through the same one.
func openDifferential(t *testing.T, off func(*Engine), setup ...string) (fast, slow *Engine, conns map[*Engine]*sql.Conn) {
	t.Helper()
	fast, slow = openTest(t, Options{NoSync: true}), openTest(t, Options{NoSync: true})
	off(slow)
	conns = map[*Engine]*sql.Conn{}
	for _, e := range []*Engine{fast, slow} {
		c, err := e.DB().Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[e] = c
		for _, q := range setup {
			mustExec(t, e.DB(), q)
		}
	}
	return fast, slow, conns
}

func mustExec(t *testing.T, db interface {
	Exec(string, ...any) (sql.Result, error)
}, q string, args ...any) sql.Result {
	t.Helper()
	r, err := db.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return r
}

func queryInt(t *testing.T, db interface {
	QueryRow(string, ...any) *sql.Row
}, q string, args ...any) int64 {
	t.Helper()
	var n sql.NullInt64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n.Int64
}

func queryStrings(t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func mysqlCode(err error) int {
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) {
		return int(me.Number)
	}
	return 0
}

const eventsDDL = `CREATE TABLE IF NOT EXISTS events (
	session_id VARCHAR(64) NOT NULL,
	seq BIGINT NOT NULL,
	kind VARCHAR(32) NOT NULL,
	body LONGBLOB,
	at DATETIME(6) NOT NULL,
	PRIMARY KEY (session_id, seq),
	KEY by_kind (kind)
)`

// lockWaitOutcomes runs the same read on an engine with the fast SELECT path
// and on one without: in an explicit read-write transaction while another
// transaction holds the writer (having run hold), then again once that one
// committed. It returns each engine's two outcomes joined by " | ", and
// fails unless the fast path ran exactly once, on the fast engine.
func lockWaitOutcomes(t *testing.T, ddl, seed, hold, query string, first, second []any) [2]string {
	t.Helper()
	opts := Options{NoSync: true, LockWaitTimeout: 50 * time.Millisecond}
	fast, slow := openTest(t, opts), openTest(t, opts)
	slow.noFastSelect = true
	ctx := context.Background()
	var outs [2]string
	for i, e := range []*Engine{fast, slow} {
		mustExec(t, e.DB(), ddl)
		mustExec(t, e.DB(), seed)
		holder, err := e.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		c, err := e.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, q := range []string{"START TRANSACTION", hold} {
			if _, err := holder.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.ExecContext(ctx, "START TRANSACTION"); err != nil {
			t.Fatal(err)
		}
		before := e.fastSelects.Load()
		out, err := selectOutcome(ctx, c, query, first...)
		if err != nil {
			t.Fatal(err)
		}
		if took := e.fastSelects.Load() - before; (took == 1) != (e == fast) {
			t.Fatalf("fast path ran %d times", took)
		}
		outs[i] = out
		if _, err := holder.ExecContext(ctx, "COMMIT"); err != nil {
			t.Fatal(err)
		}
		// The transaction goes on and now reads, the writer being free.
		out, err = selectOutcome(ctx, c, query, second...)
		if err != nil {
			t.Fatal(err)
		}
		outs[i] += " | " + out
		if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
			t.Fatal(err)
		}
	}
	return outs
}
