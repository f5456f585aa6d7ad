package boltsql

import (
	"math"
	"strings"
	"testing"
)

// TestFastInsertNegativeZero: go-mysql-server's plan.Values turns a float
// -0 into +0 before the column conversion (a string "-0" stays -0, and an
// UPDATE of a non-zero value stores -0), so the fast path must store exactly what the engine
// stores, for float64 and float32 arguments into DOUBLE, FLOAT and DECIMAL.
func TestFastInsertNegativeZero(t *testing.T) {
	fast, slow := openTest(t, Options{NoSync: true}), openTest(t, Options{NoSync: true})
	slow.noFastInsert, slow.noFastUpdate = true, true
	nz := math.Copysign(0, -1)
	nz32 := float32(nz)
	const ins = "INSERT INTO z VALUES (?, ?, ?, ?)"
	inserts := [][]any{
		{1, nz, nz, nz},
		{2, nz32, nz32, nz32},
		{3, "-0", "-0", "-0"},
		{4, nz, "-0", nz32},
		{5, -1.5, -1.5, -1.5},
		{6, 0.0, float32(0), 0.0},
	}
	for _, e := range []*Engine{fast, slow} {
		mustExec(t, e.DB(), "CREATE TABLE z (id BIGINT NOT NULL PRIMARY KEY, d DOUBLE, f FLOAT, m DECIMAL(10,2))")
		for _, args := range inserts {
			mustExec(t, e.DB(), ins, args...)
		}
		mustExec(t, e.DB(), "INSERT INTO z VALUES (?, ?, ?, ?), (?, ?, ?, ?)", 7, nz, nz, nz, 8, nz32, "-0", nz)
		mustExec(t, e.DB(), "UPDATE z SET d = ?, f = ? WHERE id = ?", nz, nz32, 5)
	}
	if n := fast.fastInserts.Load(); n != uint64(len(inserts))+1 {
		t.Fatalf("fast path took %d of %d inserts", n, len(inserts)+1)
	}
	got, want := storedRows(t, fast, "z"), storedRows(t, slow, "z")
	if got != want {
		t.Fatalf("stored rows differ:\nfast path:\n%s\nengine:\n%s", got, want)
	}
	// What the engine stores, so that a change in go-mysql-server shows up here.
	for _, line := range []string{
		"int64(1) float64(0) float32(0) decimal.Decimal(0) ",
		"int64(3) float64(-0) float32(-0) decimal.Decimal(0) ",
		"int64(5) float64(-0) float32(-0) decimal.Decimal(-1.5) ",
	} {
		if !strings.Contains(got, line+"\n") {
			t.Errorf("stored rows lack %q:\n%s", line, got)
		}
	}
}
