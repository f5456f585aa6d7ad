package boltsql

import (
	"strings"
	"testing"
)

// isReadStatement tests its statement without lowering copies; it must
// answer as the lowering version did.
func TestIsReadStatementMatchesLowering(t *testing.T) {
	lowering := func(q string) bool {
		q = strings.TrimLeft(q, " \t\r\n(")
		if len(q) < 4 {
			return false
		}
		switch strings.ToLower(q[:4]) {
		case "sele", "show", "expl", "desc":
			return !strings.Contains(strings.ToLower(q), "for update")
		}
		return false
	}
	for _, q := range []string{
		"SELECT 1", "select * from t", "  (SELECT a FROM t)", "SELECT a FROM t FOR UPDATE", "select a from t for update",
		"SELECT a FROM t For\tUpdate", "SELECT a FROM t FOR  UPDATE", "SeLeCt 'for update'", "SELECT 'FOR UPDATE", "SHOW TABLES",
		"EXPLAIN SELECT 1", "DESCRIBE t", "INSERT INTO t VALUES (1)", "UPDATE t SET a = 1", "sel", "", "SELE",
		"SELECT 'İ' FOR UPDATE", "SELECT 'K' FROM t", "SÉLECT 1", "SELECT 'fór update'", "SELECT x FROM t for updatE;",
		"SELECT x FROM t FOR UPDAT", "select\u212a from t for update",
	} {
		if got, want := isReadStatement(q), lowering(q); got != want {
			t.Errorf("isReadStatement(%q) = %v, want %v", q, got, want)
		}
	}
}
