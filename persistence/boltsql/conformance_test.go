package boltsql

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSchemaAndRowsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	db := e.DB()
	mustExec(t, db, `CREATE TABLE kinds (
		id BIGINT NOT NULL AUTO_INCREMENT, i INT, b BOOL DEFAULT true, v VARCHAR(20) DEFAULT 'dflt',
		tx TEXT, bl BLOB, lb LONGBLOB, dt DATETIME(6), PRIMARY KEY (id), UNIQUE KEY uv (v))`)
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	mustExec(t, db, "INSERT INTO kinds (i, tx, bl, lb, dt) VALUES (?, ?, ?, ?, ?)", 7, "text", []byte{0, 1, 2}, []byte("long"), at)
	mustExec(t, db, "INSERT INTO kinds (i, v) VALUES (8, 'other')")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	db = e.DB()
	var (
		id, i  int64
		b      bool
		v, txt string
		bl, lb []byte
		dt     time.Time
	)
	if err := db.QueryRow("SELECT id, i, b, v, tx, bl, lb, dt FROM kinds WHERE id = 1").Scan(&id, &i, &b, &v, &txt, &bl, &lb, &dt); err != nil {
		t.Fatal(err)
	}
	if id != 1 || i != 7 || !b || v != "dflt" || txt != "text" || string(bl) != "\x00\x01\x02" || string(lb) != "long" || !dt.Equal(at) {
		t.Fatalf("row read back wrong: %v %v %v %q %q %q %q %v", id, i, b, v, txt, bl, lb, dt)
	}
	// Defaults and AUTO_INCREMENT continue after reopen.
	res := mustExec(t, db, "INSERT INTO kinds (i, v) VALUES (9, 'third')")
	if got, _ := res.LastInsertId(); got != 3 {
		t.Fatalf("auto increment after reopen = %d, want 3", got)
	}
	mustExec(t, db, "DROP TABLE kinds")
	if _, err := db.Exec("SELECT * FROM kinds"); mysqlCode(err) != 1146 {
		t.Fatalf("dropped table: got %v, want error 1146", err)
	}
	mustExec(t, db, "CREATE TABLE kinds (id BIGINT PRIMARY KEY)")
	if n := queryInt(t, db, "SELECT COUNT(*) FROM kinds"); n != 0 {
		t.Fatalf("recreated table has %d rows", n)
	}
}

func TestDMLInsertUpdateDeleteUpsert(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	mustExec(t, db, eventsDDL)
	mustExec(t, db, "CREATE TABLE heads (session_id VARCHAR(64) PRIMARY KEY, last_seq BIGINT NOT NULL, epoch INT NOT NULL)")
	now := time.Now().UTC()
	for i := 1; i <= 5; i++ {
		mustExec(t, db, "INSERT INTO events VALUES (?, ?, ?, ?, ?)", "s1", i, "k", []byte("b"), now)
	}
	mustExec(t, db, "INSERT INTO heads VALUES ('s1', 5, 1) ON DUPLICATE KEY UPDATE last_seq = VALUES(last_seq)")
	mustExec(t, db, "INSERT INTO heads VALUES ('s1', 9, 1) ON DUPLICATE KEY UPDATE last_seq = VALUES(last_seq)")
	if n := queryInt(t, db, "SELECT last_seq FROM heads WHERE session_id = 's1'"); n != 9 {
		t.Fatalf("upsert last_seq = %d, want 9", n)
	}
	res := mustExec(t, db, "UPDATE events SET kind = 'u' WHERE session_id = 's1' AND seq >= 4")
	if n, _ := res.RowsAffected(); n != 2 {
		t.Fatalf("update affected %d, want 2", n)
	}
	if n := queryInt(t, db, "SELECT COUNT(*) FROM events WHERE kind = 'u'"); n != 2 {
		t.Fatalf("updated rows via secondary index = %d, want 2", n)
	}
	if n := queryInt(t, db, "SELECT MAX(seq) FROM events WHERE session_id = 's1'"); n != 5 {
		t.Fatalf("max = %d", n)
	}
	mustExec(t, db, "DELETE FROM events WHERE session_id = 's1' AND seq = 1")
	if n := queryInt(t, db, "SELECT COUNT(*) FROM events"); n != 4 {
		t.Fatalf("after delete count = %d", n)
	}
	if n := queryInt(t, db, "SELECT COUNT(*) FROM events WHERE kind = 'k'"); n != 2 {
		t.Fatalf("secondary index after delete = %d, want 2", n)
	}
	mustExec(t, db, "INSERT IGNORE INTO events VALUES ('s1', 2, 'dup', NULL, NOW(6))")
	mustExec(t, db, "REPLACE INTO events VALUES ('s1', 3, 'rep', NULL, NOW(6))")
	got := queryStrings(t, db, "SELECT kind FROM events WHERE session_id = 's1' ORDER BY session_id, seq")
	if strings.Join(got, ",") != "k,rep,u,u" {
		t.Fatalf("kinds = %v", got)
	}
	// Update that changes the primary key moves the row and its index entry.
	mustExec(t, db, "UPDATE events SET seq = 100 WHERE session_id = 's1' AND seq = 2")
	got = queryStrings(t, db, "SELECT CAST(seq AS CHAR) FROM events WHERE kind = 'k'")
	if strings.Join(got, ",") != "100" {
		t.Fatalf("moved row via index = %v", got)
	}
	got = queryStrings(t, db, "SELECT CAST(seq AS CHAR) FROM events WHERE session_id = 's1' ORDER BY session_id DESC, seq DESC LIMIT 2")
	if strings.Join(got, ",") != "100,5" {
		t.Fatalf("reverse order = %v", got)
	}
}

