package boltsql

import (
	"sort"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
)

// Events (sql.EventDatabase): CREATE/ALTER/DROP EVENT definitions are kept
// in the routines bucket beside triggers and procedures (routines.go) and
// in the catalog, undone with their statement and kept across a reopen.
// go-mysql-server parses them, shows them and, when an event scheduler is
// running, runs them; a definition changes only through these methods, so
// there is nothing to reload out of band. Before, CREATE EVENT was refused.

var _ sql.EventDatabase = (*database)(nil)

func (d *database) GetEvent(ctx *sql.Context, name string) (sql.EventDefinition, bool, error) {
	d.eng.catMu.RLock()
	defer d.eng.catMu.RUnlock()
	info := d.info()
	if info == nil || len(info.events) == 0 {
		return sql.EventDefinition{}, false, nil
	}
	ed, ok := info.events[strings.ToLower(name)]
	return ed, ok, nil
}

// GetEvents lists the events in creation order, as the memory engine
// does (SHOW EVENTS prints them so).
func (d *database) GetEvents(ctx *sql.Context) ([]sql.EventDefinition, interface{}, error) {
	d.eng.catMu.RLock()
	defer d.eng.catMu.RUnlock()
	info := d.info()
	if info == nil || len(info.events) == 0 {
		return nil, nil, nil
	}
	out := make([]sql.EventDefinition, 0, len(info.events))
	for _, ed := range info.events {
		out = append(out, ed)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return strings.ToLower(out[i].Name) < strings.ToLower(out[j].Name)
	})
	return out, nil, nil
}

func (d *database) SaveEvent(ctx *sql.Context, ed sql.EventDefinition) (bool, error) {
	t, wtx, err := d.routineTx(ctx)
	if err != nil {
		return false, err
	}
	if _, ok, err := d.GetEvent(ctx, ed.Name); err != nil {
		return false, err
	} else if ok {
		return false, sql.ErrEventAlreadyExists.New(ed.Name)
	}
	if err := d.setRoutine(t, wtx, routineEvent, ed.Name, ed); err != nil {
		return false, err
	}
	return ed.Status == sql.EventStatus_Enable.String(), nil
}

func (d *database) DropEvent(ctx *sql.Context, name string) error {
	t, wtx, err := d.routineTx(ctx)
	if err != nil {
		return err
	}
	if _, ok, err := d.GetEvent(ctx, name); err != nil {
		return err
	} else if !ok {
		return sql.ErrEventDoesNotExist.New(name)
	}
	return d.setRoutine(t, wtx, routineEvent, name, nil)
}

// UpdateEvent replaces the event originalName by ed, which may rename it.
func (d *database) UpdateEvent(ctx *sql.Context, originalName string, ed sql.EventDefinition) (bool, error) {
	t, wtx, err := d.routineTx(ctx)
	if err != nil {
		return false, err
	}
	if _, ok, err := d.GetEvent(ctx, originalName); err != nil {
		return false, err
	} else if !ok {
		return false, sql.ErrEventDoesNotExist.New(ed.Name)
	}
	if !strings.EqualFold(originalName, ed.Name) {
		if _, ok, err := d.GetEvent(ctx, ed.Name); err != nil {
			return false, err
		} else if ok {
			return false, sql.ErrEventAlreadyExists.New(strings.ToLower(ed.Name))
		}
		if err := d.setRoutine(t, wtx, routineEvent, originalName, nil); err != nil {
			return false, err
		}
	}
	if err := d.setRoutine(t, wtx, routineEvent, ed.Name, ed); err != nil {
		return false, err
	}
	return ed.Status == sql.EventStatus_Enable.String(), nil
}

// UpdateLastExecuted records when the scheduler last ran the event.
func (d *database) UpdateLastExecuted(ctx *sql.Context, name string, lastExecuted time.Time) error {
	t, wtx, err := d.routineTx(ctx)
	if err != nil {
		return err
	}
	ed, ok, err := d.GetEvent(ctx, name)
	if err != nil {
		return err
	} else if !ok {
		return sql.ErrEventDoesNotExist.New(name)
	}
	ed.LastExecuted = lastExecuted.UTC()
	return d.setRoutine(t, wtx, routineEvent, ed.Name, ed)
}

// NeedsToReloadEvents is false: events change only through this database.
func (d *database) NeedsToReloadEvents(ctx *sql.Context, token interface{}) (bool, error) {
	return false, nil
}
