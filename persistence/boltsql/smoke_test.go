package boltsql

import (
	"testing"
)

func TestSmoke(t *testing.T) {
	e, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	db := e.DB()
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS ev (session_id VARCHAR(64) NOT NULL, seq BIGINT NOT NULL, kind VARCHAR(32) NOT NULL DEFAULT 'x', body LONGBLOB, at DATETIME(6), ok BOOL, n INT, PRIMARY KEY (session_id, seq), UNIQUE KEY uk (kind, n), KEY by_at (at))",
		"INSERT INTO ev (session_id, seq, body, at, ok, n) VALUES ('a', 1, 'x', NOW(6), true, 1), ('a', 2, 'y', NOW(6), false, 2)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, err = db.Exec("INSERT INTO ev (session_id, seq) VALUES (?, ?)", "a", 1)
	t.Logf("dup: %v", err)
	rows, err := db.Query("SELECT session_id, seq, kind, body, at, ok, n FROM ev WHERE session_id = ? ORDER BY session_id, seq", "a")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s, k string
		var seq int64
		var body []byte
		var at interface{}
		var ok bool
		var n int
		if err := rows.Scan(&s, &seq, &k, &body, &at, &ok, &n); err != nil {
			t.Fatal(err)
		}
		t.Log(s, seq, k, string(body), at, ok, n)
	}
	rows.Close()
	var plan string
	r2, err := db.Query("EXPLAIN PLAN SELECT * FROM ev WHERE session_id = 'a' AND seq >= 1 ORDER BY session_id, seq LIMIT 10")
	if err != nil {
		t.Fatal(err)
	}
	for r2.Next() {
		if err := r2.Scan(&plan); err != nil {
			t.Fatal(err)
		}
		t.Log(plan)
	}
	r2.Close()
	e.Close()
	e, err = Open(e.dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var c int
	if err := e.DB().QueryRow("SELECT COUNT(*) FROM ev").Scan(&c); err != nil || c != 2 {
		t.Fatal(c, err)
	}
	var sc string
	var tn string
	e.DB().QueryRow("SHOW CREATE TABLE ev").Scan(&tn, &sc)
	t.Log(sc)
}
