package telemetry

import (
	"database/sql"
	"testing"

	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

// extraBackends are further databases the store benchmarks run on: the
// embedded engine, fresh per benchmark.
var extraBackends = []backend{{"boltsql", func(b *testing.B) *sql.DB {
	eng, err := boltsql.Open(b.TempDir(), boltsql.Options{})
	if err != nil {
		b.Fatalf("open embedded engine: %v", err)
	}
	b.Cleanup(func() { eng.Close() })
	return eng.DB()
}}}
