package boltsql

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fastUpdateCase is one statement run on both engines of the differential
// test; fast says whether the fast path must take it.
type fastUpdateCase struct {
	q    string
	args []any
	fast bool
}

const (
	fastUpdateDDL = `CREATE TABLE ut (id BIGINT NOT NULL, name VARCHAR(8) NOT NULL, n INT, m INT, flag BOOL,
		body LONGBLOB, d DECIMAL(10,2), PRIMARY KEY (id), UNIQUE KEY un (name), KEY km (m))`
	fastUpdateKeysDDL = `CREATE TABLE uk (sid VARBINARY(8) NOT NULL, seq BIGINT NOT NULL, last BIGINT NOT NULL,
		epoch BIGINT NOT NULL, note VARCHAR(4), PRIMARY KEY (sid, seq))`
	fastUpdateStrKeyDDL = `CREATE TABLE uv (k VARCHAR(4) NOT NULL PRIMARY KEY, v INT NOT NULL)`
	advance             = "UPDATE uk SET last = ? WHERE sid = ? AND seq = ? AND last = ? AND epoch = ?"
)

var fastUpdateSeed = []string{
	"INSERT INTO ut VALUES (1, 'a', 10, 1, 1, 'x', 1.5), (2, 'b', NULL, 2, 0, NULL, NULL), (3, 'c', 30, 3, NULL, '', 3)",
	"INSERT INTO uk VALUES ('s1', 1, 5, 1, NULL), ('s1', 2, 0, 1, 'n'), ('s2', 1, 7, 2, 'x')",
	"INSERT INTO uv VALUES ('a', 1), ('a ', 2), ('é', 3)",
}

