package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func allowAll(context.Context, string, []string, []string, string) error { return nil }

// location makes a real directory with symlinks resolved.
func location(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, tool Tool, c Call, input any) (Result, error) {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	if err := tool.Definition().Input.Validate(raw); err != nil {
		return Result{}, err
	}
	c.Input = raw
	if c.Authorize == nil {
		c.Authorize = allowAll
	}
	return tool.Run(context.Background(), c)
}

func TestReadManagedFileByAbsolutePathAndReference(t *testing.T) {
	dir, managed, ref := location(t), location(t), location(t)
	write(t, managed, "tool_1", "full output\n")
	write(t, managed, "other", "no\n")
	write(t, ref, "doc.md", "ref doc\n")
	r := &Read{cfg: Config{}.withDefaults()}
	c := Call{Dir: dir, ManagedDir: managed, References: map[string]string{"docs": ref}}
	res, err := run(t, r, c, ReadInput{Path: filepath.Join(managed, "tool_1")})
	if err != nil || !strings.Contains(res.Text, "full output") {
		t.Fatalf("managed read: %v %q", err, res.Text)
	}
	if _, err := run(t, r, c, ReadInput{Path: filepath.Join(managed, "other")}); !errors.Is(err, ErrOutsideLocation) {
		t.Fatalf("non-managed absolute path: %v", err)
	}
	res, err = run(t, r, c, ReadInput{Path: "doc.md", Reference: "docs"})
	if err != nil || !strings.Contains(res.Text, "ref doc") {
		t.Fatalf("reference read: %v", err)
	}
	if _, err := run(t, r, c, ReadInput{Path: "doc.md", Reference: "nope"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown reference: %v", err)
	}
}

func TestGlobAndGrep(t *testing.T) {
	dir := location(t)
	write(t, dir, "a.go", "package a\nfunc Hello() {}\n")
	write(t, dir, "sub/b.go", "package b\n// hello there\n")
	write(t, dir, "sub/c.txt", "Hello text\n")
	write(t, dir, ".git/x.go", "Hello\n")
	cfg := Config{}.withDefaults()
	res, err := run(t, &Glob{cfg: cfg}, Call{Dir: dir}, GlobInput{Pattern: "**/*.go"})
	if err != nil || strings.Join(res.Structured.(SearchOutput).Matches, ",") != "a.go,sub/b.go" {
		t.Fatalf("glob: %v %+v", err, res.Structured)
	}
	res, err = run(t, &Grep{cfg: cfg}, Call{Dir: dir}, GrepInput{Pattern: "(?i)hello", Include: "*.go"})
	if err != nil || strings.Join(res.Structured.(SearchOutput).Matches, ",") != "a.go:2: func Hello() {},sub/b.go:2: // hello there" {
		t.Fatalf("grep: %v %+v", err, res.Structured)
	}
	cfg.SearchLimit = 1
	res, err = run(t, &Grep{cfg: cfg}, Call{Dir: dir}, GrepInput{Pattern: "(?i)hello"})
	if err != nil || !res.Structured.(SearchOutput).Truncated {
		t.Fatalf("grep limit: %v %+v", err, res.Structured)
	}
	if _, err := run(t, &Grep{cfg: cfg}, Call{Dir: dir}, GrepInput{Pattern: "("}); err == nil || !strings.Contains(err.Error(), `"pattern"`) {
		t.Fatalf("bad regexp: %v", err)
	}
}

func TestBashWorkdirOutsideLocationNeedsExternalDirectoryPermission(t *testing.T) {
	dir, outside := location(t), location(t)
	var asked []string
	c := Call{Dir: dir, Authorize: func(_ context.Context, action string, res, _ []string, _ string) error {
		asked = append(asked, action+" "+strings.Join(res, ","))
		if action == "external_directory" {
			return errors.New("denied by test rule")
		}
		return nil
	}}
	b := &Bash{cfg: Config{}.withDefaults()}
	if _, err := run(t, b, c, BashInput{Command: "pwd", Workdir: outside}); err == nil {
		t.Fatal("ran outside the Location without external_directory authority")
	}
	if len(asked) != 1 || asked[0] != "external_directory "+outside {
		t.Fatalf("checks %v", asked)
	}
	asked = nil
	write(t, dir, "sub/x", "")
	res, err := run(t, b, c, BashInput{Command: "pwd", Workdir: "sub"})
	if err != nil || !strings.HasPrefix(res.Text, filepath.Join(dir, "sub")+"\n") || len(asked) != 1 || asked[0] != "bash pwd" {
		t.Fatalf("%v %q %v", err, res.Text, asked)
	}
}

func TestBashWarnsAboutExternalAbsolutePaths(t *testing.T) {
	dir := location(t)
	b := &Bash{cfg: Config{}.withDefaults()}
	res, err := run(t, b, Call{Dir: dir}, BashInput{Command: "ls /etc " + dir + " --x=/var/tmp >/dev/null; cat /etc"})
	if err != nil {
		t.Fatal(err)
	}
	w := res.Structured.(BashOutput).Warnings
	if len(w) != 2 || !strings.Contains(w[0], "/etc") || !strings.Contains(w[1], "/var/tmp") {
		t.Fatalf("warnings %q", w)
	}
}

// A built-in tool builds its definition once: every turn's catalog shares the schema and
// its encoding, which is the schema's JSON.
func TestDefinitionBuiltOnce(t *testing.T) {
	for _, tool := range Builtins(Config{}) {
		d1, d2 := tool.Definition(), tool.Definition()
		if d1.Input == nil || d1.Input != d2.Input {
			t.Errorf("%s: Definition built twice (schemas %p, %p)", d1.Name, d1.Input, d2.Input)
		}
		got, err := d1.InputJSON()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(d1.Input)
		if string(got) != string(want) || d1.inputJSON == nil {
			t.Errorf("%s: InputJSON = %s (cached %v), want %s", d1.Name, got, d1.inputJSON != nil, want)
		}
	}
	var none Definition
	if got, _ := none.InputJSON(); string(got) != `{"type":"object"}` {
		t.Errorf("no input: %s", got)
	}
}

// grep and glob see a file through the same authority as read: a symlink
// is followed only to a regular file inside the Location; one leading
// outside (or dangling towards outside) is skipped, never read.
func TestGlobAndGrepSkipSymlinksLeadingOutside(t *testing.T) {
	dir, outside := location(t), location(t)
	write(t, outside, "secret.txt", "needle: the outside secret\n")
	write(t, outside, "deep/more.txt", "needle: deeper secret\n")
	write(t, dir, "in/real.txt", "needle: inside\n")
	links := map[string]string{
		"leak.txt":        filepath.Join(outside, "secret.txt"),
		"in/rel-leak.txt": "../../" + filepath.Base(outside) + "/secret.txt",
		"outdir":          outside,
		"chain.txt":       "leak.txt",
		"dangling.txt":    filepath.Join(outside, "not-yet.txt"),
		"alias.txt":       "in/real.txt",
		"passwd.txt":      "/etc/passwd",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{}.withDefaults()
	c := Call{Dir: dir}
	for _, p := range []string{"leak.txt", "in/rel-leak.txt", "chain.txt", "passwd.txt", "dangling.txt"} {
		if _, err := run(t, &Read{cfg: cfg}, c, ReadInput{Path: p}); !errors.Is(err, ErrOutsideLocation) {
			t.Errorf("read %s: %v, want a refusal (the authority grep and glob must share)", p, err)
		}
	}
	res, err := run(t, &Grep{cfg: cfg}, c, GrepInput{Pattern: "needle|root:"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Structured.(SearchOutput).Matches, ","); got != "alias.txt:1: needle: inside,in/real.txt:1: needle: inside" {
		t.Errorf("grep: %q, want only the Location's file (itself and its inside alias)", got)
	}
	res, err = run(t, &Glob{cfg: cfg}, c, GlobInput{Pattern: "**/*.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Structured.(SearchOutput).Matches, ","); got != "alias.txt,in/real.txt" {
		t.Errorf("glob: %q, want the Location's files only", got)
	}
	res, err = run(t, &Grep{cfg: cfg}, c, GrepInput{Pattern: "needle", Path: "in"})
	if err != nil || strings.Join(res.Structured.(SearchOutput).Matches, ",") != "in/real.txt:1: needle: inside" {
		t.Errorf("grep in/: %v %+v", err, res.Structured)
	}
	for _, p := range []string{"leak.txt", "outdir", "dangling.txt"} {
		if _, err := run(t, &Grep{cfg: cfg}, c, GrepInput{Pattern: "needle", Path: p}); !errors.Is(err, ErrOutsideLocation) {
			t.Errorf("grep path %s: %v, want a refusal", p, err)
		}
	}
}
