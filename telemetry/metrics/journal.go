package metrics

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// JournalSource is what the journal's observable instruments read when
// they are collected (a scrape, an OTLP export). Nil fields are skipped.
type JournalSource struct {
	// Engine gives the embedded engine's counters since it opened: group
	// commits (one fsync each), the SQL transactions they made durable, and
	// the time spent in them; ok is false on MySQL/MariaDB.
	Engine func() (commits, transactions uint64, commitTime time.Duration, ok bool)
	// Size is the journal's size on disk in bytes.
	Size func(context.Context) (int64, error)
	// Pool is the journal's connection pool.
	Pool func() sql.DBStats
	// AwaitingPermission counts sessions with an unanswered permission request.
	AwaitingPermission func(context.Context) (int64, error)
	AwaitingQuestion   func(context.Context) (int64, error)
}

// collectTimeout bounds the queries a collection makes (database size,
// sessions awaiting), so a stuck database cannot hang a scrape.
const collectTimeout = 2 * time.Second

// ObserveJournal registers the journal's observable instruments:
//
//	sessionrt_journal_fsyncs_total             group commits of the embedded engine (one fsync each)
//	sessionrt_journal_transactions_total       transactions they made durable (batch size = ratio of the rates)
//	sessionrt_journal_fsync_time_seconds_total time spent committing (write and fsync)
//	sessionrt_journal_size_bytes               the journal on disk
//	db_client_connection_count{db_client_connection_state}  the pool, idle and used
//	db_client_connection_max                   the pool's limit (0: none)
//	sessionrt_journal_pool_waits_total         connections waited for
//	sessionrt_sessions_awaiting{on="permission"} sessions with an unanswered permission request
//	sessionrt_sessions_awaiting{on="question"}   sessions with an unanswered question
//
// The returned func unregisters them.
func (r *Runtime) ObserveJournal(src JournalSource) (unregister func() error, err error) {
	m := r.meter
	var errs []error
	keep := func(err error) { errs = append(errs, err) }
	fsyncs, err := m.Int64ObservableCounter("sessionrt.journal.fsyncs",
		metric.WithDescription("Group commits of the embedded journal engine, one fsync each."))
	keep(err)
	txs, err := m.Int64ObservableCounter("sessionrt.journal.transactions",
		metric.WithDescription("Journal transactions the embedded engine's group commits made durable (their batch size is transactions per fsync)."))
	keep(err)
	fsyncTime, err := m.Float64ObservableCounter("sessionrt.journal.fsync.time", metric.WithUnit("s"),
		metric.WithDescription("Time the embedded journal engine spent in group commits (write and fsync)."))
	keep(err)
	size, err := m.Int64ObservableGauge("sessionrt.journal.size", metric.WithUnit("By"),
		metric.WithDescription("Size of the journal on disk: the embedded engine's file, or the journal database's tables and indexes."))
	keep(err)
	conns, err := m.Int64ObservableUpDownCounter("db.client.connection.count", metric.WithUnit("{connection}"),
		metric.WithDescription("Connections of the journal's pool, by state (idle, used)."))
	keep(err)
	connMax, err := m.Int64ObservableUpDownCounter("db.client.connection.max", metric.WithUnit("{connection}"),
		metric.WithDescription("The journal pool's connection limit (0: none)."))
	keep(err)
	waits, err := m.Int64ObservableCounter("sessionrt.journal.pool.waits",
		metric.WithDescription("Journal connections waited for because the pool was at its limit."))
	keep(err)
	awaiting, err := m.Int64ObservableGauge("sessionrt.sessions.awaiting",
		metric.WithDescription("Sessions waiting on a person, by what they wait on (permission, question)."))
	keep(err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	pool := metric.WithAttributes(attribute.String("db.client.connection.pool.name", "journal"))
	idle := metric.WithAttributes(attribute.String("db.client.connection.pool.name", "journal"), attribute.String("db.client.connection.state", "idle"))
	used := metric.WithAttributes(attribute.String("db.client.connection.pool.name", "journal"), attribute.String("db.client.connection.state", "used"))
	onPermission := metric.WithAttributes(attribute.String("on", "permission"))
	onQuestion := metric.WithAttributes(attribute.String("on", "question"))
	reg, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		if src.Engine != nil {
			if c, t, d, ok := src.Engine(); ok {
				o.ObserveInt64(fsyncs, int64(c))
				o.ObserveInt64(txs, int64(t))
				o.ObserveFloat64(fsyncTime, d.Seconds())
			}
		}
		if src.Pool != nil {
			st := src.Pool()
			o.ObserveInt64(conns, int64(st.Idle), idle)
			o.ObserveInt64(conns, int64(st.InUse), used)
			o.ObserveInt64(connMax, int64(st.MaxOpenConnections), pool)
			o.ObserveInt64(waits, st.WaitCount, pool)
		}
		qctx, cancel := context.WithTimeout(ctx, collectTimeout)
		defer cancel()
		// A failed query leaves its series out of this collection: the
		// scrape still answers, and the gap shows.
		if src.Size != nil {
			if n, err := src.Size(qctx); err == nil {
				o.ObserveInt64(size, n)
			}
		}
		if src.AwaitingPermission != nil {
			if n, err := src.AwaitingPermission(qctx); err == nil {
				o.ObserveInt64(awaiting, n, onPermission)
			}
		}
		if src.AwaitingQuestion != nil {
			if n, err := src.AwaitingQuestion(qctx); err == nil {
				o.ObserveInt64(awaiting, n, onQuestion)
			}
		}
		return nil
	}, fsyncs, txs, fsyncTime, size, conns, connMax, waits, awaiting)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}
