// Package spanstore keeps recent finished spans in an SQL table so that a
// session's trace can be inspected (`sessionrt trace show SESSION`) with no
// tracing backend running.
//
// It owns: the table (MySQL-dialect SQL through database/sql, portable between
// MariaDB and the embedded go-mysql-server engine), the sdktrace.SpanExporter
// that writes finished spans into it (put a BatchSpanProcessor in front, so
// writes are batched), retention (the newest MaxSpans spans, none older than
// MaxAge, pruned periodically), reading a session's spans back (Store.Trace),
// and RenderTree, the pure function that prints them as an indented tree.
//
// Spans are keyed by (session_id, start_ns, span_id), where session_id is the
// span's gen_ai.conversation.id attribute; spans without one cannot be looked
// up by session and are not stored (Stats counts them).
//
// It must not open or close the database (the caller owns *sql.DB), and it
// imports nothing of sessionrt's.
package spanstore
