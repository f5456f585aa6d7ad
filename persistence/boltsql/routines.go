package boltsql

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	bolt "go.etcd.io/bbolt"
)

// Triggers (sql.TriggerDatabase) and stored procedures
// (sql.StoredProcedureDatabase) are stored in the routines bucket and held
// in the catalog; go-mysql-server parses and runs them. It asks for a
// database's triggers on every data-changing statement, so that is a map
// read. Before, CREATE TRIGGER and CREATE PROCEDURE were refused.

var (
	_ sql.TriggerDatabase         = (*database)(nil)
	_ sql.StoredProcedureDatabase = (*database)(nil)
)

const (
	routineTrigger = "t"
	routineProc    = "p"
)

func routineKey(kind, db, name string) []byte {
	return []byte(kind + "\x00" + strings.ToLower(db) + "\x00" + strings.ToLower(name))
}

func (e *Engine) loadRoutines(tx *bolt.Tx, dbs map[string]*dbInfo) error {
	b := tx.Bucket(bucketRoutine)
	if b == nil {
		return nil
	}
	var triggers int64
	err := b.ForEach(func(k, v []byte) error {
		parts := strings.SplitN(string(k), "\x00", 3)
		if len(parts) != 3 || dbs[parts[1]] == nil {
			return fmt.Errorf("routine entry %q has no database", k)
		}
		d := dbs[parts[1]]
		switch parts[0] {
		case routineTrigger:
			var td sql.TriggerDefinition
			if err := json.Unmarshal(v, &td); err != nil {
				return fmt.Errorf("trigger %q: %w", k, err)
			}
			if d.triggers == nil {
				d.triggers = map[string]sql.TriggerDefinition{}
			}
			d.triggers[parts[2]] = td
			triggers++
		case routineProc:
			var pd sql.StoredProcedureDetails
			if err := json.Unmarshal(v, &pd); err != nil {
				return fmt.Errorf("procedure %q: %w", k, err)
			}
			if d.procs == nil {
				d.procs = map[string]sql.StoredProcedureDetails{}
			}
			d.procs[parts[2]] = pd
		default:
			return fmt.Errorf("routine entry %q of unknown kind", k)
		}
		return nil
	})
	e.triggers.Store(triggers)
	return err
}

func (d *database) GetTriggers(ctx *sql.Context) ([]sql.TriggerDefinition, error) {
	d.eng.catMu.RLock()
	defer d.eng.catMu.RUnlock()
	info := d.info()
	if info == nil || len(info.triggers) == 0 {
		return nil, nil
	}
	out := make([]sql.TriggerDefinition, 0, len(info.triggers))
	for _, td := range info.triggers {
		out = append(out, td)
	}
	// Creation order: go-mysql-server orders FOLLOWS/PRECEDES from it.
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func (d *database) CreateTrigger(ctx *sql.Context, def sql.TriggerDefinition) error {
	return d.changeRoutine(ctx, routineTrigger, def.Name, def, true)
}

func (d *database) DropTrigger(ctx *sql.Context, name string) error {
	return d.changeRoutine(ctx, routineTrigger, name, nil, false)
}

func (d *database) GetStoredProcedure(ctx *sql.Context, name string) (sql.StoredProcedureDetails, bool, error) {
	d.eng.catMu.RLock()
	defer d.eng.catMu.RUnlock()
	info := d.info()
	if info == nil || len(info.procs) == 0 {
		return sql.StoredProcedureDetails{}, false, nil
	}
	pd, ok := info.procs[strings.ToLower(name)]
	return pd, ok, nil
}

func (d *database) GetStoredProcedures(ctx *sql.Context) ([]sql.StoredProcedureDetails, error) {
	d.eng.catMu.RLock()
	defer d.eng.catMu.RUnlock()
	info := d.info()
	if info == nil {
		return nil, nil
	}
	out := make([]sql.StoredProcedureDetails, 0, len(info.procs))
	for _, pd := range info.procs {
		out = append(out, pd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (d *database) SaveStoredProcedure(ctx *sql.Context, spd sql.StoredProcedureDetails) error {
	return d.changeRoutine(ctx, routineProc, spd.Name, spd, true)
}

func (d *database) DropStoredProcedure(ctx *sql.Context, name string) error {
	return d.changeRoutine(ctx, routineProc, name, nil, false)
}

// changeRoutine stores def as the routine kind/name (create), or drops it
// (def nil), undoably.
func (d *database) changeRoutine(ctx *sql.Context, kind, name string, def any, create bool) error {
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
	exists := false
	var prev any
	if info != nil {
		if kind == routineTrigger {
			prev, exists = info.triggers[key]
		} else {
			prev, exists = info.procs[key]
		}
	}
	d.eng.catMu.RUnlock()
	switch {
	case info == nil:
		return sql.ErrDatabaseNotFound.New(d.name)
	case create && exists && kind == routineTrigger:
		return sql.ErrTriggerCreateStatementInvalid.New(fmt.Sprintf("trigger %s already exists", name))
	case create && exists:
		return sql.ErrStoredProcedureAlreadyExists.New(name)
	case !create && !exists && kind == routineTrigger:
		return sql.ErrTriggerDoesNotExist.New(name)
	case !create && !exists:
		return sql.ErrStoredProcedureDoesNotExist.New(name)
	}
	b := wtx.Bucket(bucketRoutine)
	rk := routineKey(kind, d.name, name)
	if create {
		v, err := json.Marshal(def)
		if err != nil {
			return err
		}
		err = t.put(b, bucketRoutine, rk, v)
		if err != nil {
			return err
		}
	} else if err := t.del(b, bucketRoutine, rk); err != nil {
		return err
	}
	set := func(v any) {
		d.eng.catMu.Lock()
		defer d.eng.catMu.Unlock()
		info := d.info()
		if info == nil {
			return
		}
		switch kind {
		case routineTrigger:
			_, had := info.triggers[key]
			if v == nil {
				delete(info.triggers, key)
				if had {
					d.eng.triggers.Add(-1)
				}
				return
			}
			if info.triggers == nil {
				info.triggers = map[string]sql.TriggerDefinition{}
			}
			info.triggers[key] = v.(sql.TriggerDefinition)
			if !had {
				d.eng.triggers.Add(1)
			}
		default:
			if v == nil {
				delete(info.procs, key)
				return
			}
			if info.procs == nil {
				info.procs = map[string]sql.StoredProcedureDetails{}
			}
			info.procs[key] = v.(sql.StoredProcedureDetails)
		}
	}
	if create {
		set(def)
	} else {
		set(nil)
	}
	t.onUndo(func() {
		if exists {
			set(prev)
		} else {
			set(nil)
		}
	})
	return nil
}
