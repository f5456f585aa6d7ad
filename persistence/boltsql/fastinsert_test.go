package boltsql

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fastInsertCase is one statement run on both engines of the differential
// test; fast says whether the fast path must take it.
type fastInsertCase struct {
	q    string
	args []any
	fast bool
}

func fastInsertCases() []fastInsertCase {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	all := "INSERT INTO ft VALUES (?, ?, ?, ?, ?, ?, ?)"
	return []fastInsertCase{
		{all, []any{1, "a", 7, true, []byte{0, 1, 2}, at, "1.25"}, true},
		{"INSERT INTO ft (name, id, n, flag, body, at, d) VALUES (?, ?, NULL, 0, 'x', '2026-01-01 00:00:00', 3)", []any{"b", 2}, true},
		{"insert into FT (ID, NAME, N, FLAG, BODY, AT, D) values (3, 'c', -5, 1, NULL, ?, NULL), (4, 'd', ?, NULL, ?, ?, ?);", []any{at, int64(-9), "blob", "2026-02-03 04:05:06.7", 2.5}, true},
		{all, []any{5, "e", 1.5, false, nil, at.Add(time.Hour), "12"}, true},
		{all, []any{6, "f", "42", int8(1), "", "2026-03-01", uint64(7)}, true},
		// Duplicate primary key in the second row: the first is not kept.
		{"INSERT INTO ft VALUES (?, ?, 1, 1, NULL, ?, 1), (?, ?, 1, 1, NULL, ?, 1)", []any{7, "g", at, 1, "h", at}, true},
		// Duplicate unique key.
		{all, []any{8, "a", 1, 1, nil, at, 1}, true},
		// NULL into NOT NULL, too long, not a number, out of range, bad datetime, bad decimal.
		{all, []any{9, nil, 1, 1, nil, at, 1}, true},
		{all, []any{10, "much too long", 1, 1, nil, at, 1}, true},
		{all, []any{"abc", "i", 1, 1, nil, at, 1}, true},
		{all, []any{11, "j", int64(1) << 40, 1, nil, at, 1}, true},
		{all, []any{12, "k", 1, 1, nil, "nope", 1}, true},
		{all, []any{13, "l", 1, 1, nil, at, "x"}, true},
		{all, []any{14, "m", 1, 1, nil, at, "123456789012.5"}, true},
		{all, []any{uint64(1) << 63, "n", 1, 1, nil, at, 1}, true},
		// Binary columns, the journal's key type.
		{"INSERT INTO fb (k, v, u) VALUES (?, ?, ?)", []any{[]byte("k1"), []byte{0, 255}, "u1"}, true},
		{"INSERT INTO fb (u, k, v) VALUES (?, ?, ?), (?, ?, ?)", []any{nil, "k2", "é", []byte("u2"), []byte("k3"), ""}, true},
		{"INSERT INTO fb (k, v, u) VALUES (?, ?, ?)", []any{"k4", "v", "u1"}, true},
		{"INSERT INTO fb (k, v, u) VALUES (?, ?, ?)", []any{"k5", "v", "toolong"}, true},
		{"INSERT INTO fb (k, v, u) VALUES (?, ?, ?)", []any{"k6", nil, nil}, true},
		{"INSERT INTO fb (k, v, u) VALUES (?, ?, ?)", []any{"k1", "again", nil}, true},
		// []byte arguments stored without the string round trip: empty and
		// nil slices, exactly at and over a VARBINARY's length, and []byte
		// into character and integer columns (those keep the chain).
		{"INSERT INTO fb (k, v, u) VALUES (?, ?, ?)", []any{[]byte("k7"), []byte{}, []byte(nil)}, true},
		{"INSERT INTO fb (k, v, u) VALUES (?, ?, ?)", []any{[]byte("k8"), []byte(nil), []byte("four")}, true},
		{"INSERT INTO fb (k, v, u) VALUES (?, ?, ?)", []any{[]byte("k9"), []byte("v"), []byte("fives")}, true},
		{"INSERT INTO fb (k, v, u) VALUES (?, ?, ?)", []any{[]byte("k10000"), []byte{0xff, 0}, nil}, true},
		{"INSERT INTO fb (k, v, u) VALUES (?, ?, ?)", []any{[]byte("k100000"), []byte("v"), nil}, true},
		{"INSERT INTO fb (k, v, u) VALUES (?, ?, ?)", []any{[]byte{}, []byte("v"), nil}, true},
		{all, []any{[]byte("15"), []byte("bytes"), 1, 1, []byte{1}, at, 1}, true},
		{all, []any{16, []byte{0xff, 0xfe}, 1, 1, nil, at, 1}, true},
		{all, []any{17, []byte("much too long"), 1, 1, nil, at, 1}, true},
		// Not taken: go-mysql-server gives its own answer (the same on both engines).
		{"INSERT INTO ft VALUES (?, ?)", []any{20, "x"}, false},
		{"INSERT INTO ft (id, name, at) VALUES (?, ?, ?)", []any{21, "y", at}, false},
		{"INSERT INTO ft (id, id, n, flag, body, at, d) VALUES (22, 22, 1, 1, NULL, NOW(), 1)", nil, false},
		{"INSERT INTO nope VALUES (?)", []any{1}, false},
		{"INSERT INTO ft VALUES (?, ?, 1, 1, NULL, ?, 1) ON DUPLICATE KEY UPDATE n = 99", []any{1, "a", at}, false},
		{"INSERT IGNORE INTO ft VALUES (?, ?, 1, 1, NULL, ?, 1)", []any{1, "z", at}, false},
		{"INSERT INTO ft VALUES (?, ?, 1 + 1, 1, NULL, ?, 1)", []any{23, "o", at}, false},
		{"INSERT INTO ft VALUES (?, ?, ?, 1, NULL, ?, 1)", []any{24, "p", at}, false},
	}
}

