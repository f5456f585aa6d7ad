package engine

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
	_ "modernc.org/sqlite"
)

// peer is one engine under test, reached the way a caller would reach it.
type peer interface {
	exec(q string, args ...any) error
	// count runs a query and returns how many rows it produced.
	count(q string, args ...any) (int, error)
	// inTx runs f in one transaction and commits it.
	inTx(f func(exec func(q string, args ...any) error, count func(q string, args ...any) (int, error)) error) error
	close()
}

// dbPeer is a database/sql handle: boltsql's in-process DB() or SQLite.
type dbPeer struct {
	db      *sql.DB
	closeFn func()
	eng     *boltsql.Engine // nil for SQLite
}

func (p *dbPeer) exec(q string, args ...any) error {
	_, err := p.db.Exec(q, args...)
	return err
}

func countRows(rows *sql.Rows, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

func (p *dbPeer) count(q string, args ...any) (int, error) { return countRows(p.db.Query(q, args...)) }

func (p *dbPeer) inTx(f func(func(string, ...any) error, func(string, ...any) (int, error)) error) error {
	tx, err := p.db.BeginTx(context.Background(), nil)
	if err != nil {
		return err
	}
	err = f(func(q string, args ...any) error {
		_, err := tx.Exec(q, args...)
		return err
	}, func(q string, args ...any) (int, error) { return countRows(tx.Query(q, args...)) })
	if err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (p *dbPeer) close() { p.closeFn() }

func openBoltsql(dir string) (peer, error) {
	eng, err := boltsql.Open(dir, boltsql.Options{NoSync: os.Getenv("BENCH_NOSYNC") != ""})
	if err != nil {
		return nil, err
	}
	db := eng.DB()
	db.SetMaxOpenConns(128)
	db.SetMaxIdleConns(128)
	return &dbPeer{db: db, eng: eng, closeFn: func() { eng.Close() }}, nil
}

func openSQLite(dir string) (peer, error) {
	dsn := "file:" + filepath.Join(dir, "bench.sqlite") +
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(30000)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(128)
	db.SetMaxIdleConns(128)
	return &dbPeer{db: db, closeFn: func() { db.Close() }}, nil
}

// memPeer is go-mysql-server's memory backend driven through its engine
// directly (its database/sql driver fakes transactions). Arguments are
// inlined as literals.
type memPeer struct {
	eng *sqle.Engine
	pro *memory.DbProvider
	mu  sync.Mutex
	ses map[int]*memory.Session
}

func openMemory() (peer, error) {
	db := memory.NewDatabase("sessionrt")
	pro := memory.NewDBProvider(db)
	return &memPeer{eng: sqle.NewDefault(pro), pro: pro}, nil
}

func (p *memPeer) ctx() *gsql.Context {
	s := memory.NewSession(gsql.NewBaseSession(), p.pro)
	ctx := gsql.NewContext(context.Background(), gsql.WithSession(s))
	ctx.SetCurrentDatabase("sessionrt")
	return ctx
}

func inline(q string, args []any) string {
	var b strings.Builder
	i := 0
	for _, r := range q {
		if r == '?' && i < len(args) {
			switch v := args[i].(type) {
			case string:
				b.WriteString("'" + strings.ReplaceAll(v, "'", "''") + "'")
			case []byte:
				b.WriteString("'" + strings.ReplaceAll(string(v), "'", "''") + "'")
			default:
				fmt.Fprint(&b, v)
			}
			i++
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (p *memPeer) run(ctx *gsql.Context, q string, args []any) (int, error) {
	_, iter, _, err := p.eng.Query(ctx, inline(q, args))
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		_, err := iter.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			iter.Close(ctx)
			return n, err
		}
		n++
	}
	return n, iter.Close(ctx)
}

func (p *memPeer) exec(q string, args ...any) error {
	_, err := p.run(p.ctx(), q, args)
	return err
}

func (p *memPeer) count(q string, args ...any) (int, error) { return p.run(p.ctx(), q, args) }

func (p *memPeer) inTx(f func(func(string, ...any) error, func(string, ...any) (int, error)) error) error {
	ctx := p.ctx()
	if _, err := p.run(ctx, "START TRANSACTION", nil); err != nil {
		return err
	}
	err := f(func(q string, args ...any) error {
		_, err := p.run(ctx, q, args)
		return err
	}, func(q string, args ...any) (int, error) { return p.run(ctx, q, args) })
	if err != nil {
		p.run(ctx, "ROLLBACK", nil)
		return err
	}
	_, err = p.run(ctx, "COMMIT", nil)
	return err
}

func (p *memPeer) close() {}
