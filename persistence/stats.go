package persistence

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

// EngineStats are the embedded engine's counters since it opened (group
// commits and their fsyncs, transactions, time in commits); ok is false on
// MySQL/MariaDB, whose server keeps its own.
func (j *Journal) EngineStats() (s boltsql.Stats, ok bool) {
	if j.engine == nil {
		return boltsql.Stats{}, false
	}
	return j.engine.Stats(), true
}

var qServerSize = stmt(`SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables WHERE table_schema = DATABASE()`)

// SizeBytes is the journal's size on disk: the embedded engine's file, or
// the tables and indexes of the journal's database on MySQL/MariaDB.
func (j *Journal) SizeBytes(ctx context.Context) (int64, error) {
	if j.engine != nil {
		fi, err := os.Stat(filepath.Join(j.engine.Dir(), boltsql.FileName))
		if err != nil {
			return 0, fmt.Errorf("journal size: %w", err)
		}
		return fi.Size(), nil
	}
	if !j.n.server {
		return 0, fmt.Errorf("journal size: not known for this database")
	}
	var n int64
	if err := j.db.QueryRowContext(ctx, j.n.q(qServerSize)).Scan(&n); err != nil {
		return 0, fmt.Errorf("journal size: %w", err)
	}
	return n, nil
}

var qAwaitingPermission = stmt(`SELECT COUNT(DISTINCT session_id) FROM {permissions} WHERE state = 'pending'`)

// SessionsAwaitingPermission counts the sessions with an unanswered
// permission request.
func (j *Journal) SessionsAwaitingPermission(ctx context.Context) (int64, error) {
	var n int64
	if err := j.db.QueryRowContext(ctx, j.n.q(qAwaitingPermission)).Scan(&n); err != nil {
		return 0, fmt.Errorf("sessions awaiting permission: %w", err)
	}
	return n, nil
}

var qAwaitingQuestion = stmt(`SELECT COUNT(DISTINCT session_id) FROM {questions} WHERE state = 'pending'`)

// SessionsAwaitingQuestion counts the sessions with an unanswered question
// (the question tool's call stays open until a person replies).
func (j *Journal) SessionsAwaitingQuestion(ctx context.Context) (int64, error) {
	var n int64
	if err := j.db.QueryRowContext(ctx, j.n.q(qAwaitingQuestion)).Scan(&n); err != nil {
		return 0, fmt.Errorf("sessions awaiting a question: %w", err)
	}
	return n, nil
}
