package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

func internalBackends(t *testing.T) map[string]*sql.DB {
	e, err := boltsql.Open(t.TempDir(), boltsql.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return map[string]*sql.DB{"embedded": e.DB(), "mariadb": testdb.MariaDB(t).DB}
}

// A journal written at schema version 1 (message IDs in their own table)
// opens at version 2 with its messages found by ID, duplicates refused and
// projections equal to a replay; a version 2 migration interrupted after its
// index was created runs again.
func TestMigrationTwoKeepsMessagesFoundByID(t *testing.T) {
	for name, db := range internalBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			all := migrations
			migrations = all[:1]
			j1, err := Open(ctx, Config{DB: db})
			migrations = all
			if err != nil {
				t.Fatal(err)
			}
			// Today's projector writes the sessions.variant and title
			// columns of migrations 9 and 10: added here ahead of their
			// turn (the migrations then find them, as a re-run does).
			for _, m := range all[8:10] {
				if _, err := db.ExecContext(ctx, j1.n.q(m[0])); err != nil {
					t.Fatal(err)
				}
			}
			// Written by today's projector on the old schema: session_messages
			// rows without the unique key (message_ids goes away anyway).
			last, err := j1.Append(ctx, "s1", 0, 0, messages.SessionCreated{Location: "/p"},
				messages.TurnStarted{AssistantMessageID: "a1"},
				messages.ToolCalled{AssistantMessageID: "a1", CallID: "c1", Tool: "bash"})
			if err != nil {
				t.Fatal(err)
			}
			j2, err := Open(ctx, Config{DB: db})
			if err != nil {
				t.Fatal(err)
			}
			var v int
			if err := db.QueryRowContext(ctx, `SELECT version FROM schema_migrations ORDER BY version DESC LIMIT 1`).Scan(&v); err != nil || v != len(migrations) {
				t.Fatalf("schema version %d, %v", v, err)
			}
			if last, err = j2.Append(ctx, "s1", last, 0, messages.ToolSucceeded{AssistantMessageID: "a1", CallID: "c1", Output: "ok"},
				messages.TurnEnded{AssistantMessageID: "a1"}); err != nil {
				t.Fatal(err)
			}
			if _, err := j2.Append(ctx, "s1", last, 0, messages.TurnStarted{AssistantMessageID: "a1"}); !errors.Is(err, ErrProjection) {
				t.Fatalf("reused message ID: %v", err)
			}
			h, err := j2.ModelHistory(ctx, "s1")
			if err != nil || len(h) != 1 || !h[0].Finished || h[0].Parts[0].Tool.Output != "ok" {
				t.Fatalf("history %+v, %v", h, err)
			}
			if rep, err := j2.Verify(ctx); err != nil || !rep.Clean() {
				t.Fatalf("verify: %v %v", err, rep.Differences)
			}
			// Interrupted after CREATE INDEX, before the version (and any later one) was recorded.
			if _, err := db.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version >= 2`); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(ctx, Config{DB: db}); err != nil {
				t.Fatalf("re-running migration 2: %v", err)
			}
		})
	}
}

// The embedded planner must read history and event ranges by the primary
// key without a Sort, and a message by ID through its unique key: with
// session_id leading the message_id index it chose that index for ranges.
func TestEmbeddedPlansUseTheRightIndex(t *testing.T) {
	e, err := boltsql.Open(t.TempDir(), boltsql.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	j, err := Open(ctx, Config{DB: e.DB()})
	if err != nil {
		t.Fatal(err)
	}
	plan := func(q string, args ...any) string {
		t.Helper()
		rows, err := j.db.QueryContext(ctx, "EXPLAIN PLAN "+j.n.q(q), args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			b.WriteString(s + "\n")
		}
		return b.String()
	}
	for _, c := range []struct {
		q     string
		args  []any
		index string
	}{
		{qMessagesFrom, []any{"s", 1}, "index: [session_messages.session_id,session_messages.seq,session_messages.idx]"},
		{qMessagesPage, []any{"s", 1, 10}, "index: [session_messages.session_id,session_messages.seq,session_messages.idx]"},
		{qMessagesSpan, []any{"s", 1, 5, 10}, "index: [session_messages.session_id,session_messages.seq,session_messages.idx]"},
		{qEvents, []any{"s", 1, 10}, "index: [events.session_id,events.seq]"},
		{qMessageByID, []any{"m", "s"}, "index: [session_messages.message_id,session_messages.session_id]"},
		// Owed: the unpromoted rows only, not every prompt ever admitted
		// (migration 6); a session's inbox stays on the primary key.
		{qUnpromoted, nil, "index: [session_input.promoted_seq,session_input.session_id,session_input.admitted_seq,session_input.held]"},
		{qPendingInbox, []any{"s"}, "index: [session_input.session_id,session_input.admitted_seq]"},
		{qPendingCount, []any{"s"}, "index: [session_input.session_id,session_input.admitted_seq]"},
		{qPromote, []any{5, "s", 2}, "index: [session_input.session_id,session_input.admitted_seq]"},
		{qSession, []any{"s"}, "index: [sessions.session_id]"},
		{qSetStatus, []any{"busy", "s"}, "index: [sessions.session_id]"},
	} {
		p := plan(c.q, c.args...)
		if !strings.Contains(p, c.index) || strings.Contains(p, "Sort") {
			t.Errorf("%s\nplan:\n%s", c.q, p)
		}
	}
	// Owed's mid-drain half reads the busy sessions, not all (migration 7);
	// it sorts them (few), as ORDER BY status, session_id would cost
	// MariaDB a filesort instead.
	if p := plan(qBusy); !strings.Contains(p, "index: [sessions.status,sessions.session_id]") {
		t.Errorf("%s\nplan:\n%s", qBusy, p)
	}
}

// A migration that alters a table (the embedded engine refused ALTER TABLE
// before) upgrades a journal written by the previous schema on both
// backends, keeps its rows, and runs again harmlessly when it was
// interrupted before its version was recorded.
func TestMigrationAlteringATableUpgradesAnOldJournal(t *testing.T) {
	for name, db := range internalBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			j1, err := Open(ctx, Config{DB: db})
			if err != nil {
				t.Fatal(err)
			}
			last, err := j1.Append(ctx, "s1", 0, 0, messages.SessionCreated{Location: "/p"},
				messages.TurnStarted{AssistantMessageID: "a1"})
			if err != nil {
				t.Fatal(err)
			}
			all := migrations
			migrations = append(all[:len(all):len(all)], []string{
				`ALTER TABLE {sessions} ADD COLUMN note VARBINARY(255) NULL`,
				`ALTER TABLE {sessions} ADD INDEX sessions_note (note)`,
			})
			defer func() { migrations = all }()
			j2, err := Open(ctx, Config{DB: db})
			if err != nil {
				t.Fatalf("migrating: %v", err)
			}
			var v int
			if err := db.QueryRowContext(ctx, `SELECT version FROM schema_migrations ORDER BY version DESC LIMIT 1`).Scan(&v); err != nil || v != len(migrations) {
				t.Fatalf("schema version %d, %v; want %d", v, err, len(migrations))
			}
			var note sql.NullString
			var loc []byte
			if err := db.QueryRowContext(ctx, `SELECT note, location FROM sessions WHERE session_id = 's1'`).Scan(&note, &loc); err != nil || note.Valid || string(loc) != "/p" {
				t.Fatalf("old row after the migration: note %v location %q, %v", note, loc, err)
			}
			if _, err := j2.Append(ctx, "s1", last, 0, messages.TurnEnded{AssistantMessageID: "a1"}); err != nil {
				t.Fatalf("append after the migration: %v", err)
			}
			if rep, err := j2.Verify(ctx); err != nil || !rep.Clean() {
				t.Fatalf("verify: %v %v", err, rep.Differences)
			}
			if _, err := db.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = ?`, len(migrations)); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(ctx, Config{DB: db}); err != nil {
				t.Fatalf("re-running the interrupted migration: %v", err)
			}
		})
	}
}

