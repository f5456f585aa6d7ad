package cli

import (
	"bytes"
	"context"
	"database/sql"
	"net"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/sessionrt/sessionrt/node"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

func sqlCmd(t *testing.T, dir, stmt string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run([]string{"--data", dir, "journal", "sql", stmt}, &out, &errb)
	return out.String(), errb.String(), code
}

// newJournal is a data directory holding an empty embedded journal where serve keeps it.
func newJournal(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	eng, err := boltsql.Open(node.JournalDir(dir), boltsql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestJournalSQLPrintsTabSeparatedRowsWithHeader(t *testing.T) {
	dir := newJournal(t)
	for _, stmt := range []string{
		"CREATE TABLE notes (id BIGINT PRIMARY KEY, txt VARCHAR(40), extra TEXT)",
		"INSERT INTO notes VALUES (1, 'hello', NULL), (2, 'tab\there', 'x')",
	} {
		if _, errs, code := sqlCmd(t, dir, stmt); code != 0 {
			t.Fatalf("%s: exit %d: %s", stmt, code, errs)
		}
	}
	out, errs, code := sqlCmd(t, dir, "SELECT id, txt, extra FROM notes ORDER BY id")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := "id\ttxt\textra\n1\thello\tNULL\n2\ttab\\there\tx\n"
	if out != want {
		t.Fatalf("output %q, want %q", out, want)
	}
}

func TestJournalSQLReportsMySQLErrorAndExitsOne(t *testing.T) {
	dir := newJournal(t)
	_, errs, code := sqlCmd(t, dir, "SELECT * FROM nosuch")
	if code != 1 || !strings.Contains(errs, "1146") || !strings.Contains(errs, "nosuch") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestJournalServeAnswersMySQLClients(t *testing.T) {
	dir := newJournal(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	done := make(chan int, 1)
	var errb bytes.Buffer
	go func() {
		done <- run([]string{"--data", dir, "journal", "serve", "--listen", addr}, &bytes.Buffer{}, &errb)
	}()
	db, err := sql.Open("mysql", "root@tcp("+addr+")/sessionrt")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for db.PingContext(ctx) != nil { // the server is starting
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errb.String())
		case <-ctx.Done():
			t.Fatal("server never answered")
		case <-time.After(20 * time.Millisecond):
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT 40 + 2").Scan(&n); err != nil || n != 42 {
		t.Fatalf("query over the wire: %d %v", n, err)
	}
	// A second opener of the same directory is told who holds it.
	_, errs, code := sqlCmd(t, dir, "SELECT 1")
	if code != 1 || !strings.Contains(errs, "in use by pid") {
		t.Fatalf("sql while serving: exit %d, stderr %q", code, errs)
	}
}
