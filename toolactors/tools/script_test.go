package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/sessionrt/sessionrt/toolactors/internal/scripttest"
	"github.com/sessionrt/sessionrt/toolactors/schema"
)

// TestScripts runs the tool scenario scripts in testdata/ (s53 read, s54
// bash, s55 apply_patch) against the real tools: a real /bin/sh in a real
// process group, real files in a temporary Location ($LOC) and a directory
// outside it ($OUT). Each call prints what the model is given: the tool's
// text, then its structured value, or the error message. Regenerate with
// go test ./toolactors/tools -run TestScripts -rewrite and read the diff.
//
// Commands besides scripttest's file commands:
//
//	config bash-output-cap=N           tools.Config fields for the calls that follow
//	bash [timeout=ms] [workdir=d] [max=30s]   the input is the command; max: the call must return within
//	read path=p [offset=n] [limit=n]
//	apply_patch                        the input is the patch
//	call tool=name                     the input is the raw JSON input (schema-validated first)
//	gone leader                        the last bash call's process-group leader is dead
//
// A call with excerpt=N prints only the first and last N lines of what it
// prints, and how many lines it left out.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		e := &scriptEnv{}
		e.names.Add("$LOC", scripttest.Dir(t))
		e.names.Add("$OUT", scripttest.Dir(t))
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return e.handle(t, td)
		})
	})
}

type scriptEnv struct {
	names  scripttest.Names
	cfg    Config
	leader int // the last bash call's process-group leader
}

func (e *scriptEnv) handle(t *testing.T, td *datadriven.TestData) string {
	if out, ok := scripttest.Files(t, td, &e.names); ok {
		return out
	}
	switch td.Cmd {
	case "bash", "read", "apply_patch", "call":
		out := e.call(t, td)
		if td.HasArg("excerpt") {
			var n int
			td.ScanArgs(t, "excerpt", &n)
			out = scripttest.Excerpt(out, n)
		}
		return out
	}
	switch td.Cmd {
	case "config":
		for _, a := range td.CmdArgs {
			switch a.Key {
			case "bash-output-cap":
				td.ScanArgs(t, a.Key, &e.cfg.BashOutputCap)
			case "read-page-lines":
				td.ScanArgs(t, a.Key, &e.cfg.ReadPageLines)
			default:
				t.Fatalf("%s: unknown config %s", td.Pos, a.Key)
			}
		}
		return ""
	case "gone":
		if !td.HasArg("leader") {
			break
		}
		if e.leader == 0 {
			t.Fatalf("%s: no bash call has started", td.Pos)
		}
		return scripttest.GoneLine("leader", e.leader)
	}
	t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	return ""
}

// call runs one tool call and says what the model is given.
func (e *scriptEnv) call(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "bash":
		in := map[string]any{"command": e.names.Expand(td.Input)}
		e.intArg(t, td, in, "timeout")
		e.strArg(t, td, in, "workdir")
		max := 30 * time.Second
		if td.HasArg("max") {
			var s string
			td.ScanArgs(t, "max", &s)
			var err error
			if max, err = time.ParseDuration(s); err != nil {
				t.Fatalf("%s: %v", td.Pos, err)
			}
		}
		start := time.Now()
		out := e.run(t, &Bash{cfg: e.config()}, in)
		if took := time.Since(start); took > max {
			out += fmt.Sprintf("RETURNED AFTER %s, more than %s\n", took.Round(time.Second), max)
		}
		return out
	case "read":
		in := map[string]any{}
		e.strArg(t, td, in, "path")
		e.strArg(t, td, in, "reference")
		e.intArg(t, td, in, "offset")
		e.intArg(t, td, in, "limit")
		return e.run(t, &Read{cfg: e.config()}, in)
	case "apply_patch":
		return e.run(t, &ApplyPatch{}, map[string]any{"patch": e.names.Expand(td.Input)})
	case "call":
		var name string
		td.ScanArgs(t, "tool", &name)
		for _, tool := range Builtins(e.config()) {
			if tool.Definition().Name == name {
				return e.runRaw(t, tool, json.RawMessage(e.names.Expand(td.Input)))
			}
		}
		t.Fatalf("%s: no tool %q", td.Pos, name)
	}
	return ""
}

func (e *scriptEnv) config() Config {
	c := e.cfg
	c.OnBashStart = func(_ string, pid int) { e.leader = pid }
	return c.withDefaults()
}

func (e *scriptEnv) strArg(t *testing.T, td *datadriven.TestData, in map[string]any, key string) {
	if td.HasArg(key) {
		var v string
		td.ScanArgs(t, key, &v)
		in[key] = e.names.Expand(v)
	}
}

func (e *scriptEnv) intArg(t *testing.T, td *datadriven.TestData, in map[string]any, key string) {
	if td.HasArg(key) {
		var v int
		td.ScanArgs(t, key, &v)
		in[key] = v
	}
}

func (e *scriptEnv) run(t *testing.T, tool Tool, in map[string]any) string {
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return e.runRaw(t, tool, raw)
}

// runRaw validates the input against the tool's schema, as the registry
// does before a tool starts, and runs the tool.
func (e *scriptEnv) runRaw(t *testing.T, tool Tool, raw json.RawMessage) string {
	var b strings.Builder
	res, err := func() (Result, error) {
		if err := tool.Definition().Input.Validate(raw); err != nil {
			return Result{}, err
		}
		return tool.Run(context.Background(), Call{Dir: e.names.Dir("$LOC"), CallID: "c1", Input: raw, Authorize: allowAll})
	}()
	if err != nil {
		fmt.Fprintf(&b, "error: %v\n", err)
		var fe *schema.FieldError
		var pe *PartialError
		switch {
		case errors.As(err, &fe):
			fmt.Fprintf(&b, "invalid input: field %q\n", fe.Field)
		case errors.Is(err, ErrOutsideLocation):
			b.WriteString("refused: outside the Location\n")
		case errors.As(err, &pe):
			fmt.Fprintf(&b, "partial: applied [%s], failed %s %s, not applied [%s]\n",
				appliedList(pe.Applied), pe.Failed.Op, pe.Failed.Path, appliedList(pe.NotApplied))
		}
		return e.names.Normalize(b.String())
	}
	b.WriteString(res.Text)
	if res.Text != "" && !strings.HasSuffix(res.Text, "\n") {
		b.WriteString("\n(no final newline)\n")
	}
	if res.Structured != nil {
		s, err := json.Marshal(res.Structured)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "structured: %s\n", s)
	}
	return e.names.Normalize(b.String())
}

func appliedList(as []Applied) string {
	var parts []string
	for _, a := range as {
		parts = append(parts, fmt.Sprintf("%s %s", a.Op, a.Path))
	}
	return strings.Join(parts, ", ")
}
