package persistence_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/persistence"
)

func TestMySQLDSNParsesJournalURLs(t *testing.T) {
	dsn, err := persistence.MySQLDSN("mysql://bob:s%40cret@db.example:3307/journal?tls=skip-verify")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bob:s@cret@tcp(db.example:3307)/journal", "tls=skip-verify", "interpolateParams=true"} {
		if !strings.Contains(dsn, want) {
			t.Fatalf("dsn %q lacks %q", dsn, want)
		}
	}
	for _, bad := range []string{"postgres://x/y", "mysql://host:1/", "mysql:///db"} {
		if _, err := persistence.MySQLDSN(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
	_, err = persistence.MySQLDSN("http://u:topsecret@h/db")
	if err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("error %v leaks the password", err)
	}
}

func TestOpenURLOpensBothBackends(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := persistence.OpenURL(ctx, dir, "", true, persistence.Config{}); err == nil {
		t.Fatal("mustExist accepted an empty directory")
	}
	j, err := persistence.OpenURL(ctx, dir, "", false, persistence.Config{})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, j, "s1", 0, 0, created("/p"))
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, err = persistence.OpenURL(ctx, dir, "", true, persistence.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, j, "s1")); n != 1 {
		t.Fatalf("reopened journal has %d events", n)
	}
	j.Close()

	d := testdb.MariaDB(t)
	j, err = persistence.OpenURL(ctx, "", d.URL(), false, persistence.Config{})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, j, "s1", 0, 0, created("/p"))
	j.Close()
}
