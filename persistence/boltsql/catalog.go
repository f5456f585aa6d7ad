package boltsql

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/planbuilder"
)

// The persisted description of a table: what CREATE TABLE said, in the
// engine's own textual forms (type strings, default expressions), so a reopen
// rebuilds the same sql.Schema.
type tableDef struct {
	ID        uint64      `json:"id"`
	Name      string      `json:"name"`
	Columns   []columnDef `json:"columns"`
	PK        []int       `json:"pk"` // ordinals into Columns; empty means a hidden row id
	Indexes   []indexDef  `json:"indexes,omitempty"`
	Collation string      `json:"collation,omitempty"`
	Comment   string      `json:"comment,omitempty"`
	NextIdx   uint64      `json:"next_idx"`
	Checks    []checkDef  `json:"checks,omitempty"`
	// ForeignKeys are the foreign keys this table declares (it is their
	// child), as go-mysql-server describes them; the engine checks and
	// cascades them through GetForeignKeyEditor.
	ForeignKeys []sql.ForeignKeyConstraint `json:"foreign_keys,omitempty"`
}

// checkDef is a CHECK constraint as go-mysql-server serializes it; the
// engine parses and enforces it.
type checkDef struct {
	Name     string `json:"name"`
	Expr     string `json:"expr"`
	Enforced bool   `json:"enforced"`
}

type columnDef struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Nullable bool    `json:"nullable"`
	AutoInc  bool    `json:"auto_increment,omitempty"`
	Default  *string `json:"default,omitempty"`
	OnUpdate *string `json:"on_update,omitempty"`
	Comment  string  `json:"comment,omitempty"`
	Extra    string  `json:"extra,omitempty"`
	// Generated is a generated column's expression, without table names
	// (the table may be renamed); Virtual says it is not stored (see
	// generated.go).
	Generated *string `json:"generated,omitempty"`
	Virtual   bool    `json:"virtual,omitempty"`
}

type indexDef struct {
	ID      uint64   `json:"id"`
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	// Prefix, aligned with Columns when present, is each column's prefix
	// length (KEY (c(10))): the characters of a string column, the bytes
	// of a binary one, that its keys hold; 0 keys the whole value.
	Prefix  []uint16 `json:"prefix,omitempty"`
	Unique  bool     `json:"unique"`
	Comment string   `json:"comment,omitempty"`
	// Vector marks a VECTOR index, Spatial a SPATIAL one: kept in the
	// definition (SHOW CREATE TABLE and information_schema list it) but
	// never keyed nor used for lookups (queries scan the table); it has no
	// bucket.
	Vector  bool `json:"vector,omitempty"`
	Spatial bool `json:"spatial,omitempty"`
}

// unkeyed reports whether the index has no keys (see Vector).
func (d indexDef) unkeyed() bool { return d.Vector || d.Spatial }

// tableInfo is a compiled, immutable tableDef: a schema change builds a new one.
type tableInfo struct {
	db         string
	def        tableDef
	schema     sql.PrimaryKeySchema
	pkKinds    []keyKind
	autoIncCol int // -1 when none
	dataBucket []byte
	primary    *indexInfo   // nil for a table without a primary key
	indexes    []*indexInfo // secondary indexes
	unkeyed    []*indexInfo // VECTOR and SPATIAL indexes (see indexDef.Vector): listed, never written nor read
	generated  bool         // some column is generated: the engine computes it (the insert fast path steps aside)
	enumOrSet  bool         // some column is an ENUM or SET: stored as numbers, shown as strings
}

type indexInfo struct {
	tbl     *tableInfo
	def     indexDef
	primary bool
	cols    []int
	kinds   []keyKind
	lens    []uint16 // prefix lengths (see indexDef.Prefix); nil when no column has one
	bucket  []byte
	// exprs, typs and fields describe the indexed columns and then, for
	// a secondary index of a table with a primary key, the primary-key
	// columns it lacks (MySQL's extended index: every key ends with the
	// primary key): the first len(cols) are the index's own.
	exprs  []string
	typs   []sql.ColumnExpressionType
	fields []sql.Expression // on a full row
}

func dataBucketName(id uint64) []byte { return []byte(fmt.Sprintf("d%d", id)) }
func indexBucketName(table, idx uint64) []byte {
	return []byte(fmt.Sprintf("x%d.%d", table, idx))
}

func schemaKey(db, table string) []byte {
	return []byte(strings.ToLower(db) + "\x00" + strings.ToLower(table))
}

// defFromSchema builds the persisted form of a new table.
func defFromSchema(id uint64, name string, s sql.PrimaryKeySchema, collation sql.CollationID, comment string) (tableDef, error) {
	def := tableDef{ID: id, Name: name, PK: append([]int{}, s.PkOrdinals...), Comment: comment, NextIdx: 1}
	if collation != sql.Collation_Unspecified {
		def.Collation = collation.Name()
	}
	for _, c := range s.Schema {
		cd, err := columnDefOf(c)
		if err != nil {
			return tableDef{}, err
		}
		def.Columns = append(def.Columns, cd)
	}
	return def, nil
}