func TestIndexSeekReadsOnlyMatchingKeys(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	mustExec(t, db, eventsDDL)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 10; s++ {
		for i := 1; i <= 100; i++ {
			mustExec(t, tx, "INSERT INTO events VALUES (?, ?, ?, NULL, NOW(6))", fmt.Sprintf("s%02d", s), i, fmt.Sprintf("k%d", i%10))
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		query string
		index string
		rows  int64
	}{
		{"SELECT seq FROM events WHERE session_id = 's03' ORDER BY session_id, seq", "[events.session_id,events.seq]", 100},
		{"SELECT seq FROM events WHERE session_id = 's03' AND seq > 90 ORDER BY session_id, seq", "[events.session_id,events.seq]", 10},
		{"SELECT seq FROM events WHERE session_id = 's03' AND seq = 42", "[events.session_id,events.seq]", 1},
		{"SELECT seq FROM events WHERE session_id IN ('s01', 's07') AND seq BETWEEN 10 AND 14", "[events.session_id,events.seq]", 10},
		{"SELECT seq FROM events WHERE kind = 'k3'", "[events.kind]", 100},
	}
	for _, c := range cases {
		plan := strings.Join(queryStrings(t, db, "EXPLAIN PLAN "+c.query), "\n")
		if !strings.Contains(plan, "IndexedTableAccess(events)") || !strings.Contains(plan, "index: "+c.index) {
			t.Fatalf("%s: plan does not use index %s:\n%s", c.query, c.index, plan)
		}
		if strings.Contains(plan, "Sort(") && strings.Contains(c.query, "ORDER BY") {
			t.Fatalf("%s: plan keeps a Sort:\n%s", c.query, plan)
		}
		before := e.keysRead.Load()
		got := int64(len(queryStrings(t, db, c.query)))
		read := int64(e.keysRead.Load() - before)
		if got != c.rows || read != c.rows {
			t.Fatalf("%s: %d rows, %d keys read; want %d and %d", c.query, got, read, c.rows, c.rows)
		}
	}
}

func TestRollbackLeavesNothing(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	mustExec(t, db, eventsDDL)
	mustExec(t, db, "CREATE TABLE heads (session_id VARCHAR(64) PRIMARY KEY, last_seq BIGINT NOT NULL)")
	mustExec(t, db, "INSERT INTO heads VALUES ('s', 0)")
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 50; i++ {
		mustExec(t, tx, "INSERT INTO events VALUES ('s', ?, 'k', 'x', NOW(6))", i)
	}
	mustExec(t, tx, "UPDATE heads SET last_seq = 50 WHERE session_id = 's'")
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, db, "SELECT COUNT(*) FROM events"); n != 0 {
		t.Fatalf("rollback left %d events", n)
	}
	if n := queryInt(t, db, "SELECT COUNT(*) FROM events WHERE kind = 'k'"); n != 0 {
		t.Fatalf("rollback left %d index entries", n)
	}
	if n := queryInt(t, db, "SELECT last_seq FROM heads"); n != 0 {
		t.Fatalf("rollback left last_seq %d", n)
	}
}