func fastUpdateCases() []fastUpdateCase {
	return []fastUpdateCase{
		// Changed, then the same value again (matched, not changed), then no row.
		{"UPDATE ut SET n = ? WHERE id = ?", []any{11, 1}, true},
		{"UPDATE ut SET n = ? WHERE id = ?", []any{11, 1}, true},
		{"UPDATE ut SET n = ? WHERE id = ?", []any{11, 99}, true},
		{"update UT set N = 12, FLAG = ? where ID = ?;", []any{false, 1}, true},
		{"UPDATE ut SET n = ? WHERE ? = id", []any{13, 1}, true},
		// The journal's stream advance: the extra predicates match or not.
		{advance, []any{6, "s1", 1, 5, 1}, true},
		{advance, []any{7, "s1", 1, 5, 1}, true},         // stale last
		{advance, []any{7, []byte("s1"), 1, 6, 2}, true}, // stale epoch
		{advance, []any{6, "s1", 1, 6, 1}, true},         // unchanged
		{advance, []any{9, "s9", 1, 0, 0}, true},         // no stream
		{"UPDATE uk SET epoch = ?, note = ? WHERE sid = ? AND seq = ? AND epoch = ?", []any{2, "own", "s1", 2, 1}, true},
		{"UPDATE uk SET note = 'rep' WHERE sid = ? AND seq = ?", []any{"s2", 1}, true},
		// A LONGBLOB set to its own bytes (matched, not changed), to other
		// bytes, '' against NULL and back.
		{"UPDATE ut SET body = ? WHERE id = ?", []any{[]byte("x"), 1}, true},
		{"UPDATE ut SET body = ? WHERE id = ?", []any{"x", 1}, true},
		{"UPDATE ut SET body = ? WHERE id = ?", []any{[]byte("x\x00"), 1}, true},
		{"UPDATE ut SET body = ? WHERE id = ?", []any{[]byte{}, 3}, true},
		{"UPDATE ut SET body = ? WHERE id = ?", []any{nil, 3}, true},
		{"UPDATE ut SET body = ? WHERE id = ?", []any{[]byte{}, 3}, true},
		{"UPDATE ut SET body = ? WHERE id = ?", []any{[]byte(nil), 3}, true},
		{"UPDATE ut SET body = ? WHERE id = ?", []any{[]byte{}, 2}, true},
		// A VARCHAR key (utf8mb4_0900_bin: bytes, no padding).
		{"UPDATE uv SET v = ? WHERE k = ?", []any{10, "a"}, true},
		{"UPDATE uv SET v = ? WHERE k = ?", []any{20, "a "}, true},
		{"UPDATE uv SET v = ? WHERE k = ?", []any{30, "é"}, true},
		{"UPDATE uv SET v = ? WHERE k = ?", []any{40, "A"}, true},
		{"UPDATE uv SET v = ? WHERE k = ?", []any{50, "abcde"}, false},
		// Comparison operators and NULLs.
		{"UPDATE ut SET body = ? WHERE id = ? AND n > ? AND n <= ?", []any{"gt", 1, 12, 13}, true},
		{"UPDATE ut SET body = ? WHERE id = ? AND n >= ? AND n < ?", []any{"no", 1, 14, 20}, true},
		{"UPDATE ut SET body = ? WHERE id = ? AND n IS NULL", []any{"null", 2}, true},
		{"UPDATE ut SET body = ? WHERE id = ? AND n IS NOT NULL", []any{"nn", 2}, true},
		{"UPDATE ut SET body = ? WHERE id = ? AND n = ?", []any{"eqnull", 2, nil}, true},
		{"UPDATE ut SET body = ? WHERE id = ? AND n <=> ?", []any{"nseq", 2, nil}, true},
		{"UPDATE ut SET body = ? WHERE id = ? AND d <=> NULL AND flag = 0", []any{"both", 2}, true},
		{"UPDATE ut SET n = NULL, d = ? WHERE id = ?", []any{nil, 3}, true},
		{"UPDATE ut SET n = NULL WHERE id = ?", []any{3}, true},
		{"UPDATE ut SET name = ? WHERE id = ?", []any{nil, 3}, true},
		{"UPDATE ut SET name = NULL WHERE id = ?", []any{99}, true},
		// Conversions in SET: string to number, not a number, out of range,
		// too long, a decimal, a bool.
		{"UPDATE ut SET n = ? WHERE id = ?", []any{"42", 1}, true},
		{"UPDATE ut SET n = ? WHERE id = ?", []any{"abc", 1}, true},
		{"UPDATE ut SET n = ? WHERE id = ?", []any{int64(1) << 40, 1}, true},
		{"UPDATE ut SET n = ? WHERE id = ?", []any{2.5, 1}, true},
		{"UPDATE ut SET name = ? WHERE id = ?", []any{"much too long", 1}, true},
		{"UPDATE ut SET d = ? WHERE id = ?", []any{"12.345", 1}, true},
		{"UPDATE ut SET d = ? WHERE id = ?", []any{"123456789012.5", 1}, true},
		{"UPDATE ut SET flag = ? WHERE id = ?", []any{"1", 2}, true},
		{"UPDATE uk SET note = ? WHERE sid = ? AND seq = ?", []any{"toolong", "s1", 1}, true},
		{"UPDATE uk SET last = ? WHERE sid = ? AND seq = ?", []any{"8", "s2", 1}, true},
		// Conversions in WHERE: a string against an integer column (not
		// indexed), an integer against a string column.
		{"UPDATE ut SET body = ? WHERE id = ? AND n = ?", []any{"s42", 1, "42"}, true},
		{"UPDATE ut SET body = ? WHERE id = ? AND n = ?", []any{"s42x", 1, "42x"}, true},
		{"UPDATE ut SET body = ? WHERE id = ? AND n < ?", []any{"lt", 1, "abc"}, true},
		{"UPDATE uk SET last = ? WHERE sid = ? AND seq = ? AND note = ?", []any{3, "s1", 2, 0}, true},
		{"UPDATE uk SET last = ? WHERE sid = ? AND seq = ? AND note < ?", []any{4, "s2", 1, 1}, true},
		{"UPDATE ut SET body = ? WHERE id = ? AND n = ?", []any{"big", 1, uint64(1) << 63}, true},
		{"UPDATE ut SET body = ? WHERE id = ? AND m = ?", []any{"m1", 1, 1}, true},
		// Unique secondary index: a taken name is refused; a free one moves
		// the index entry.
		{"UPDATE ut SET name = ? WHERE id = ?", []any{"b", 1}, true},
		{"UPDATE ut SET name = ?, n = ? WHERE id = ?", []any{"z", 5, 1}, true},
		{"UPDATE ut SET name = ? WHERE id = ?", []any{"a", 2}, true},
		{"UPDATE ut SET name = ? WHERE id = ?", []any{"z", 2}, true},
		// Non-unique indexed column: the entry moves.
		{"UPDATE ut SET m = ? WHERE id = ?", []any{7, 3}, true},
		{"UPDATE ut SET m = NULL WHERE id = ?", []any{2}, true},
		// Not taken: go-mysql-server gives its own answer (the same on both).
		{"UPDATE ut SET id = ? WHERE id = ?", []any{4, 3}, false},
		{"UPDATE ut SET id = ? WHERE id = ?", []any{3, 4}, false},
		{"UPDATE ut SET id = ? WHERE id = ?", []any{1, 3}, false},
		{"UPDATE ut SET body = ? WHERE id = ? AND name = ?", []any{"int", 1, 0}, false}, // indexed column, not converted at plan time
		{"UPDATE ut SET n = ? WHERE id = ?", []any{1, "1"}, false},
		{"UPDATE ut SET n = ? WHERE id = ?", []any{1, uint64(1) << 63}, false},
		{"UPDATE ut SET n = ? WHERE id = ?", []any{1, 1.0}, false},
		{"UPDATE ut SET body = ? WHERE id = ? AND m = ?", []any{"m3", 3, "7"}, false},
		{"UPDATE uk SET last = ? WHERE sid = ? AND seq = ?", []any{1, "waytoolong", 1}, false},
		{"UPDATE uk SET last = ? WHERE sid = ? AND seq = ?", []any{1, 5, 1}, false},
		{"UPDATE uk SET last = ? WHERE sid = ?", []any{1, "s1"}, false},
		{"UPDATE ut SET n = n + 1 WHERE id = ?", []any{1}, false},
		{"UPDATE ut SET n = ? WHERE id = ? LIMIT 1", []any{1, 1}, false},
		{"UPDATE ut SET n = ? WHERE id = ? ORDER BY id", []any{1, 1}, false},
		{"UPDATE IGNORE ut SET name = ? WHERE id = ?", []any{"b", 1}, false},
		{"UPDATE ut SET n = ? WHERE id = ? OR id = ?", []any{1, 1, 2}, false},
		{"UPDATE ut SET n = ?", []any{1}, false},
		{"UPDATE ut SET nope = ? WHERE id = ?", []any{1, 1}, false},
		{"UPDATE ut SET n = ? WHERE nope = ?", []any{1, 1}, false},
		{"UPDATE nope SET n = ? WHERE id = ?", []any{1, 1}, false},
		{"UPDATE ut SET n = DEFAULT WHERE id = ?", []any{1}, false},
		{"UPDATE ut SET n = ? WHERE id = ?", []any{1}, false},
	}
}