// typeString is the persisted form of a column type. A type with a
// collation names it (and its character set) even when it is the default,
// which String() leaves out: re-parsed without it, the type's collation is
// unspecified, and go-mysql-server's LIKE is false and COLLATE an error on
// such a column. A spatial type names the SRID it was declared with, which
// String() leaves out too (SHOW CREATE TABLE lost it, and every value was
// then accepted whatever its SRID).
func typeString(t sql.Type) string {
	if tc, ok := t.(sql.TypeWithCollation); ok {
		return tc.StringWithTableCollation(sql.Collation_Unspecified)
	}
	if st, ok := t.(sql.SpatialColumnType); ok {
		if srid, defined := st.GetSpatialTypeSRID(); defined {
			return fmt.Sprintf("%s SRID %d", t.String(), srid)
		}
	}
	return t.String()
}

// withCollation gives a re-parsed type whose collation is unspecified (a
// definition written before typeString named it) the table's collation,
// which is what the column had when it was created.
func withCollation(t sql.Type, table sql.CollationID) (sql.Type, error) {
	tc, ok := t.(sql.TypeWithCollation)
	if !ok || tc.Collation() != sql.Collation_Unspecified {
		return t, nil
	}
	return tc.WithNewCollation(table)
}

// compile turns a tableDef into the schema and key layout the engine uses.
func compile(db string, def tableDef) (*tableInfo, error) {
	ti := &tableInfo{db: db, def: def, autoIncCol: -1, dataBucket: dataBucketName(def.ID)}
	sch := make(sql.Schema, len(def.Columns))
	tableColl := sql.Collation_Default
	if def.Collation != "" {
		c, err := sql.ParseCollation("", def.Collation, false)
		if err != nil {
			return nil, fmt.Errorf("table %s: collation %q: %w", def.Name, def.Collation, err)
		}
		tableColl = c
	}
	for i, cd := range def.Columns {
		typ, err := planbuilder.ParseColumnTypeString(cd.Type)
		if err == nil {
			typ, err = withCollation(typ, tableColl)
		}
		if err != nil {
			return nil, fmt.Errorf("table %s column %s: type %q: %w", def.Name, cd.Name, cd.Type, err)
		}
		col := &sql.Column{Name: cd.Name, Type: typ, Nullable: cd.Nullable, AutoIncrement: cd.AutoInc,
			Source: def.Name, DatabaseSource: db, Comment: cd.Comment, Extra: cd.Extra}
		if cd.Default != nil {
			col.Default = sql.NewUnresolvedColumnDefaultValue(*cd.Default)
		}
		if cd.OnUpdate != nil {
			col.OnUpdate = sql.NewUnresolvedColumnDefaultValue(*cd.OnUpdate)
		}
		if cd.Generated != nil {
			col.Generated = sql.NewUnresolvedColumnDefaultValue(*cd.Generated)
			col.Virtual = cd.Virtual
			ti.generated = true
		}
		if cd.AutoInc {
			ti.autoIncCol = i
		}
		ti.enumOrSet = ti.enumOrSet || isEnumOrSet(typ)
		sch[i] = col
	}
	for _, ord := range def.PK {
		if ord < 0 || ord >= len(sch) {
			return nil, fmt.Errorf("table %s: primary key ordinal %d out of range", def.Name, ord)
		}
		sch[ord].PrimaryKey = true
	}
	ti.schema = sql.NewPrimaryKeySchema(sch, def.PK...)
	for _, ord := range def.PK {
		k, err := keyKindOf(sch[ord].Name, sch[ord].Type)
		if err != nil {
			return nil, fmt.Errorf("table %s primary key: %w", def.Name, err)
		}
		ti.pkKinds = append(ti.pkKinds, k)
	}
	if len(def.PK) > 0 {
		ti.primary = ti.newIndex(indexDef{Name: "PRIMARY", Unique: true}, def.PK, ti.pkKinds, ti.dataBucket)
		ti.primary.primary = true
	}
	for _, idef := range def.Indexes {
		cols := make([]int, len(idef.Columns))
		if idef.unkeyed() {
			for i, cn := range idef.Columns {
				if cols[i] = sch.IndexOfColName(cn); cols[i] < 0 {
					return nil, fmt.Errorf("table %s index %s: no column %s", def.Name, idef.Name, cn)
				}
			}
			ti.unkeyed = append(ti.unkeyed, ti.newIndex(idef, cols, nil, nil))
			continue
		}
		kinds := make([]keyKind, len(idef.Columns))
		if len(idef.Prefix) != 0 && len(idef.Prefix) != len(idef.Columns) {
			return nil, fmt.Errorf("table %s index %s: %d prefix lengths for %d columns", def.Name, idef.Name, len(idef.Prefix), len(idef.Columns))
		}
		for i, cn := range idef.Columns {
			ord := sch.IndexOfColName(cn)
			if ord < 0 {
				return nil, fmt.Errorf("table %s index %s: no column %s", def.Name, idef.Name, cn)
			}
			k, err := keyKindOf(cn, sch[ord].Type)
			if err != nil {
				return nil, fmt.Errorf("table %s index %s: %w", def.Name, idef.Name, err)
			}
			if len(idef.Prefix) > 0 {
				if err := checkPrefix(cn, sch[ord].Type, k, idef.Prefix[i]); err != nil {
					return nil, fmt.Errorf("table %s index %s: %w", def.Name, idef.Name, err)
				}
			}
			cols[i], kinds[i] = ord, k
		}
		ix := ti.newIndex(idef, cols, kinds, indexBucketName(def.ID, idef.ID))
		for _, n := range idef.Prefix {
			if n > 0 {
				ix.lens = idef.Prefix
				break
			}
		}
		ti.indexes = append(ti.indexes, ix)
	}
	return ti, nil
}