// The tables of the insert differential tests (TestFastInsertWarningsMatchEngine too).
const (
	fastInsertDDL = `CREATE TABLE ft (id BIGINT NOT NULL, name VARCHAR(8) NOT NULL, n INT, flag BOOL,
		body LONGBLOB, at DATETIME(6) NOT NULL, d DECIMAL(10,2), PRIMARY KEY (id), UNIQUE KEY un (name))`
	fastInsertBlobDDL = `CREATE TABLE fb (k VARBINARY(6) NOT NULL, v LONGBLOB NOT NULL, u VARBINARY(4), PRIMARY KEY (k), UNIQUE KEY uu (u))`
)

// TestFastInsertMatchesEngine runs the same statements with the insert fast
// path and through go-mysql-server alone: errors (code and message), rows
// affected, ROW_COUNT() and the table contents must be identical.
func TestFastInsertMatchesEngine(t *testing.T) {
	fast, slow, conns := openDifferential(t, func(e *Engine) { e.noFastInsert = true }, fastInsertDDL, fastInsertBlobDDL)
	ctx := context.Background()
	outcome := func(e *Engine, c fastInsertCase) string {
		before := e.fastInserts.Load()
		res, err := conns[e].ExecContext(ctx, c.q, c.args...)
		took := e.fastInserts.Load() - before
		if e == fast && (took == 1) != c.fast {
			t.Errorf("%s: fast path took it: %v, want %v", c.q, took == 1, c.fast)
		}
		if e == slow && took != 0 {
			t.Errorf("%s: fast path ran with it disabled", c.q)
		}
		if err != nil {
			return fmt.Sprintf("error %d: %v", mysqlCode(err), err)
		}
		n, _ := res.RowsAffected()
		id, _ := res.LastInsertId()
		var rc int64
		if err := conns[e].QueryRowContext(ctx, "SELECT ROW_COUNT()").Scan(&rc); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("ok affected=%d id=%d row_count=%d", n, id, rc)
	}
	for _, c := range fastInsertCases() {
		got, want := outcome(fast, c), outcome(slow, c)
		if got != want {
			t.Errorf("%s %v:\n fast path: %s\n engine:    %s", c.q, c.args, got, want)
		}
	}
	// The same statements inside an explicit transaction: a failed statement
	// leaves the transaction open with its earlier rows; COMMIT keeps them.
	fastBefore := fast.fastInserts.Load()
	for _, e := range []*Engine{fast, slow} {
		c := conns[e]
		if _, err := c.ExecContext(ctx, "START TRANSACTION"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, "INSERT INTO ft VALUES (?, ?, 1, 1, NULL, NOW(), 1)", 30, "tx1"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, "INSERT INTO ft VALUES (?, ?, 1, 1, NULL, '2026-01-01', 1)", 31, "tx2"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, "INSERT INTO ft VALUES (?, ?, 1, 1, NULL, '2026-01-01', 1), (?, ?, 1, 1, NULL, '2026-01-01', 1)", 32, "tx3", 31, "tx4"); mysqlCode(err) != 1062 {
			t.Fatalf("duplicate inside a transaction: %v", err)
		}
		if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
			t.Fatal(err)
		}
		// autocommit off: inserts wait for COMMIT, ROLLBACK drops them.
		for _, q := range []string{
			"SET autocommit = 0",
			"INSERT INTO ft VALUES (40, 'ac1', 1, 1, NULL, '2026-01-01', 1)",
			"ROLLBACK",
			"INSERT INTO ft VALUES (41, 'ac2', 1, 1, NULL, '2026-01-01', 1)",
			"COMMIT",
			"SET autocommit = 1",
		} {
			if _, err := c.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	if n := fast.fastInserts.Load() - fastBefore; n != 4 {
		t.Fatalf("fast path ran %d of the 4 eligible inserts in transactions", n)
	}
	dump := func(e *Engine) string {
		var b strings.Builder
		rows, err := e.DB().Query("SELECT id, name, n, flag, HEX(body), at, d FROM ft WHERE id <> 30 ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			v := make([]any, 7)
			p := make([]any, 7)
			for i := range v {
				p[i] = &v[i]
			}
			if err := rows.Scan(p...); err != nil {
				t.Fatal(err)
			}
			for i, x := range v {
				if bs, ok := x.([]byte); ok {
					v[i] = string(bs)
				}
			}
			fmt.Fprintln(&b, v...)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	dumpFB := func(e *Engine) string {
		return strings.Join(queryStrings(t, e.DB(), "SELECT CONCAT(HEX(k), ' ', HEX(v), ' ', COALESCE(HEX(u), 'NULL')) FROM fb ORDER BY k"), "\n")
	}
	if got, want := dumpFB(fast), dumpFB(slow); got != want || !strings.Contains(got, "6B31 00FF 7531") {
		t.Fatalf("binary table contents differ or are wrong:\nfast path:\n%s\nengine:\n%s", got, want)
	}
	got, want := dump(fast), dump(slow)
	if got != want {
		t.Fatalf("table contents differ:\nfast path:\n%s\nengine:\n%s", got, want)
	}
	if !strings.Contains(got, "31 tx2") || strings.Contains(got, "tx3") || strings.Contains(got, "ac1") || !strings.Contains(got, "41 ac2") || !strings.Contains(got, "1 a 99 1 000102") {
		t.Fatalf("unexpected contents:\n%s", got)
	}
}

// TestFastInsertFollowsDDL prepares an INSERT, changes the table under it
// (ALTER, DROP and re-CREATE with other types) and executes it again: each
// execution sees the table as it is now.
func TestFastInsertFollowsDDL(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	mustExec(t, db, "CREATE TABLE dd (id BIGINT PRIMARY KEY, v VARCHAR(10) NOT NULL)")
	st, err := db.Prepare("INSERT INTO dd VALUES (?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Exec(1, "one"); err != nil {
		t.Fatal(err)
	}
	if e.fastInserts.Load() != 1 {
		t.Fatalf("fast path not taken")
	}

	// A new unique index: the next insert is checked against it.
	mustExec(t, db, "CREATE UNIQUE INDEX uv ON dd (v)")
	if _, err := st.Exec(2, "one"); mysqlCode(err) != 1062 {
		t.Fatalf("after CREATE UNIQUE INDEX: got %v, want 1062", err)
	}
	mustExec(t, db, "DROP INDEX uv ON dd")
	if _, err := st.Exec(2, "one"); err != nil {
		t.Fatalf("after DROP INDEX: %v", err)
	}

	// Dropped: the engine's unknown-table error.
	mustExec(t, db, "DROP TABLE dd")
	if _, err := st.Exec(3, "three"); mysqlCode(err) != 1146 {
		t.Fatalf("after DROP TABLE: got %v, want 1146", err)
	}

	// Re-created with a third column: two values no longer match the table.
	mustExec(t, db, "CREATE TABLE dd (id BIGINT PRIMARY KEY, v VARCHAR(10) NOT NULL, w INT)")
	if _, err := st.Exec(3, "three"); err == nil || !strings.Contains(err.Error(), "number of values does not match") {
		t.Fatalf("after re-CREATE with a third column: got %v, want the engine's value count error", err)
	}
	mustExec(t, db, "DROP TABLE dd")

	// Re-created with swapped types: values convert to the new types.
	mustExec(t, db, "CREATE TABLE dd (id VARCHAR(10) PRIMARY KEY, v BIGINT NOT NULL)")
	if _, err := st.Exec("four", 4); err != nil {
		t.Fatalf("after re-CREATE: %v", err)
	}
	if _, err := st.Exec(5, "five"); err == nil {
		t.Fatalf("'five' into BIGINT was accepted")
	}
	var id string
	var v int64
	if err := db.QueryRow("SELECT id, v FROM dd").Scan(&id, &v); err != nil || id != "four" || v != 4 {
		t.Fatalf("re-created table holds %q %d (%v), want four 4", id, v, err)
	}
	if n := queryInt(t, db, "SELECT COUNT(*) FROM dd"); n != 1 {
		t.Fatalf("re-created table has %d rows, want 1", n)
	}
	if e.fastInserts.Load() < 3 {
		t.Fatalf("fast path taken %d times, want at least 3", e.fastInserts.Load())
	}
}

// TestFastInsertConcurrentWriters: many sessions share cached shapes (their
// literals included) and the writer; nothing is lost or doubled, and every
// statement took the fast path.
func TestFastInsertConcurrentWriters(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	db.SetMaxOpenConns(16)
	mustExec(t, db, eventsDDL)
	const writers, each = 8, 200
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func(w int) {
			sid := fmt.Sprintf("w%d", w)
			for i := 0; i < each; i += 2 {
				var err error
				if i%4 == 0 {
					_, err = db.Exec("INSERT INTO events VALUES (?, ?, 'k', NULL, '2026-01-01 00:00:00'), (?, ?, 'k', ?, '2026-01-01 00:00:00')", sid, i, sid, i+1, []byte("b"))
				} else {
					_, err = db.Exec("INSERT INTO events (seq, session_id, kind, body, at) VALUES (?, ?, 'k', NULL, '2026-01-01 00:00:00')", i, sid)
					if err == nil {
						_, err = db.Exec("INSERT INTO events (seq, session_id, kind, body, at) VALUES (?, ?, 'k', NULL, '2026-01-01 00:00:00')", i+1, sid)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}(w)
	}
	for w := 0; w < writers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := queryInt(t, db, "SELECT COUNT(*) FROM events"); n != writers*each {
		t.Fatalf("count = %d, want %d", n, writers*each)
	}
	if n := queryInt(t, db, "SELECT COUNT(DISTINCT session_id, seq) FROM events WHERE kind = 'k'"); n != writers*each {
		t.Fatalf("distinct keys = %d, want %d", n, writers*each)
	}
	if got, want := e.fastInserts.Load(), uint64(writers*each*3/4); got != want {
		t.Fatalf("fast path ran %d statements, want %d", got, want)
	}
}

// TestInsertRefusesATableChangedWhileWaitingForTheWriter: an INSERT that
// resolved its table, then waited for the writer while another transaction
// added an index, must not write with the old definition (its row would be
// missing from the new index): it fails with MySQL's 1412 and changes nothing.
func TestInsertRefusesATableChangedWhileWaitingForTheWriter(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	mustExec(t, db, "CREATE TABLE tc (id BIGINT PRIMARY KEY, v VARCHAR(10) NOT NULL)")
	mustExec(t, db, "CREATE TABLE other (id BIGINT PRIMARY KEY)")
	ctx := context.Background()
	holder, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "START TRANSACTION"); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, "INSERT INTO other VALUES (1)"); err != nil { // takes the writer
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.Exec("INSERT INTO tc VALUES (?, ?)", 1, "x")
		done <- err
	}()
	// The fast path resolves the table before it starts its transaction, so
	// once two writers are counted the insert holds the old definition.
	deadline := time.Now().Add(10 * time.Second)
	for e.writers.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the insert never started")
		}
		runtime.Gosched()
	}
	// DDL commits the holder's transaction implicitly and frees the writer.
	if _, err := holder.ExecContext(ctx, "CREATE INDEX byv ON tc (v)"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; mysqlCode(err) != 1412 {
		t.Fatalf("insert across a concurrent index creation: got %v, want 1412", err)
	}
	if n := queryInt(t, db, "SELECT COUNT(*) FROM tc"); n != 0 {
		t.Fatalf("refused insert left %d rows", n)
	}
	// Retried, it writes the row and its index entry.
	mustExec(t, db, "INSERT INTO tc VALUES (?, ?)", 1, "x")
	if n := queryInt(t, db, "SELECT COUNT(*) FROM tc WHERE v = 'x'"); n != 1 {
		t.Fatalf("index lookup after retry: %d rows, want 1", n)
	}
}
