package boltsql

import (
	"sort"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/information_schema"
)

// provider is the sql.DatabaseProvider over the in-memory catalog, which
// mirrors the schema bucket of the bbolt file.
type provider struct {
	eng    *Engine
	infoDB sql.Database

	// The analyzer asks for absent databases (such as "mysql") on every
	// statement; building a not-found error captures a stack, so reuse one.
	missMu sync.Mutex
	misses map[string]error
}

var _ sql.CollatedDatabaseProvider = (*provider)(nil)

func newProvider(e *Engine) *provider {
	return &provider{eng: e, infoDB: information_schema.NewInformationSchemaDatabase()}
}

func (p *provider) Database(ctx *sql.Context, name string) (sql.Database, error) {
	if strings.EqualFold(name, p.infoDB.Name()) {
		return p.infoDB, nil
	}
	p.eng.catMu.RLock()
	d, ok := p.eng.dbs[strings.ToLower(name)]
	p.eng.catMu.RUnlock()
	if !ok {
		return nil, p.notFound(name)
	}
	return &database{eng: p.eng, name: d.name}, nil
}

func (p *provider) notFound(name string) error {
	p.missMu.Lock()
	defer p.missMu.Unlock()
	if err, ok := p.misses[name]; ok {
		return err
	}
	err := sql.ErrDatabaseNotFound.New(name)
	if len(p.misses) < 64 {
		if p.misses == nil {
			p.misses = map[string]error{}
		}
		p.misses[name] = err
	}
	return err
}

func (p *provider) HasDatabase(ctx *sql.Context, name string) bool {
	if strings.EqualFold(name, p.infoDB.Name()) {
		return true
	}
	p.eng.catMu.RLock()
	defer p.eng.catMu.RUnlock()
	_, ok := p.eng.dbs[strings.ToLower(name)]
	return ok
}