// Migration 5 adds session_input.held to a journal written without it: the
// input admitted before it keeps being owed (every old admission asked for
// a drain or was not distinguishable), a held admission after it is not,
// and the migration runs again harmlessly when its version was not recorded.
func TestMigrationFiveKeepsOldInputOwed(t *testing.T) {
	for name, db := range internalBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			all := migrations
			migrations = all[:4]
			j4, err := Open(ctx, Config{DB: db})
			if err != nil {
				migrations = all
				t.Fatal(err)
			}
			// Version 4's projector wrote no held column.
			n := newNames("", false)
			if _, err := db.ExecContext(ctx, n.q(`INSERT INTO {session_input} (session_id, admitted_seq, message_id, delivery, prompt, promoted_seq) VALUES ('old', 2, 'o1', 'steer', '', 0)`)); err != nil {
				migrations = all
				t.Fatal(err)
			}
			_ = j4
			migrations = all
			j5, err := Open(ctx, Config{DB: db})
			if err != nil {
				t.Fatalf("migrating: %v", err)
			}
			if _, err := j5.Append(ctx, "new", 0, 0, messages.SessionCreated{Location: "/p"},
				messages.PromptAdmitted{MessageID: "n1", Prompt: messages.Prompt{Text: "x"}, Delivery: messages.Queue, Held: true}); err != nil {
				t.Fatal(err)
			}
			if owed, err := j5.Owed(ctx); err != nil || len(owed) != 1 || owed[0] != "old" {
				t.Fatalf("owed %v %v, want [old]", owed, err)
			}
			if _, err := db.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version >= 5`); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(ctx, Config{DB: db}); err != nil {
				t.Fatalf("re-running migration 5: %v", err)
			}
		})
	}
}

// Owed's scan of session_input reads the unpromoted rows through migration
// 6's index on MariaDB too (covering: no row is read), its busy sessions
// through migration 7's, and a session's
// inbox and backlog count read by the session, not through all pending
// input. Without the index MariaDB reads the whole primary key (type index,
// key PRIMARY).
func TestMariaDBPlansUseTheOwedIndex(t *testing.T) {
	db := testdb.MariaDB(t).DB
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	j, err := Open(ctx, Config{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		sid := fmt.Sprintf("s%02d", i)
		last, err := j.Append(ctx, sid, 0, 0, messages.SessionCreated{Location: "/p"},
			messages.PromptAdmitted{MessageID: sid + "a", Prompt: messages.Prompt{Text: "x"}, Delivery: messages.Steer})
		if err == nil && i%10 != 0 {
			_, err = j.Append(ctx, sid, last, 0, messages.PromptPromoted{MessageIDs: []string{sid + "a"}}, messages.Idle{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `ANALYZE TABLE session_input, sessions`); err != nil {
		t.Fatal(err)
	}
	explain := func(q string, args ...any) (key, extra string) {
		t.Helper()
		rows, err := db.QueryContext(ctx, "EXPLAIN "+j.n.q(q), args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, c := range cols {
				switch c {
				case "key":
					key = vals[i].String
				case "Extra":
					extra = vals[i].String
				}
			}
		}
		return key, extra
	}
	if key, extra := explain(qUnpromoted); key != "session_input_owed" || !strings.Contains(extra, "Using index") {
		t.Errorf("Owed's scan: key %q, extra %q; want session_input_owed, covering", key, extra)
	}
	if key, extra := explain(qBusy); key != "sessions_status" || strings.Contains(extra, "filesort") {
		t.Errorf("Owed's busy sessions: key %q, extra %q; want sessions_status, no filesort", key, extra)
	}
	// History pages (Messages) read a key range of the session's rows in
	// key order, up to a revert's boundary too.
	for _, c := range []struct {
		q    string
		args []any
	}{{qMessagesPage, []any{"s01", 1, 10}}, {qMessagesSpan, []any{"s01", 1, 5, 10}}} {
		if key, extra := explain(c.q, c.args...); key != "PRIMARY" || strings.Contains(extra, "filesort") {
			t.Errorf("%s: key %q, extra %q: want the primary key's range, no filesort", c.q, key, extra)
		}
	}
	for _, q := range []string{qPendingInbox, qPendingCount} {
		if key, extra := explain(q, "s01"); key == "" || strings.Contains(extra, "filesort") {
			t.Errorf("%s: key %q, extra %q: want a key lookup by the session, no filesort", q, key, extra)
		}
	}
	if owed, err := j.Owed(ctx); err != nil || len(owed) != 5 {
		t.Fatalf("owed %v %v, want the 5 sessions with unpromoted input", owed, err)
	}
}

// Migration 11 holds, in a journal written before the projector held the
// input an interrupt leaves pending, exactly the rows a replay holds: input
// pending at an Interrupted (still pending, or promoted by a later wake) is
// held, input admitted after it or promoted before it is not. The old
// journal is made by today's projector with the marks cleared, as the old
// projector left them: its Owed lists the interrupted session (a restart
// would run what the user stopped) and Verify disagrees; after the
// migration neither, and a re-run is harmless.
func TestMigrationElevenHoldsInputPendingAtAnInterrupt(t *testing.T) {
	for name, db := range internalBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			j, err := Open(ctx, Config{DB: db})
			if err != nil {
				t.Fatal(err)
			}
			admit := func(id string) messages.PromptAdmitted {
				return messages.PromptAdmitted{MessageID: id, Prompt: messages.Prompt{Text: id}, Delivery: messages.Queue}
			}
			app := func(sid string, after int64, evs ...messages.Event) int64 {
				t.Helper()
				last, err := j.Append(ctx, sid, after, 0, evs...)
				if err != nil {
					t.Fatal(err)
				}
				return last
			}
			// "stopped": a1 ran, q1 was queued mid-drain, the user interrupted.
			app("stopped", 0, messages.SessionCreated{Location: "/p"}, admit("a1"),
				messages.PromptPromoted{MessageIDs: []string{"a1"}}, messages.TurnStarted{AssistantMessageID: "t1"},
				admit("q1"), messages.Interrupted{})
			// "woken": x pending at the interrupt, promoted with y by the next prompt.
			app("woken", 0, messages.SessionCreated{Location: "/p"}, admit("x"),
				messages.Interrupted{}, admit("y"), messages.PromptPromoted{MessageIDs: []string{"x", "y"}},
				messages.TurnStarted{AssistantMessageID: "t1"}, messages.TurnEnded{AssistantMessageID: "t1"}, messages.Idle{})
			// "owed": killed between receipt and drain, never interrupted.
			app("owed", 0, messages.SessionCreated{Location: "/p"}, admit("o1"))
			heldOf := func() map[string]int {
				rows, err := db.QueryContext(ctx, `SELECT message_id, held FROM session_input`)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				out := map[string]int{}
				for rows.Next() {
					var id string
					var h int
					if err := rows.Scan(&id, &h); err != nil {
						t.Fatal(err)
					}
					out[id] = h
				}
				return out
			}
			want := map[string]int{"a1": 0, "q1": 1, "x": 1, "y": 0, "o1": 0}
			if got := heldOf(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("projected held %v, want %v", got, want)
			}
			// As the old projector left it.
			if _, err := db.ExecContext(ctx, `UPDATE session_input SET held = 0`); err != nil {
				t.Fatal(err)
			}
			if owed, err := j.Owed(ctx); err != nil || fmt.Sprint(owed) != "[owed stopped]" {
				t.Fatalf("old journal owed %v %v, want [owed stopped]", owed, err)
			}
			if rep, err := j.Verify(ctx); err != nil || len(rep.Differences) != 2 {
				t.Fatalf("old journal verify %v %v: want the held of q1 and x to differ", err, rep.Differences)
			}
			for i := 0; i < 2; i++ { // the migration, then a re-run
				if _, err := db.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version >= 11`); err != nil {
					t.Fatal(err)
				}
				if j, err = Open(ctx, Config{DB: db}); err != nil {
					t.Fatalf("migration 11 (run %d): %v", i+1, err)
				}
				if got := heldOf(); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("migrated held %v, want %v", got, want)
				}
				if owed, err := j.Owed(ctx); err != nil || fmt.Sprint(owed) != "[owed]" {
					t.Fatalf("migrated owed %v %v, want [owed]", owed, err)
				}
				if rep, err := j.Verify(ctx); err != nil || !rep.Clean() {
					t.Fatalf("migrated verify %v %v", err, rep.Differences)
				}
			}
		})
	}
}
