package boltsql

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	bolt "go.etcd.io/bbolt"
)

// Views (sql.ViewDatabase) are stored in the views bucket and live in the
// catalog, like tables: every connection sees them, and they outlive the
// engine. Before, go-mysql-server kept them in the creating session only.
// go-mysql-server asks for a view before every table it resolves, so the
// lookup is a map read.

var _ sql.ViewDatabase = (*database)(nil)

type viewDef struct {
	Name      string `json:"name"`
	Text      string `json:"text"`
	CreateSQL string `json:"create"`
	SQLMode   string `json:"sql_mode,omitempty"`
}

func viewKey(db, name string) []byte {
	return []byte(strings.ToLower(db) + "\x00" + strings.ToLower(name))
}

func loadViews(tx *bolt.Tx, dbs map[string]*dbInfo) error {
	b := tx.Bucket(bucketViews)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		dbName, _, ok := strings.Cut(string(k), "\x00")
		d := dbs[dbName]
		if !ok || d == nil {
			return fmt.Errorf("view entry %q has no database", k)
		}
		var vd viewDef
		if err := json.Unmarshal(v, &vd); err != nil {
			return fmt.Errorf("view %q: %w", k, err)
		}
		if d.views == nil {
			d.views = map[string]sql.ViewDefinition{}
		}
		d.views[strings.ToLower(vd.Name)] = vd.definition()
		return nil
	})
}

func (vd viewDef) definition() sql.ViewDefinition {
	return sql.ViewDefinition{Name: vd.Name, TextDefinition: vd.Text, CreateViewStatement: vd.CreateSQL, SqlMode: vd.SQLMode}
}

func (d *database) info() *dbInfo {
	return d.eng.dbs[strings.ToLower(d.name)]
}

func (d *database) GetViewDefinition(ctx *sql.Context, name string) (sql.ViewDefinition, bool, error) {
	d.eng.catMu.RLock()
	defer d.eng.catMu.RUnlock()
	info := d.info()
	if info == nil || len(info.views) == 0 {
		return sql.ViewDefinition{}, false, nil
	}
	vd, ok := info.views[strings.ToLower(name)]
	return vd, ok, nil
}

func (d *database) AllViews(ctx *sql.Context) ([]sql.ViewDefinition, error) {
	d.eng.catMu.RLock()
	defer d.eng.catMu.RUnlock()
	info := d.info()
	if info == nil {
		return nil, nil
	}
	out := make([]sql.ViewDefinition, 0, len(info.views))
	for _, vd := range info.views {
		out = append(out, vd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (d *database) CreateView(ctx *sql.Context, name string, selectStatement, createViewStmt string) error {
	mode, _ := ctx.GetSessionVariable(ctx, "sql_mode")
	modeStr, _ := mode.(string)
	vd := viewDef{Name: name, Text: selectStatement, CreateSQL: createViewStmt, SQLMode: modeStr}
	return d.changeView(ctx, name, &vd)
}

func (d *database) DropView(ctx *sql.Context, name string) error {
	return d.changeView(ctx, name, nil)
}

// changeView stores vd as view name (nil: drops it), undoably.
func (d *database) changeView(ctx *sql.Context, name string, vd *viewDef) error {
	t, err := txnOf(ctx)
	if err != nil {
		return err
	}
	wtx, err := t.writeTx(ctx)
	if err != nil {
		return err
	}
	key := strings.ToLower(name)
	d.eng.catMu.RLock()
	info := d.info()
	var prev sql.ViewDefinition
	exists := false
	if info != nil {
		prev, exists = info.views[key]
	}
	_, isTable := info.tables[key]
	d.eng.catMu.RUnlock()
	switch {
	case info == nil:
		return sql.ErrDatabaseNotFound.New(d.name)
	case vd != nil && (exists || isTable):
		return sql.ErrExistingView.New(d.name, name)
	case vd == nil && !exists:
		return sql.ErrViewDoesNotExist.New(d.name, name)
	}
	b := wtx.Bucket(bucketViews)
	if vd == nil {
		err = t.del(b, bucketViews, viewKey(d.name, name))
	} else {
		var v []byte
		if v, err = json.Marshal(vd); err == nil {
			err = t.put(b, bucketViews, viewKey(d.name, name), v)
		}
	}
	if err != nil {
		return err
	}
	set := func(def *sql.ViewDefinition) {
		d.eng.catMu.Lock()
		defer d.eng.catMu.Unlock()
		info := d.info()
		if info == nil {
			return
		}
		if def == nil {
			delete(info.views, key)
			return
		}
		if info.views == nil {
			info.views = map[string]sql.ViewDefinition{}
		}
		info.views[key] = *def
	}
	if vd == nil {
		set(nil)
	} else {
		def := vd.definition()
		set(&def)
	}
	t.onUndo(func() {
		if exists {
			set(&prev)
		} else {
			set(nil)
		}
	})
	return nil
}
