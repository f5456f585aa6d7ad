package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/cluster/clustertest"
	"github.com/sessionrt/sessionrt/internal/testdb"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bench-cluster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// member builds the member binary once, without -race.
func member(b *testing.B) string {
	buildOnce.Do(func() {
		binPath, buildErr = clustertest.BuildMember(binDir)
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return binPath
}

// start runs a cluster of n members on a fresh MariaDB database.
func start(b *testing.B, n int) (*clustertest.Cluster, string) {
	return startPinned(b, n, "")
}

// startPinned is start with the Location ("project") held by member
// holder ("" for none: tools run where the session is).
func startPinned(b *testing.B, n int, holder string) (*clustertest.Cluster, string) {
	b.Helper()
	db := testdb.MariaDB(b)
	bin := member(b)
	data := b.TempDir()
	loc := filepath.Join(data, "project")
	if err := os.MkdirAll(loc, 0o755); err != nil {
		b.Fatal(err)
	}
	canon, err := filepath.EvalSymlinks(loc)
	if err != nil {
		b.Fatal(err)
	}
	var roots map[string]string
	if holder != "" {
		roots = map[string]string{canon: holder}
	}
	c, err := clustertest.StartCluster(context.Background(), clustertest.Config{
		Data: data, JournalURL: db.URL(), Members: n, ToolSleep: time.Nanosecond, LocationRoots: roots,
		Command: clustertest.MemberCommand(bin),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Stop)
	return c, loc
}

// BenchmarkToolTurnLatency: sequential turns that each run one bash tool
// (two provider turns around it), with the session's grain on m0 and its
// Location held by m0 (local tools) or by m1 (every tool call and its
// settlement cross members); ms/turn.
func BenchmarkToolTurnLatency(b *testing.B) {
	for _, tc := range []struct{ name, holder string }{
		{"location-local", "m0"},
		{"location-on-other-member", "m1"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			c, loc := startPinned(b, 3, tc.holder)
			sid := ""
			for i := 0; sid == ""; i++ {
				if i == 200 {
					b.Fatal("no session ID among 200 is placed on m0")
				}
				id := fmt.Sprintf("ses_bench_tool_%d", i)
				if h, err := c.Host(ctx, id); err != nil {
					b.Fatal(err)
				} else if h == 0 {
					sid = id
				}
			}
			if err := c.Create(ctx, 0, sid, loc); err != nil {
				b.Fatal(err)
			}
			if err := c.Turn(ctx, 0, sid, "msg_warm", "tool s="+sid); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				if err := c.Turn(ctx, 0, sid, fmt.Sprintf("msg_%d_%d", b.N, i), "tool s="+sid); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/turn")
		})
	}
}

// BenchmarkTurnLatency: sequential turns of one session; ms/turn.
func BenchmarkTurnLatency(b *testing.B) {
	for _, tc := range []struct {
		name    string
		members int
		cross   bool
	}{
		{"single-node", 1, false},
		{"3-members-via-host", 3, false},
		{"3-members-via-other", 3, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			c, loc := start(b, tc.members)
			const sid = "ses_bench_latency"
			host, err := c.Host(ctx, sid)
			if err != nil {
				b.Fatal(err)
			}
			via := host
			if tc.cross {
				via = (host + 1) % c.Size()
			}
			if err := c.Create(ctx, via, sid, loc); err != nil {
				b.Fatal(err)
			}
			// One warm-up turn activates the grain and opens connections.
			if err := c.Turn(ctx, via, sid, "msg_warm", "plain s="+sid); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				if err := c.Turn(ctx, via, sid, fmt.Sprintf("msg_%d_%d", b.N, i), "plain s="+sid); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/turn")
		})
	}
}

// BenchmarkThroughput: 24 sessions prompted concurrently through every
// member; b.N turns in all; turns/s.
func BenchmarkThroughput(b *testing.B) {
	const sessions = 24
	for _, members := range []int{1, 3} {
		b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) {
			ctx := context.Background()
			c, loc := start(b, members)
			for s := range sessions {
				sid := fmt.Sprintf("ses_bench_tp_%d", s)
				if err := c.Create(ctx, s%c.Size(), sid, loc); err != nil {
					b.Fatal(err)
				}
				if err := c.Turn(ctx, s%c.Size(), sid, "msg_warm_"+sid, "plain s="+sid); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, sessions)
			b.ResetTimer()
			start := time.Now()
			for s := range sessions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sid := fmt.Sprintf("ses_bench_tp_%d", s)
					for k := 0; ; k++ {
						if next.Add(1) > int64(b.N) {
							return
						}
						// Each turn enters through a different member.
						if err := c.Turn(ctx, (s+k)%c.Size(), sid, fmt.Sprintf("msg_%s_%d_%d", sid, b.N, k), "plain s="+sid); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "turns/s")
		})
	}
}
