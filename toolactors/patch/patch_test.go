package patch

import (
	"errors"
	"strings"
	"testing"
)

func TestParseAllKinds(t *testing.T) {
	ops, err := Parse(`*** Begin Patch
*** Add File: a.txt
+hello
+world
*** Update File: b.txt
@@ func main
 keep
-old
+new
*** Delete File: c.txt
*** End Patch
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 3 || ops[0].Kind != Add || ops[1].Kind != Update || ops[2].Kind != Delete {
		t.Fatalf("ops %+v", ops)
	}
	if strings.Join(ops[0].Lines, "|") != "hello|world" || ops[1].Chunks[0].Anchor != "func main" {
		t.Fatalf("ops %+v", ops)
	}
}

func TestParseErrorNamesTheLine(t *testing.T) {
	_, err := Parse("*** Begin Patch\n*** Add File: a\n+x\n*** Update File: b\n keep\n?bad\n*** End Patch")
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 6 {
		t.Fatalf("err %v", err)
	}
	if _, err := Parse("*** Add File: a\n+x"); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("missing begin: %v", err)
	}
	if _, err := Parse("*** Begin Patch\n*** Frobnicate: a\n*** End Patch"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("bad header: %v", err)
	}
}

func TestApplyUpdates(t *testing.T) {
	src := "package main\n\nfunc main() {\n\tprintln(1)\n}\n"
	ops, err := Parse("*** Begin Patch\n*** Update File: m.go\n@@ func main() {\n-\tprintln(1)\n+\tprintln(2)\n+\tprintln(3)\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Apply(src, ops[0].Chunks)
	if err != nil {
		t.Fatal(err)
	}
	if want := "package main\n\nfunc main() {\n\tprintln(2)\n\tprintln(3)\n}\n"; got != want {
		t.Fatalf("got %q", got)
	}
	if _, err := Apply("other\n", ops[0].Chunks); !errors.Is(err, ErrNoMatch) {
		t.Fatalf("mismatch: %v", err)
	}
}
