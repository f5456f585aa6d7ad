package boltsql

import (
	"bytes"
	"math/rand"
	"slices"
	"testing"

	"github.com/shopspring/decimal"
)

// DECIMAL keys order as the values do and equal values (1.5, 1.50, 15E-1)
// have one key, over signs, exponents, inner and trailing zeros and
// prefixes of each other's digits.
func TestDecimalKeysOrderAsTheValues(t *testing.T) {
	strs := []string{"0", "0.000", "1", "1.0", "1.5", "1.50", "-1.5", "15", "150", "0.15", "0.015", "-0.015", "-15",
		"-150", "1.05", "1.005", "10.5", "-1.05", "99999999999999999999999999999999999.999999999999999999999999999999",
		"-99999999999999999999999999999999999.999999999999999999999999999999", "0.000000000000000000000000000001", "-0.000000000000000000000000000001"}
	vals := make([]decimal.Decimal, 0, len(strs)+300)
	for _, s := range strs {
		vals = append(vals, decimal.RequireFromString(s))
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		vals = append(vals, decimal.New(r.Int63n(2000001)-1000000, int32(r.Intn(13)-6)))
	}
	key := func(d decimal.Decimal) []byte {
		k, err := appendKeyValue(nil, keyDecimal, d)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	for _, a := range vals {
		for _, b := range vals {
			if got, want := bytes.Compare(key(a), key(b)), a.Cmp(b); got != want {
				t.Fatalf("%s vs %s: keys compare %d, values %d (%x, %x)", a, b, got, want, key(a), key(b))
			}
		}
	}
}

// A DECIMAL column can be a primary key or indexed: lookups and ranges
// through it find what a scan finds, a value equal to a stored one in
// another scale is a duplicate, and all of it survives a reopen. Before,
// DECIMAL columns were refused in keys.
func TestDecimalKeyColumns(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, e.DB(), "CREATE TABLE d (a DECIMAL(10,2) PRIMARY KEY, b DECIMAL(65,30), KEY b (b))")
	mustExec(t, e.DB(), "CREATE TABLE scan (a DECIMAL(10,2), b DECIMAL(65,30))")
	rows := "(1.5, 1), (-1.5, -0.000000000000000000000000000001), (0, 0), (10, 99999999999999999999999999999999999), (-100.25, 2.5), (3, NULL)"
	for _, tbl := range []string{"d", "scan"} {
		mustExec(t, e.DB(), "INSERT INTO "+tbl+" VALUES "+rows)
	}
	if _, err := e.DB().Exec("INSERT INTO d VALUES (1.50, 7)"); err == nil {
		t.Error("1.50 beside 1.5 in a DECIMAL primary key was accepted")
	}
	check := func(e *Engine) {
		t.Helper()
		for _, w := range []string{"a = 1.5", "a = 1.50", "a = ?", "a > -2 AND a < 3", "a <= 0", "a IN (10, -100.25, 7)",
			"b = 2.50", "b < 0", "b >= 1", "b IS NULL", "b BETWEEN -1 AND 2"} {
			var args []any
			if w == "a = ?" {
				args = []any{"-1.50"}
			}
			got := queryStrings(t, e.DB(), "SELECT a FROM d WHERE "+w+" ORDER BY a", args...)
			want := queryStrings(t, e.DB(), "SELECT a FROM scan WHERE "+w+" ORDER BY a", args...)
			if !slices.Equal(got, want) {
				t.Errorf("WHERE %s: index finds %v, a scan %v", w, got, want)
			}
		}
		if got, want := queryStrings(t, e.DB(), "SELECT a FROM d ORDER BY a DESC"), queryStrings(t, e.DB(), "SELECT a FROM scan ORDER BY a DESC"); !slices.Equal(got, want) {
			t.Errorf("ORDER BY a DESC: %v, want %v", got, want)
		}
	}
	check(e)
	e = reopen(t, e, dir)
	check(e)
}

// A DECIMAL value reads back with its scale, as stored: 2.5633000000000370
// in a DECIMAL(18,16) column, not 2.563300000000037 (enginetest TestScripts
// found it).
func TestDecimalValuesKeepTheirScale(t *testing.T) {
	e := openTest(t, Options{NoSync: true})
	mustExec(t, e.DB(), "CREATE TABLE d (id BIGINT PRIMARY KEY, v DECIMAL(18,16), w DECIMAL(10,2))")
	mustExec(t, e.DB(), "INSERT INTO d VALUES (1, 2.5633000000000370, 1.5), (2, -0.0000000000000400, 100)")
	if got := queryStrings(t, e.DB(), "SELECT CONCAT(v, ' ', w) FROM d ORDER BY id"); !slices.Equal(got, []string{"2.5633000000000370 1.50", "-0.0000000000000400 100.00"}) {
		t.Errorf("DECIMAL values read back as %q", got)
	}
}
