package boltsql

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// storedRows is a table's rows as stored, with each value's Go type: the
// differential tests compare them, so a fast path that stores a string
// where the engine stores bytes (or an int64 for an int32) fails.
func storedRows(t *testing.T, e *Engine, table string) string {
	t.Helper()
	ti := e.lookupTable(e.opts.Database, table)
	if ti == nil {
		t.Fatalf("no table %s", table)
	}
	var b strings.Builder
	err := e.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(ti.dataBucket).ForEach(func(k, v []byte) error {
			row, err := decodeRow(v)
			if err != nil {
				return err
			}
			for _, x := range row {
				fmt.Fprintf(&b, "%T(%v) ", x, x)
			}
			b.WriteString("\n")
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestFastBindMatchesEngine: every Go type database/sql passes, at the
// boundaries where go-mysql-server's literal changes type (int8, uint8, …,
// uint64) and where the string conversion the fast path skips would fail
// (length in bytes and characters, invalid UTF-8, CHAR, TEXT, BLOB),
// inserted, compared and selected with the fast paths and through the
// engine: same outcome, same stored values and Go types.
func TestFastBindMatchesEngine(t *testing.T) {
	fast, slow := openTest(t, Options{NoSync: true}), openTest(t, Options{NoSync: true})
	slow.noFastInsert, slow.noFastSelect, slow.noFastUpdate = true, true, true
	ctx := context.Background()
	const ddl = `CREATE TABLE fs (id BIGINT NOT NULL PRIMARY KEY, c CHAR(3), vc VARCHAR(4), tt TINYTEXT, tb TINYBLOB,
		vb VARBINARY(3), i8 TINYINT, u8 TINYINT UNSIGNED, i32 INT, u64 BIGINT UNSIGNED, f DOUBLE)`
	const ins = "INSERT INTO fs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	at := time.Date(2026, 1, 2, 3, 4, 5, 600000000, time.FixedZone("x", 3600))
	cases := [][]any{
		{1, "abc", "éééé", "t", []byte{}, []byte("abc"), int64(127), int64(255), int64(math.MaxInt32), uint64(1<<63 + 5), 1.5},
		{2, "abcd", nil, nil, nil, nil, nil, nil, nil, nil, nil},
		{3, "a", "ééééé", nil, nil, nil, nil, nil, nil, nil, nil},
		{4, "a", "\xff", nil, nil, nil, nil, nil, nil, nil, nil},
		{5, "", "", "", "", "", int64(-128), int64(0), int64(math.MinInt32), uint64(0), 0.0},
		{6, "é", []byte("ab"), strings.Repeat("x", 255), strings.Repeat("y", 255), "\xff\x00", true, false, int64(-129), int64(65536), int64(4294967295)},
		{7, nil, nil, strings.Repeat("x", 256), nil, nil, nil, nil, nil, nil, nil},
		{8, nil, nil, nil, []byte(strings.Repeat("y", 256)), nil, nil, nil, nil, nil, nil},
		{9, nil, nil, nil, nil, "abcd", nil, nil, nil, nil, nil},
		{10, nil, nil, nil, nil, nil, int64(128), nil, nil, nil, nil},
		{11, nil, nil, nil, nil, nil, nil, int64(256), nil, nil, nil},
		{12, nil, nil, nil, nil, nil, nil, int64(-1), int64(1) << 32, nil, nil},
		{13, nil, int64(1234), at, nil, nil, nil, nil, uint64(7), int64(-1), int64(32768)},
		{14, nil, int64(12345), nil, nil, nil, nil, nil, nil, nil, nil},
		{15, nil, at, nil, nil, nil, "1", "2", "42", "18446744073709551615", "2.5"},
		{16, nil, 2.5, nil, nil, nil, 1.5, 2.5, 2.5, 1e20, -1e-300},
		{18, "\xc3", "é\xff", "\xe9", "\xff", []byte{0, 0xff}, int64(math.MinInt8 - 1), int64(math.MaxUint16), int64(math.MaxUint32), uint64(math.MaxInt64), int64(math.MinInt64)},
		{19, []byte("é"), []byte("\xff"), []byte(""), nil, nil, nil, nil, nil, nil, nil},
		{uint64(1<<63 + 1), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
	}
	outcome := func(e *Engine, q string, args ...any) string {
		res, err := e.DB().ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Sprintf("error %d: %v", mysqlCode(err), err)
		}
		n, _ := res.RowsAffected()
		return fmt.Sprintf("ok %d", n)
	}
	for _, e := range []*Engine{fast, slow} {
		mustExec(t, e.DB(), ddl)
	}
	before := fast.fastInserts.Load()
	for _, args := range cases {
		if got, want := outcome(fast, ins, args...), outcome(slow, ins, args...); got != want {
			t.Errorf("insert %v:\n fast path: %s\n engine:    %s", args, got, want)
		}
	}
	if n := fast.fastInserts.Load() - before; n < uint64(len(cases))-2 {
		t.Errorf("fast path took %d of %d inserts", n, len(cases))
	}
	if got, want := storedRows(t, fast, "fs"), storedRows(t, slow, "fs"); got != want {
		t.Fatalf("stored rows differ:\nfast path:\n%s\nengine:\n%s", got, want)
	}
	// (NaN and ±Inf arguments panic inside go-mysql-server's binding, fast
	// path or not: argValue leaves them to it.)
	// The same values as comparison operands and keys.
	sel := func(e *Engine, q string, args ...any) string {
		rows, err := e.DB().QueryContext(ctx, q, args...)
		if err != nil {
			return fmt.Sprintf("error %d: %v", mysqlCode(err), err)
		}
		return dumpRows(t, rows)
	}
	queries := []struct {
		q    string
		args []any
	}{
		{"SELECT * FROM fs WHERE id = ? AND vc = ?", []any{1, "éééé"}},
		{"SELECT * FROM fs WHERE id = ? AND vc = ?", []any{1, []byte("éééé")}},
		{"SELECT * FROM fs WHERE id = ? AND i8 = ?", []any{1, 127.0}},
		{"SELECT * FROM fs WHERE id = ? AND u64 > ?", []any{1, uint64(1 << 63)}},
		{"SELECT * FROM fs WHERE id = ? AND u8 >= ?", []any{1, true}},
		{"SELECT * FROM fs WHERE id = ? AND vb = ?", []any{6, "\xff\x00"}},
		{"SELECT * FROM fs WHERE id = ? AND tt = ?", []any{13, at}},
		{"SELECT * FROM fs WHERE id = ? AND f = ?", []any{6, int64(4294967295)}},
		{"SELECT * FROM fs WHERE id = ?", []any{uint64(1<<63 + 1)}},
		{"SELECT * FROM fs WHERE id = ?", []any{"1"}},
		{"SELECT * FROM fs WHERE id = ?", []any{true}},
		{"SELECT id, vc FROM fs WHERE id >= ? AND id < ? ORDER BY id LIMIT ?", []any{int64(1), int64(300), int64(50)}},
		{"SELECT id, vc FROM fs WHERE id > ? AND c = ? ORDER BY id", []any{int64(-1), "a"}},
		{"SELECT id FROM fs WHERE id > ? AND i32 < ? ORDER BY id", []any{int64(-1), int64(math.MaxInt32)}},
	}
	for _, c := range queries {
		if got, want := sel(fast, c.q, c.args...), sel(slow, c.q, c.args...); got != want {
			t.Errorf("%s %v:\n fast path: %s\n engine:    %s", c.q, c.args, got, want)
		}
	}
	updates := []struct {
		q    string
		args []any
	}{
		{"UPDATE fs SET vc = ?, tb = ?, vb = ? WHERE id = ?", []any{"üüüü", []byte("z"), "", 5}},
		{"UPDATE fs SET vc = ? WHERE id = ?", []any{"üüüüü", 5}},
		{"UPDATE fs SET vc = ? WHERE id = ?", []any{"\xff", 5}},
		{"UPDATE fs SET i8 = ?, u8 = ?, i32 = ?, u64 = ?, f = ? WHERE id = ? AND vc = ?", []any{int64(-128), int64(255), int64(70000), uint64(1 << 63), 2.25, 5, "üüüü"}},
		{"UPDATE fs SET i8 = ? WHERE id = ?", []any{int64(300), 5}},
		{"UPDATE fs SET f = ? WHERE id = ?", []any{math.Copysign(0, -1), 1}},
		{"UPDATE fs SET tt = ? WHERE id = ? AND i8 = ?", []any{at, 5, -128.0}},
	}
	for _, c := range updates {
		if got, want := outcome(fast, c.q, c.args...), outcome(slow, c.q, c.args...); got != want {
			t.Errorf("%s %v:\n fast path: %s\n engine:    %s", c.q, c.args, got, want)
		}
	}
	if got, want := storedRows(t, fast, "fs"), storedRows(t, slow, "fs"); got != want {
		t.Fatalf("stored rows after updates differ:\nfast path:\n%s\nengine:\n%s", got, want)
	}
	if fast.fastSelects.Load() == 0 || fast.fastUpdates.Load() == 0 {
		t.Fatalf("fast paths not taken: %d selects, %d updates", fast.fastSelects.Load(), fast.fastUpdates.Load())
	}
}

func dumpRows(t *testing.T, rows *sql.Rows) string {
	t.Helper()
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for rows.Next() {
		v := make([]any, len(cols))
		p := make([]any, len(cols))
		for i := range v {
			p[i] = &v[i]
		}
		if err := rows.Scan(p...); err != nil {
			return b.String() + fmt.Sprintf("scan error %v", err)
		}
		for _, x := range v {
			fmt.Fprintf(&b, "%T(%v) ", x, x)
		}
		b.WriteString("\n")
	}
	if err := rows.Err(); err != nil {
		fmt.Fprintf(&b, "rows error %d: %v", mysqlCode(err), err)
	}
	return b.String()
}

// TestFastBinaryKeyMatchesEngine: the point and range paths skip the
// engine's comparison for a VARBINARY key column compared with a string
// or bytes value (the key holds exactly its bytes). Keys that differ only
// by trailing spaces, NUL bytes, case, invalid UTF-8 and the empty key,
// under the default and a case-insensitive connection collation, must give
// the engine's answers.
func TestFastBinaryKeyMatchesEngine(t *testing.T) {
	fast, slow := openTest(t, Options{NoSync: true}), openTest(t, Options{NoSync: true})
	slow.noFastInsert, slow.noFastSelect, slow.noFastUpdate = true, true, true
	ctx := context.Background()
	keys := []any{"", "a", "a ", "A", "a\x00", "\xff", "é", []byte{0xc3, 0xa9, 0}}
	var stmts []struct {
		q    string
		args []any
	}
	add := func(q string, args ...any) {
		stmts = append(stmts, struct {
			q    string
			args []any
		}{q, args})
	}
	for _, k := range keys {
		add("SELECT s, v FROM fk WHERE k = ? AND s = ?", k, 1)
		add("SELECT k, s, v FROM fk WHERE k = ? AND s >= ? ORDER BY k, s", k, 0)
		add("SELECT s FROM fk WHERE ? = k AND s = ?", k, 2)
		add("UPDATE fk SET v = ? WHERE k = ? AND s = ?", 7, k, 1)
	}
	add("SELECT s, v FROM fk WHERE k = 'a' AND s = 1")
	add("SELECT s, v FROM fk WHERE k = 'a ' AND s = 1")
	add("SELECT k, s FROM fk WHERE k = '' ORDER BY k, s")
	add("SELECT s, v FROM fk WHERE k = ? AND s = ?", int64(1), 1)
	add("SELECT s, v FROM fk WHERE k = ? AND s = ?", 1.5, 1)
	add("UPDATE fk SET v = ? WHERE k = 'A' AND s = 2", 9)
	for _, coll := range []string{"", "SET collation_connection = 'utf8mb4_0900_ai_ci'"} {
		var outs [2]string
		for i, e := range []*Engine{fast, slow} {
			c, err := e.DB().Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if coll == "" {
				if _, err := c.ExecContext(ctx, `CREATE TABLE fk (k VARBINARY(8) NOT NULL, s BIGINT NOT NULL, v INT, PRIMARY KEY (k, s))`); err != nil {
					t.Fatal(err)
				}
				for j, k := range keys {
					for s := 1; s <= 2; s++ {
						if _, err := c.ExecContext(ctx, "INSERT INTO fk VALUES (?, ?, ?)", k, s, j); err != nil {
							t.Fatal(err)
						}
					}
				}
			} else if _, err := c.ExecContext(ctx, coll); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, st := range stmts {
				fmt.Fprintf(&b, "%s %q: ", st.q, st.args)
				if strings.HasPrefix(st.q, "UPDATE") {
					res, err := c.ExecContext(ctx, st.q, st.args...)
					if err != nil {
						fmt.Fprintf(&b, "error %v\n", err)
						continue
					}
					n, _ := res.RowsAffected()
					fmt.Fprintf(&b, "affected %d\n", n)
					continue
				}
				rows, err := c.QueryContext(ctx, st.q, st.args...)
				if err != nil {
					fmt.Fprintf(&b, "error %v\n", err)
					continue
				}
				b.WriteString(dumpRows(t, rows))
			}
			c.Close()
			outs[i] = b.String() + storedRows(t, e, "fk")
		}
		if outs[0] != outs[1] {
			t.Fatalf("collation %q:\nfast path:\n%s\nengine:\n%s", coll, outs[0], outs[1])
		}
	}
	if fast.fastSelects.Load() < uint64(3*len(keys)) || fast.fastUpdates.Load() < uint64(len(keys)) {
		t.Fatalf("fast paths not taken: %d selects, %d updates", fast.fastSelects.Load(), fast.fastUpdates.Load())
	}
}

// TestFastShapesFollowDDL: the UPDATE and SELECT shapes cache their columns
// per table definition; after a new index on a filtered column, its drop,
// and DROP/CREATE with the columns in another order and another key, the
// same prepared statements give the engine's answers. (This engine has no
// ALTER TABLE.)
func TestFastShapesFollowDDL(t *testing.T) {
	fast, slow := openTest(t, Options{NoSync: true}), openTest(t, Options{NoSync: true})
	slow.noFastInsert, slow.noFastSelect, slow.noFastUpdate = true, true, true
	const (
		upd   = "UPDATE dd SET v = ? WHERE k = ? AND s = ? AND w = ?"
		point = "SELECT v, w FROM dd WHERE k = ? AND s = ? AND w = ?"
		rng   = "SELECT s, v FROM dd WHERE k = ? AND s >= ? AND w = ? ORDER BY k, s"
	)
	steps := []string{
		"CREATE TABLE dd (k VARBINARY(8) NOT NULL, s BIGINT NOT NULL, v INT, w INT, PRIMARY KEY (k, s))",
		"INSERT INTO dd VALUES ('a', 1, 10, 0), ('a', 2, 20, 0)",
		"",
		"CREATE INDEX dw ON dd (w)",
		"",
		"DROP INDEX dw ON dd",
		"",
		"DROP TABLE dd",
		"CREATE TABLE dd (s BIGINT NOT NULL, k VARBINARY(8) NOT NULL, w INT, v VARCHAR(4), PRIMARY KEY (s))",
		"INSERT INTO dd VALUES (1, 'a', 0, 'x'), (2, 'a', 0, 'y')",
		"",
	}
	var outs [2]string
	for i, e := range []*Engine{fast, slow} {
		db := e.DB()
		var stmts []*sql.Stmt
		var b strings.Builder
		n := 0
		for _, step := range steps {
			if step != "" {
				if _, err := db.Exec(step); err != nil {
					fmt.Fprintf(&b, "%s: error %v\n", step, err)
				}
				continue
			}
			if stmts == nil {
				for _, q := range []string{upd, point, rng} {
					st, err := db.Prepare(q)
					if err != nil {
						t.Fatal(err)
					}
					defer st.Close()
					stmts = append(stmts, st)
				}
			}
			n++
			if res, err := stmts[0].Exec(n, "a", 1, 0); err != nil {
				fmt.Fprintf(&b, "update: error %v\n", err)
			} else {
				a, _ := res.RowsAffected()
				fmt.Fprintf(&b, "update: %d\n", a)
			}
			for _, st := range stmts[1:] {
				rows, err := st.Query("a", 1, 0)
				if err != nil {
					fmt.Fprintf(&b, "select: error %v\n", err)
					continue
				}
				b.WriteString(dumpRows(t, rows))
			}
		}
		outs[i] = b.String()
	}
	if outs[0] != outs[1] {
		t.Fatalf("fast path:\n%s\nengine:\n%s", outs[0], outs[1])
	}
	if fast.fastUpdates.Load() < 2 || fast.fastSelects.Load() < 3 {
		t.Fatalf("fast paths not taken: %d updates, %d selects\n%s", fast.fastUpdates.Load(), fast.fastSelects.Load(), outs[0])
	}
}
