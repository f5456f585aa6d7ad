package boltsql

import (
	"sort"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
)

// Foreign keys (sql.ForeignKeyTable). A foreign key lives in the definition
// of the table that declares it (its child), so it is written, undone and
// reopened with that definition. go-mysql-server does the checking and the
// cascading: it looks rows up through the editor GetForeignKeyEditor
// returns and writes through that same editor. Before, CREATE TABLE …
// FOREIGN KEY and ALTER TABLE … ADD FOREIGN KEY were refused.

var (
	_ sql.ForeignKeyTable  = (*Table)(nil)
	_ sql.ForeignKeyEditor = (*editor)(nil)
)

func fkCount(ti *tableInfo) int {
	if ti == nil {
		return 0
	}
	return len(ti.def.ForeignKeys)
}

// copyFK is fk with slices of its own: go-mysql-server edits the column
// lists of the constraints it is handed (column renames) before it hands
// them back through UpdateForeignKey.
func copyFK(fk sql.ForeignKeyConstraint) sql.ForeignKeyConstraint {
	fk.Columns = append([]string(nil), fk.Columns...)
	fk.ParentColumns = append([]string(nil), fk.ParentColumns...)
	return fk
}

// current is the table's definition as the catalog holds it now: a Table
// resolved earlier in the statement can be older than a foreign key change
// another Table value of the same table made (RENAME TABLE updates the
// keys of a self-referencing table through two of them).
func (t *Table) current() *tableInfo {
	if ti := t.eng.lookupTable(t.ti.db, t.ti.def.Name); ti != nil {
		return ti
	}
	return t.ti
}

