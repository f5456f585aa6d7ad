package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

// OpenURL opens a journal on the backend named by journalURL:
//   - "" : the embedded engine in dataDir (created when missing unless
//     mustExist is set);
//   - "mysql://user:pass@host:port/db" : MySQL or MariaDB.
//
// cfg.DB is ignored; the Journal owns the database and Close closes it.
func OpenURL(ctx context.Context, dataDir, journalURL string, mustExist bool, cfg Config) (*Journal, error) {
	var db *sql.DB
	var closeFn func() error
	var eng *boltsql.Engine
	if journalURL == "" {
		if dataDir == "" {
			return nil, errors.New("open journal: no data directory and no --journal URL")
		}
		if mustExist {
			if _, err := os.Stat(filepath.Join(dataDir, boltsql.FileName)); err != nil {
				return nil, fmt.Errorf("open journal: no journal in %s: %w", dataDir, err)
			}
		}
		var err error
		eng, err = boltsql.Open(dataDir, boltsql.Options{})
		if err != nil {
			return nil, fmt.Errorf("open journal in %s: %w", dataDir, err)
		}
		db, closeFn = eng.DB(), eng.Close
	} else {
		dsn, err := MySQLDSN(journalURL)
		if err != nil {
			return nil, err
		}
		db, err = sql.Open("mysql", dsn)
		if err != nil {
			return nil, fmt.Errorf("open journal %s: %w", redact(journalURL), err)
		}
		ServerPool(db)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = db.PingContext(pctx)
		cancel()
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("open journal %s: %w", redact(journalURL), err)
		}
		closeFn = db.Close
	}
	cfg.DB = db
	j, err := Open(ctx, cfg)
	if err != nil {
		closeFn()
		return nil, err
	}
	j.closers = append(j.closers, closeFn)
	j.engine = eng
	return j, nil
}

// ServerPool sizes a MySQL/MariaDB connection pool for the journal: every
// concurrently appending session holds a connection for its transaction,
// and database/sql's default of 2 idle connections would close and re-dial
// (TCP, handshake, authentication) most of them after every append.
func ServerPool(db *sql.DB) {
	db.SetMaxIdleConns(128)
	db.SetConnMaxIdleTime(5 * time.Minute)
}

// MySQLDSN converts mysql://user:pass@host:port/db?param=value into a
// go-sql-driver DSN (TCP, interpolated parameters). Query parameters are
// passed to the driver.
func MySQLDSN(journalURL string) (string, error) {
	u, err := url.Parse(journalURL)
	if err != nil {
		return "", fmt.Errorf("journal URL %s: %w", redact(journalURL), err)
	}
	if u.Scheme != "mysql" {
		return "", fmt.Errorf("journal URL %s: scheme must be mysql://", redact(journalURL))
	}
	db := u.Path
	if len(db) > 0 && db[0] == '/' {
		db = db[1:]
	}
	if u.Host == "" || db == "" {
		return "", fmt.Errorf("journal URL %s: want mysql://user:pass@host:port/db", redact(journalURL))
	}
	c := mysql.NewConfig()
	c.Net, c.Addr, c.DBName = "tcp", u.Host, db
	if u.Port() == "" {
		c.Addr = u.Host + ":3306"
	}
	if u.User != nil {
		c.User = u.User.Username()
		c.Passwd, _ = u.User.Password()
	}
	c.InterpolateParams = true
	c.Timeout = 10 * time.Second
	if len(u.Query()) > 0 {
		c.Params = map[string]string{}
		for k, v := range u.Query() {
			c.Params[k] = v[len(v)-1]
		}
	}
	return c.FormatDSN(), nil
}

// redact hides the password of a journal URL in messages.
func redact(journalURL string) string {
	u, err := url.Parse(journalURL)
	if err != nil || u.User == nil {
		return journalURL
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxx")
	}
	return u.String()
}
