package boltsql

import (
	"bytes"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	bolt "go.etcd.io/bbolt"
)

// Options configure an Engine. The zero value is the production default.
type Options struct {
	// Database is the SQL database created if missing and selected on every
	// connection. Default "sessionrt".
	Database string
	// LockWaitTimeout bounds how long a write waits for the writer (another
	// write transaction) before failing with MySQL error 1205. Default 30s.
	LockWaitTimeout time.Duration
	// MaxBatch is the most SQL transactions that share one fsync. Default 256.
	MaxBatch int
	// GroupCommitWait caps how long a committed batch waits for writers
	// that are already executing a statement to join it before its fsync.
	// The wait never exceeds the duration of the previous commit. Default 2ms.
	GroupCommitWait time.Duration
	// NoSync skips fsync. For tests only: a crash can lose committed data.
	NoSync bool
	// MaxOpenConns caps the connections DB() opens. Each one holds a
	// go-mysql-server session whose system and status variable maps cost
	// ~115 KB, so one connection per concurrent caller (500 active
	// sessions) would hold ~60 MB; callers past the cap wait for a
	// connection, as they would wait for the single writer anyway.
	// Default 32: the journal's throughput is the same as with 64 or 256
	// (sessionrt bench), and group commit still batches ~5 transactions
	// per fsync at 500 sessions.
	MaxOpenConns int
	// InitialMmapSize is bbolt's initial memory map size (address space,
	// not memory). A commit that outgrows the map remaps, and a remap waits
	// for every open read snapshot: a goroutine that holds open *sql.Rows
	// while it writes would wait for itself. Default 8 GiB.
	InitialMmapSize int
	// NoEventScheduler runs no events: CREATE EVENT stores them and SHOW
	// EVENTS shows them, as with MySQL's --event-scheduler=DISABLED. By
	// default they run, as with MySQL's default (scheduler.go).
	NoEventScheduler bool
}

