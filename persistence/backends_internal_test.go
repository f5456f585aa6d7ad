package persistence

import (
	"database/sql"
	"testing"

	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

// backend is one of the journal's two databases, for the package's
// internal tests that must hold on both.
type backend struct {
	name string
	db   func(t *testing.T) *sql.DB
}

// backends are the embedded engine (a fresh one per test) and MariaDB.
func backends() []backend {
	return []backend{
		{"embedded", func(t *testing.T) *sql.DB {
			e, err := boltsql.Open(t.TempDir(), boltsql.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			return e.DB()
		}},
		{"mariadb", func(t *testing.T) *sql.DB { return testdb.MariaDB(t).DB }},
	}
}
