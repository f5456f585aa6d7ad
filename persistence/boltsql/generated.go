package boltsql

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/transform"
)

// Generated columns (GENERATED ALWAYS AS (expr) STORED | VIRTUAL). The
// engine computes their values on INSERT and UPDATE and hands the editor
// whole rows, so both kinds are stored like any other column: an index on
// a virtual column is then kept like any index, and a keyless table's row
// the engine hands back (virtual values recomputed by its
// VirtualColumnTable) encodes to the stored bytes. The engine recomputes
// virtual columns whenever it reads, so what is stored for them is never
// what a SELECT shows, only what keys are built from.
//
// Only ALTER TABLE … ADD COLUMN leaves a generated column to the table:
// go-mysql-server fills a new column's default into existing rows but not
// a generated one, so AddColumn computes it (addGenerated).

// generatedString is the persisted expression: table names stripped, as
// go-mysql-server's memory engine keeps it, so a renamed table still
// resolves it and SHOW CREATE TABLE prints it without them.
func generatedString(g *sql.ColumnDefaultValue) string {
	e, _, err := transform.Expr(g, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if gf, ok := e.(*expression.GetField); ok {
			ne := expression.NewGetField(gf.Index(), gf.Type(), gf.Name(), gf.IsNullable())
			return ne.WithQuotedNames(sql.GlobalSchemaFormatter, gf.IsQuotedIdentifier()), transform.NewTree, nil
		}
		return e, transform.SameTree, nil
	})
	if err != nil {
		return g.String()
	}
	return e.String()
}

// addGenerated is the row transform of ADD COLUMN for a generated column
// placed at pos among old's columns: the new row with the column computed
// from the others (and converted to its type).
func addGenerated(old sql.Schema, column *sql.Column, pos int) (func(*sql.Context, sql.Row) (sql.Row, error), error) {
	expr, err := fieldsOfAddedColumn(column.Generated, old, column, pos)
	if err != nil {
		return nil, err
	}
	if !expr.Resolved() {
		return nil, fmt.Errorf("column %s: generated expression %s is not resolved", column.Name, expr)
	}
	return func(ctx *sql.Context, row sql.Row) (sql.Row, error) {
		out := make(sql.Row, 0, len(row)+1)
		out = append(append(append(out, row[:pos]...), nil), row[pos:]...)
		v, err := expr.Eval(ctx, out)
		if err != nil {
			return nil, err
		}
		if v != nil {
			nv, inRange, err := column.Type.Convert(ctx, v)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", column.Name, err)
			}
			if inRange == sql.OutOfRange {
				return nil, sql.ErrValueOutOfRange.New(v, column.Type)
			}
			v = nv
		} else if !column.Nullable {
			return nil, sql.ErrInsertIntoNonNullableProvidedNull.New(column.Name)
		}
		out[pos] = v
		return out, nil
	}, nil
}

// fieldsOfAddedColumn is e, an expression of column (its default or
// generated value) resolved against the table before ADD COLUMN placed
// it at pos among old's columns, with its fields found again by name in
// the new row.
func fieldsOfAddedColumn(e *sql.ColumnDefaultValue, old sql.Schema, column *sql.Column, pos int) (*sql.ColumnDefaultValue, error) {
	sch := make(sql.Schema, 0, len(old)+1)
	sch = append(append(append(sch, old[:pos]...), column), old[pos:]...)
	out, _, err := transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if gf, ok := e.(*expression.GetField); ok {
			i := sch.IndexOfColName(gf.Name())
			if i < 0 {
				return nil, transform.SameTree, sql.ErrTableColumnNotFound.New(column.Source, gf.Name())
			}
			return gf.WithIndex(i), transform.NewTree, nil
		}
		return e, transform.SameTree, nil
	})
	if err != nil {
		return nil, err
	}
	cdv, ok := out.(*sql.ColumnDefaultValue)
	if !ok {
		return nil, fmt.Errorf("column %s: expression %T", column.Name, out)
	}
	return cdv, nil
}
