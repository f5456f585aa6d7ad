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
	routineEvent   = "e" // events.go
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
		case routineEvent:
			var ed sql.EventDefinition
			if err := json.Unmarshal(v, &ed); err != nil {
				return fmt.Errorf("event %q: %w", k, err)
			}
			d.setRoutine(routineEvent, parts[2], ed)
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
	t, wtx, err := d.routineTx(ctx)
	if err != nil {
		return err
	}
	key := strings.ToLower(name)
	d.eng.catMu.RLock()
	info := d.info()
	exists := false
	if info != nil {
		_, exists = info.routine(kind, key)
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
	if !create {
		def = nil
	}
	return d.setRoutine(t, wtx, kind, name, def)
}

// routineTx is the statement's transaction and its bbolt write transaction.
func (d *database) routineTx(ctx *sql.Context) (*txn, *bolt.Tx, error) {
	t, err := txnOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	wtx, err := t.writeTx(ctx)
	return t, wtx, err
}

// setRoutine stores def as the routine kind/name, or drops it (def nil),
// in the routines bucket and the catalog, undoably. The caller checked
// that it exists, or not, as the statement needs.
func (d *database) setRoutine(t *txn, wtx *bolt.Tx, kind, name string, def any) error {
	b := wtx.Bucket(bucketRoutine)
	rk := routineKey(kind, d.name, name)
	if def != nil {
		v, err := json.Marshal(def)
		if err != nil {
			return err
		}
		if err := t.put(b, bucketRoutine, rk, v); err != nil {
			return err
		}
	} else if err := t.del(b, bucketRoutine, rk); err != nil {
		return err
	}
	key := strings.ToLower(name)
	set := func(v any) (prev any, had bool) {
		d.eng.catMu.Lock()
		defer d.eng.catMu.Unlock()
		info := d.info()
		if info == nil {
			return nil, false
		}
		prev, had = info.setRoutine(kind, key, v)
		if kind == routineTrigger && had != (v != nil) {
			if had {
				d.eng.triggers.Add(-1)
			} else {
				d.eng.triggers.Add(1)
			}
		}
		return prev, had
	}
	prev, had := set(def)
	t.onUndo(func() {
		if had {
			set(prev)
		} else {
			set(nil)
		}
	})
	return nil
}

// routine is the catalog's routine kind/key (lower-case name).
func (info *dbInfo) routine(kind, key string) (any, bool) {
	var v any
	var ok bool
	switch kind {
	case routineTrigger:
		v, ok = info.triggers[key]
	case routineProc:
		v, ok = info.procs[key]
	case routineEvent:
		v, ok = info.events[key]
	}
	return v, ok
}

// setRoutine puts v as the routine kind/key in the catalog (nil: removes
// it) and returns what was there.
func (info *dbInfo) setRoutine(kind, key string, v any) (prev any, had bool) {
	prev, had = info.routine(kind, key)
	switch kind {
	case routineTrigger:
		if v == nil {
			delete(info.triggers, key)
		} else {
			if info.triggers == nil {
				info.triggers = map[string]sql.TriggerDefinition{}
			}
			info.triggers[key] = v.(sql.TriggerDefinition)
		}
	case routineProc:
		if v == nil {
			delete(info.procs, key)
		} else {
			if info.procs == nil {
				info.procs = map[string]sql.StoredProcedureDetails{}
			}
			info.procs[key] = v.(sql.StoredProcedureDetails)
		}
	case routineEvent:
		if v == nil {
			delete(info.events, key)
		} else {
			if info.events == nil {
				info.events = map[string]sql.EventDefinition{}
			}
			info.events[key] = v.(sql.EventDefinition)
		}
	}
	return prev, had
}