func (o Options) withDefaults() Options {
	if o.Database == "" {
		o.Database = "sessionrt"
	}
	if o.LockWaitTimeout <= 0 {
		o.LockWaitTimeout = 30 * time.Second
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.GroupCommitWait <= 0 {
		o.GroupCommitWait = 2 * time.Millisecond
	}
	if o.InitialMmapSize <= 0 {
		o.InitialMmapSize = 8 << 30
	}
	if o.MaxOpenConns <= 0 {
		o.MaxOpenConns = 32
	}
	return o
}

const (
	// FileName is the bbolt file inside the data directory.
	FileName = "journal.bolt"
	lockName = "journal.lock"
	magic    = "sessionrt-boltsql"
	// FormatVersion is the storage layout this build writes and reads:
	// 2 keys collated strings by their weights (see upgrade.go); a file of
	// version 1 is upgraded when opened.
	FormatVersion uint64 = 2
)

var (
	bucketMeta    = []byte("meta")
	bucketDBs     = []byte("dbs")
	bucketSchema  = []byte("schema")
	bucketAutoInc = []byte("autoinc")
	bucketViews   = []byte("views")    // db \x00 view (lower case) -> viewDef JSON
	bucketRoutine = []byte("routines") // kind \x00 db \x00 name (lower case) -> definition JSON
)

// Sentinel errors callers may branch on.
var (
	// ErrInUse: another process (or Engine) has the data directory open.
	ErrInUse = errors.New("data directory in use")
	// ErrForeignFile: the file is not a boltsql database.
	ErrForeignFile = errors.New("not a sessionrt journal database")
	// ErrNewerFormat: the file was written by a newer build.
	ErrNewerFormat = errors.New("database written by a newer format version")
)

// Engine is a go-mysql-server engine whose databases live in one bbolt file.
type Engine struct {
	opts Options
	dir  string
	lock *os.File
	bolt *bolt.DB
	w    *writer
	sqle *sqle.Engine
	// sched hands the event scheduler its sessions; nil with
	// Options.NoEventScheduler.
	sched *schedSessions

	catMu sync.RWMutex
	dbs   map[string]*dbInfo

	privileges gsql.PrivilegeSet // every session's: all of them (see newSession)

	keysRead atomic.Uint64 // keys visited by scans; tests use it to prove seeks
	connIDs  atomic.Uint32
	pids     atomic.Uint64
	writers  atomic.Int64 // transactions that may write, started and not ended

	shapes       shapeCache[insertShape] // parsed INSERT shapes for the fast path (fastinsert.go)
	noFastInsert bool                    // tests: run every statement through go-mysql-server
	fastInserts  atomic.Uint64           // statements the fast path ran

	updShapes    shapeCache[updateShape] // parsed UPDATE shapes (fastupdate.go)
	noFastUpdate bool                    // tests: run every UPDATE through go-mysql-server
	fastUpdates  atomic.Uint64           // UPDATE statements the fast path ran

	selShapes    shapeCache[selectShape] // parsed SELECT shapes (fastselect.go)
	noFastSelect bool                    // tests: run every SELECT through go-mysql-server
	fastSelects  atomic.Uint64           // SELECT statements the fast path ran

	noFastTxStmts bool          // tests: run START TRANSACTION/COMMIT/ROLLBACK through go-mysql-server
	fastTxStmts   atomic.Uint64 // transaction-control statements run without the planner (txstmt.go)

	triggers     atomic.Int64 // triggers in the catalog: the fast paths run no triggers, so they step aside while any exist
	foreignKeys  atomic.Int64 // foreign keys in the catalog: while none exist, no table is a parent (foreignkeys.go)
	wireSessions sync.Map     // wire connection id -> *Session, to end a statement that panicked

	dbOnce sync.Once
	sqlDB  *sql.DB

	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating if missing) the engine in dir. It refuses a file that
// is not ours or is newer, and a directory another process has open.
func Open(dir string, opts Options) (*Engine, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open journal %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	e := &Engine{opts: opts, dir: dir, lock: lock, dbs: map[string]*dbInfo{}, privileges: mysql_db.NewPrivilegeSetWithAllPrivileges()}
	path := filepath.Join(dir, FileName)
	e.bolt, err = bolt.Open(path, 0o600, &bolt.Options{
		Timeout:         time.Second, // the directory lock already excludes other processes
		NoSync:          opts.NoSync,
		InitialMmapSize: opts.InitialMmapSize,
		FreelistType:    bolt.FreelistMapType,
		NoFreelistSync:  true, // fewer pages per commit; the freelist is rebuilt at open
	})
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("open journal %s: %w: %w", path, ErrForeignFile, err)
	}
	if err := e.bolt.Update(e.initFile); err != nil {
		e.bolt.Close()
		lock.Close()
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	if err := e.loadCatalog(); err != nil {
		e.bolt.Close()
		lock.Close()
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	e.w = newWriter(e.bolt, opts.MaxBatch, opts.LockWaitTimeout, opts.GroupCommitWait, e.writers.Load, func() { _ = e.loadCatalog() })
	e.sqle = sqle.New(newAnalyzer(newProvider(e)), &sqle.Config{})
	if !opts.NoEventScheduler {
		if err := e.startEventScheduler(); err != nil {
			_ = e.sqle.Close()
			e.w.close(opts.LockWaitTimeout)
			e.bolt.Close()
			lock.Close()
			return nil, fmt.Errorf("open journal %s: event scheduler: %w", path, err)
		}
	}
	return e, nil
}

// newAnalyzer is go-mysql-server's default analyzer without its replaceAgg
// rule: v0.20.0 rewrites MIN/MAX of the first primary-key column into
// "ORDER BY … LIMIT 1", which returns no row for an empty table where MySQL
// returns one NULL row (a schema-version query hit it).
func newAnalyzer(p gsql.DatabaseProvider) *analyzer.Analyzer {
	b := analyzer.NewBuilder(p)
	for id := analyzer.RuleId(0); id < 512; id++ {
		if id.String() == "replaceAgg" {
			b = b.RemoveOnceAfterRule(id)
			break
		}
	}
	return b.Build()
}

// lockDir takes an exclusive flock on the directory's lock file and records
// our pid in it, so a second opener learns who holds it.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open journal lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		pid := strings.TrimSpace(string(b))
		if pid == "" {
			pid = "unknown"
		}
		return nil, fmt.Errorf("journal directory %s is %w by pid %s", dir, ErrInUse, pid)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// initFile stamps a new file, or checks an existing one is ours and not newer.
func (e *Engine) initFile(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		empty := true
		_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
		if !empty {
			return fmt.Errorf("%w: it has no %q metadata", ErrForeignFile, magic)
		}
		var err error
		if meta, err = tx.CreateBucket(bucketMeta); err != nil {
			return err
		}
		if err := meta.Put([]byte("magic"), []byte(magic)); err != nil {
			return err
		}
		if err := meta.Put([]byte("version"), u64key(FormatVersion)); err != nil {
			return err
		}
	}
	if !bytes.Equal(meta.Get([]byte("magic")), []byte(magic)) {
		return fmt.Errorf("%w: wrong magic", ErrForeignFile)
	}
	v := meta.Get([]byte("version"))
	if len(v) != 8 {
		return fmt.Errorf("%w: no format version", ErrForeignFile)
	}
	ver := binary.BigEndian.Uint64(v)
	if ver > FormatVersion {
		return fmt.Errorf("%w: file has version %d, this build reads up to %d", ErrNewerFormat, ver, FormatVersion)
	}
	for _, name := range [][]byte{bucketDBs, bucketSchema, bucketAutoInc, bucketViews, bucketRoutine} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	if err := initRowCounts(tx); err != nil {
		return err
	}
	if ver < 2 {
		if err := rekeyCollated(tx); err != nil {
			return err
		}
		if err := meta.Put([]byte("version"), u64key(FormatVersion)); err != nil {
			return err
		}
	}
	dbs := tx.Bucket(bucketDBs)
	if dbs.Get([]byte(strings.ToLower(e.opts.Database))) == nil {
		return dbs.Put([]byte(strings.ToLower(e.opts.Database)), []byte(e.opts.Database))
	}
	return nil
}

// loadCatalog rebuilds the in-memory catalog from the file.
func (e *Engine) loadCatalog() error {
	dbs := map[string]*dbInfo{}
	var fks int64
	err := e.bolt.View(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketDBs).ForEach(func(k, v []byte) error {
			dbs[string(k)] = decodeDBInfo(v)
			return nil
		}); err != nil {
			return err
		}
		if err := loadViews(tx, dbs); err != nil {
			return err
		}
		if err := e.loadRoutines(tx, dbs); err != nil {
			return err
		}
		return tx.Bucket(bucketSchema).ForEach(func(k, v []byte) error {
			dbName, _, ok := strings.Cut(string(k), "\x00")
			d := dbs[dbName]
			if !ok || d == nil {
				return fmt.Errorf("schema entry %q has no database", k)
			}
			def, err := unmarshalDef(v)
			if err != nil {
				return fmt.Errorf("schema of %q: %w", k, err)
			}
			ti, err := compile(d.name, def)
			if err != nil {
				return err
			}
			d.tables[strings.ToLower(def.Name)] = ti
			fks += int64(len(def.ForeignKeys))
			return nil
		})
	})
	if err != nil {
		return err
	}
	e.catMu.Lock()
	e.dbs = dbs
	e.catMu.Unlock()
	e.foreignKeys.Store(fks)
	return nil
}