// checkPrefix refuses a prefix length (n > 0) on a column that is not a
// string or binary string, or longer than the column.
func checkPrefix(col string, typ sql.Type, kind keyKind, n uint16) error {
	if n == 0 {
		return nil
	}
	st, ok := typ.(sql.StringType)
	if b := kind.base(); !ok || (b != keyText && b != keyBytes && b != keyCollated) {
		return fmt.Errorf("column %s: a prefix length is only for string and binary columns", col)
	}
	if int64(n) > st.MaxCharacterLength() {
		return fmt.Errorf("column %s: prefix length %d is longer than the column (%d)", col, n, st.MaxCharacterLength())
	}
	return nil
}

func (ti *tableInfo) newIndex(def indexDef, cols []int, kinds []keyKind, bucket []byte) *indexInfo {
	ix := &indexInfo{tbl: ti, def: def, cols: cols, kinds: kinds, bucket: bucket}
	ext := cols
	if ti.primary != nil && kinds != nil {
		ext = slices.Clip(cols)
		for _, ord := range ti.primary.cols {
			if !slices.Contains(cols, ord) {
				ext = append(ext, ord)
			}
		}
	}
	for _, ord := range ext {
		c := ti.schema.Schema[ord]
		gf := expression.NewGetFieldWithTable(ord, 0, c.Type, ti.db, ti.def.Name, c.Name, c.Nullable)
		ix.fields = append(ix.fields, gf)
		ix.exprs = append(ix.exprs, gf.String())
		ix.typs = append(ix.typs, sql.ColumnExpressionType{Expression: gf.String(), Type: c.Type})
	}
	return ix
}

func (ti *tableInfo) hiddenPK() bool { return ti.primary == nil }

func marshalDef(def tableDef) ([]byte, error) { return json.Marshal(def) }

func unmarshalDef(b []byte) (tableDef, error) {
	var def tableDef
	err := json.Unmarshal(b, &def)
	return def, err
}

// keyOf encodes the values of cols in row as a key, each cut to its prefix
// length when lens has one (nil: whole values).
func keyOf(dst []byte, row sql.Row, cols []int, kinds []keyKind, lens []uint16) ([]byte, bool, error) {
	if dst == nil {
		dst = keyBuf(row, cols, 0)
	}
	hasNull := false
	for i, ord := range cols {
		v := row[ord]
		if v == nil {
			hasNull = true
		}
		if lens != nil && lens[i] > 0 && v != nil {
			v = cutToPrefix(kinds[i], v, lens[i])
		}
		var err error
		dst, err = appendKeyValue(dst, kinds[i], v)
		if err != nil {
			return nil, false, err
		}
	}
	return dst, hasNull, nil
}

// keyBuf is an empty buffer with room for the key of row's cols (escaped
// zero bytes aside) and extra bytes: an index key is followed by the
// primary key.
func keyBuf(row sql.Row, cols []int, extra int) []byte {
	n := extra
	for _, ord := range cols {
		switch x := row[ord].(type) {
		case string:
			n += 3 + len(x)
		case []byte:
			n += 3 + len(x)
		default:
			n += 13
		}
	}
	return make([]byte, 0, n)
}

// keyString renders key values the way duplicate-key messages show them.
func keyString(row sql.Row, cols []int) string {
	parts := make([]string, len(cols))
	for i, ord := range cols {
		parts[i] = fmt.Sprint(row[ord])
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// isEnumOrSet says whether t's values are stored as numbers (an ENUM's
// index, a SET's bits) that a client is shown as strings.
func isEnumOrSet(t sql.Type) bool {
	switch t.(type) {
	case sql.EnumType, sql.SetType:
		return true
	}
	return false
}