func TestCommitIsAllOrNothingAcrossTables(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	mustExec(t, db, eventsDDL)
	mustExec(t, db, "CREATE TABLE heads (session_id VARCHAR(64) PRIMARY KEY, last_seq BIGINT NOT NULL)")
	mustExec(t, db, "INSERT INTO events VALUES ('s', 3, 'k', NULL, NOW(6))")

	// A failing statement inside a transaction is undone alone; the
	// transaction's earlier statements stay until COMMIT or ROLLBACK.
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, tx, "INSERT INTO heads VALUES ('s', 2)")
	if _, err := tx.Exec("INSERT INTO events VALUES ('s', 1, 'k', NULL, NOW(6)), ('s', 2, 'k', NULL, NOW(6)), ('s', 3, 'k', NULL, NOW(6))"); mysqlCode(err) != 1062 {
		t.Fatalf("duplicate in multi-row insert: %v", err)
	}
	if n := queryInt(t, tx, "SELECT COUNT(*) FROM events"); n != 1 {
		t.Fatalf("failed statement left %d events, want 1", n)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, db, "SELECT COUNT(*) FROM heads"); n != 1 {
		t.Fatalf("committed head missing")
	}

	// Both tables or neither: a committed pair is visible together.
	tx, err = db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, tx, "INSERT INTO events VALUES ('t', 1, 'k', NULL, NOW(6))")
	mustExec(t, tx, "INSERT INTO heads VALUES ('t', 1)")
	// Before COMMIT, an autocommit reader sees neither.
	if n := queryInt(t, db, "SELECT COUNT(*) FROM events WHERE session_id = 't'") + queryInt(t, db, "SELECT COUNT(*) FROM heads WHERE session_id = 't'"); n != 0 {
		t.Fatalf("uncommitted rows visible to another connection: %d", n)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, db, "SELECT COUNT(*) FROM events WHERE session_id = 't'") + queryInt(t, db, "SELECT COUNT(*) FROM heads WHERE session_id = 't'"); n != 2 {
		t.Fatalf("committed pair: %d of 2 rows visible", n)
	}
}

func TestConcurrentWritersLoseNothing(t *testing.T) {
	e := openTest(t, Options{})
	db := e.DB()
	db.SetMaxOpenConns(16)
	mustExec(t, db, eventsDDL)
	const writers, each = 8, 1000
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := db.Exec("INSERT INTO events VALUES (?, ?, 'k', NULL, NOW(6))", fmt.Sprintf("w%d", w), i); err != nil {
					errs <- err
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
	if n := queryInt(t, db, "SELECT COUNT(*) FROM events"); n != writers*each {
		t.Fatalf("count = %d, want %d", n, writers*each)
	}
	// Group commit: concurrent writers shared fsyncs.
	st := e.Stats()
	if st.Transactions < writers*each || st.Commits >= st.Transactions {
		t.Fatalf("%d transactions in %d commits: writers did not share fsyncs", st.Transactions, st.Commits)
	}
	t.Logf("%d transactions in %d fsyncs", st.Transactions, st.Commits)
	for w := 0; w < writers; w++ {
		if n := queryInt(t, db, "SELECT COUNT(*) FROM events WHERE session_id = ?", fmt.Sprintf("w%d", w)); n != each {
			t.Fatalf("writer %d: %d rows, want %d", w, n, each)
		}
	}
}

func TestConflictingPrimaryKeyIsRefusedNeverOverwritten(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	mustExec(t, db, eventsDDL)
	const n = 8
	var wg sync.WaitGroup
	results := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, results[i] = db.Exec("INSERT INTO events VALUES ('s', 1, ?, NULL, NOW(6))", fmt.Sprintf("writer%d", i))
		}(i)
	}
	wg.Wait()
	winner := -1
	for i, err := range results {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("two writers both inserted the same key")
		case err == nil:
			winner = i
		case mysqlCode(err) != 1062:
			t.Fatalf("writer %d: %v, want error 1062", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer won")
	}
	got := queryStrings(t, db, "SELECT kind FROM events")
	if len(got) != 1 || got[0] != fmt.Sprintf("writer%d", winner) {
		t.Fatalf("stored %v, want the winner's row writer%d", got, winner)
	}
	// The same inside an explicit transaction: refused, the transaction goes on.
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO events VALUES ('s', 1, 'late', NULL, NOW(6))"); mysqlCode(err) != 1062 {
		t.Fatalf("in transaction: %v", err)
	}
	mustExec(t, tx, "INSERT INTO events VALUES ('s', 2, 'next', NULL, NOW(6))")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	got = queryStrings(t, db, "SELECT kind FROM events ORDER BY session_id, seq")
	if strings.Join(got, ",") != fmt.Sprintf("writer%d,next", winner) {
		t.Fatalf("after transaction: %v", got)
	}
}

