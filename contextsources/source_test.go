package contextsources

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestMakeRejectsMalformedSpecs(t *testing.T) {
	load := func(context.Context) Result[int] { return Present(1) }
	base := func(int) string { return "" }
	cases := []struct {
		name string
		spec Spec[int]
		want string
	}{
		{"empty key", Spec[int]{Load: load, Baseline: base}, "empty key"},
		{"not namespaced", Spec[int]{Key: "date", Load: load, Baseline: base}, "namespaced"},
		{"empty segment", Spec[int]{Key: "core//date", Load: load, Baseline: base}, "empty key segment"},
		{"space in key", Spec[int]{Key: "core/the date", Load: load, Baseline: base}, "not allowed"},
		{"no loader", Spec[int]{Key: "core/date", Baseline: base}, "Load is required"},
		{"no baseline", Spec[int]{Key: "core/date", Load: load}, "Baseline is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Make(tc.spec)
			if !errors.Is(err, ErrInvalidSource) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Make: err %v, want ErrInvalidSource mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := Make(Spec[int]{Key: "core/v1.date_x-y", Load: load, Baseline: base}); err != nil {
		t.Fatalf("valid key refused: %v", err)
	}
}

func TestSourcesOfDifferentTypesComposeUniformly(t *testing.T) {
	type facts struct {
		Dir string `json:"dir"`
		Git bool   `json:"git"`
	}
	a := MustMake(Spec[facts]{Key: "t/facts",
		Load:     func(context.Context) Result[facts] { return Present(facts{"/p", true}) },
		Baseline: func(f facts) string { return "dir " + f.Dir }})
	b := MustMake(Spec[[]string]{Key: "t/list",
		Load:     func(context.Context) Result[[]string] { return Present([]string{"x", "y"}) },
		Baseline: func(l []string) string { return strings.Join(l, ",") }})
	sc, err := New(a, b)
	if err != nil {
		t.Fatal(err)
	}
	g := mustInit(t, sc)
	if g.Baseline != "dir /p"+Separator+"x,y" {
		t.Fatalf("baseline %q", g.Baseline)
	}
	if v, _ := g.Snapshot.Value("t/facts"); string(v) != `{"dir":"/p","git":true}` {
		t.Fatalf("stored value %s", v)
	}
}

func TestCombineKeepsCallerOrder(t *testing.T) {
	mk := func(k string) SystemContext { return mustNew(t, strSource(t, k, newCell("v"), false)) }
	sc, err := Combine(mk("z/last"), mk("a/first"), mk("m/mid"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sc.Keys(), " "); got != "z/last a/first m/mid" {
		t.Fatalf("order %q", got)
	}
}
