// Package testdb gives tests a *sql.DB on a fresh, empty MariaDB/MySQL
// database. It uses the server at 127.0.0.1:3306 (user root, no password);
// when nothing answers there it starts one throwaway mariadbd for the test
// process (after mariadb-install-db into a temporary directory). Only when
// neither works does the test skip, with a loud message saying why.
//
// It is for tests only: it never touches a database it did not create.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DefaultAddr is where a developer's or CI's MariaDB listens.
const DefaultAddr = "127.0.0.1:3306"

// The throwaway server is shared by every test of one process: starting
// mariadbd costs seconds. This is the package's only state, and it is
// write-once.
var (
	serverOnce sync.Once
	serverAddr string
	serverErr  error
)

// Database is a fresh database on the test server.
type Database struct {
	DB   *sql.DB
	Name string
	Addr string // host:port
}

// URL is the database as a sessionrt --journal value: mysql://root@host:port/name.
func (d Database) URL() string { return fmt.Sprintf("mysql://root@%s/%s", d.Addr, d.Name) }

// MariaDB returns a fresh database, dropped when the test ends.
func MariaDB(t testing.TB) Database {
	t.Helper()
	addr, err := server()
	if err != nil {
		t.Skipf("\n\n*** SKIPPING: no MariaDB/MySQL for the journal's second backend: %v ***\n"+
			"*** install mariadb-server (see .ci/run) so this test runs ***\n\n", err)
	}
	name := "t_" + randomHex(6)
	admin, err := sql.Open("mysql", dsn(addr, ""))
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("testdb: create database %s: %v", name, err)
	}
	db, err := sql.Open("mysql", dsn(addr, name))
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		db.Close()
		a, err := sql.Open("mysql", dsn(addr, ""))
		if err == nil {
			a.Exec("DROP DATABASE IF EXISTS " + name)
			a.Close()
		}
	})
	return Database{DB: db, Name: name, Addr: addr}
}

// Connector connects to the database the way DB does, for a caller that
// wraps the driver (tests injecting storage failures).
func (d Database) Connector() (driver.Connector, error) {
	cfg, err := mysql.ParseDSN(dsn(d.Addr, d.Name))
	if err != nil {
		return nil, err
	}
	return mysql.NewConnector(cfg)
}

func dsn(addr, db string) string {
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr, c.DBName = "root", "tcp", addr, db
	c.InterpolateParams = true
	c.Timeout = 5 * time.Second
	return c.FormatDSN()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func server() (string, error) {
	serverOnce.Do(func() {
		if ping(DefaultAddr) == nil {
			serverAddr = DefaultAddr
		} else {
			serverAddr, serverErr = startThrowaway()
		}
		if serverErr == nil {
			roomForConnections(serverAddr)
		}
	})
	return serverAddr, serverErr
}

// minConnections is what the suite needs at once: test packages run in parallel,
// and every journal (and every cluster member process) keeps up to
// persistence.ServerPool's idle connections; MariaDB's default of 151 runs out.
const minConnections = 1000

// roomForConnections raises the server's max_connections to minConnections when it
// is lower. Best effort: a server where root may not do it keeps its setting.
func roomForConnections(addr string) {
	db, err := sql.Open("mysql", dsn(addr, ""))
	if err != nil {
		return
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = db.ExecContext(ctx, fmt.Sprintf("SET GLOBAL max_connections = GREATEST(@@GLOBAL.max_connections, %d)", minConnections))
}

func ping(addr string) error {
	db, err := sql.Open("mysql", dsn(addr, ""))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// startThrowaway installs and starts a private mariadbd on a free port. The
// server gets SIGKILL when the test process dies (Pdeathsig, from a thread
// that never exits).
func startThrowaway() (string, error) {
	mariadbd, err := exec.LookPath("mariadbd")
	if err != nil {
		if _, statErr := os.Stat("/usr/sbin/mariadbd"); statErr != nil {
			return "", fmt.Errorf("nothing answers on %s and mariadbd is not installed", DefaultAddr)
		}
		mariadbd = "/usr/sbin/mariadbd"
	}
	dir, err := os.MkdirTemp("", "sessionrt-mariadb-")
	if err != nil {
		return "", err
	}
	data := filepath.Join(dir, "data")
	install := exec.Command("mariadb-install-db", "--no-defaults", "--user=root", "--datadir="+data,
		"--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		return "", fmt.Errorf("mariadb-install-db: %v: %s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(mariadbd, "--no-defaults", "--user=root", "--datadir="+data,
		"--socket="+filepath.Join(dir, "sock"), fmt.Sprintf("--port=%d", port), "--bind-address=127.0.0.1",
		"--innodb-flush-log-at-trx-commit=2", fmt.Sprintf("--max-connections=%d", minConnections))
	cmd.Stdout, cmd.Stderr = nil, nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the creating thread exits: pin this goroutine
		// to its thread and never return.
		runtime.LockOSThread()
		started <- cmd.Start()
		cmd.Wait()
		select {}
	}()
	if err := <-started; err != nil {
		return "", fmt.Errorf("start mariadbd: %w", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := ping(addr); err == nil {
			return addr, nil
		} else if time.Now().After(deadline) {
			return "", fmt.Errorf("throwaway mariadbd on %s did not answer within 60 s: %v", addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
