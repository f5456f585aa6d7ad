package boltsql

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	gsql "github.com/dolthub/go-mysql-server/sql"
	mysqldriver "github.com/go-sql-driver/mysql"
	bolt "go.etcd.io/bbolt"
)

// Keys of strings under a case- or accent-insensitive collation order and
// compare as go-mysql-server compares the strings: a lookup of 'ABC' finds
// 'abc' under utf8mb4_0900_ai_ci (through the planner and the fast
// paths), a primary or unique key holds one of them, an index returns rows
// in the collation's order, and all of it survives a reopen. Before, such
// a column could not be part of a key.
func TestKeysOverCaseInsensitiveCollations(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE p (name VARCHAR(20) COLLATE utf8mb4_0900_ai_ci PRIMARY KEY, n BIGINT)")
	mustExec(t, e.DB(), "INSERT INTO p VALUES ('abc', 1), ('Été', 2), ('b', 3)")
	var me *mysqldriver.MySQLError
	if _, err := e.DB().Exec("INSERT INTO p VALUES ('ABC', 4)"); !errors.As(err, &me) || me.Number != 1062 {
		t.Errorf("'ABC' beside 'abc' in a case-insensitive primary key: %v, want error 1062", err)
	}
	cols := "id BIGINT PRIMARY KEY, name VARCHAR(20) COLLATE utf8mb4_0900_ai_ci, u VARCHAR(20) COLLATE utf8mb4_0900_ai_ci, l VARCHAR(20) COLLATE latin1_general_ci"
	mustExec(t, e.DB(), "CREATE TABLE s ("+cols+", KEY name (name), UNIQUE KEY u (u), KEY l (l), KEY nl (name, l))")
	mustExec(t, e.DB(), "CREATE TABLE scan ("+cols+")")
	rows := "(1, 'abc', 'abc', 'abc'), (2, 'ABC', 'x', 'ABC'), (3, 'abd', 'y', 'Abd'), (4, 'B', 'z', 'b'), (5, 'a', 'a', 'a'), " +
		"(6, NULL, NULL, NULL), (7, 'été', 'été', 'été'), (8, 'ETE', 'q', 'ETE'), (9, 'Zed', 'Zed', 'zed'), (10, '', '', '')"
	for _, tbl := range []string{"s", "scan"} {
		mustExec(t, e.DB(), "INSERT INTO "+tbl+" VALUES "+rows)
	}
	if _, err := e.DB().Exec("INSERT INTO s VALUES (11, 'n', 'ABC', 'n')"); !errors.As(err, &me) || me.Number != 1062 {
		t.Errorf("'ABC' beside 'abc' in a case-insensitive unique key: %v, want error 1062", err)
	}
	if _, err := e.DB().Exec("UPDATE s SET u = 'ÉTÉ' WHERE id = 1"); !errors.As(err, &me) || me.Number != 1062 {
		t.Errorf("'ÉTÉ' beside 'été' in an accent-insensitive unique key: %v, want error 1062", err)
	}
	if plan := strings.Join(queryStrings(t, e.DB(), "EXPLAIN PLAN SELECT id FROM s WHERE name = 'ABC'"), "\n"); !strings.Contains(plan, "IndexedTableAccess") {
		t.Fatalf("the index is not used:\n%s", plan)
	}
	wheres := []string{
		"name = 'ABC'", "name = 'abc'", "name = 'ete'", "name = 'ÉTÉ'", "name < 'ABD'", "name >= 'b'",
		"name BETWEEN 'A' AND 'abc'", "name IN ('ABC', 'zed', 'E')", "name > 'a' AND name < 'B'", "name = ''",
		"u = 'ABC'", "u = 'ETE'", "u > 'Y'", "l = 'ABD'", "l < 'B'", "l IN ('ETE', 'ZED')",
		"name = 'abc' AND l = 'ABC'", "name = 'ETE' AND l > 'a'", "name IS NULL",
	}
	orders := []string{"name, id", "name DESC, id DESC", "u", "l, id", "name, l, id"}
	check := func(e *Engine) {
		t.Helper()
		for _, w := range wheres {
			got := queryStrings(t, e.DB(), "SELECT id FROM s WHERE "+w+" ORDER BY id")
			want := queryStrings(t, e.DB(), "SELECT id FROM scan WHERE "+w+" ORDER BY id")
			if !slices.Equal(got, want) {
				t.Errorf("WHERE %s: index finds %v, a scan %v", w, got, want)
			}
		}
		for _, o := range orders {
			got := queryStrings(t, e.DB(), "SELECT id FROM s ORDER BY "+o)
			want := queryStrings(t, e.DB(), "SELECT id FROM scan ORDER BY "+o)
			if !slices.Equal(got, want) {
				t.Errorf("ORDER BY %s: the index gives %v, a sort %v", o, got, want)
			}
		}
		for q, want := range map[string]int64{
			"SELECT n FROM p WHERE name = 'ABC'": 1, "SELECT COUNT(*) FROM p WHERE name >= 'A' AND name < 'C'": 2,
		} {
			if got := queryInt(t, e.DB(), q); got != want {
				t.Errorf("%s: %d, want %d", q, got, want)
			}
		}
		if got := queryInt(t, e.DB(), "SELECT n FROM p WHERE name = ?", "ete"); got != 2 { // the fast path's point read
			t.Errorf("point read of 'ete': %d, want 2", got)
		}
	}
	check(e)
	mustExec(t, e.DB(), "UPDATE p SET n = 5 WHERE name = 'B'") // the fast UPDATE path finds 'b'
	e = reopen(t, e, dir)
	check(e)
	if n := queryInt(t, e.DB(), "SELECT n FROM p WHERE name = 'b'"); n != 5 {
		t.Errorf("UPDATE … WHERE name = 'B' left n = %d for 'b', want 5", n)
	}
}

