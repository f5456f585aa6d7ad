package journaltest

import (
	"context"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

// Embedded opens a fresh journal on the embedded engine in a temporary
// directory (fsync off: tests are not about machine crashes). It is closed
// when the test ends.
func Embedded(t testing.TB) *persistence.Journal {
	t.Helper()
	e, err := boltsql.Open(t.TempDir(), boltsql.Options{NoSync: true})
	if err != nil {
		t.Fatalf("journaltest: open embedded engine: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return open(t, persistence.Config{DB: e.DB()})
}

// MariaDB opens a fresh journal on a fresh MariaDB database (see
// internal/testdb; skips loudly when no server can be had).
func MariaDB(t testing.TB) *persistence.Journal {
	t.Helper()
	return open(t, persistence.Config{DB: testdb.MariaDB(t).DB})
}

func open(t testing.TB, cfg persistence.Config) *persistence.Journal {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	j, err := persistence.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("journaltest: %v", err)
	}
	return j
}
