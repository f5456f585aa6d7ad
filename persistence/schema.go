package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// IDs are VARBINARY so comparisons are byte-exact on every backend (MariaDB's
// default collation is case-insensitive; the embedded engine's is binary).
// Texts that must survive verbatim (baseline, prompts, bodies) are LONGBLOB.

// migrations are applied in order at Open; version i+1 is migrations[i].
// Never edit a released migration: append a new one. Table names are written
// as {name} so the same DDL builds Verify's scratch tables.
var migrations = [][]string{
	{ // 1: the journal and its projections
		`CREATE TABLE IF NOT EXISTS {streams} (
			session_id VARBINARY(255) NOT NULL,
			last_seq BIGINT NOT NULL,
			owner VARBINARY(255) NOT NULL,
			epoch BIGINT NOT NULL,
			PRIMARY KEY (session_id))`,
		`CREATE TABLE IF NOT EXISTS {events} (
			session_id VARBINARY(255) NOT NULL,
			seq BIGINT NOT NULL,
			type VARBINARY(255) NOT NULL,
			version INT NOT NULL,
			at_us BIGINT NOT NULL,
			payload LONGBLOB NOT NULL,
			PRIMARY KEY (session_id, seq))`,
		`CREATE TABLE IF NOT EXISTS {sessions} (
			session_id VARBINARY(255) NOT NULL,
			location LONGBLOB NOT NULL,
			agent VARBINARY(255) NOT NULL,
			provider VARBINARY(255) NOT NULL,
			model VARBINARY(255) NOT NULL,
			status VARBINARY(16) NOT NULL,
			created_seq BIGINT NOT NULL,
			history_seq BIGINT NOT NULL,
			PRIMARY KEY (session_id))`,
		`CREATE TABLE IF NOT EXISTS {session_input} (
			session_id VARBINARY(255) NOT NULL,
			admitted_seq BIGINT NOT NULL,
			message_id VARBINARY(255) NOT NULL,
			delivery VARBINARY(16) NOT NULL,
			prompt LONGBLOB NOT NULL,
			promoted_seq BIGINT NOT NULL,
			PRIMARY KEY (session_id, admitted_seq))`,
		`CREATE TABLE IF NOT EXISTS {prompt_ids} (
			message_id VARBINARY(255) NOT NULL,
			session_id VARBINARY(255) NOT NULL,
			admitted_seq BIGINT NOT NULL,
			PRIMARY KEY (message_id))`,
		`CREATE TABLE IF NOT EXISTS {session_messages} (
			session_id VARBINARY(255) NOT NULL,
			seq BIGINT NOT NULL,
			idx INT NOT NULL,
			message_id VARBINARY(255) NOT NULL,
			role VARBINARY(16) NOT NULL,
			body LONGBLOB NOT NULL,
			PRIMARY KEY (session_id, seq, idx))`,
		`CREATE TABLE IF NOT EXISTS {message_ids} (
			session_id VARBINARY(255) NOT NULL,
			message_id VARBINARY(255) NOT NULL,
			seq BIGINT NOT NULL,
			idx INT NOT NULL,
			PRIMARY KEY (session_id, message_id))`,
		`CREATE TABLE IF NOT EXISTS {context_epochs} (
			session_id VARBINARY(255) NOT NULL,
			revision BIGINT NOT NULL,
			baseline LONGBLOB NOT NULL,
			snapshot LONGBLOB NOT NULL,
			location LONGBLOB NOT NULL,
			baseline_seq BIGINT NOT NULL,
			updated_seq BIGINT NOT NULL,
			PRIMARY KEY (session_id))`,
		`CREATE TABLE IF NOT EXISTS {tool_calls} (
			session_id VARBINARY(255) NOT NULL,
			assistant_message_id VARBINARY(255) NOT NULL,
			call_id VARBINARY(255) NOT NULL,
			tool VARBINARY(255) NOT NULL,
			agent VARBINARY(255) NOT NULL,
			state VARBINARY(16) NOT NULL,
			seq BIGINT NOT NULL,
			updated_seq BIGINT NOT NULL,
			PRIMARY KEY (session_id, assistant_message_id, call_id))`,
		`CREATE TABLE IF NOT EXISTS {permissions} (
			session_id VARBINARY(255) NOT NULL,
			request_id VARBINARY(255) NOT NULL,
			seq BIGINT NOT NULL,
			body LONGBLOB NOT NULL,
			state VARBINARY(16) NOT NULL,
			PRIMARY KEY (session_id, request_id))`,
	},
	{ // 2: a message's ID is a unique key of session_messages itself, so a
		// new message is one row in one table and a lookup by ID one read.
		// Key order (message_id, session_id): with session_id first the
		// embedded planner prefers this index for history ranges
		// (session_id = ? AND seq >= ?) and sorts; message IDs are
		// selective on their own.
		`CREATE UNIQUE INDEX message_id ON {session_messages} (message_id, session_id)`,
		`DROP TABLE IF EXISTS {message_ids}`,
	},
	{ // 3: saved project approvals ("always" permission replies). Project-wide
		// configuration rather than a session projection: no event rebuilds it.
		`CREATE TABLE IF NOT EXISTS {project_approvals} (
			id BIGINT NOT NULL AUTO_INCREMENT,
			project VARBINARY(1024) NOT NULL,
			action VARBINARY(255) NOT NULL,
			resource LONGBLOB NOT NULL,
			effect VARBINARY(16) NOT NULL,
			PRIMARY KEY (id))`,
	},
	{ // 4: question requests of the question tool (projection of
		// session.question.*): the body holds the questions and the reply.
		`CREATE TABLE IF NOT EXISTS {questions} (
			session_id VARBINARY(255) NOT NULL,
			request_id VARBINARY(255) NOT NULL,
			seq BIGINT NOT NULL,
			body LONGBLOB NOT NULL,
			state VARBINARY(16) NOT NULL,
			PRIMARY KEY (session_id, request_id))`,
	},
	{ // 5: an admission the client held back (resume:false, V1 noReply:
		// messages.PromptAdmitted.Held) is marked, so start-up recovery
		// (Owed) leaves it for the client's later wake; existing rows were
		// all admitted without the mark and keep being owed.
		`ALTER TABLE {session_input} ADD COLUMN held TINYINT NOT NULL DEFAULT 0`,
	},
	{ // 6: Owed (start-up recovery, every cluster takeover) lists the
		// sessions with unpromoted input that is not held. Without an index
		// led by promoted_seq both backends scan all of session_input, which
		// keeps every prompt ever admitted. The index holds only what the
		// queries read (covering for Owed and the backlog count); admitted_seq
		// before held keeps a session's pending rows in admission order for
		// MariaDB's PendingInbox, which may pick this index.
		`CREATE INDEX session_input_owed ON {session_input} (promoted_seq, session_id, admitted_seq, held)`,
	},
	{ // 7: Owed's other half, the sessions mid-drain (status busy), read
		// through an index instead of a scan of every session ever created.
		`CREATE INDEX sessions_status ON {sessions} (status, session_id)`,
	},
	{ // 8: a session's reverts (projection of session.revert.*): the body is
		// the msgpack of messages.Reverts (the open revert, an owed file
		// restore, the ranges finalized reverts hid from the history).
		`CREATE TABLE IF NOT EXISTS {session_reverts} (
			session_id VARBINARY(255) NOT NULL,
			body LONGBLOB NOT NULL,
			PRIMARY KEY (session_id))`,
	},
	{ // 9: the session's selected model variant (messages.ModelRef.Variant,
		// OpenCode's model variants); sessions before it selected none.
		`ALTER TABLE {sessions} ADD COLUMN variant VARBINARY(255) NOT NULL DEFAULT ''`,
	},
	{ // 10: the title a client gave the session (at creation or by a
		// rename: session.renamed); sessions before it had none.
		`ALTER TABLE {sessions} ADD COLUMN title VARBINARY(1024) NOT NULL DEFAULT ''`,
	},
	{ // 11: the projector now holds the input an interrupt leaves pending
		// (it waits for a fresh wake, not for start-up recovery). Rows of
		// older journals get the same mark: held when some Interrupted
		// came after their admission while they were still pending (not
		// promoted, or promoted after it), exactly what a replay writes,
		// so Verify agrees. Re-running it changes nothing.
		`UPDATE {session_input} JOIN {events} ON {events}.session_id = {session_input}.session_id
				AND {events}.type = 'session.interrupted'
				AND {events}.seq > {session_input}.admitted_seq
				AND ({session_input}.promoted_seq = 0 OR {events}.seq < {session_input}.promoted_seq)
			SET {session_input}.held = 1 WHERE {session_input}.held = 0`,
	},
	{ // 12: the seq of the session's session.deleted (0: not deleted). The
		// row stays (Verify rebuilds it from the events, which stay too);
		// every read of a session and every list skips it.
		`ALTER TABLE {sessions} ADD COLUMN deleted_seq BIGINT NOT NULL DEFAULT 0`,
	},
}

