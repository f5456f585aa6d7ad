package persistence

import (
	"context"
	"strings"
	"sync"
)

// Multi-row statements. The embedded engine's cost is per statement (parse,
// plan, bind), not per row, so an Append writes each table once with all of
// its rows. Texts are built once per (statement, row count) and reused: the
// same batch shape always sends the same bytes, which a plan cache keyed by
// statement text can hit. Batches above maxRowsPerStmt are split into full
// chunks plus one remainder, so the set of texts stays bounded.

// maxRowsPerStmt bounds the rows of one multi-row statement (and with it the
// number of distinct texts per table: 1..maxRowsPerStmt).
const maxRowsPerStmt = 32

// multiRow is a multi-row INSERT: head + n × row (comma separated) + tail.
type multiRow struct {
	head string // up to and including VALUES
	row  string // one "(?, …)" tuple
	tail string // e.g. ON DUPLICATE KEY UPDATE …; may be empty
	cols int    // placeholders per row
}

var (
	mEvents = multiRow{head: `INSERT INTO {events} (session_id, seq, type, version, at_us, payload) VALUES `,
		row: `(?, ?, ?, ?, ?, ?)`, cols: 6}
	mMessages = multiRow{head: `INSERT INTO {session_messages} (session_id, seq, idx, message_id, role, body) VALUES `,
		row: `(?, ?, ?, ?, ?, ?)`, cols: 6}
	// Changed messages: the key exists, only the body changes.
	mMessagesUpsert = multiRow{head: mMessages.head, row: mMessages.row, cols: 6,
		tail: ` ON DUPLICATE KEY UPDATE body = VALUES(body)`}
	mTools = multiRow{head: `INSERT INTO {tool_calls} (session_id, assistant_message_id, call_id, tool, agent, state, seq, updated_seq) VALUES `,
		row: `(?, ?, ?, ?, ?, ?, ?, ?)`, cols: 8}
	// Changed calls: the key exists; a call keeps its first seq.
	mToolsUpsert = multiRow{head: mTools.head, row: mTools.row, cols: 8,
		tail: ` ON DUPLICATE KEY UPDATE tool = VALUES(tool), agent = VALUES(agent), state = VALUES(state), updated_seq = VALUES(updated_seq)`}
)

type multiKey struct {
	m *multiRow
	n int
}

// multiTexts caches rendered multi-row texts per names instance.
type multiTexts struct {
	mu sync.RWMutex
	m  map[multiKey]string
}

// multi returns the text of m with n rows, table names filled in.
func (n *names) multi(m *multiRow, rows int) string {
	k := multiKey{m, rows}
	n.multis.mu.RLock()
	s, ok := n.multis.m[k]
	n.multis.mu.RUnlock()
	if ok {
		return s
	}
	var b strings.Builder
	b.WriteString(m.head)
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(m.row)
	}
	b.WriteString(m.tail)
	s = n.r.Replace(b.String())
	n.multis.mu.Lock()
	if n.multis.m == nil {
		n.multis.m = map[multiKey]string{}
	}
	n.multis.m[k] = s
	n.multis.mu.Unlock()
	return s
}

// execMulti writes args (m.cols values per row) in as few statements as
// maxRowsPerStmt allows.
func execMulti(ctx context.Context, tx querier, n *names, m *multiRow, args []any) error {
	rows := len(args) / m.cols
	for rows > 0 {
		k := min(rows, maxRowsPerStmt)
		if _, err := tx.ExecContext(ctx, n.multi(m, k), args[:k*m.cols]...); err != nil {
			return err
		}
		args, rows = args[k*m.cols:], rows-k
	}
	return nil
}