// The collations keyed by their bytes weigh each character by its code
// point, so byte order is go-mysql-server's order for them.
func TestByteOrderCollationsWeighByCodePoint(t *testing.T) {
	for _, c := range []gsql.CollationID{gsql.Collation_binary, gsql.Collation_utf8mb4_0900_bin, gsql.Collation_utf8mb4_bin,
		gsql.Collation_utf16_bin, gsql.Collation_utf32_bin} {
		if !byteOrderCollation(c) {
			t.Errorf("%s is not keyed by its bytes", c.Name())
		}
		w, prev := c.Sorter(), rune(0)
		for r := rune(1); r <= 0x10FFFF; r++ {
			if r >= 0xD800 && r < 0xE000 {
				continue // surrogates are no characters
			}
			if w(r) <= w(prev) {
				t.Errorf("%s weighs %U at most %U", c.Name(), r, prev)
				break
			}
			prev = r
		}
	}
}

// A file of format 1 keyed strings by their bytes whatever their
// collation; opening it re-keys the tables whose keys are collated, and
// refuses, naming them, rows that the collation makes duplicates.
func TestOpeningAFormat1FileRekeysCollatedKeys(t *testing.T) {
	// A format 1 file: a table keyed by bytes, whose definition then says
	// (as one written before columns named their collation could, with a
	// case-insensitive table collation) that the columns are
	// case-insensitive.
	format1 := func(t *testing.T, rows string) string {
		dir := t.TempDir()
		e, err := Open(dir, Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, e.DB(), "CREATE TABLE t (name VARCHAR(20) PRIMARY KEY, u VARCHAR(20), KEY u (u))")
		mustExec(t, e.DB(), "CREATE TABLE v (id BIGINT PRIMARY KEY, u VARCHAR(20), UNIQUE KEY u (u))")
		mustExec(t, e.DB(), rows)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		db, err := bolt.Open(dir+"/"+FileName, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(func(tx *bolt.Tx) error {
			if err := tx.Bucket(bucketMeta).Put([]byte("version"), binary.BigEndian.AppendUint64(nil, 1)); err != nil {
				return err
			}
			sb := tx.Bucket(bucketSchema)
			for _, name := range []string{"t", "v"} {
				def, err := unmarshalDef(sb.Get(schemaKey("sessionrt", name)))
				if err != nil {
					return err
				}
				for i := range def.Columns {
					def.Columns[i].Type = strings.Replace(def.Columns[i].Type, "utf8mb4_0900_bin", "utf8mb4_0900_ai_ci", 1)
				}
				b, err := marshalDef(def)
				if err != nil {
					return err
				}
				if err := sb.Put(schemaKey("sessionrt", name), b); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir := format1(t, "INSERT INTO t VALUES ('abc', 'Xy'), ('b', 'z')")
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatalf("open a format 1 file: %v", err)
	}
	defer e.Close()
	if got := queryStrings(t, e.DB(), "SELECT name FROM t WHERE name = 'ABC'"); !slices.Equal(got, []string{"abc"}) {
		t.Errorf("primary key lookup of 'ABC' after the upgrade: %v", got)
	}
	if got := queryStrings(t, e.DB(), "SELECT name FROM t WHERE u = 'XY'"); !slices.Equal(got, []string{"abc"}) {
		t.Errorf("index lookup of 'XY' after the upgrade: %v", got)
	}
	var ver []byte
	if err := e.bolt.View(func(tx *bolt.Tx) error {
		ver = append(ver, tx.Bucket(bucketMeta).Get([]byte("version"))...)
		return nil
	}); err != nil || binary.BigEndian.Uint64(ver) != FormatVersion {
		t.Errorf("version after the upgrade: %x %v", ver, err)
	}

	dir = format1(t, "INSERT INTO v VALUES (1, 'abc'), (2, 'ABC')")
	if e, err := Open(dir, Options{NoSync: true}); err == nil {
		e.Close()
		t.Fatal("a format 1 file whose unique key holds 'abc' and 'ABC' opened under a case-insensitive collation")
	} else if !strings.Contains(err.Error(), "upgrade table sessionrt.v") || !strings.Contains(err.Error(), "index u") {
		t.Errorf("refusal does not name the table and index: %v", err)
	}
}