// projectionTables are rebuilt by Verify, with the columns that form their
// primary key (the comparison order).
var projectionTables = []struct{ name, key string }{
	{"sessions", "session_id"},
	{"session_input", "session_id, admitted_seq"},
	{"prompt_ids", "message_id"},
	{"session_messages", "session_id, seq, idx"},
	{"context_epochs", "session_id"},
	{"tool_calls", "session_id, assistant_message_id, call_id"},
	{"permissions", "session_id, request_id"},
	{"questions", "session_id, request_id"},
	{"session_reverts", "session_id"},
}

// tableNames are every table the migrations create ({name} placeholders);
// message_ids was dropped by migration 2 but stays so that its placeholder
// renders in migration 1 (and Verify drops its scratch copy).
var tableNames = []string{"streams", "events", "sessions", "session_input", "prompt_ids",
	"session_messages", "message_ids", "context_epochs", "tool_calls", "permissions", "project_approvals", "questions", "session_reverts"}

// names renders {table} placeholders with a prefix ("" for the live tables,
// a scratch prefix for Verify).
type names struct {
	prefix string
	server bool
	r      *strings.Replacer
	cache  map[string]string
	multis multiTexts // multi-row statements, rendered on first use
}

// newNames renders statements for one table prefix. server selects the
// ORDER BY form for MySQL/MariaDB: every range query here fixes session_id
// by equality, and the embedded engine eliminates its sort only when ORDER BY
// names the full key prefix (session_id, seq), while MariaDB 10.11 answers
// exactly that form with a filesort (of LONGBLOB rows) and needs ORDER BY seq.
// Both orders are the same rows in the same order.
func newNames(prefix string, server bool) *names {
	var pairs []string
	for _, t := range tableNames {
		pairs = append(pairs, "{"+t+"}", prefix+t)
	}
	n := &names{prefix: prefix, server: server, r: strings.NewReplacer(pairs...), cache: map[string]string{}}
	// Pre-render every statement of the package once: q is then a map read,
	// safe for concurrent use because the map is never written again.
	for _, s := range allStatements {
		r := n.r.Replace(s)
		if server && strings.Contains(r, "WHERE session_id = ?") {
			r = strings.Replace(r, "ORDER BY session_id, ", "ORDER BY ", 1)
		}
		n.cache[s] = r
	}
	return n
}

