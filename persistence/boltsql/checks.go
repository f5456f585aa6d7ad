package boltsql

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
)

// CHECK constraints (sql.CheckTable, sql.CheckAlterableTable) live in the
// table's definition; go-mysql-server parses them, checks existing rows
// when one is added, and enforces them on every write. Before, CREATE TABLE
// … CHECK and ALTER TABLE … ADD CHECK were refused.

var (
	_ sql.CheckTable          = (*Table)(nil)
	_ sql.CheckAlterableTable = (*Table)(nil)
)

func (t *Table) GetChecks(ctx *sql.Context) ([]sql.CheckDefinition, error) {
	out := make([]sql.CheckDefinition, len(t.ti.def.Checks))
	for i, c := range t.ti.def.Checks {
		out[i] = sql.CheckDefinition{Name: c.Name, CheckExpression: c.Expr, Enforced: c.Enforced}
	}
	return out, nil
}

func (t *Table) CreateCheck(ctx *sql.Context, check *sql.CheckDefinition) error {
	return t.alterDef(ctx, func(_ *tableInfo, nd *tableDef) error {
		name := check.Name
		if name == "" { // MySQL's name for an unnamed check
			for i := 1; name == "" || hasCheck(nd.Checks, name); i++ {
				name = fmt.Sprintf("%s_chk_%d", nd.Name, i)
			}
		}
		if hasCheck(nd.Checks, name) {
			return sql.ErrForeignKeyDuplicateName.New(name) // go-mysql-server's memory engine says this too
		}
		nd.Checks = append(append([]checkDef{}, nd.Checks...), checkDef{Name: name, Expr: check.CheckExpression, Enforced: check.Enforced})
		return nil
	})
}

func hasCheck(checks []checkDef, name string) bool {
	for _, c := range checks {
		if strings.EqualFold(c.Name, name) {
			return true
		}
	}
	return false
}

func (t *Table) DropCheck(ctx *sql.Context, name string) error {
	return t.alterDef(ctx, func(_ *tableInfo, nd *tableDef) error {
		for i, c := range nd.Checks {
			if strings.EqualFold(c.Name, name) {
				nd.Checks = append(nd.Checks[:i:i], nd.Checks[i+1:]...)
				return nil
			}
		}
		return sql.ErrUnknownConstraint.New(name)
	})
}

// alterDef changes the table's definition without touching its rows.
func (t *Table) alterDef(ctx *sql.Context, change func(ti *tableInfo, nd *tableDef) error) error {
	tx, err := txnOf(ctx)
	if err != nil {
		return err
	}
	if _, err := tx.writeTx(ctx); err != nil {
		return err
	}
	ti := t.eng.lookupTable(t.ti.db, t.ti.def.Name)
	if ti == nil {
		return sql.ErrTableNotFound.New(t.ti.def.Name)
	}
	nd := ti.def
	if err := change(ti, &nd); err != nil {
		return err
	}
	nti, err := compile(ti.db, nd)
	if err != nil {
		return err
	}
	return t.saveDefChange(tx, ti, nti)
}
