package tools

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/toolactors"
	"github.com/sessionrt/sessionrt/toolactors/bound"
	"github.com/sessionrt/sessionrt/toolactors/managed"
	"github.com/sessionrt/sessionrt/toolactors/permission"
	"github.com/sessionrt/sessionrt/toolactors/tools"
)

func tenMB() string {
	var b strings.Builder
	b.Grow(10<<20 + 200)
	for i := 0; b.Len() < 10<<20; i++ {
		fmt.Fprintf(&b, "%08d the quick brown fox jumps over the lazy dog, output line of a noisy build tool\n", i)
	}
	return b.String()
}

// BenchmarkBound10MB: the pure bounding decision on 10 MB of output (target ≤ 20 ms).
func BenchmarkBound10MB(b *testing.B) {
	text := tenMB()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !bound.Exceeds(text, bound.Limits{}) {
			b.Fatal("not over the limit")
		}
		r := bound.Preview(text, bound.Limits{}, "/data/tool-output/tool_x")
		if !r.Truncated || len(r.Text) > bound.DefaultMaxBytes {
			b.Fatal("bad preview")
		}
	}
}

// BenchmarkBound10MBWithManagedFile adds writing the complete text to a managed file.
func BenchmarkBound10MBWithManagedFile(b *testing.B) {
	text := tenMB()
	store, err := managed.New(managed.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		path, err := store.Write(text)
		if err != nil {
			b.Fatal(err)
		}
		r := bound.Preview(text, bound.Limits{}, path)
		if !r.Truncated {
			b.Fatal("not truncated")
		}
		b.StopTimer()
		_ = os.Remove(path)
		b.StartTimer()
	}
}

// Benchmark200ConcurrentEcho: one op is 200 concurrent `echo` bash calls through the
// registry actor, all settled. Afterwards no process of any call's group may be alive
// and the descriptor count must be back to where it started.
func Benchmark200ConcurrentEcho(b *testing.B) {
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	store, err := managed.New(managed.Config{Dir: filepath.Join(dir, ".out")})
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var mu sync.Mutex
	var leaders []int
	props, err := toolactors.Props(toolactors.Config{Dir: dir, Output: store, Logger: quiet, Tools: tools.Config{
		OnBashStart: func(_ string, pid int) { mu.Lock(); leaders = append(leaders, pid); mu.Unlock() },
	}})
	if err != nil {
		b.Fatal(err)
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	reg := sys.Root.Spawn(props)
	defer sys.Root.Stop(reg)
	rules := []permission.Rule{{Action: "*", Resource: "*", Effect: permission.Allow}}
	input, _ := json.Marshal(map[string]any{"command": "echo hello"})

	round := func(r int) {
		var wg sync.WaitGroup
		errs := make(chan string, 200)
		for i := 0; i < 200; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				res, err := sys.Root.RequestFuture(reg, &toolactors.ExecuteTool{
					SessionID: "bench", CallID: fmt.Sprintf("r%d-c%d", r, i), Tool: "bash", Input: input, Rules: rules,
				}, 60*time.Second).Result()
				if err != nil {
					errs <- err.Error()
					return
				}
				s := res.(*toolactors.ToolSettled)
				if s.Error != nil || !strings.HasPrefix(s.Output.Text, "hello\n") {
					errs <- fmt.Sprintf("%+v %+v", s.Output, s.Error)
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			b.Fatal(e)
		}
	}
	round(-1) // warm up: spawn paths, goroutine pools
	fdsBefore := countFDs(b)
	mu.Lock()
	leaders = nil
	mu.Unlock()

	cpuBefore := childCPU(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		round(i)
	}
	b.StopTimer()
	b.ReportMetric(float64((childCPU(b)-cpuBefore).Microseconds())/float64(200*b.N), "child-cpu-µs/call")

	mu.Lock()
	started := len(leaders)
	groups := map[int]bool{} // PIDs may be reused across rounds: a set, counted separately
	for _, p := range leaders {
		groups[p] = true
	}
	mu.Unlock()
	if started != 200*b.N {
		b.Fatalf("%d calls started, want %d", started, 200*b.N)
	}
	// Call actors stop right after settling; wait (bounded) for the last ones.
	leakedFDs := 0
	deadline := time.Now().Add(10 * time.Second)
	for {
		leakedFDs = countFDs(b) - fdsBefore
		if leakedFDs <= 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	leakedProcs := aliveInGroups(groups)
	b.ReportMetric(float64(leakedProcs), "leaked-procs")
	b.ReportMetric(float64(max(leakedFDs, 0)), "leaked-fds")
	if leakedProcs != 0 || leakedFDs > 0 {
		b.Fatalf("leaked %d processes and %d descriptors", leakedProcs, leakedFDs)
	}
}

// BenchmarkEchoCall: one op is one `echo` bash call through the registry actor,
// settled, one at a time: the latency of a call, and the CPU its processes (the shell,
// and the tool watchdog's share) used.
func BenchmarkEchoCall(b *testing.B) {
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	store, err := managed.New(managed.Config{Dir: filepath.Join(dir, ".out")})
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	props, err := toolactors.Props(toolactors.Config{Dir: dir, Output: store, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	reg := sys.Root.Spawn(props)
	defer sys.Root.Stop(reg)
	rules := []permission.Rule{{Action: "*", Resource: "*", Effect: permission.Allow}}
	input, _ := json.Marshal(map[string]any{"command": "echo hello"})
	call := func(i int) {
		res, err := sys.Root.RequestFuture(reg, &toolactors.ExecuteTool{
			SessionID: "bench", CallID: fmt.Sprintf("c%d", i), Tool: "bash", Input: input, Rules: rules,
		}, 60*time.Second).Result()
		if err != nil {
			b.Fatal(err)
		}
		if s := res.(*toolactors.ToolSettled); s.Error != nil || !strings.HasPrefix(s.Output.Text, "hello\n") {
			b.Fatalf("%+v %+v", s.Output, s.Error)
		}
	}
	call(-1) // warm up
	cpuBefore, selfBefore := childCPU(b), selfCPU(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		call(i)
	}
	b.StopTimer()
	b.ReportMetric(float64((childCPU(b)-cpuBefore).Microseconds())/float64(b.N), "child-cpu-µs/call")
	b.ReportMetric(float64((selfCPU(b)-selfBefore).Microseconds())/float64(b.N), "self-cpu-µs/call")
}

// selfCPU is the user+system CPU of this process: the server's side of the calls.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childCPU is the user+system CPU of this process's descendants so far: those reaped
// (getrusage) and the live children with what they reaped, which is how the tool
// watchdog, a long-lived child, and the shells it reaps are counted.
func childCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatal(err)
	}
	total := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		raw, _ := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "children"))
		for _, c := range strings.Fields(string(raw)) {
			stat, err := os.ReadFile(filepath.Join("/proc", c, "stat"))
			if err != nil {
				continue
			}
			s := string(stat)
			f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
			// After ')': state(0) … utime(11) stime(12) cutime(13) cstime(14), in ticks.
			for _, i := range []int{11, 12, 13, 14} {
				if i < len(f) {
					n, _ := strconv.ParseInt(f[i], 10, 64)
					total += time.Duration(n) * time.Second / 100
				}
			}
		}
	}
	return total
}

func countFDs(b *testing.B) int {
	e, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		b.Fatal(err)
	}
	return len(e)
}

// aliveInGroups counts live (non-zombie) processes whose process group is in groups.
func aliveInGroups(groups map[int]bool) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(raw)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // state ppid pgrp ...
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if pg, _ := strconv.Atoi(f[2]); groups[pg] {
			n++
		}
	}
	return n
}
