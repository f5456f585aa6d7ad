package journal

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
)

type backend struct {
	name string
	open func(b *testing.B) *persistence.Journal
	// engine is the embedded engine the last open made (nil for MariaDB).
	engine *boltsql.Engine
}

func backends() []*backend {
	emb := &backend{name: "embedded"}
	emb.open = func(b *testing.B) *persistence.Journal {
		e, err := boltsql.Open(b.TempDir(), boltsql.Options{NoSync: noSync}) // production default: fsync
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { e.Close() })
		emb.engine = e
		return open(b, e.DB())
	}
	return []*backend{
		emb,
		{name: "mariadb", open: func(b *testing.B) *persistence.Journal {
			db := testdb.MariaDB(b).DB
			persistence.ServerPool(db) // as OpenURL does
			return open(b, db)
		}},
	}
}

// noSync (BENCH_NOSYNC=1) runs the embedded engine without fsync, to
// separate its CPU cost from the disk's.
var noSync = os.Getenv("BENCH_NOSYNC") != ""

func open(b *testing.B, db *sql.DB) *persistence.Journal {
	j, err := persistence.Open(context.Background(), persistence.Config{DB: db, PollInterval: 50 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	return j
}

// turn returns one provider turn's events (8) for assistant message am.
func turn(am string) []messages.Event {
	return []messages.Event{
		messages.TurnStarted{AssistantMessageID: am, Agent: "build", Model: messages.ModelRef{Provider: "p", ID: "m"}},
		messages.ReasoningEnded{AssistantMessageID: am, Text: "thinking about it"},
		messages.TextEnded{AssistantMessageID: am, Text: "Let me look at the files."},
		messages.ToolCalled{AssistantMessageID: am, CallID: "c1", Tool: "bash", Input: []byte(`{"command":"ls"}`), Agent: "build"},
		messages.ToolSucceeded{AssistantMessageID: am, CallID: "c1", Output: "a.go\nb.go\n"},
		messages.ToolCalled{AssistantMessageID: am, CallID: "c2", Tool: "read", Input: []byte(`{"path":"a.go"}`), Agent: "build"},
		messages.ToolSucceeded{AssistantMessageID: am, CallID: "c2", Output: "package a\n"},
		messages.TurnEnded{AssistantMessageID: am, FinishReason: "tool-calls", Usage: messages.Usage{InputTokens: 1000, OutputTokens: 50}},
	}
}

// single returns a one-event batch with a one-statement projection.
func single(i int) []messages.Event {
	return []messages.Event{messages.AgentSwitched{Agent: fmt.Sprintf("agent-%d", i%7)}}
}

func BenchmarkAppend(b *testing.B) {
	for _, be := range backends() {
		for _, sessions := range []int{1, 100} {
			// batch=-8: a provider turn's 8 events one append each, as the
			// Session actor writes them (each continues the previous one's
			// assistant message and tool calls).
			for _, batch := range []int{1, 8, -8} {
				name := fmt.Sprintf("%s/sessions=%d/batch=%d", be.name, sessions, batch)
				if batch == -8 {
					name = fmt.Sprintf("%s/sessions=%d/turn-by-event", be.name, sessions)
				}
				b.Run(name, func(b *testing.B) {
					j := be.open(b)
					ctx := context.Background()
					lasts := make([]int64, sessions)
					var st0 boltsql.Stats
					if be.engine != nil {
						st0 = be.engine.Stats()
					}
					for s := range sessions {
						var err error
						if lasts[s], err = j.Append(ctx, sid(s), 0, 0, messages.SessionCreated{Location: "/p", Agent: "build"}); err != nil {
							b.Fatal(err)
						}
					}
					// b.N appends in total, spread over the sessions; one
					// goroutine per session (one owner per session, like the actor).
					per := (b.N + sessions - 1) / sessions
					var wg sync.WaitGroup
					errs := make(chan error, sessions)
					b.ResetTimer()
					cpu0 := cpuTime()
					start := time.Now()
					for s := range sessions {
						wg.Add(1)
						go func(s int) {
							defer wg.Done()
							last := lasts[s]
							for i := range per {
								evs := single(i)
								if batch != 1 {
									evs = turn(fmt.Sprintf("am%d", i))
								}
								step := len(evs)
								if batch == -8 {
									step = 1
								}
								for k := 0; k < len(evs); k += step {
									n, err := j.Append(ctx, sid(s), last, 0, evs[k:k+step]...)
									if err != nil {
										errs <- err
										return
									}
									last = n
								}
							}
						}(s)
					}
					wg.Wait()
					el := time.Since(start)
					cpu := cpuTime() - cpu0
					b.StopTimer()
					close(errs)
					for err := range errs {
						b.Fatal(err)
					}
					events, appends := per*sessions*abs(batch), per*sessions
					if batch == -8 {
						appends = events
					}
					b.ReportMetric(float64(events)/el.Seconds(), "events/s")
					b.ReportMetric(float64(appends)/el.Seconds(), "appends/s")
					// CPU per append (the whole process's, GC and fsync
					// included) is the figure that survives a loaded, shared
					// machine; events/s swings with other people's load.
					b.ReportMetric(float64(cpu.Microseconds())/float64(appends), "cpu-us/append")
					if be.engine != nil {
						// Group commit: transactions per fsync and the time
						// the writer spends in each fsync (no turn runs then).
						st := be.engine.Stats()
						if n := st.Commits - st0.Commits; n > 0 {
							b.ReportMetric(float64(st.Transactions-st0.Transactions)/float64(n), "txn/commit")
							b.ReportMetric(float64((st.CommitTime-st0.CommitTime).Microseconds())/float64(n)/1000, "commit-ms")
						}
					}
				})
			}
		}
	}
}

func sid(i int) string { return fmt.Sprintf("bench%04d", i) }

// BenchmarkReplay decodes one session's stream of 8,000 events per
// iteration, read from the database by a journal that did not write them;
// "-writer" reads on the journal that wrote them, which serves the newest
// of them (as many as a session's share of its memory bound holds) from
// memory.
func BenchmarkReplay(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) { replay(b, be.open(b), true) })
		b.Run(be.name+"-writer", func(b *testing.B) { replay(b, be.open(b), false) })
	}
}

