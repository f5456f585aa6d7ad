package boltsql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestFastInsertWarningsMatchEngine runs the differential insert cases, in
// strict and non-strict sql_mode, with a warning left by the previous
// statement, and compares SHOW WARNINGS (level, code, message, count)
// after each: the fast path must drop the previous statement's warnings
// and keep any its own conversions raise exactly as go-mysql-server does.
func TestFastInsertWarningsMatchEngine(t *testing.T) {
	fast, slow, conns := openDifferential(t, func(e *Engine) { e.noFastInsert = true },
		fastInsertDDL, fastInsertBlobDDL,
		`CREATE TABLE fz (id BIGINT NOT NULL PRIMARY KEY, f DOUBLE, r FLOAT, m DECIMAL(5,2), u TINYINT UNSIGNED, s CHAR(2), j JSON)`)
	ctx := context.Background()
	warnings := func(c *sql.Conn) string {
		rows, err := c.QueryContext(ctx, "SHOW WARNINGS")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var b strings.Builder
		n := 0
		for rows.Next() {
			var level, msg string
			var code int
			if err := rows.Scan(&level, &code, &msg); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "[%s %d %s]", level, code, msg)
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d %s", n, b.String())
	}
	outcome := func(e *Engine, c fastInsertCase) string {
		cn := conns[e]
		// A Note the insert must clear (go-mysql-server clears a
		// statement's predecessors' warnings once it has bound it).
		if _, err := cn.ExecContext(ctx, "DROP TABLE IF EXISTS no_such_table"); err != nil {
			t.Fatal(err)
		}
		// (go-mysql-server v0.20.0 keeps the oldest warnings, not the
		// statement's own, when binding warns after a statement that left
		// some: after INSERT IGNORE's Note 1062 this shows that Note.)
		pre := warnings(cn)
		if strings.HasPrefix(pre, "0 ") {
			t.Fatalf("DROP TABLE IF EXISTS left no warning")
		}
		before := e.fastInserts.Load()
		_, err := cn.ExecContext(ctx, c.q, c.args...)
		if e == fast && (e.fastInserts.Load()-before == 1) != c.fast {
			t.Errorf("%s %v: fast path took it: %v, want %v", c.q, c.args, !c.fast, c.fast)
		}
		res := "ok"
		if err != nil {
			res = fmt.Sprintf("error %d: %v", mysqlCode(err), err)
		}
		return "before: " + pre + "; " + res + "; warnings " + warnings(cn)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	const fz = "INSERT INTO fz VALUES (?, ?, ?, ?, ?, ?, ?)"
	extra := []fastInsertCase{
		// One conversion each that rounds, truncates or fails (MySQL warns
		// for several of these in non-strict mode, or with a Note always).
		{fz, []any{1, "1e400", nil, nil, nil, nil, nil}, true},
		{fz, []any{2, "12abc", nil, nil, nil, nil, nil}, true},
		{fz, []any{3, nil, "1.5x", nil, nil, nil, nil}, true},
		{fz, []any{4, nil, nil, "1.255", nil, nil, nil}, true},
		{fz, []any{5, nil, nil, "999.999", nil, nil, nil}, true},
		{fz, []any{6, nil, 1e39, nil, nil, nil, nil}, true},
		{fz, []any{7, nil, 0.1, 2.675, int64(-1), nil, nil}, true},
		{fz, []any{8, nil, nil, nil, "300", nil, nil}, true},
		{fz, []any{9, nil, nil, nil, 1.5, nil, nil}, true},
		{fz, []any{10, nil, nil, nil, "2.5", nil, nil}, true},
		{fz, []any{11, nil, nil, nil, nil, "abc", nil}, true},
		{fz, []any{12, nil, nil, nil, nil, "ab ", nil}, true},
		{fz, []any{13, nil, nil, nil, nil, nil, "{bad"}, true},
		{fz, []any{14, nil, nil, nil, nil, nil, `{"a": 1}`}, true},
		{fz, []any{15, "", nil, nil, nil, nil, nil}, true},
		{fz, []any{16, " 1 ", nil, nil, nil, nil, nil}, true},
		{fz, []any{17, 1e300, "1e2", "1e2", "1e2", "é", nil}, true},
		{fz, []any{18, nil, nil, "-0.001", int64(0), "", nil}, true},
		{"INSERT INTO fz VALUES (19, '1.5', '2.5', '3.555', '4', 'x', NULL), (20, 1, 2, 3, 4, 'y', '[]')", nil, true},
		{"INSERT INTO ft VALUES (?, ?, 1, 1, NULL, ?, 1)", []any{50, "w", "2026-02-30"}, true},
		{"INSERT INTO ft VALUES (?, ?, 1, 1, NULL, ?, 1)", []any{51, "x", "2026-01-01 25:00:00"}, true},
		{"INSERT INTO ft VALUES (?, ?, 1, 1, NULL, ?, 1)", []any{52, "y", at.Format("2006-01-02 15:04:05.9999999")}, true},
		{"INSERT INTO ft VALUES (?, ?, '7.6', '2', NULL, '2026-01-01', '1.005')", []any{53, "z"}, true},
	}
	for _, mode := range []string{"", "NO_ENGINE_SUBSTITUTION,ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES"} {
		for _, e := range []*Engine{fast, slow} {
			if _, err := conns[e].ExecContext(ctx, "SET sql_mode = '"+mode+"'"); err != nil {
				t.Fatal(err)
			}
			for _, table := range []string{"ft", "fb", "fz"} {
				if _, err := conns[e].ExecContext(ctx, "DELETE FROM "+table); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, c := range append(fastInsertCases(), extra...) {
			got, want := outcome(fast, c), outcome(slow, c)
			if got != want {
				t.Errorf("sql_mode %q: %s %v:\n fast path: %s\n engine:    %s", mode, c.q, c.args, got, want)
			}
		}
		if got, want := storedRows(t, fast, "fz"), storedRows(t, slow, "fz"); got != want {
			t.Errorf("sql_mode %q: stored rows differ:\nfast path:\n%s\nengine:\n%s", mode, got, want)
		}
	}
}