// DB returns a database/sql handle running statements in process on this
// engine, with the default database selected. Transactions are real:
// BeginTx pins a connection and issues START TRANSACTION, and
// Commit/Rollback issue COMMIT/ROLLBACK. Errors carry MySQL codes as
// *mysql.MySQLError (github.com/go-sql-driver/mysql), e.g. 1062 for a
// duplicate key, the same as from a MySQL or MariaDB server.
func (e *Engine) DB() *sql.DB {
	e.dbOnce.Do(func() {
		e.sqlDB = sql.OpenDB(&connector{eng: e})
		// A new connection builds a session with every system variable:
		// keep every open connection idle rather than database/sql's
		// default of 2, and cap them (see Options.MaxOpenConns).
		e.sqlDB.SetMaxOpenConns(e.opts.MaxOpenConns)
		e.sqlDB.SetMaxIdleConns(e.opts.MaxOpenConns)
	})
	return e.sqlDB
}

// Connector is the in-process connector DB is opened on, for a caller
// that wraps it (tests injecting storage failures).
func (e *Engine) Connector() driver.Connector { return &connector{eng: e} }

// Close stops the event scheduler (waiting for the events it runs), closes
// the database/sql handle, waits for the writer to finish and closes the
// file. A transaction still holding the writer after the
// lock-wait timeout (a leaked Tx) is rolled back.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		if e.sched != nil {
			e.sched.stop(e.opts.LockWaitTimeout)
		}
		if e.sqlDB != nil {
			_ = e.sqlDB.Close()
		}
		e.w.close(e.opts.LockWaitTimeout)
		e.closeErr = e.bolt.Close()
		_ = e.lock.Close()
	})
	return e.closeErr
}

// Dir is the data directory.
func (e *Engine) Dir() string { return e.dir }

func (e *Engine) newContext(ctx gsqlContext, sess *Session, query string) *gsql.Context {
	return gsql.NewContext(ctx, gsql.WithSession(sess), gsql.WithQuery(query), gsql.WithPid(e.pids.Add(1)),
		gsql.WithMemoryManager(e.sqle.MemoryManager), gsql.WithProcessList(e.sqle.ProcessList))
}

// Stats are counters since Open, for benchmarks and operators.
type Stats struct {
	Commits      uint64        // bbolt commits, one fsync each
	Transactions uint64        // SQL write transactions made durable by them
	CommitTime   time.Duration // total time spent in bbolt commits
	KeysRead     uint64        // keys visited by table and index scans
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	return Stats{Commits: e.w.syncs.Load(), Transactions: e.w.committed.Load(),
		CommitTime: time.Duration(e.w.syncNanos.Load()), KeysRead: e.keysRead.Load()}
}
