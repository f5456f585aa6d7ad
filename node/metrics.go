package node

import (
	"database/sql"
	"time"

	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/telemetry/metrics"
)

// observeJournal publishes the journal's engine counters, size, pool and
// the sessions awaiting a permission or a question in the metrics, read at collection.
// Telemetry shuts down before the journal closes, so no collection reads a
// closed journal.
func observeJournal(rt *metrics.Runtime, j *persistence.Journal) error {
	db := j.DB()
	_, err := rt.ObserveJournal(metrics.JournalSource{
		Engine: func() (uint64, uint64, time.Duration, bool) {
			s, ok := j.EngineStats()
			return s.Commits, s.Transactions, s.CommitTime, ok
		},
		Size:               j.SizeBytes,
		Pool:               func() sql.DBStats { return db.Stats() },
		AwaitingPermission: j.SessionsAwaitingPermission,
		AwaitingQuestion:   j.SessionsAwaitingQuestion,
	})
	return err
}
