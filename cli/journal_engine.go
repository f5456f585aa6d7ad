package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sessionrt/sessionrt/node"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

// JournalServeCmd serves the embedded engine over the MySQL wire protocol.
type JournalServeCmd struct {
	Listen string `help:"Address to listen on." default:"127.0.0.1:3307"`
}

func (c *JournalServeCmd) Run(g *Globals) error {
	eng, err := openEngine(g)
	if err != nil {
		return err
	}
	defer eng.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(g.errOut(), "sessionrt: serving %s over the MySQL protocol on %s (database %q)\n", eng.Dir(), c.Listen, "sessionrt")
	return eng.Serve(ctx, c.Listen)
}

// JournalSQLCmd runs one statement on the embedded engine.
type JournalSQLCmd struct {
	Statement string `arg:"" help:"The SQL statement to run."`
}

func (c *JournalSQLCmd) Run(g *Globals) error {
	eng, err := openEngine(g)
	if err != nil {
		return err
	}
	defer eng.Close()
	ctx := context.Background()
	db := eng.DB()
	if !returnsRows(c.Statement) {
		res, err := db.ExecContext(ctx, c.Statement)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		_, err = fmt.Fprintf(g.out(), "OK, %d rows affected\n", n)
		return err
	}
	rows, err := db.QueryContext(ctx, c.Statement)
	if err != nil {
		return err
	}
	defer rows.Close()
	return printRows(g.out(), rows)
}

// openEngine opens the embedded journal of the data directory (where `serve --data`
// keeps it); a missing one is an error, never a new empty database.
func openEngine(g *Globals) (*boltsql.Engine, error) {
	dir := node.JournalDir(g.Data)
	if _, err := os.Stat(filepath.Join(dir, boltsql.FileName)); err != nil {
		return nil, fmt.Errorf("open journal: no journal in %s (--data names the data directory of `sessionrt serve`, which keeps its journal in DATA/journal): %w", dir, err)
	}
	eng, err := boltsql.Open(dir, boltsql.Options{})
	if errors.Is(err, boltsql.ErrInUse) {
		return nil, fmt.Errorf("%w (if `sessionrt journal serve` holds it, connect with a MySQL client instead)", err)
	}
	return eng, err
}

// returnsRows tells statements with a result set from ones with a row count.
func returnsRows(stmt string) bool {
	f := strings.Fields(strings.TrimLeft(stmt, " \t\r\n("))
	if len(f) == 0 {
		return false
	}
	switch strings.ToLower(f[0]) {
	case "select", "show", "explain", "describe", "desc", "with", "values", "table", "call":
		return true
	}
	return false
}

// printRows prints a header line and one line per row, tab-separated, with
// NULL for null and tabs, newlines and backslashes escaped (like mariadb -B).
func printRows(w io.Writer, rows *sql.Rows) error {
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, strings.Join(cols, "\t")); err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	fields := make([]string, len(cols))
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			fields[i] = formatValue(v)
		}
		if _, err := fmt.Fprintln(w, strings.Join(fields, "\t")); err != nil {
			return err
		}
	}
	return rows.Err()
}

var fieldEscaper = strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n", "\r", "\\r", "\x00", "\\0")

func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return fieldEscaper.Replace(string(x))
	case string:
		return fieldEscaper.Replace(x)
	case time.Time:
		return x.Format("2006-01-02 15:04:05.999999")
	case bool:
		if x {
			return "1"
		}
		return "0"
	}
	return fmt.Sprint(v)
}
