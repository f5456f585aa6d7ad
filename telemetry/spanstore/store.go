package spanstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// SessionKey is the span attribute whose value keys a span in the store: the
// GenAI semantic conventions' conversation ID, which sessionrt sets to the
// session ID.
const SessionKey = "gen_ai.conversation.id"

// ErrShutdown is returned by ExportSpans after Shutdown.
var ErrShutdown = errors.New("span store is shut down")

// ErrNoSession is returned by Trace for an empty session ID.
var ErrNoSession = errors.New("no session ID given")

// ErrInvalidConfig is wrapped by Open's configuration errors.
var ErrInvalidConfig = errors.New("invalid span store config")

// Config configures a Store. Zero values take the documented defaults.
type Config struct {
	// DB is the database to write to (required). The Store never closes it.
	DB *sql.DB
	// Table is the table name (default "telemetry_spans"); letters, digits and
	// underscores only, at most 64 characters. It is created if missing.
	Table string
	// MaxSpans keeps about this many spans, the newest by start time
	// (default 100000; negative: no count limit). Prune cuts to exactly
	// MaxSpans; between background runs the table may exceed it.
	MaxSpans int
	// MaxAge drops spans that started longer ago than this (default 7 days;
	// negative: no age limit).
	MaxAge time.Duration
	// PruneInterval is how often retention runs in the background (default
	// one minute; negative: never in the background, call Prune yourself).
	// Background runs enforce MaxSpans only once the table exceeds it by a
	// tenth, so that the whole-table count and sort are rare.
	PruneInterval time.Duration
	// BatchRows is the number of spans per INSERT statement (default 64: on
	// the embedded engine one statement holds the single writer, which the
	// journal's appends wait for, so statements stay short).
	BatchRows int
	// OnError receives errors of background pruning (default: ignored; the
	// next run tries again).
	OnError func(error)
	// Now is the clock for MaxAge (default time.Now).
	Now func() time.Time
}