// TestFastUpdateMatchesEngine runs the same statements with the update fast
// path and through go-mysql-server alone: errors (code and message), rows
// affected, ROW_COUNT(), FOUND_ROWS() and the tables' contents (read
// through their indexes too) must be identical.
func TestFastUpdateMatchesEngine(t *testing.T) {
	fast, slow, conns := openDifferential(t, func(e *Engine) { e.noFastUpdate = true },
		append([]string{fastUpdateDDL, fastUpdateKeysDDL, fastUpdateStrKeyDDL}, fastUpdateSeed...)...)
	ctx := context.Background()
	outcome := func(e *Engine, c fastUpdateCase) string {
		before := e.fastUpdates.Load()
		res, err := conns[e].ExecContext(ctx, c.q, c.args...)
		took := e.fastUpdates.Load() - before
		if e == fast && (took == 1) != c.fast {
			t.Errorf("%s %v: fast path took it: %v, want %v", c.q, c.args, took == 1, c.fast)
		}
		if e == slow && took != 0 {
			t.Errorf("%s: fast path ran with it disabled", c.q)
		}
		if err != nil {
			return fmt.Sprintf("error %d: %v", mysqlCode(err), err)
		}
		n, _ := res.RowsAffected()
		var rc, fr int64
		if err := conns[e].QueryRowContext(ctx, "SELECT ROW_COUNT(), FOUND_ROWS()").Scan(&rc, &fr); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("ok affected=%d row_count=%d found_rows=%d", n, rc, fr)
	}
	for _, c := range fastUpdateCases() {
		got, want := outcome(fast, c), outcome(slow, c)
		if got != want {
			t.Errorf("%s %v:\n fast path: %s\n engine:    %s", c.q, c.args, got, want)
		}
	}

	// Transactions: an explicit one rolled back, one committed with a
	// failed statement inside, and autocommit off.
	fastBefore := fast.fastUpdates.Load()
	for _, e := range []*Engine{fast, slow} {
		c := conns[e]
		for _, q := range []string{
			"START TRANSACTION",
			"UPDATE ut SET body = 'rolled' WHERE id = 1",
			"UPDATE uk SET last = 100 WHERE sid = 's2' AND seq = 1 AND epoch = 2",
			"ROLLBACK",
			"START TRANSACTION",
			"UPDATE ut SET body = 'kept' WHERE id = 1",
			"UPDATE ut SET name = 'a' WHERE id = 3", // 1062: the statement fails, the transaction goes on
			"UPDATE ut SET body = 'kept3' WHERE id = 3",
			"COMMIT",
			"SET autocommit = 0",
			"UPDATE ut SET body = 'ac-rolled' WHERE id = 2",
			"ROLLBACK",
			"UPDATE ut SET body = 'ac-kept' WHERE id = 2",
			"COMMIT",
			"SET autocommit = 1",
		} {
			_, err := c.ExecContext(ctx, q)
			if strings.Contains(q, "'a'") {
				if mysqlCode(err) != 1062 {
					t.Fatalf("%s: got %v, want 1062", q, err)
				}
			} else if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	if n := fast.fastUpdates.Load() - fastBefore; n != 7 {
		t.Fatalf("fast path ran %d of the 7 updates in transactions", n)
	}

	dump := func(e *Engine) string {
		var b strings.Builder
		for _, q := range []string{
			"SELECT CONCAT_WS(',', id, name, COALESCE(n, 'N'), COALESCE(m, 'N'), COALESCE(flag, 'N'), COALESCE(HEX(body), 'N'), COALESCE(d, 'N')) FROM ut ORDER BY id",
			"SELECT CONCAT_WS(',', HEX(sid), seq, last, epoch, COALESCE(note, 'N')) FROM uk ORDER BY sid, seq",
			"SELECT CONCAT(HEX(k), '=', v) FROM uv ORDER BY k",
			// Through the secondary indexes: entries moved with their rows.
			"SELECT CONCAT(id, '@', name) FROM ut WHERE name IN ('a', 'b', 'c', 'z') ORDER BY name",
			"SELECT CONCAT(id, '@', m) FROM ut WHERE m >= 0 ORDER BY m",
			"SELECT CONCAT(id, '@', COALESCE(m, 'N')) FROM ut WHERE m IS NULL",
		} {
			fmt.Fprintln(&b, strings.Join(queryStrings(t, e.DB(), q), " | "))
		}
		return b.String()
	}
	got, want := dump(fast), dump(slow)
	if got != want {
		t.Fatalf("contents differ:\nfast path:\n%s\nengine:\n%s", got, want)
	}
	// The committed transaction's bodies are there, the rolled-back ones
	// not; index reads find the moved entries.
	for _, s := range []string{"1,b,N,1,0,6B657074,12.35", "2,a,1,N,1,61632D6B657074,N", "3,c,1,7,N,6B65707433,N",
		"7331,2,1,2,own", "61=10 | 6120=20 | C3A9=30", "7332,1,4,2,rep", "2@a | 1@b | 3@c", "1@1 | 3@7", "2@N"} {
		if !strings.Contains(got, s) {
			t.Fatalf("contents lack %q:\n%s", s, got)
		}
	}
}

// TestFastUpdateConcurrentCompareAndSet: writers advance shared counters
// with compare-and-set UPDATEs (the journal's stream advance), reading the
// current value first; every successful advance is exactly one increment,
// so the counters end at the number of successes, and none is lost.
func TestFastUpdateConcurrentCompareAndSet(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	db.SetMaxOpenConns(16)
	mustExec(t, db, fastUpdateKeysDDL)
	const counters, writers, each = 2, 8, 40
	for c := 0; c < counters; c++ {
		mustExec(t, db, "INSERT INTO uk VALUES (?, 1, 0, 1, NULL)", fmt.Sprintf("c%d", c))
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			sid := fmt.Sprintf("c%d", w%counters)
			for done := 0; done < each; {
				var last int64
				if err := db.QueryRow("SELECT last FROM uk WHERE sid = ? AND seq = 1", sid).Scan(&last); err != nil {
					errs <- err
					return
				}
				res, err := db.Exec(advance, last+1, sid, 1, last, 1)
				if err != nil {
					errs <- err
					return
				}
				if n, _ := res.RowsAffected(); n == 1 {
					done++
				} else if n != 0 {
					errs <- fmt.Errorf("%d rows affected", n)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for c := 0; c < counters; c++ {
		if n := queryInt(t, db, "SELECT last FROM uk WHERE sid = ? AND seq = 1", fmt.Sprintf("c%d", c)); n != writers/counters*each {
			t.Fatalf("counter c%d = %d, want %d", c, n, writers/counters*each)
		}
	}
	if n := e.fastUpdates.Load(); n < writers*each {
		t.Fatalf("fast path ran %d updates, want at least %d", n, writers*each)
	}
}

// TestUpdateRefusesATableChangedWhileWaitingForTheWriter: an UPDATE that
// resolved its table, then waited for the writer while another transaction
// added an index on the column it changes, fails with 1412 and changes
// nothing; retried, it moves the row into the new index.
func TestUpdateRefusesATableChangedWhileWaitingForTheWriter(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	mustExec(t, db, "CREATE TABLE tc (id BIGINT PRIMARY KEY, v VARCHAR(10) NOT NULL)")
	mustExec(t, db, "INSERT INTO tc VALUES (1, 'old')")
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
	before := e.fastUpdates.Load()
	done := make(chan error, 1)
	go func() {
		_, err := db.Exec("UPDATE tc SET v = ? WHERE id = ?", "new", 1)
		done <- err
	}()
	// The fast path resolves the table before it starts its transaction, so
	// once two writers are counted the update holds the old definition.
	deadline := time.Now().Add(10 * time.Second)
	for e.writers.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the update never started")
		}
		runtime.Gosched()
	}
	if _, err := holder.ExecContext(ctx, "CREATE INDEX byv ON tc (v)"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; mysqlCode(err) != 1412 {
		t.Fatalf("update across a concurrent index creation: got %v, want 1412", err)
	}
	if e.fastUpdates.Load() == before {
		t.Fatal("the update did not take the fast path")
	}
	if n := queryInt(t, db, "SELECT COUNT(*) FROM tc WHERE v = 'old'"); n != 1 {
		t.Fatalf("refused update changed the row (%d rows still 'old')", n)
	}
	mustExec(t, db, "UPDATE tc SET v = ? WHERE id = ?", "new", 1)
	if n := queryInt(t, db, "SELECT COUNT(*) FROM tc WHERE v = 'new'"); n != 1 {
		t.Fatalf("index lookup after retry: %d rows, want 1", n)
	}
	if n := queryInt(t, db, "SELECT COUNT(*) FROM tc WHERE v = 'old'"); n != 0 {
		t.Fatalf("old index entry left behind: %d rows", n)
	}
}
