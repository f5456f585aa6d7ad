package filespan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/messages"
)

// TestSpan runs the scripts in testdata/ against a real filesnap store
// and real files in a temporary Location. Regenerate the expectations on
// purpose with: go test ./filespan -run TestSpan -rewrite
//
//	write <path>=<content>…     files change (by a tool or by hand: the
//	rm <path>…                  journal alone tells which)
//	snapshot                    a snapshot of the Location, named s1, s2, …
//	prompt                      the journal's next event: a prompt promoted
//	turn [snap=sN]              a turn started (with its snapshot)
//	call id=<c> tool=<t>        a tool called
//	ok|failed id=<c> [snap=sN]  its settlement (with the snapshot after it)
//	revert from=<seq>           what a revert to seq restores (the span
//	                            from seq; the Location now as current)
//	diff from=<seq> [bounded]   what the session changed from seq (to the
//	                            first turn after the next prompt, bounded)
func TestSpan(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		st, err := filesnap.Open(filesnap.Config{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		e := &spanEnv{st: st, loc: t.TempDir(), names: map[string]string{}, ids: map[string]string{}}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := e.handle(t, td)
			if err != nil {
				return fmt.Sprintf("error: %v\n", err)
			}
			return out
		})
	})
}

type spanEnv struct {
	st      *filesnap.Store
	loc     string
	journal []messages.Event  // journal[i] at seq i+1
	names   map[string]string // tree ID -> its first name
	ids     map[string]string // name -> tree ID
	n       int
}

func (e *spanEnv) handle(t *testing.T, td *datadriven.TestData) (string, error) {
	snap := func() string {
		var name string
		td.MaybeScanArgs(t, "snap", &name)
		if name == "" {
			return ""
		}
		id, ok := e.ids[name]
		if !ok {
			t.Fatalf("%s: no snapshot %s", td.Pos, name)
		}
		return id
	}
	var id, tool string
	switch td.Cmd {
	case "write":
		for _, a := range td.CmdArgs {
			p := filepath.Join(e.loc, a.Key)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(strings.Join(a.Vals, ",")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return "", nil
	case "rm":
		for _, a := range td.CmdArgs {
			if err := os.Remove(filepath.Join(e.loc, a.Key)); err != nil {
				t.Fatal(err)
			}
		}
		return "", nil
	case "snapshot":
		tree, err := e.st.Take(e.loc)
		if err != nil {
			t.Fatal(err)
		}
		e.n++
		name := fmt.Sprintf("s%d", e.n)
		e.ids[name] = tree
		if first, ok := e.names[tree]; ok {
			return fmt.Sprintf("%s (the same tree as %s)\n", name, first), nil
		}
		e.names[tree] = name
		return name + "\n", nil
	case "prompt":
		return e.write(messages.PromptPromoted{MessageIDs: []string{"u"}}), nil
	case "turn":
		return e.write(messages.TurnStarted{AssistantMessageID: "a", Snapshot: snap()}), nil
	case "call":
		td.ScanArgs(t, "id", &id)
		td.ScanArgs(t, "tool", &tool)
		return e.write(messages.ToolCalled{AssistantMessageID: "a", CallID: id, Tool: tool}), nil
	case "ok":
		td.ScanArgs(t, "id", &id)
		return e.write(messages.ToolSucceeded{AssistantMessageID: "a", CallID: id, Snapshot: snap()}), nil
	case "failed":
		td.ScanArgs(t, "id", &id)
		return e.write(messages.ToolFailed{AssistantMessageID: "a", CallID: id, Error: "exit status 1", Snapshot: snap()}), nil
	case "revert":
		// As a revert stages: the span from seq, closed at the Location now.
		var from int64
		td.ScanArgs(t, "from", &from)
		sp, err := e.span(from, false)
		if err != nil {
			return "", err
		}
		if sp.From == "" {
			return "nothing to revert: no turn with a snapshot since\n", nil
		}
		cur, err := e.st.Take(e.loc)
		if err != nil {
			t.Fatal(err)
		}
		files, err := sp.Changed(sp.From, cur)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("revert to %s restores %v\n", e.name(sp.From), files), nil
	case "diff":
		// As a session's diff: to the end of a bounded span, else the
		// Location now.
		var from int64
		td.ScanArgs(t, "from", &from)
		sp, err := e.span(from, td.HasArg("bounded"))
		if err != nil {
			return "", err
		}
		if sp.From == "" {
			return "no changes: no turn with a snapshot since\n", nil
		}
		to, end := sp.To, "the span's end, "+e.name(sp.To)
		if to == "" {
			if to, err = e.st.Take(e.loc); err != nil {
				t.Fatal(err)
			}
			end = "the Location now"
		}
		if err := sp.Close(to); err != nil {
			return "", err
		}
		return fmt.Sprintf("from %s to %s: %v\n", e.name(sp.From), end, sp.Paths()), nil
	}
	t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	return "", nil
}

func (e *spanEnv) write(ev messages.Event) string {
	e.journal = append(e.journal, ev)
	return fmt.Sprintf("seq %d\n", len(e.journal))
}

// span folds the journal from seq on, as the Session actor does.
func (e *spanEnv) span(seq int64, bounded bool) (*Span, error) {
	sp := New(e.st, seq, bounded)
	for i := seq - 1; i < int64(len(e.journal)); i++ {
		if done, err := sp.Add(i+1, e.journal[i]); err != nil || done {
			return sp, err
		}
	}
	return sp, nil
}

// name is a tree's script name.
func (e *spanEnv) name(tree string) string {
	if n, ok := e.names[tree]; ok {
		return n
	}
	return "an unnamed tree"
}
