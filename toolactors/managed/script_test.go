package managed

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/sessionrt/sessionrt/toolactors/internal/scripttest"
)

// TestScripts runs the retention scenario scripts in testdata/ (s52)
// against a real Store on a real directory, $MANAGED, with a script-driven
// clock. Regenerate with go test ./toolactors/managed -run TestScripts
// -rewrite and read the diff.
//
// Commands besides scripttest's file commands:
//
//	store [retention=168h]      a Store on $MANAGED; the clock stands at 2026-01-10 00:00 UTC
//	save                        Store.Write of the input: a new managed file, named tool_N
//	age path=p by=192h          set the file's modification time that long before now
//	advance by=24h              move the clock
//	sweep                       Store.Sweep: how many it removed, then what is left
//	ls                          the directory: each entry with its age
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		e := &sweepEnv{now: time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)}
		e.names.Add("$MANAGED", filepath.Join(scripttest.Dir(t), "tool-output"))
		// scripttest's relative paths are relative to $LOC: here, the directory.
		e.names.Add("$LOC", e.names.Dir("$MANAGED"))
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return e.handle(t, td)
		})
	})
}

type sweepEnv struct {
	names   scripttest.Names
	store   *Store
	now     time.Time
	logs    bytes.Buffer
	aliases int
}

func (e *sweepEnv) handle(t *testing.T, td *datadriven.TestData) string {
	if out, ok := scripttest.Files(t, td, &e.names); ok {
		return out
	}
	duration := func(key string) time.Duration {
		var s string
		td.ScanArgs(t, key, &s)
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s: %v", td.Pos, err)
		}
		return d
	}
	switch td.Cmd {
	case "store":
		cfg := Config{Dir: e.names.Dir("$MANAGED"), Now: func() time.Time { return e.now },
			Logger: slog.New(slog.NewTextHandler(&e.logs, nil))}
		if td.HasArg("retention") {
			cfg.Retention = duration("retention")
		}
		var err error
		if e.store, err = New(cfg); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("retention %s\n", e.store.cfg.Retention)
	case "save":
		p, err := e.store.Write(td.Input)
		if err != nil {
			return fmt.Sprintf("error: %v\n", e.names.Normalize(err.Error()))
		}
		// Written now by the script's clock, whatever the real one says.
		if err := os.Chtimes(p, e.now, e.now); err != nil {
			t.Fatal(err)
		}
		e.alias(filepath.Base(p))
		return fmt.Sprintf("saved %s (owned: %v)\n", e.names.Normalize(p), e.store.Owns(p))
	case "age":
		var p string
		td.ScanArgs(t, "path", &p)
		when := e.now.Add(-duration("by"))
		if err := os.Chtimes(e.names.Path(p), when, when); err != nil {
			t.Fatal(err)
		}
		return ""
	case "advance":
		e.now = e.now.Add(duration("by"))
		return ""
	case "sweep":
		n, err := e.store.Sweep()
		if err != nil {
			return fmt.Sprintf("error: %v\n", e.names.Normalize(err.Error()))
		}
		return fmt.Sprintf("removed %d\n", n) + e.ls(t)
	case "ls":
		return e.ls(t)
	}
	t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	return ""
}

// alias names a saved managed file tool_N, N in order of saving: its real
// name holds the time and random bits.
func (e *sweepEnv) alias(name string) {
	e.aliases++
	e.names.Add(fmt.Sprintf("%s%d", Prefix, e.aliases), name)
}

func (e *sweepEnv) ls(t *testing.T) string {
	entries, err := os.ReadDir(e.names.Dir("$MANAGED"))
	if os.IsNotExist(err) {
		return "(no directory)\n"
	}
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, en := range entries {
		p := filepath.Join(e.names.Dir("$MANAGED"), en.Name())
		name := e.names.Normalize(en.Name())
		switch {
		case en.IsDir():
			name += "/"
		case en.Type()&os.ModeSymlink != 0:
			to, err := os.Readlink(p)
			if err != nil {
				t.Fatal(err)
			}
			// A link's own time is the real clock's: not shown.
			lines = append(lines, fmt.Sprintf("%s -> %s\n", name, to))
			continue
		}
		info, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%s %s old\n", name, e.now.Sub(info.ModTime())))
	}
	sort.Strings(lines)
	b := strings.Join(lines, "")
	if b == "" {
		return "(empty)\n"
	}
	return b
}