func (c Config) withDefaults() (Config, error) {
	if c.DB == nil {
		return c, fmt.Errorf("%w: DB is nil", ErrInvalidConfig)
	}
	if c.Table == "" {
		c.Table = "telemetry_spans"
	}
	if !validIdent(c.Table) {
		return c, fmt.Errorf("%w: table name %q: use 1-64 letters, digits or underscores", ErrInvalidConfig, c.Table)
	}
	if c.MaxSpans == 0 {
		c.MaxSpans = 100000
	}
	if c.MaxAge == 0 {
		c.MaxAge = 7 * 24 * time.Hour
	}
	if c.PruneInterval == 0 {
		c.PruneInterval = time.Minute
	}
	if c.BatchRows <= 0 {
		c.BatchRows = 64
	}
	if c.OnError == nil {
		c.OnError = func(error) {}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

func validIdent(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// Stats counts what the exporter did since Open.
type Stats struct {
	Exported         uint64 // spans written
	DroppedNoSession uint64 // spans without gen_ai.conversation.id
	DroppedInvalid   uint64 // spans whose session ID cannot be stored (longer than 255 characters)
	Pruned           uint64 // spans deleted by retention
}

// Store is the span table. It implements sdktrace.SpanExporter.
type Store struct {
	cfg   Config
	table string

	exported, noSession, invalid, pruned atomic.Uint64

	shutdown  atomic.Bool
	stop      chan struct{}
	stopOnce  sync.Once
	pruneDone chan struct{}
	pruneMu   sync.Mutex // one prune at a time

	// estimate is the table's row count as last counted, plus this Store's
	// inserts and minus its deletes since; valid once counted is set.
	estimate atomic.Int64
	counted  atomic.Bool
}

var _ sdktrace.SpanExporter = (*Store)(nil)

// Open creates the table if needed and starts background pruning.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, table: cfg.Table, stop: make(chan struct{}), pruneDone: make(chan struct{})}
	if _, err := cfg.DB.ExecContext(ctx, s.createTableSQL()); err != nil {
		return nil, fmt.Errorf("create span table %s: %w", s.table, err)
	}
	if cfg.PruneInterval > 0 {
		go s.pruneLoop(cfg.PruneInterval)
	} else {
		close(s.pruneDone)
	}
	return s, nil
}

// createTableSQL keeps to what both MariaDB and go-mysql-server accept. The
// binary collation makes session IDs compare exactly (MariaDB's default
// collation would fold case) and keeps byte-ordered keys valid in the
// embedded engine.
func (s *Store) createTableSQL() string {
	return "CREATE TABLE IF NOT EXISTS " + s.table + ` (
  session_id VARCHAR(255) NOT NULL,
  start_ns BIGINT NOT NULL,
  span_id VARCHAR(16) NOT NULL,
  trace_id VARCHAR(32) NOT NULL,
  parent_span_id VARCHAR(16) NOT NULL,
  name VARCHAR(255) NOT NULL,
  kind VARCHAR(16) NOT NULL,
  scope VARCHAR(255) NOT NULL,
  end_ns BIGINT NOT NULL,
  status_code VARCHAR(8) NOT NULL,
  status_message TEXT NOT NULL,
  attributes BLOB NOT NULL,
  events BLOB NOT NULL,
  PRIMARY KEY (session_id, start_ns, span_id)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
}

const columns = "session_id, start_ns, span_id, trace_id, parent_span_id, name, kind, scope, end_ns, status_code, status_message, attributes, events"

const numColumns = 13

// Stats returns the exporter's counters.
func (s *Store) Stats() Stats {
	return Stats{
		Exported:         s.exported.Load(),
		DroppedNoSession: s.noSession.Load(),
		DroppedInvalid:   s.invalid.Load(),
		Pruned:           s.pruned.Load(),
	}
}

// ExportSpans writes spans that carry a session ID, BatchRows per INSERT.
func (s *Store) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if s.shutdown.Load() {
		return ErrShutdown
	}
	rows := make([][]any, 0, len(spans))
	for _, sp := range spans {
		row, err := s.row(sp)
		if err != nil {
			return err
		}
		if row != nil {
			rows = append(rows, row)
		}
	}
	for len(rows) > 0 {
		n := min(len(rows), s.cfg.BatchRows)
		if err := s.insert(ctx, rows[:n]); err != nil {
			return err
		}
		s.exported.Add(uint64(n))
		s.estimate.Add(int64(n))
		rows = rows[n:]
	}
	return nil
}

func (s *Store) insert(ctx context.Context, rows [][]any) error {
	var b strings.Builder
	b.WriteString("INSERT INTO " + s.table + " (" + columns + ") VALUES ")
	args := make([]any, 0, len(rows)*numColumns)
	for i, r := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?,?)")
		args = append(args, r...)
	}
	if _, err := s.cfg.DB.ExecContext(ctx, b.String(), args...); err != nil {
		return fmt.Errorf("insert %d spans into %s (first session %v): %w", len(rows), s.table, rows[0][0], err)
	}
	return nil
}

// row converts one span to column values, or nil if it is not stored.
func (s *Store) row(sp sdktrace.ReadOnlySpan) ([]any, error) {
	attrs := sp.Attributes()
	session := ""
	for _, kv := range attrs {
		if string(kv.Key) == SessionKey {
			session = kv.Value.Emit()
			break
		}
	}
	if session == "" {
		s.noSession.Add(1)
		return nil, nil
	}
	if !utf8.ValidString(session) || utf8.RuneCountInString(session) > 255 {
		s.invalid.Add(1)
		return nil, nil
	}
	sc := sp.SpanContext()
	parent := ""
	if p := sp.Parent(); p.SpanID().IsValid() {
		parent = p.SpanID().String()
	}
	attrBlob, err := marshalAttrs(attrs)
	if err != nil {
		return nil, fmt.Errorf("span %s of session %s: %w", sc.SpanID(), session, err)
	}
	eventBlob, err := marshalEvents(sp.Events())
	if err != nil {
		return nil, fmt.Errorf("span %s of session %s: %w", sc.SpanID(), session, err)
	}
	st := sp.Status()
	return []any{
		session,
		sp.StartTime().UnixNano(),
		sc.SpanID().String(),
		sc.TraceID().String(),
		parent,
		truncateRunes(strings.ToValidUTF8(sp.Name(), "\uFFFD"), maxName),
		sp.SpanKind().String(),
		truncateRunes(strings.ToValidUTF8(sp.InstrumentationScope().Name, "\uFFFD"), 255),
		sp.EndTime().UnixNano(),
		st.Code.String(),
		truncate(strings.ToValidUTF8(st.Description, "\uFFFD"), maxStringValue),
		attrBlob,
		eventBlob,
	}, nil
}

func marshalEvents(evs []sdktrace.Event) ([]byte, error) {
	if len(evs) > maxEvents {
		evs = evs[len(evs)-maxEvents:] // the last ones explain how a span ended
	}
	out := make([]storedEvent, 0, len(evs))
	for _, e := range evs {
		a, err := encodeAttrs(e.Attributes)
		if err != nil {
			return nil, fmt.Errorf("event %s: %w", e.Name, err)
		}
		out = append(out, storedEvent{Name: e.Name, TimeNs: e.Time.UnixNano(), Attrs: a})
	}
	b, err := msgpack.Marshal(out)
	if err != nil || len(b) <= maxBlob {
		return b, err
	}
	// Too large: keep names and times only.
	for i := range out {
		out[i].Attrs = nil
	}
	return msgpack.Marshal(out)
}

// Shutdown stops background pruning and refuses further exports. Reading
// (Trace) keeps working. It never closes the database.
func (s *Store) Shutdown(ctx context.Context) error {
	s.shutdown.Store(true)
	s.stopOnce.Do(func() { close(s.stop) })
	select {
	case <-s.pruneDone:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("span store shutdown: waiting for a prune to finish: %w", ctx.Err())
	}
}

// Close is Shutdown without a deadline.
func (s *Store) Close() error { return s.Shutdown(context.Background()) }

func (s *Store) pruneLoop(every time.Duration) {
	defer close(s.pruneDone)
	t := time.NewTicker(every)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if _, err := s.prune(ctx, false); err != nil && ctx.Err() == nil {
				s.cfg.OnError(err)
			}
		}
	}
}

// Prune applies retention now, counting the table, and returns the number of
// spans deleted.
func (s *Store) Prune(ctx context.Context) (int64, error) { return s.prune(ctx, true) }

// prune deletes spans older than MaxAge, then, if the table holds more than
// MaxSpans, the oldest beyond that. Counting and finding the cut-off scan
// the whole table, so background runs (exact false) do that only when the
// running estimate says the table is over the limit by the slack: the
// estimate is set by each count and moved by every export and delete of this
// Store (other processes writing the same table are caught at the next count).
func (s *Store) prune(ctx context.Context, exact bool) (int64, error) {
	s.pruneMu.Lock()
	defer s.pruneMu.Unlock()
	var deleted int64
	defer func() {
		s.pruned.Add(uint64(deleted))
		s.estimate.Add(-deleted)
	}()
	if s.cfg.MaxAge > 0 {
		cutoff := s.cfg.Now().Add(-s.cfg.MaxAge).UnixNano()
		res, err := s.cfg.DB.ExecContext(ctx, "DELETE FROM "+s.table+" WHERE start_ns < ?", cutoff)
		if err != nil {
			return deleted, fmt.Errorf("prune %s spans older than %s: %w", s.table, s.cfg.MaxAge, err)
		}
		n, _ := res.RowsAffected()
		deleted += n
	}
	if s.cfg.MaxSpans <= 0 {
		return deleted, nil
	}
	limit := int64(s.cfg.MaxSpans)
	if !exact && s.counted.Load() && s.estimate.Load()-deleted <= limit+limit/10 {
		return deleted, nil
	}
	var count int64
	if err := s.cfg.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+s.table).Scan(&count); err != nil {
		return deleted, fmt.Errorf("prune %s: count spans: %w", s.table, err)
	}
	// The estimate becomes this count less what the deferred update subtracts.
	s.estimate.Store(count + deleted)
	s.counted.Store(true)
	if count <= limit {
		return deleted, nil
	}
	// The start time of the newest span beyond the limit: it and all older
	// ones go (spans starting in the same nanosecond go together).
	var cutoff int64
	err := s.cfg.DB.QueryRowContext(ctx,
		fmt.Sprintf("SELECT start_ns FROM %s ORDER BY start_ns DESC LIMIT 1 OFFSET %d", s.table, limit)).Scan(&cutoff)
	if errors.Is(err, sql.ErrNoRows) { // deleted by someone else meanwhile
		return deleted, nil
	}
	if err != nil {
		return deleted, fmt.Errorf("prune %s: find the %dth newest span: %w", s.table, limit, err)
	}
	res, err := s.cfg.DB.ExecContext(ctx, "DELETE FROM "+s.table+" WHERE start_ns <= ?", cutoff)
	if err != nil {
		return deleted, fmt.Errorf("prune %s to %d spans: %w", s.table, limit, err)
	}
	n, _ := res.RowsAffected()
	deleted += n
	return deleted, nil
}

// Trace returns every stored span of a session, ordered by start time; none
// (and no error) for a session it has no spans of.
func (s *Store) Trace(ctx context.Context, sessionID string) ([]Span, error) {
	if sessionID == "" {
		return nil, fmt.Errorf("read spans: %w", ErrNoSession)
	}
	rows, err := s.cfg.DB.QueryContext(ctx, "SELECT "+columns+" FROM "+s.table+
		" WHERE session_id = ? ORDER BY session_id, start_ns, span_id", sessionID)
	if err != nil {
		return nil, fmt.Errorf("read spans of session %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []Span
	for rows.Next() {
		var (
			sp             Span
			startNs, endNs int64
			attrs, events  []byte
		)
		if err := rows.Scan(&sp.SessionID, &startNs, &sp.SpanID, &sp.TraceID, &sp.ParentSpanID, &sp.Name,
			&sp.Kind, &sp.Scope, &endNs, &sp.StatusCode, &sp.StatusMessage, &attrs, &events); err != nil {
			return nil, fmt.Errorf("read spans of session %s: %w", sessionID, err)
		}
		sp.Start, sp.End = time.Unix(0, startNs).UTC(), time.Unix(0, endNs).UTC()
		if err := decodeRow(&sp, attrs, events); err != nil {
			return nil, fmt.Errorf("read spans of session %s: span %s: %w", sessionID, sp.SpanID, err)
		}
		out = append(out, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read spans of session %s: %w", sessionID, err)
	}
	return out, nil
}

func decodeRow(sp *Span, attrs, events []byte) error {
	var sa []storedAttr
	if err := msgpack.Unmarshal(attrs, &sa); err != nil {
		return fmt.Errorf("corrupt attributes: %w", err)
	}
	var err error
	if sp.Attributes, err = decodeAttrs(sa); err != nil {
		return fmt.Errorf("corrupt attributes: %w", err)
	}
	var se []storedEvent
	if err := msgpack.Unmarshal(events, &se); err != nil {
		return fmt.Errorf("corrupt events: %w", err)
	}
	for _, e := range se {
		a, err := decodeAttrs(e.Attrs)
		if err != nil {
			return fmt.Errorf("corrupt event %s: %w", e.Name, err)
		}
		sp.Events = append(sp.Events, Event{Name: e.Name, Time: time.Unix(0, e.TimeNs).UTC(), Attributes: a})
	}
	return nil
}
