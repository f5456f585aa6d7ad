package filesnap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/filesnap"
)

const nFiles = 10000

// cpuClock measures the CPU time (user + system) of this process and of
// its reaped children (git) between Start and Stop: on a shared machine the
// wall time of a benchmark says more about the load than about the code.
type cpuClock struct {
	total time.Duration
	start time.Duration
}

func cpuNow() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

func (c *cpuClock) Start() { c.start = cpuNow() }
func (c *cpuClock) Stop()  { c.total += cpuNow() - c.start }

// report adds cpu-ms/op beside ns/op.
func (c *cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(c.total.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// project generates the 10,000-file project, aged a minute so that the
// stat cache trusts it (as a project the agent did not just write).
func project(b *testing.B) string {
	b.Helper()
	root := b.TempDir()
	line := strings.Repeat("x", 63) + "\n"
	content := strings.Repeat(line, 16)
	for i := 0; i < nFiles; i++ {
		p := filepath.Join(root, fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("file%03d.go", i%100))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("// %d\n%s", i, content)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, ".gitignore"), []byte("/build/\n*.o\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "build"), 0o755)
	for i := 0; i < 100; i++ {
		os.WriteFile(filepath.Join(root, "build", fmt.Sprintf("obj%d.o", i)), []byte(content), 0o644)
	}
	old := time.Now().Add(-time.Minute)
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			os.Chtimes(p, old, old)
		}
		return nil
	})
	return root
}

// edit changes ten files, as a turn's tools might.
func edit(b *testing.B, root string, round int) {
	for j := 0; j < 10; j++ {
		i := (round*10 + j) * 97 % nFiles
		p := filepath.Join(root, fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("file%03d.go", i%100))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("// edited %d %d\n", round, j)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func store(b *testing.B) *filesnap.Store {
	st, err := filesnap.Open(filesnap.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkTakeFirst10k: the first snapshot of a Location (every file hashed and stored).
func BenchmarkTakeFirst10k(b *testing.B) {
	var clk cpuClock
	root := project(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		st := store(b)
		b.StartTimer()
		clk.Start()
		if _, err := st.Take(root); err != nil {
			b.Fatal(err)
		}
		clk.Stop()
	}
	clk.report(b)
}

// BenchmarkTakeUnchanged10k: a turn that changed nothing (stat only, nothing written).
func BenchmarkTakeUnchanged10k(b *testing.B) {
	var clk cpuClock
	root, st := project(b), store(b)
	if _, err := st.Take(root); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clk.Start()
		if _, err := st.Take(root); err != nil {
			b.Fatal(err)
		}
		clk.Stop()
	}
	clk.report(b)
}

// BenchmarkTakeTenChanged10k: a turn whose tools changed ten files.
func BenchmarkTakeTenChanged10k(b *testing.B) {
	var clk cpuClock
	root, st := project(b), store(b)
	if _, err := st.Take(root); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		edit(b, root, i)
		b.StartTimer()
		clk.Start()
		if _, err := st.Take(root); err != nil {
			b.Fatal(err)
		}
		clk.Stop()
	}
	clk.report(b)
}

// gitTrack is OpenCode's snapshot: a shadow GIT_DIR over the project.
func gitTrack(b *testing.B, gitDir, root string) {
	for _, args := range [][]string{{"add", "."}, {"write-tree"}} {
		cmd := exec.Command("git", append([]string{"--git-dir", gitDir, "--work-tree", root}, args...)...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
}

func gitInit(b *testing.B) string {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("no git binary")
	}
	gitDir := filepath.Join(b.TempDir(), "git")
	if out, err := exec.Command("git", "init", "-q", "--bare", gitDir).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v: %s", err, out)
	}
	for _, kv := range [][2]string{{"core.autocrlf", "false"}, {"core.bare", "false"}} {
		exec.Command("git", "--git-dir", gitDir, "config", kv[0], kv[1]).Run()
	}
	return gitDir
}

func BenchmarkGitFirst10k(b *testing.B) {
	var clk cpuClock
	root := project(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		gitDir := gitInit(b)
		b.StartTimer()
		clk.Start()
		gitTrack(b, gitDir, root)
		clk.Stop()
	}
	clk.report(b)
}

func BenchmarkGitUnchanged10k(b *testing.B) {
	var clk cpuClock
	root, gitDir := project(b), gitInit(b)
	gitTrack(b, gitDir, root)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clk.Start()
		gitTrack(b, gitDir, root)
		clk.Stop()
	}
	clk.report(b)
}

func BenchmarkGitTenChanged10k(b *testing.B) {
	var clk cpuClock
	root, gitDir := project(b), gitInit(b)
	gitTrack(b, gitDir, root)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		edit(b, root, i)
		b.StartTimer()
		clk.Start()
		gitTrack(b, gitDir, root)
		clk.Stop()
	}
	clk.report(b)
}
