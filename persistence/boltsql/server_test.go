package boltsql

import (
	"context"
	"database/sql"
	"net"
	"os/exec"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

func serveTest(t *testing.T, e *Engine) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.ServeListener(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("serve did not stop")
		}
	})
	return l.Addr().String()
}

func TestWireProtocolWithGoSQLDriver(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	addr := serveTest(t, e)
	db, err := sql.Open("mysql", "root@tcp("+addr+")/sessionrt?parseTime=true")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustExec(t, db, eventsDDL)
	at := time.Date(2026, 5, 6, 7, 8, 9, 101000, time.UTC)
	mustExec(t, db, "INSERT INTO events VALUES (?, ?, ?, ?, ?)", "s", 1, "k", []byte{0xff, 0}, at)
	if _, err := db.Exec("INSERT INTO events VALUES ('s', 1, 'dup', NULL, NOW(6))"); mysqlCode(err) != 1062 {
		t.Fatalf("duplicate over the wire: %v, want 1062", err)
	}
	for q, code := range map[string]int{
		"INSERT INTO events VALUES (":        1064,
		"SELECT nosuch FROM events":          1054,
		"SELECT * FROM nosuch":               1146,
		"SELECT * FROM events WHERE seq = ?": 1064, // no argument for ?: still a clear error
	} {
		_, err := db.Exec(q)
		if q == "SELECT * FROM events WHERE seq = ?" {
			if err == nil {
				t.Fatalf("%s: no error", q)
			}
			continue
		}
		if mysqlCode(err) != code {
			t.Fatalf("%s over the wire: %v, want %d", q, err, code)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, tx, "INSERT INTO events VALUES ('s', 2, 'k', NULL, NOW(6))")
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	var body []byte
	var got time.Time
	if err := db.QueryRow("SELECT body, at FROM events WHERE session_id = ? AND seq = ?", "s", 1).Scan(&body, &got); err != nil {
		t.Fatal(err)
	}
	if string(body) != "\xff\x00" || !got.Equal(at) {
		t.Fatalf("read back %q %v", body, got)
	}
	if n := queryInt(t, db, "SELECT COUNT(*) FROM events"); n != 1 {
		t.Fatalf("rolled back row visible over the wire: count %d", n)
	}
	// The embedded handle sees what the wire wrote: one engine.
	if n := queryInt(t, e.DB(), "SELECT COUNT(*) FROM events"); n != 1 {
		t.Fatalf("in-process count %d", n)
	}
}

func TestWireProtocolWithMariaDBClient(t *testing.T) {
	bin, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("mariadb client not installed")
	}
	e := openTest(t, Options{NoSync: true})
	mustExec(t, e.DB(), "CREATE TABLE notes (id BIGINT PRIMARY KEY, txt VARCHAR(40))")
	mustExec(t, e.DB(), "INSERT INTO notes VALUES (1, 'hello'), (2, 'world')")
	addr := serveTest(t, e)
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--protocol=tcp", "-h", host, "-P", port, "-u", "root", "--skip-ssl", "-B",
		"sessionrt", "-e", "INSERT INTO notes VALUES (3, 'from mariadb'); SELECT id, txt FROM notes ORDER BY id").CombinedOutput()
	if err != nil {
		// Older clients do not know --skip-ssl.
		out, err = exec.CommandContext(ctx, bin, "--protocol=tcp", "-h", host, "-P", port, "-u", "root", "-B",
			"sessionrt", "-e", "INSERT INTO notes VALUES (3, 'from mariadb'); SELECT id, txt FROM notes ORDER BY id").CombinedOutput()
	}
	if err != nil {
		t.Fatalf("mariadb client: %v\n%s", err, out)
	}
	want := "id\ttxt\n1\thello\n2\tworld\n3\tfrom mariadb\n"
	if string(out) != want {
		t.Fatalf("mariadb client printed %q, want %q", out, want)
	}
	if n := queryInt(t, e.DB(), "SELECT COUNT(*) FROM notes"); n != 3 {
		t.Fatalf("row inserted by mariadb client missing: %d", n)
	}
}
