package spanstore

import (
	"database/sql"
	"testing"

	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

// extraBackends are further databases the store tests run on: the embedded
// engine, a fresh one per test in a temporary directory.
var extraBackends = []backend{{"boltsql", func(t *testing.T) *sql.DB {
	eng, err := boltsql.Open(t.TempDir(), boltsql.Options{})
	if err != nil {
		t.Fatalf("open embedded engine: %v", err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng.DB()
}}}