func replay(b *testing.B, j *persistence.Journal, other bool) {
	ctx := context.Background()
	last, err := j.Append(ctx, "r", 0, 0, messages.SessionCreated{Location: "/p"})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		if last, err = j.Append(ctx, "r", last, 0, turn(fmt.Sprintf("am%d", i))...); err != nil {
			b.Fatal(err)
		}
	}
	if other {
		j = open(b, j.DB())
	}
	b.ReportAllocs()
	b.ResetTimer()
	events := 0
	start := time.Now()
	for range b.N {
		var after int64
		for {
			batch, err := j.ReadEvents(ctx, "r", after, 1000)
			if err != nil {
				b.Fatal(err)
			}
			if len(batch) == 0 {
				break
			}
			events += len(batch)
			after = batch[len(batch)-1].Seq
		}
	}
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkReplayTurn replays a just-written session (SessionCreated and
// one turn, 9 events) from seq 0 with the tail batch the event stream uses,
// as a client opening a session's event stream right after a prompt does:
// on the journal that wrote it (its recent commits are in memory; only
// seqs past them are read) and on another one (all from the database).
func BenchmarkReplayTurn(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name+"/writer", func(b *testing.B) { replayTurn(b, be.open(b), false) })
		b.Run(be.name+"/reader", func(b *testing.B) { replayTurn(b, be.open(b), true) })
	}
}

func replayTurn(b *testing.B, j *persistence.Journal, other bool) {
	ctx := context.Background()
	const sessions = 64
	for i := range sessions {
		last, err := j.Append(ctx, sid(i), 0, 0, messages.SessionCreated{Location: "/p"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err = j.Append(ctx, sid(i), last, 0, turn("am")...); err != nil {
			b.Fatal(err)
		}
	}
	if other {
		j = open(b, j.DB())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		batch, err := j.ReadEvents(ctx, sid(i%sessions), 0, 512)
		if err != nil || len(batch) != 9 {
			b.Fatal(len(batch), err)
		}
	}
}

// BenchmarkTailLatency appends one event at a time while a tailer follows
// the session; latency is from Append's return (after COMMIT) to the
// tailer's receipt, clipped at 0 when the tailer was faster (the in-process
// signal fires right after COMMIT, before Append returns). "start" latencies
// are from the call to Append, an upper bound.
func BenchmarkTailLatency(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			j := be.open(b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			last, err := j.Append(ctx, "t", 0, 0, messages.SessionCreated{Location: "/p"})
			if err != nil {
				b.Fatal(err)
			}
			n := b.N
			recv := make([]time.Time, n)
			done := make(chan error, 1)
			base := last
			go func() {
				i := 0
				for e, err := range j.Events(ctx, "t", base) {
					if err != nil {
						done <- err
						return
					}
					recv[e.Seq-base-1] = time.Now()
					if i++; i == n {
						done <- nil
						return
					}
				}
			}()
			starts, returns := make([]time.Time, n), make([]time.Time, n)
			b.ResetTimer()
			for i := range n {
				starts[i] = time.Now()
				if last, err = j.Append(ctx, "t", last, 0, single(i)...); err != nil {
					b.Fatal(err)
				}
				returns[i] = time.Now()
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			fromReturn, fromStart := make([]time.Duration, n), make([]time.Duration, n)
			for i := range n {
				fromReturn[i] = max(0, recv[i].Sub(returns[i]))
				fromStart[i] = recv[i].Sub(starts[i])
			}
			b.ReportMetric(pct(fromReturn, 0.50), "p50-commit-ms")
			b.ReportMetric(pct(fromReturn, 0.99), "p99-commit-ms")
			b.ReportMetric(pct(fromStart, 0.99), "p99-start-ms")
		})
	}
}

func pct(ds []time.Duration, p float64) float64 {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[int(float64(len(s)-1)*p)].Microseconds()) / 1000
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHistory measures what reading a session's whole model-visible
// history costs (ModelHistory), which the Session actor pays once per
// activation. The session has 200 provider turns (8 events each) before the
// timed reads.
func BenchmarkHistory(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name+"/ModelHistory", func(b *testing.B) {
			j, last := historySession(b, be)
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				if _, err := j.ModelHistory(ctx, "h"); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				var err error
				if last, err = j.Append(ctx, "h", last, 0, turn(fmt.Sprintf("t%d", i))...); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

func historySession(b *testing.B, be *backend) (*persistence.Journal, int64) {
	j := be.open(b)
	ctx := context.Background()
	last, err := j.Append(ctx, "h", 0, 0, messages.SessionCreated{Location: "/p"})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 200 {
		if last, err = j.Append(ctx, "h", last, 0, turn(fmt.Sprintf("old%d", i))...); err != nil {
			b.Fatal(err)
		}
	}
	return j, last
}

func abs(n int) int { return max(n, -n) }
