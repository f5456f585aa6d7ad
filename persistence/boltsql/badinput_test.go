package boltsql

import (
	"bufio"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestBadStatementsGetMySQLErrorsAndChangeNothing(t *testing.T) {
	// A short lock wait: a failed statement that kept the writer would make
	// the next write fail with 1205 instead of waiting 30s.
	e := openTest(t, Options{NoSync: true, LockWaitTimeout: 2 * time.Second})
	db := e.DB()
	mustExec(t, db, eventsDDL)
	mustExec(t, db, "INSERT INTO events VALUES ('s', 1, 'k', 'body', '2026-01-01 00:00:00')")
	snapshot := func() string {
		return strings.Join(queryStrings(t, db, "SELECT CONCAT(session_id, '/', seq, '/', kind, '/', body) FROM events ORDER BY session_id, seq"), ";")
	}
	before := snapshot()
	cases := []struct {
		name, query string
		code        int
		msg         string
	}{
		{"malformed", "INSERT INTO events VALUES (", 1064, "syntax error"},
		{"unknown table", "INSERT INTO nosuch VALUES (1)", 1146, "nosuch"},
		{"unknown column", "UPDATE events SET nosuch = 1", 1054, "nosuch"},
		{"type mismatch", "INSERT INTO events VALUES ('s', 'not a number', 'k', NULL, NOW(6))", 1366, ""},
		{"null into not null", "INSERT INTO events VALUES ('s', 2, NULL, NULL, NOW(6))", 1048, "kind"},
		{"duplicate key", "INSERT INTO events VALUES ('s', 1, 'other', NULL, NOW(6))", 1062, "[s,1]"},
	}
	for _, c := range cases {
		_, err := db.Exec(c.query)
		if err == nil {
			t.Fatalf("%s: %q succeeded", c.name, c.query)
		}
		if code := mysqlCode(err); code != c.code {
			t.Errorf("%s: error %v has code %d, want %d", c.name, err, code, c.code)
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.msg)
		}
		if after := snapshot(); after != before {
			t.Fatalf("%s changed the database: %s -> %s", c.name, before, after)
		}
	}
	// The writer is free again after every failure, for every connection.
	db.SetMaxOpenConns(1)
	mustExec(t, db, "INSERT INTO events VALUES ('s', 2, 'k', NULL, NOW(6))")
	db.SetMaxOpenConns(0)
	mustExec(t, e.DB(), "INSERT INTO events VALUES ('s', 3, 'k', NULL, NOW(6))")
}

func TestForeignFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	bdb, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("someone-elses"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	_, err = Open(dir, Options{})
	if !errors.Is(err, ErrForeignFile) || !strings.Contains(err.Error(), "not a sessionrt journal database") {
		t.Fatalf("foreign bbolt file: %v", err)
	}

	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(strings.Repeat("not a database ", 500)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrForeignFile) {
		t.Fatalf("garbage file: %v", err)
	}
}

func TestNewerFormatIsRefused(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	bdb, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put([]byte("version"), binary.BigEndian.AppendUint64(nil, FormatVersion+1))
	}); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	_, err = Open(dir, Options{})
	if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), fmt.Sprintf("version %d", FormatVersion+1)) {
		t.Fatalf("newer file: %v", err)
	}
}

func TestSecondOpenerGetsInUseByPid(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{NoSync: true})
	want := fmt.Sprintf("in use by pid %d", os.Getpid())
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), want) {
		t.Fatalf("second open in process: %v, want %q", err, want)
	}
	e.Close()

	// Another process holds it.
	cmd := exec.Command(buildChild(t), "-mode", "hold", "-dir", dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("child: %q %v", line, err)
	}
	_, err = Open(dir, Options{NoSync: true})
	want = fmt.Sprintf("in use by pid %d", cmd.Process.Pid)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), want) {
		t.Fatalf("second process: %v, want %q", err, want)
	}
}

func TestNonFiniteFloatArgumentsAreRefusedWithoutPanic(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	db := e.DB()
	mustExec(t, db, "CREATE TABLE nums (id BIGINT PRIMARY KEY, v DOUBLE)")
	mustExec(t, db, "INSERT INTO nums VALUES (1, 1.5)")
	for _, v := range []any{math.NaN(), math.Inf(1), math.Inf(-1), float32(math.Inf(1))} {
		for _, q := range []string{
			"INSERT INTO nums VALUES (2, ?)",
			"UPDATE nums SET v = ? WHERE id = 1",
			"SELECT id FROM nums WHERE v = ?",
			"SELECT id FROM nums WHERE id = 1 AND v < ?",
		} {
			var err error
			if strings.HasPrefix(q, "SELECT") {
				var rows *sql.Rows
				if rows, err = db.Query(q, v); err == nil {
					rows.Close()
				}
			} else {
				_, err = db.Exec(q, v)
			}
			if err == nil || !strings.Contains(err.Error(), "not a SQL number") {
				t.Errorf("%s with %v: error %v, want a refusal naming the value", q, v, err)
			}
		}
	}
	if got := queryStrings(t, db, "SELECT CONCAT(id, '=', v) FROM nums"); strings.Join(got, ",") != "1=1.5" {
		t.Fatalf("table changed: %v", got)
	}
}
