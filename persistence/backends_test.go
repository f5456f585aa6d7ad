package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

// backend opens a fresh, empty journal. The conformance suite runs every
// test against every backend, like Akka's persistence TCK.
type backend struct {
	name string
	open func(t *testing.T, cfg persistence.Config) *persistence.Journal
}

func backends() []backend {
	return []backend{
		{"embedded", func(t *testing.T, cfg persistence.Config) *persistence.Journal {
			// NoSync: a crash of the test machine is not what these tests are about.
			e, err := boltsql.Open(t.TempDir(), boltsql.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			cfg.DB = e.DB()
			return openJournal(t, cfg)
		}},
		{"mariadb", func(t *testing.T, cfg persistence.Config) *persistence.Journal {
			cfg.DB = testdb.MariaDB(t).DB
			return openJournal(t, cfg)
		}},
	}
}

func openJournal(t *testing.T, cfg persistence.Config) *persistence.Journal {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	j, err := persistence.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// eachBackend runs fn as a subtest per backend on a fresh journal.
func eachBackend(t *testing.T, fn func(t *testing.T, j *persistence.Journal)) {
	eachBackendCfg(t, persistence.Config{}, fn)
}

func eachBackendCfg(t *testing.T, cfg persistence.Config, fn func(t *testing.T, j *persistence.Journal)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { fn(t, b.open(t, cfg)) })
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
