package boltsql

import (
	"database/sql"
	"testing"
)

// MySQL answers MIN/MAX over no rows with one NULL row; an index rewrite of
// go-mysql-server answered with no row at all.
func TestMinMaxOfAnEmptyTableIsOneNullRow(t *testing.T) {
	e, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	db := e.DB()
	if _, err := db.Exec(`CREATE TABLE v (k BIGINT NOT NULL, PRIMARY KEY (k))`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`SELECT MAX(k) FROM v`, `SELECT MIN(k) FROM v`} {
		var n sql.NullInt64
		if err := db.QueryRow(q).Scan(&n); err != nil || n.Valid {
			t.Fatalf("%s on an empty table: %v, %v; want one NULL row", q, n, err)
		}
	}
	if _, err := db.Exec(`INSERT INTO v VALUES (3), (9), (5)`); err != nil {
		t.Fatal(err)
	}
	var hi, lo int64
	if err := db.QueryRow(`SELECT MAX(k) FROM v`).Scan(&hi); err != nil || hi != 9 {
		t.Fatalf("MAX = %d, %v", hi, err)
	}
	if err := db.QueryRow(`SELECT MIN(k) FROM v`).Scan(&lo); err != nil || lo != 3 {
		t.Fatalf("MIN = %d, %v", lo, err)
	}
}