// AllDatabases lists this engine's databases. Not information_schema: the
// analyzer's catalog adds its own (listed twice in SHOW DATABASES before).
func (p *provider) AllDatabases(ctx *sql.Context) []sql.Database {
	p.eng.catMu.RLock()
	out := make([]sql.Database, 0, len(p.eng.dbs))
	for _, d := range p.eng.dbs {
		out = append(out, &database{eng: p.eng, name: d.name})
	}
	p.eng.catMu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

func (p *provider) CreateDatabase(ctx *sql.Context, name string) error {
	return p.CreateCollatedDatabase(ctx, name, sql.Collation_Unspecified)
}

// CreateCollatedDatabase keeps CREATE DATABASE's CHARACTER SET/COLLATE:
// tables created in the database default to it.
func (p *provider) CreateCollatedDatabase(ctx *sql.Context, name string, collation sql.CollationID) error {
	t, err := txnOf(ctx)
	if err != nil {
		return err
	}
	if p.HasDatabase(ctx, name) {
		return sql.ErrDatabaseExists.New(name)
	}
	wtx, err := t.writeTx(ctx)
	if err != nil {
		return err
	}
	b := wtx.Bucket(bucketDBs)
	info := &dbInfo{name: name, tables: map[string]*tableInfo{}}
	if collation != sql.Collation_Unspecified && collation != sql.Collation_Default {
		info.collation = collation.Name()
	}
	if err := t.put(b, bucketDBs, []byte(strings.ToLower(name)), info.encode()); err != nil {
		return err
	}
	p.eng.catMu.Lock()
	p.eng.dbs[strings.ToLower(name)] = info
	p.eng.catMu.Unlock()
	t.onUndo(func() {
		p.eng.catMu.Lock()
		delete(p.eng.dbs, strings.ToLower(name))
		p.eng.catMu.Unlock()
	})
	return nil
}

func (p *provider) DropDatabase(ctx *sql.Context, name string) error {
	t, err := txnOf(ctx)
	if err != nil {
		return err
	}
	p.eng.catMu.RLock()
	d, ok := p.eng.dbs[strings.ToLower(name)]
	n := 0
	if ok {
		n = len(d.tables) + len(d.views) + len(d.triggers) + len(d.procs) + len(d.events)
	}
	p.eng.catMu.RUnlock()
	if !ok {
		return sql.ErrDatabaseNotFound.New(name)
	}
	if n > 0 {
		return sql.ErrDatabaseWriteLocked.New(name + " still has tables, views, triggers, procedures or events; drop them first")
	}
	wtx, err := t.writeTx(ctx)
	if err != nil {
		return err
	}
	if err := t.del(wtx.Bucket(bucketDBs), bucketDBs, []byte(strings.ToLower(name))); err != nil {
		return err
	}
	p.eng.catMu.Lock()
	delete(p.eng.dbs, strings.ToLower(name))
	p.eng.catMu.Unlock()
	t.onUndo(func() {
		p.eng.catMu.Lock()
		p.eng.dbs[strings.ToLower(name)] = d
		p.eng.catMu.Unlock()
	})
	return nil
}

type dbInfo struct {
	name      string
	collation string                        // empty: the default collation
	tables    map[string]*tableInfo         // by lower-case name
	views     map[string]sql.ViewDefinition // by lower-case name; nil when none
	triggers  map[string]sql.TriggerDefinition
	procs     map[string]sql.StoredProcedureDetails
	events    map[string]sql.EventDefinition
}

// encode is the database's value in the dbs bucket: its name, then its
// collation after a zero byte when it has one (files written before
// databases had collations hold the name alone).
func (d *dbInfo) encode() []byte {
	if d.collation == "" {
		return []byte(d.name)
	}
	return []byte(d.name + "\x00" + d.collation)
}

func decodeDBInfo(v []byte) *dbInfo {
	name, coll, _ := strings.Cut(string(v), "\x00")
	return &dbInfo{name: name, collation: coll, tables: map[string]*tableInfo{}}
}

// database is one SQL database (schema) of the catalog.
type database struct {
	eng  *Engine
	name string
}

var (
	_ sql.Database         = (*database)(nil)
	_ sql.CollatedDatabase = (*database)(nil)
	_ sql.TableCreator     = (*database)(nil)
	_ sql.TableDropper     = (*database)(nil)
)

func (d *database) Name() string { return d.name }

// GetCollation is the collation CREATE DATABASE (or ALTER DATABASE) gave.
func (d *database) GetCollation(ctx *sql.Context) sql.CollationID {
	d.eng.catMu.RLock()
	info := d.eng.dbs[strings.ToLower(d.name)]
	d.eng.catMu.RUnlock()
	if info != nil && info.collation != "" {
		if c, err := sql.ParseCollation("", info.collation, false); err == nil {
			return c
		}
	}
	return sql.Collation_Default
}

// SetCollation is ALTER DATABASE … COLLATE: new tables default to it.
func (d *database) SetCollation(ctx *sql.Context, collation sql.CollationID) error {
	t, err := txnOf(ctx)
	if err != nil {
		return err
	}
	wtx, err := t.writeTx(ctx)
	if err != nil {
		return err
	}
	key := strings.ToLower(d.name)
	d.eng.catMu.Lock()
	prev := d.eng.dbs[key]
	if prev == nil {
		d.eng.catMu.Unlock()
		return sql.ErrDatabaseNotFound.New(d.name)
	}
	next := &dbInfo{name: prev.name, tables: prev.tables, views: prev.views, triggers: prev.triggers, procs: prev.procs, events: prev.events}
	if collation != sql.Collation_Default {
		next.collation = collation.Name()
	}
	d.eng.dbs[key] = next
	d.eng.catMu.Unlock()
	t.onUndo(func() {
		d.eng.catMu.Lock()
		if cur := d.eng.dbs[key]; cur != nil {
			cur.collation = prev.collation
		}
		d.eng.catMu.Unlock()
	})
	return t.put(wtx.Bucket(bucketDBs), bucketDBs, []byte(key), next.encode())
}

func (d *database) GetTableInsensitive(ctx *sql.Context, name string) (sql.Table, bool, error) {
	ti := d.eng.lookupTable(d.name, name)
	if ti == nil {
		return nil, false, nil
	}
	return &Table{eng: d.eng, ti: ti}, true, nil
}

func (d *database) GetTableNames(ctx *sql.Context) ([]string, error) {
	d.eng.catMu.RLock()
	defer d.eng.catMu.RUnlock()
	db, ok := d.eng.dbs[strings.ToLower(d.name)]
	if !ok {
		return nil, nil
	}
	names := make([]string, 0, len(db.tables))
	for _, ti := range db.tables {
		names = append(names, ti.def.Name)
	}
	sort.Strings(names)
	return names, nil
}

func (d *database) CreateTable(ctx *sql.Context, name string, schema sql.PrimaryKeySchema, collation sql.CollationID, comment string) error {
	if d.eng.lookupTable(d.name, name) != nil {
		return sql.ErrTableAlreadyExists.New(name)
	}
	t, err := txnOf(ctx)
	if err != nil {
		return err
	}
	wtx, err := t.writeTx(ctx)
	if err != nil {
		return err
	}
	if d.eng.lookupTable(d.name, name) != nil { // created while we waited for the writer
		return sql.ErrTableAlreadyExists.New(name)
	}
	meta := wtx.Bucket(bucketMeta)
	id, err := meta.NextSequence()
	if err != nil {
		return err
	}
	def, err := defFromSchema(id, name, schema, collation, comment)
	if err != nil {
		return err
	}
	ti, err := compile(d.name, def)
	if err != nil {
		return err
	}
	if err := t.saveDef(ti); err != nil {
		return err
	}
	if _, err := t.createBucket(ti.dataBucket); err != nil {
		return err
	}
	d.eng.swapTable(t, d.name, name, ti)
	return nil
}

func (d *database) DropTable(ctx *sql.Context, name string) error {
	ti := d.eng.lookupTable(d.name, name)
	if ti == nil {
		return sql.ErrTableNotFound.New(name)
	}
	t, err := txnOf(ctx)
	if err != nil {
		return err
	}
	wtx, err := t.writeTx(ctx)
	if err != nil {
		return err
	}
	if err := t.del(wtx.Bucket(bucketSchema), bucketSchema, schemaKey(d.name, name)); err != nil {
		return err
	}
	if err := t.del(wtx.Bucket(bucketAutoInc), bucketAutoInc, u64key(ti.def.ID)); err != nil {
		return err
	}
	t.dropAtCommit(ti.dataBucket)
	for _, ix := range ti.indexes {
		t.dropAtCommit(ix.bucket)
	}
	d.eng.swapTable(t, d.name, name, nil)
	return nil
}

// saveDef persists ti's definition in this transaction.
func (t *txn) saveDef(ti *tableInfo) error {
	b, err := marshalDef(ti.def)
	if err != nil {
		return err
	}
	return t.put(t.wtx.Bucket(bucketSchema), bucketSchema, schemaKey(ti.db, ti.def.Name), b)
}

func (e *Engine) lookupTable(db, name string) *tableInfo {
	e.catMu.RLock()
	defer e.catMu.RUnlock()
	d, ok := e.dbs[strings.ToLower(db)]
	if !ok {
		return nil
	}
	return d.tables[strings.ToLower(name)]
}

// swapTable replaces (or with ti nil removes) a table in the catalog, undoably.
func (e *Engine) swapTable(t *txn, db, name string, ti *tableInfo) {
	key := strings.ToLower(name)
	e.catMu.Lock()
	d := e.dbs[strings.ToLower(db)]
	prev := d.tables[key]
	e.foreignKeys.Add(int64(fkCount(ti) - fkCount(prev)))
	if ti == nil {
		delete(d.tables, key)
	} else {
		d.tables[key] = ti
	}
	e.catMu.Unlock()
	t.onUndo(func() {
		e.catMu.Lock()
		e.foreignKeys.Add(int64(fkCount(prev) - fkCount(ti)))
		if prev == nil {
			delete(d.tables, key)
		} else {
			d.tables[key] = prev
		}
		e.catMu.Unlock()
	})
}

func txnOf(ctx *sql.Context) (*txn, error) {
	t, _, err := statementTxn(ctx)
	return t, err
}

// statementTxn is txnOf, and whether the statement is nested in another
// one of the transaction (see nestedTxn).
func statementTxn(ctx *sql.Context) (*txn, bool, error) {
	switch t := ctx.GetTransaction().(type) {
	case *txn:
		if t != nil {
			return t, false, nil
		}
	case *nestedTxn:
		if t != nil {
			return t.t, true, nil
		}
	}
	return nil, false, errNoTxn
}