func TestExplicitTransactionReadThenWriteIsSerializable(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	mustExec(t, db, "CREATE TABLE owner (session_id VARCHAR(64) PRIMARY KEY, epoch BIGINT NOT NULL)")
	mustExec(t, db, "INSERT INTO owner VALUES ('s', 0)")
	const workers, rounds = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				tx, err := db.BeginTx(context.Background(), nil)
				if err != nil {
					errs <- err
					return
				}
				var epoch int64
				if err := tx.QueryRow("SELECT epoch FROM owner WHERE session_id = 's'").Scan(&epoch); err != nil {
					errs <- err
					tx.Rollback()
					return
				}
				if _, err := tx.Exec("UPDATE owner SET epoch = ? WHERE session_id = 's'", epoch+1); err != nil {
					errs <- err
					tx.Rollback()
					return
				}
				if err := tx.Commit(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := queryInt(t, db, "SELECT epoch FROM owner"); n != workers*rounds {
		t.Fatalf("epoch = %d, want %d: a read-then-write transaction lost an update", n, workers*rounds)
	}
}

func TestAutocommitReadDoesNotWaitForOpenWriter(t *testing.T) {
	e := openTest(t, Options{NoSync: true, LockWaitTimeout: 200 * time.Millisecond})
	db := e.DB()
	mustExec(t, db, eventsDDL)
	mustExec(t, db, "INSERT INTO events VALUES ('s', 1, 'k', NULL, NOW(6))")
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	mustExec(t, tx, "INSERT INTO events VALUES ('s', 2, 'k', NULL, NOW(6))")
	// The writer is held by tx: a reader still answers from its snapshot...
	if n := queryInt(t, db, "SELECT COUNT(*) FROM events"); n != 1 {
		t.Fatalf("reader saw %d rows, want the committed 1", n)
	}
	// ...and a second writer gives up with MySQL's lock wait timeout.
	if _, err := db.Exec("INSERT INTO events VALUES ('s', 3, 'k', NULL, NOW(6))"); mysqlCode(err) != 1205 {
		t.Fatalf("second writer: %v, want error 1205", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, db, "SELECT COUNT(*) FROM events"); n != 2 {
		t.Fatalf("after commit: %d rows", n)
	}
}

func TestCloseRollsBackALeakedTransaction(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true, LockWaitTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	db := e.DB()
	mustExec(t, db, eventsDDL)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, tx, "INSERT INTO events VALUES ('leak', 1, 'k', NULL, NOW(6))")
	// tx is never committed or rolled back.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if n := queryInt(t, e.DB(), "SELECT COUNT(*) FROM events"); n != 0 {
		t.Fatalf("leaked transaction's row survived: %d", n)
	}
}

func TestIndexRangesReturnExactlyTheMatchingRows(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	mustExec(t, db, eventsDDL)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 10; s++ {
		for i := 1; i <= 20; i++ {
			mustExec(t, tx, "INSERT INTO events VALUES (?, ?, ?, NULL, NOW(6))", fmt.Sprintf("s%02d", s), i, fmt.Sprintf("k%d", i%3))
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		where string
		want  int64
	}{
		{"session_id > 's05' AND seq = 3", 4},
		{"session_id BETWEEN 's01' AND 's02' AND seq < 3", 4},
		{"session_id >= 's08' AND seq IN (1, 20)", 4},
		{"session_id = 's03' AND seq > 18", 2},
		{"session_id = 's03' AND (seq < 2 OR seq > 19)", 2},
		{"session_id IN ('s00', 's09') AND seq BETWEEN 5 AND 6", 4},
		{"session_id < 's00'", 0},
		{"session_id = 's03' AND seq > 5 AND seq < 5", 0},
		{"kind = 'k1' AND session_id = 's04'", 7},
		{"session_id IS NULL", 0},
	}
	for _, c := range cases {
		if got := queryInt(t, db, "SELECT COUNT(*) FROM events WHERE "+c.where); got != c.want {
			t.Errorf("WHERE %s: %d rows, want %d", c.where, got, c.want)
		}
	}
}