// q returns the statement with its table names filled in.
func (n *names) q(s string) string {
	if r, ok := n.cache[s]; ok {
		return r
	}
	return n.r.Replace(s) // statements built at run time (migrations, Verify)
}

// allStatements is filled by stmt() at package initialization.
var allStatements []string

// stmt registers a constant statement for pre-rendering.
func stmt(s string) string {
	allStatements = append(allStatements, s)
	return s
}

// migrate brings the live schema to the newest version.
func migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INT NOT NULL, applied_us BIGINT NOT NULL, PRIMARY KEY (version))`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	// Not MAX(version): the embedded engine returns no row (MySQL: one NULL
	// row) for an aggregate over an empty table.
	var current sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT version FROM schema_migrations ORDER BY version DESC LIMIT 1`).Scan(&current)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("migrate: read version: %w", err)
	}
	if int(current.Int64) > len(migrations) {
		return fmt.Errorf("migrate: database schema version %d is newer than this binary's %d", current.Int64, len(migrations))
	}
	n := newNames("", false) // DDL only: the ORDER BY form does not matter
	for v := int(current.Int64) + 1; v <= len(migrations); v++ {
		for _, s := range migrations[v-1] {
			if _, err := db.ExecContext(ctx, n.q(s)); err != nil && !isDuplicateKeyName(err) && !isDuplicateColumn(err) {
				// (a duplicate index or column name: an earlier run, or a
				// concurrent Open, made the change before recording the
				// version; each statement is its own transaction, so
				// migrations that add indexes or columns are re-runnable)
				return fmt.Errorf("migrate to version %d: %w", v, err)
			}
		}
		_, err := db.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_us) VALUES (?, ?)`, v, time.Now().UnixMicro())
		if err != nil && !isDuplicate(err) { // a concurrent Open applied it too
			return fmt.Errorf("migrate to version %d: record: %w", v, err)
		}
	}
	return nil
}

// isDuplicateColumn reports ALTER TABLE … ADD COLUMN of a column that
// exists: MySQL's error 1060, which the embedded engine gives too.
func isDuplicateColumn(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1060
}

// isDuplicateKeyName reports CREATE INDEX of an index that exists: MySQL's
// error 1061; the embedded engine says it in words.
func isDuplicateKeyName(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1061 {
		return true
	}
	return strings.Contains(err.Error(), "Duplicate key name")
}
