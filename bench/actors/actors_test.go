package actors

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/node"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

var model = messages.ModelRef{Provider: "scripted", ID: "bench"}

// echoTurn answers a prompt with one bash `echo hi` call and the tool's
// result with a final text, instantly.
func echoTurn(_ context.Context, req *provider.Request, n int) (scripted.Turn, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == provider.RoleTool || len(req.Tools) == 0 {
		return scripted.Turn{Text: "done"}, nil
	}
	args, _ := json.Marshal(map[string]string{"command": "echo hi", "description": "bench echo"})
	return scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: fmt.Sprintf("call_%d", n), Name: "bash", Args: args}}}, nil
}

type fixture struct {
	node *node.Node
	loc  string
}

func start(b *testing.B, idleAfter time.Duration) *fixture {
	b.Helper()
	dir := b.TempDir()
	loc := filepath.Join(dir, "project")
	if err := os.MkdirAll(loc, 0o755); err != nil {
		b.Fatal(err)
	}
	prov, err := scripted.New(scripted.Config{Func: echoTurn})
	if err != nil {
		b.Fatal(err)
	}
	n, err := node.Start(context.Background(), node.Config{
		Data:         filepath.Join(dir, "data"),
		Providers:    func(messages.ModelRef) (provider.Provider, error) { return prov, nil },
		DefaultModel: model,
		IdleAfter:    idleAfter,
		NoSpanStore:  true,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = n.Stop(context.Background()) })
	return &fixture{node: n, loc: loc}
}

func (f *fixture) create(ctx context.Context, b *testing.B, id string) {
	if _, err := f.node.Sessions.Create(ctx, id, actors.Create{Location: f.loc}); err != nil {
		b.Fatalf("create %s: %v", id, err)
	}
}

// turn admits one prompt and waits until the drain it started ends.
func (f *fixture) turn(ctx context.Context, id string, k int) error {
	if _, err := f.node.Sessions.Prompt(ctx, id, actors.Prompt{Prompt: messages.Prompt{Text: fmt.Sprint("prompt ", k)}, Delivery: messages.Steer, Resume: true}); err != nil {
		return fmt.Errorf("prompt %s #%d: %w", id, k, err)
	}
	out, err := f.node.Sessions.WaitIdle(ctx, id)
	if err != nil {
		return fmt.Errorf("wait %s #%d: %w", id, k, err)
	}
	if out.Err != "" {
		return fmt.Errorf("turn %s #%d ended: %s (%s)", id, k, out.Err, out.Kind)
	}
	return nil
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

func reportLatencies(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(ds, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(ds, 0.90)), "p90-ms")
	b.ReportMetric(ms(percentile(ds, 0.99)), "p99-ms")
}

// BenchmarkTurnLatency: one prompt at a time, from admission to the
// drain's end (two provider turns and one bash tool call). "fresh" starts a
// new session every 10 turns (the history a short conversation has);
// "long" keeps one session, whose history grows by 4 messages a turn.
func BenchmarkTurnLatency(b *testing.B) {
	for _, per := range []struct {
		name  string
		turns int
	}{{"fresh", 10}, {"long", 1 << 30}} {
		b.Run(per.name, func(b *testing.B) {
			ctx := context.Background()
			f := start(b, time.Minute)
			f.create(ctx, b, "ses_warm")
			for k := range 5 { // warm-up: Location, tool registry, epoch
				if err := f.turn(ctx, "ses_warm", k); err != nil {
					b.Fatal(err)
				}
			}
			runs := max(b.N, 200)
			ds := make([]time.Duration, 0, runs)
			id := ""
			b.ResetTimer()
			cpu0 := cpuTime()
			for k := range runs {
				if k%per.turns == 0 {
					b.StopTimer()
					id = fmt.Sprintf("ses_lat_%d", k)
					f.create(ctx, b, id)
					b.StartTimer()
				}
				t0 := time.Now()
				if err := f.turn(ctx, id, k); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			b.StopTimer()
			reportCPU(b, cpuTime()-cpu0, runs)
			reportLatencies(b, ds)
		})
	}
}

// Scale of BenchmarkConcurrentSessions (smaller runs for profiling).
var (
	concSessions = flag.Int("sessions", 1000, "BenchmarkConcurrentSessions: concurrent sessions")
	concTurns    = flag.Int("turns", 10, "BenchmarkConcurrentSessions: turns per session")
)

// BenchmarkConcurrentSessions: 1,000 sessions each run 10 turns one after
// another, all sessions at once; reports turns/s over the whole run.
func BenchmarkConcurrentSessions(b *testing.B) {
	sessions, turns := *concSessions, *concTurns
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for i := range b.N {
		b.StopTimer()
		f := start(b, time.Minute)
		ids := make([]string, sessions)
		for s := range sessions {
			ids[s] = fmt.Sprintf("ses_c%d_%d", i, s)
			f.create(ctx, b, ids[s])
		}
		var (
			wg     sync.WaitGroup
			failed atomic.Pointer[error]
			mu     sync.Mutex
			lat    = make([]time.Duration, 0, sessions*turns)
		)
		b.StartTimer()
		t0 := time.Now()
		cpu0 := cpuTime()
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				local := make([]time.Duration, 0, turns)
				for k := range turns {
					t := time.Now()
					if err := f.turn(ctx, id, k); err != nil {
						failed.CompareAndSwap(nil, &err)
						return
					}
					local = append(local, time.Since(t))
				}
				mu.Lock()
				lat = append(lat, local...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		elapsed := time.Since(t0)
		cpu := cpuTime() - cpu0
		b.StopTimer()
		if e := failed.Load(); e != nil {
			b.Fatal(*e)
		}
		b.ReportMetric(float64(sessions*turns)/elapsed.Seconds(), "turns/s")
		reportCPU(b, cpu, sessions*turns)
		reportLatencies(b, lat)
		_ = f.node.Stop(context.Background())
	}
}

// BenchmarkIdleSessions: 10,000 sessions created, then passivated (no
// activation left); reports the heap in use after a GC, absolute and above
// the heap of the started node before the sessions existed.
func BenchmarkIdleSessions(b *testing.B) {
	const sessions = 10000
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for i := range b.N {
		b.StopTimer()
		f := start(b, 200*time.Millisecond)
		base := heapInuse()
		b.StartTimer()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for s := range sessions {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				f.create(ctx, b, fmt.Sprintf("ses_idle%d_%d", i, s))
			}()
		}
		wg.Wait()
		// Passivation is asynchronous: poll (bounded) until none is live.
		deadline := time.Now().Add(2 * time.Minute)
		for len(f.node.Sessions.Active()) > 0 {
			if time.Now().After(deadline) {
				b.Fatalf("%d sessions still active after 2 minutes", len(f.node.Sessions.Active()))
			}
			time.Sleep(50 * time.Millisecond)
		}
		b.StopTimer()
		after := heapInuse()
		b.ReportMetric(float64(after)/(1<<20), "heap-MB")
		b.ReportMetric(float64(after-base)/(1<<20), "heap-delta-MB")
		b.ReportMetric(float64(after-base)/sessions, "B/idle-session")
		_ = f.node.Stop(context.Background())
	}
}

// cpuTime is the CPU (user + system) this process used so far. On a
// machine shared with other work, CPU per turn is steadier than wall time:
// it says how many turns/s the runtime could reach on idle cores
// (2 cores / cpu-ms-per-turn), whatever else runs.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, cpu time.Duration, turns int) {
	b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(turns), "cpu-ms/turn")
}

func heapInuse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}
