package tools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/toolactors/proc"
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

func TestS53_ReadRefusesEscapesAndPages(t *testing.T) {
	dir := location(t)
	outside := location(t)
	write(t, outside, "secret.txt", "secret\n")
	write(t, dir, "b.txt", "b\n")
	write(t, dir, "a.txt", "a\n")
	write(t, dir, "zdir/x", "x\n")
	write(t, dir, "adir/y", "y\n")
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "outdir")); err != nil {
		t.Fatal(err)
	}
	var big strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&big, "row %d\n", i)
	}
	write(t, dir, "big.txt", big.String())
	r := &Read{cfg: Config{}.withDefaults()}
	c := Call{Dir: dir}

	for _, p := range []string{filepath.Join(outside, "secret.txt"), "../x", "a/../../x", "link", "outdir/secret.txt"} {
		_, err := run(t, r, c, ReadInput{Path: p})
		if !errors.Is(err, ErrOutsideLocation) || !strings.Contains(err.Error(), p) {
			t.Errorf("read %q: %v, want a refusal naming the path", p, err)
		}
	}

	res, err := run(t, r, c, ReadInput{Path: "."})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(strings.Split(res.Text, "\n")[1:7], ","); got != "adir/,outdir/,zdir/,a.txt,b.txt,big.txt" {
		t.Fatalf("directory order %q", got)
	}
	res, err = run(t, r, c, ReadInput{Path: ".", Offset: 2, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if out := res.Structured.(ReadOutput); out.Count != 2 || out.Next != 4 || !strings.Contains(res.Text, "outdir/\nzdir/\n") {
		t.Fatalf("directory page %+v %q", out, res.Text)
	}

	res, err = run(t, r, c, ReadInput{Path: "big.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if out := res.Structured.(ReadOutput); out.Count != 2000 || out.Next != 2001 {
		t.Fatalf("first page %+v", out)
	}
	res, err = run(t, r, c, ReadInput{Path: "big.txt", Offset: 4999})
	if err != nil {
		t.Fatal(err)
	}
	if out := res.Structured.(ReadOutput); out.Count != 2 || out.Next != 0 || !strings.Contains(res.Text, "  5000\trow 5000\n") {
		t.Fatalf("last page %+v %q", out, res.Text)
	}
	if _, err := run(t, r, c, ReadInput{Path: "big.txt", Offset: 6000}); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Fatalf("offset past end: %v", err)
	}

	bin := []byte{0, 1, 2, 255}
	if err := os.WriteFile(filepath.Join(dir, "bin"), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = run(t, r, c, ReadInput{Path: "bin"})
	if err != nil || res.Structured.(ReadOutput).Encoding != "base64" || !strings.Contains(res.Text, base64.StdEncoding.EncodeToString(bin)) {
		t.Fatalf("binary: %v %q", err, res.Text)
	}
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

func TestS54_BashExitCodeTimeoutAndClosedStdin(t *testing.T) {
	dir := location(t)
	var pids = make(chan int, 4)
	b := &Bash{cfg: Config{OnBashStart: func(_ string, pid int) { pids <- pid }}.withDefaults()}
	c := Call{Dir: dir, CallID: "c1"}

	res, err := run(t, b, c, BashInput{Command: "echo out; echo err >&2; cat; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	out := res.Structured.(BashOutput)
	if out.ExitCode != 3 || out.TimeoutMS != 120000 || !strings.Contains(res.Text, "out\nerr\n") || !strings.Contains(res.Text, "exit code 3") {
		t.Fatalf("%+v %q", out, res.Text)
	}
	<-pids

	start := time.Now()
	// The timeout must leave the shell time to start its job on a loaded machine.
	res, err = run(t, b, c, BashInput{Command: "sleep 300 & echo $! > bg; wait", Timeout: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if out := res.Structured.(BashOutput); !out.TimedOut || !strings.Contains(res.Text, "timed out after 2000 ms") {
		t.Fatalf("%+v %q", out, res.Text)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatal("timeout not enforced")
	}
	if !proc.Gone(<-pids, 5*time.Second) {
		t.Fatal("leader survived the timeout")
	}
	bg, err := os.ReadFile(filepath.Join(dir, "bg"))
	if err != nil {
		t.Fatal(err)
	}
	var bgPID int
	fmt.Sscan(string(bg), &bgPID)
	if !proc.Gone(bgPID, 5*time.Second) {
		t.Fatalf("background process %d survived the timeout", bgPID)
	}

	if _, err := run(t, b, c, BashInput{Command: "true", Timeout: 600001}); err == nil || !strings.Contains(err.Error(), `"timeout"`) {
		t.Fatalf("timeout over max: %v", err)
	}
	if _, err := run(t, b, c, map[string]any{"command": 42}); err == nil || !strings.Contains(err.Error(), `"command"`) {
		t.Fatalf("wrong type: %v", err)
	}
	if _, err := run(t, b, c, BashInput{Command: "true", Workdir: "../.."}); !errors.Is(err, ErrOutsideLocation) {
		t.Fatalf("workdir escape: %v", err)
	}
}

func TestS55_ApplyPatch(t *testing.T) {
	ap := &ApplyPatch{}
	t.Run("add update delete apply in order", func(t *testing.T) {
		dir := location(t)
		write(t, dir, "m.txt", "one\ntwo\nthree\n")
		write(t, dir, "gone.txt", "bye\n")
		res, err := run(t, ap, Call{Dir: dir}, ApplyPatchInput{Patch: `*** Begin Patch
*** Add File: new/n.txt
+fresh
*** Update File: m.txt
@@
 one
-two
+2
*** Delete File: gone.txt
*** End Patch`})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Structured.(ApplyPatchOutput).Applied; len(got) != 3 || got[0].Path != "new/n.txt" || got[2].Op != "delete" {
			t.Fatalf("applied %+v", got)
		}
		assertFile(t, dir, "new/n.txt", "fresh\n")
		assertFile(t, dir, "m.txt", "one\n2\nthree\n")
		assertFile(t, dir, "gone.txt", "")
	})
	t.Run("a move is refused before any write", func(t *testing.T) {
		dir := location(t)
		write(t, dir, "m.txt", "x\n")
		_, err := run(t, ap, Call{Dir: dir}, ApplyPatchInput{Patch: "*** Begin Patch\n*** Add File: a.txt\n+a\n*** Update File: m.txt\n*** Move to: n.txt\n@@\n-x\n+y\n*** End Patch"})
		if err == nil || !strings.Contains(err.Error(), "not supported") {
			t.Fatalf("move: %v", err)
		}
		assertFile(t, dir, "a.txt", "")
		assertFile(t, dir, "m.txt", "x\n")
	})
	t.Run("an invalid hunk anywhere applies nothing", func(t *testing.T) {
		dir := location(t)
		write(t, dir, "m.txt", "x\n")
		_, err := run(t, ap, Call{Dir: dir}, ApplyPatchInput{Patch: "*** Begin Patch\n*** Add File: a.txt\n+a\n*** Update File: m.txt\n@@\n-not there\n+y\n*** End Patch"})
		if err == nil || !strings.Contains(err.Error(), "nothing was applied") {
			t.Fatalf("mismatch: %v", err)
		}
		_, err = run(t, ap, Call{Dir: dir}, ApplyPatchInput{Patch: "*** Begin Patch\n*** Add File: a.txt\n+a\n*** Update File: m.txt\n@@\n!x\n*** End Patch"})
		if err == nil || !strings.Contains(err.Error(), "line 6") {
			t.Fatalf("parse error: %v", err)
		}
		_, err = run(t, ap, Call{Dir: dir}, ApplyPatchInput{Patch: "*** Begin Patch\n*** Add File: a.txt\n+a\n*** Add File: ../escape.txt\n+b\n*** End Patch"})
		if !errors.Is(err, ErrOutsideLocation) {
			t.Fatalf("escape: %v", err)
		}
		assertFile(t, dir, "a.txt", "")
		assertFile(t, dir, "m.txt", "x\n")
	})
	t.Run("a target changed twice is refused before any write", func(t *testing.T) {
		dir := location(t)
		write(t, dir, "m.txt", "x\n")
		_, err := run(t, ap, Call{Dir: dir}, ApplyPatchInput{Patch: "*** Begin Patch\n*** Update File: m.txt\n@@\n-x\n+y\n*** Delete File: m.txt\n*** End Patch"})
		if err == nil || !strings.Contains(err.Error(), "already changed at line 2") {
			t.Fatalf("err %v", err)
		}
		assertFile(t, dir, "m.txt", "x\n")
	})
}

func TestS55_ApplyPatchCommitFailureReportsWhatWasApplied(t *testing.T) {
	dir := location(t)
	write(t, dir, "m.txt", "x\n")
	_, err := run(t, &ApplyPatch{}, Call{Dir: dir}, ApplyPatchInput{Patch: "*** Begin Patch\n*** Update File: m.txt\n@@\n-x\n+y\n*** Add File: d\n+file\n*** Add File: d/e.txt\n+e\n*** End Patch"})
	var pe *PartialError
	if !errors.As(err, &pe) {
		t.Fatalf("want a partial report, got %v", err)
	}
	if len(pe.Applied) != 2 || pe.Applied[0] != (Applied{"update", "m.txt"}) || pe.Applied[1] != (Applied{"add", "d"}) || pe.Failed.Path != "d/e.txt" {
		t.Fatalf("report %+v", pe)
	}
	if !strings.Contains(err.Error(), "update m.txt; add d;") {
		t.Fatalf("message %q", err)
	}
	assertFile(t, dir, "m.txt", "y\n")
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

// assertFile checks content; "" means the file must not exist.
func assertFile(t *testing.T, dir, rel, want string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if want == "" {
		if !os.IsNotExist(err) {
			t.Fatalf("%s exists (%v)", rel, err)
		}
		return
	}
	if err != nil || string(b) != want {
		t.Fatalf("%s = %q, %v; want %q", rel, b, err, want)
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
