package boltsql

import (
	"errors"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
)

// A foreign key may reference a secondary index's columns followed by
// primary-key columns the index lacks (its keys end with the primary key,
// as MySQL's do), and its checks then hold on all of them: a child row
// whose parent matches the index's columns but not the primary-key column
// is refused. Before, such a foreign key found no index.
func TestForeignKeyOverAnIndexExtendedByThePrimaryKey(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	mustExec(t, e.DB(), "CREATE TABLE parent1 (fk1 INT, pk1 INT, pk2 INT, pk3 INT, PRIMARY KEY (pk1, pk2, pk3), INDEX (fk1, pk2))")
	mustExec(t, e.DB(), "INSERT INTO parent1 VALUES (0, 1, 2, 3)")
	mustExec(t, e.DB(), "CREATE TABLE child2 (fk1 INT, pk1 INT, pk2 INT, pk3 INT, PRIMARY KEY (pk1, pk2, pk3))")
	mustExec(t, e.DB(), "ALTER TABLE child2 ADD CONSTRAINT fk2 FOREIGN KEY (fk1, pk2, pk1) REFERENCES parent1 (fk1, pk2, pk1)")
	mustExec(t, e.DB(), "INSERT INTO child2 VALUES (0, 1, 2, 99)")
	var me *mysqldriver.MySQLError
	if _, err := e.DB().Exec("INSERT INTO child2 VALUES (0, 99, 2, 99)"); !errors.As(err, &me) || me.Number != 1452 {
		t.Errorf("a child whose parent differs in pk1 only: %v, want error 1452", err)
	}
	if _, err := e.DB().Exec("ALTER TABLE child2 ADD FOREIGN KEY (fk1, pk1) REFERENCES parent1 (fk1, pk1)"); err == nil {
		t.Error("a foreign key on (fk1, pk1), which no index of parent1 starts with, was accepted")
	}
}