func (t *Table) GetDeclaredForeignKeys(ctx *sql.Context) ([]sql.ForeignKeyConstraint, error) {
	ti := t.current()
	out := make([]sql.ForeignKeyConstraint, 0, len(ti.def.ForeignKeys))
	for _, fk := range ti.def.ForeignKeys {
		out = append(out, copyFK(fk))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (t *Table) GetReferencedForeignKeys(ctx *sql.Context) ([]sql.ForeignKeyConstraint, error) {
	return t.eng.referencing(t.ti.db, t.ti.def.Name), nil
}

// referencing is every foreign key, declared by any table of any database,
// whose parent is db.table (a self-reference included), by name.
func (e *Engine) referencing(db, table string) []sql.ForeignKeyConstraint {
	var out []sql.ForeignKeyConstraint
	if e.foreignKeys.Load() == 0 {
		return out
	}
	e.catMu.RLock()
	for _, d := range e.dbs {
		for _, ti := range d.tables {
			for _, fk := range ti.def.ForeignKeys {
				if strings.EqualFold(fk.ParentTable, table) && strings.EqualFold(parentDB(fk), db) {
					out = append(out, copyFK(fk))
				}
			}
		}
	}
	e.catMu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func parentDB(fk sql.ForeignKeyConstraint) string {
	if fk.ParentDatabase != "" {
		return fk.ParentDatabase
	}
	return fk.Database
}

// hasForeignKeys says whether writes to ti need go-mysql-server's foreign
// key checks or cascades: the fast paths step aside for such a table. O(1)
// while the catalog holds no foreign key at all.
func (e *Engine) hasForeignKeys(ti *tableInfo) bool {
	if e.foreignKeys.Load() == 0 {
		return false
	}
	return len(ti.def.ForeignKeys) > 0 || len(e.referencing(ti.db, ti.def.Name)) > 0
}

// fkNameTaken says whether a table of db other than the one being changed
// declares a foreign key named name: the names are unique per database.
func (e *Engine) fkNameTaken(db, except, name string) bool {
	e.catMu.RLock()
	defer e.catMu.RUnlock()
	d := e.dbs[strings.ToLower(db)]
	if d == nil {
		return false
	}
	for key, ti := range d.tables {
		if key == strings.ToLower(except) {
			continue
		}
		for _, fk := range ti.def.ForeignKeys {
			if strings.EqualFold(fk.Name, name) {
				return true
			}
		}
	}
	return false
}

func fkIndex(fks []sql.ForeignKeyConstraint, name string) int {
	for i, fk := range fks {
		if strings.EqualFold(fk.Name, name) {
			return i
		}
	}
	return -1
}

func (t *Table) AddForeignKey(ctx *sql.Context, fk sql.ForeignKeyConstraint) error {
	return t.alterDef(ctx, func(_ *tableInfo, nd *tableDef) error {
		if fkIndex(nd.ForeignKeys, fk.Name) >= 0 || t.eng.fkNameTaken(t.ti.db, nd.Name, fk.Name) {
			return sql.ErrForeignKeyDuplicateName.New(fk.Name)
		}
		nd.ForeignKeys = append(append([]sql.ForeignKeyConstraint{}, nd.ForeignKeys...), copyFK(fk))
		return nil
	})
}

func (t *Table) DropForeignKey(ctx *sql.Context, name string) error {
	return t.alterDef(ctx, func(_ *tableInfo, nd *tableDef) error {
		i := fkIndex(nd.ForeignKeys, name)
		if i < 0 {
			return sql.ErrForeignKeyNotFound.New(name, nd.Name)
		}
		nd.ForeignKeys = append(nd.ForeignKeys[:i:i], nd.ForeignKeys[i+1:]...)
		return nil
	})
}

func (t *Table) UpdateForeignKey(ctx *sql.Context, name string, fk sql.ForeignKeyConstraint) error {
	return t.alterDef(ctx, func(_ *tableInfo, nd *tableDef) error {
		fks := append([]sql.ForeignKeyConstraint{}, nd.ForeignKeys...)
		if i := fkIndex(fks, name); i >= 0 {
			fks = append(fks[:i], fks[i+1:]...)
		}
		if fkIndex(fks, fk.Name) >= 0 || t.eng.fkNameTaken(t.ti.db, nd.Name, fk.Name) {
			return sql.ErrForeignKeyDuplicateName.New(fk.Name)
		}
		nd.ForeignKeys = append(fks, copyFK(fk))
		return nil
	})
}

func (t *Table) SetForeignKeyResolved(ctx *sql.Context, name string) error {
	return t.alterDef(ctx, func(_ *tableInfo, nd *tableDef) error {
		i := fkIndex(nd.ForeignKeys, name)
		if i < 0 {
			return sql.ErrForeignKeyNotFound.New(name, nd.Name)
		}
		nd.ForeignKeys = append([]sql.ForeignKeyConstraint{}, nd.ForeignKeys...)
		nd.ForeignKeys[i].IsResolved = true
		return nil
	})
}

func (t *Table) CreateIndexForForeignKey(ctx *sql.Context, def sql.IndexDef) error {
	return t.CreateIndex(ctx, def)
}

func (t *Table) GetForeignKeyEditor(ctx *sql.Context) sql.ForeignKeyEditor {
	return t.editor(ctx)
}

// The editor is index-addressable for go-mysql-server's foreign key
// lookups: a child row's parent, a parent row's children. Those read the
// rows as they are now, this statement's own writes included (a row that
// references a row inserted earlier in the same INSERT, a cascade that
// follows another), not the statement's starting snapshot.

func (e *editor) IndexedAccess(ctx *sql.Context, lookup sql.IndexLookup) sql.IndexedTable {
	return &liveIndexedTable{IndexedTable{Table: e.t}}
}

func (e *editor) GetIndexes(ctx *sql.Context) ([]sql.Index, error) { return e.t.GetIndexes(ctx) }
func (e *editor) PreciseMatch() bool                               { return e.t.PreciseMatch() }

type liveIndexedTable struct {
	IndexedTable
}

func (t *liveIndexedTable) LookupPartitions(ctx *sql.Context, lookup sql.IndexLookup) (sql.PartitionIter, error) {
	l := lookup
	return sql.PartitionsToPartitionIter(&partition{lookup: &l, live: true}), nil
}
