package boltsql

import "testing"

// A lookup join on a null-safe condition (l.a <=> r.a) finds the rows
// whose key is NULL, and one on = does not, as the other joins do: v0.20.0
// marks a NULL key's lookup empty even when its range is IS NULL. Before,
// the lookup join of <=> lost the 9 NULL pairs (a wrong answer
// enginetest's TestJoinOps found).
func TestNullSafeLookupJoinFindsNullKeys(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	mustExec(t, e.DB(), "CREATE TABLE niltable (i BIGINT PRIMARY KEY, i2 BIGINT, KEY niltable_i2 (i2))")
	mustExec(t, e.DB(), "INSERT INTO niltable VALUES (1, NULL), (2, 2), (3, NULL), (4, 4), (5, NULL), (6, 6)")
	for q, want := range map[string]int64{
		"SELECT /*+ LOOKUP_JOIN(l,r) */ COUNT(*) FROM niltable l JOIN niltable r ON l.i2 <=> r.i2": 12,
		"SELECT /*+ HASH_JOIN(l,r) */ COUNT(*) FROM niltable l JOIN niltable r ON l.i2 <=> r.i2":   12,
		"SELECT /*+ LOOKUP_JOIN(l,r) */ COUNT(*) FROM niltable l JOIN niltable r ON l.i2 = r.i2":   3,
		"SELECT COUNT(*) FROM niltable WHERE i2 <=> NULL":                                          3,
		"SELECT COUNT(*) FROM niltable WHERE i2 = NULL":                                            0,
	} {
		if got := queryInt(t, e.DB(), q); got != want {
			t.Errorf("%s: %d, want %d", q, got, want)
		}
	}
}
