package spanstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/internal/testdb"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// backend is a database the store must work on.
type backend struct {
	name string
	open func(t *testing.T) *sql.DB
}

// backends lists MariaDB and, where present, the embedded engine (see
// backends_*_test.go).
func backends() []backend {
	return append([]backend{{"mariadb", func(t *testing.T) *sql.DB { return testdb.MariaDB(t).DB }}}, extraBackends...)
}

func eachBackend(t *testing.T, f func(t *testing.T, db *sql.DB)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { f(t, b.open(t)) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func openStore(t *testing.T, db *sql.DB, cfg Config) *Store {
	t.Helper()
	cfg.DB = db
	if cfg.PruneInterval == 0 {
		cfg.PruneInterval = -1
	}
	s, err := Open(ctxT(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var (
	t0      = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	traceID = trace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c}
)

func spanID(n byte) trace.SpanID { return trace.SpanID{0, 0, 0, 0, 0, 0, 0, n} }

func stub(session string, id, parent byte, name string, startMs, durMs int, attrs ...attribute.KeyValue) tracetest.SpanStub {
	if session != "" {
		attrs = append(attrs, attribute.String(SessionKey, session))
	}
	st := tracetest.SpanStub{
		Name:        name,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID(id), TraceFlags: trace.FlagsSampled}),
		SpanKind:    trace.SpanKindInternal,
		StartTime:   t0.Add(time.Duration(startMs) * time.Millisecond),
		EndTime:     t0.Add(time.Duration(startMs+durMs) * time.Millisecond),
		Attributes:  attrs,
	}
	if parent != 0 {
		st.Parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID(parent), Remote: false})
	}
	return st
}

func export(t *testing.T, s *Store, stubs ...tracetest.SpanStub) {
	t.Helper()
	if err := s.ExportSpans(ctxT(t), tracetest.SpanStubs(stubs).Snapshots()); err != nil {
		t.Fatal(err)
	}
}

func names(spans []Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func TestStoreReturnsASessionsSpansInStartOrderWithTypedAttributes(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sql.DB) {
		s := openStore(t, db, Config{BatchRows: 2})
		failed := stub("ses_1", 4, 1, "chat gpt-4o", 900, 100, attribute.String("error.type", "timeout"))
		failed.Status = sdktrace.Status{Code: codes.Error, Description: "deadline exceeded"}
		failed.Events = []sdktrace.Event{{Name: "exception", Time: t0.Add(time.Second), Attributes: []attribute.KeyValue{attribute.String("exception.message", "boom")}}}
		export(t, s,
			stub("ses_1", 3, 1, "execute_tool bash", 500, 300, attribute.String("gen_ai.tool.call.id", "call_1")),
			stub("ses_1", 1, 0, "invoke_agent", 0, 1000,
				attribute.String("gen_ai.agent.name", "build"), attribute.Int64("gen_ai.usage.input_tokens", 120),
				attribute.Float64("f", 0.5), attribute.Bool("b", true), attribute.StringSlice("gen_ai.response.finish_reasons", []string{"stop", "length"}),
				attribute.Int64Slice("is", []int64{1, -2}), attribute.Float64Slice("fs", []float64{1.5}), attribute.BoolSlice("bs", []bool{false})),
			stub("ses_2", 9, 0, "invoke_agent", 100, 10),
			stub("SES_1", 8, 0, "invoke_agent", 100, 10), // IDs are compared exactly
			stub("", 7, 0, "unrelated", 100, 10),
			stub("ses_1", 2, 1, "chat gpt-4o", 10, 480),
			failed,
		)
		got, err := s.Trace(ctxT(t), "ses_1")
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"invoke_agent", "chat gpt-4o", "execute_tool bash", "chat gpt-4o"}; !reflect.DeepEqual(names(got), want) {
			t.Fatalf("spans of ses_1 = %v, want %v", names(got), want)
		}
		root := got[0]
		if root.ParentSpanID != "" || root.SpanID != "0000000000000001" || root.TraceID != "0af7651916cd43dd8448eb211c80319c" ||
			!root.Start.Equal(t0) || root.Duration() != time.Second || root.Kind != "internal" || root.SessionID != "ses_1" {
			t.Fatalf("root span read back as %+v", root)
		}
		wantAttrs := map[string]any{
			SessionKey: "ses_1", "gen_ai.agent.name": "build", "gen_ai.usage.input_tokens": int64(120),
			"f": 0.5, "b": true, "gen_ai.response.finish_reasons": []string{"stop", "length"},
			"is": []int64{1, -2}, "fs": []float64{1.5}, "bs": []bool{false},
		}
		if !reflect.DeepEqual(root.Attributes, wantAttrs) {
			t.Fatalf("attributes read back as %#v\nwant %#v", root.Attributes, wantAttrs)
		}
		if got[1].ParentSpanID != "0000000000000001" {
			t.Fatalf("child parent = %q", got[1].ParentSpanID)
		}
		f := got[3]
		if f.StatusCode != "Error" || f.StatusMessage != "deadline exceeded" || len(f.Events) != 1 ||
			f.Events[0].Name != "exception" || f.Events[0].Attributes["exception.message"] != "boom" || !f.Events[0].Time.Equal(t0.Add(time.Second)) {
			t.Fatalf("failed span read back as %+v", f)
		}
		if other, _ := s.Trace(ctxT(t), "ses_2"); len(other) != 1 {
			t.Fatalf("ses_2 has %d spans, want 1", len(other))
		}
		if none, err := s.Trace(ctxT(t), "ses_missing"); err != nil || len(none) != 0 {
			t.Fatalf("unknown session: %v, %v", none, err)
		}
		if _, err := s.Trace(ctxT(t), ""); !errors.Is(err, ErrNoSession) {
			t.Fatalf("empty session: %v, want ErrNoSession", err)
		}
		st := s.Stats()
		if st.Exported != 6 || st.DroppedNoSession != 1 {
			t.Fatalf("stats = %+v, want 6 exported, 1 without session", st)
		}
	})
}

func TestStoreBoundsOversizedSpansInsteadOfFailingTheBatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sql.DB) {
		s := openStore(t, db, Config{})
		var many []attribute.KeyValue
		for i := range 40 {
			many = append(many, attribute.String(fmt.Sprintf("big.%d", i), strings.Repeat("x", 10000)))
		}
		many = append(many, attribute.String("gen_ai.tool.name", "bash"))
		long := stub("ses_big", 1, 0, strings.Repeat("n", 400), 0, 1, many...)
		var evs []sdktrace.Event
		for i := range 100 {
			evs = append(evs, sdktrace.Event{Name: fmt.Sprint("e", i), Time: t0})
		}
		long.Events = evs
		tooLongSession := stub(strings.Repeat("s", 300), 2, 0, "x", 0, 1)
		badUTF8 := stub("ses_big", 3, 0, "bad\xffname", 5, 1)
		export(t, s, long, tooLongSession, badUTF8)

		got, err := s.Trace(ctxT(t), "ses_big")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("got %d spans, want 2", len(got))
		}
		sp := got[0]
		if len([]rune(sp.Name)) != maxName || sp.Attributes["gen_ai.tool.name"] != "bash" ||
			sp.Attributes["sessionrt.attributes_truncated"] != true || len(sp.Events) != maxEvents || sp.Events[maxEvents-1].Name != "e99" {
			t.Fatalf("oversized span read back as name %d chars, attrs %v, %d events", len([]rune(sp.Name)), sp.Attributes, len(sp.Events))
		}
		if got[1].Name != "bad\uFFFDname" {
			t.Fatalf("invalid UTF-8 name read back as %q", got[1].Name)
		}
		if st := s.Stats(); st.DroppedInvalid != 1 {
			t.Fatalf("stats = %+v, want one invalid", st)
		}
	})
}

func TestRetentionKeepsTheNewestSpansAndDropsOldOnes(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sql.DB) {
		now := t0.Add(time.Hour)
		s := openStore(t, db, Config{MaxSpans: 5, MaxAge: 30 * time.Minute, Now: func() time.Time { return now }})
		var stubs []tracetest.SpanStub
		for i := range 8 { // 8 recent spans, 2 minutes apart: 0..14 minutes after t0+40m
			stubs = append(stubs, stub(fmt.Sprint("ses_", i%2), byte(i+1), 0, fmt.Sprint("s", i), (40+2*i)*60000, 1))
		}
		stubs = append(stubs, stub("ses_0", 20, 0, "ancient", 0, 1)) // 60 minutes old
		export(t, s, stubs...)

		n, err := s.Prune(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if n != 4 {
			t.Fatalf("pruned %d, want 4 (1 too old, 3 beyond the newest 5)", n)
		}
		a, _ := s.Trace(ctxT(t), "ses_0")
		b, _ := s.Trace(ctxT(t), "ses_1")
		if want := []string{"s4", "s6"}; !reflect.DeepEqual(names(a), want) {
			t.Fatalf("ses_0 keeps %v, want %v", names(a), want)
		}
		if want := []string{"s3", "s5", "s7"}; !reflect.DeepEqual(names(b), want) {
			t.Fatalf("ses_1 keeps %v, want %v", names(b), want)
		}
		if n, err := s.Prune(ctxT(t)); err != nil || n != 0 {
			t.Fatalf("second prune: %d, %v; want nothing to do", n, err)
		}
		if s.Stats().Pruned != 4 {
			t.Fatalf("stats %+v", s.Stats())
		}
	})
}

func TestBackgroundPruningRuns(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sql.DB) {
		errs := make(chan error, 1)
		s, err := Open(ctxT(t), Config{DB: db, MaxSpans: 1, MaxAge: -1, PruneInterval: 10 * time.Millisecond,
			OnError: func(err error) {
				select {
				case errs <- err:
				default:
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		export(t, s, stub("ses_p", 1, 0, "old", 0, 1), stub("ses_p", 2, 0, "new", 10, 1))
		deadline := time.After(20 * time.Second)
		for s.Stats().Pruned == 0 {
			select {
			case err := <-errs:
				t.Fatal(err)
			case <-deadline:
				t.Fatal("background pruning did not run within 20 s")
			case <-time.After(5 * time.Millisecond):
			}
		}
		got, _ := s.Trace(ctxT(t), "ses_p")
		if !reflect.DeepEqual(names(got), []string{"new"}) {
			t.Fatalf("kept %v, want [new]", names(got))
		}
	})
}

func TestStoreWorksBehindABatchSpanProcessor(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sql.DB) {
		s := openStore(t, db, Config{})
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(s))
		tr := tp.Tracer("test")
		ctx, root := tr.Start(context.Background(), "invoke_agent", trace.WithAttributes(attribute.String(SessionKey, "ses_bsp")))
		for i := range 50 {
			_, c := tr.Start(ctx, fmt.Sprint("chat ", i), trace.WithAttributes(attribute.String(SessionKey, "ses_bsp")))
			c.End()
		}
		root.End()
		if err := tp.Shutdown(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		got, err := s.Trace(ctxT(t), "ses_bsp")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 51 || got[0].Name != "invoke_agent" {
			t.Fatalf("got %d spans (first %q), want 51 starting with invoke_agent", len(got), got[0].Name)
		}
		for _, c := range got[1:] {
			if c.ParentSpanID != got[0].SpanID || c.TraceID != got[0].TraceID {
				t.Fatalf("span %s parent %s/%s, want %s/%s", c.Name, c.TraceID, c.ParentSpanID, got[0].TraceID, got[0].SpanID)
			}
		}
		// The provider shut the store down: no more exports, reads still work.
		if err := s.ExportSpans(ctxT(t), nil); !errors.Is(err, ErrShutdown) {
			t.Fatalf("export after shutdown: %v, want ErrShutdown", err)
		}
	})
}

func TestOpenRejectsBadConfig(t *testing.T) {
	if _, err := Open(context.Background(), Config{}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "DB") {
		t.Fatalf("nil DB: %v", err)
	}
	db, err := sql.Open("mysql", "root@tcp(127.0.0.1:1)/x")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, name := range []string{"spans; DROP TABLE x", "a-b", strings.Repeat("t", 65)} {
		if _, err := Open(context.Background(), Config{DB: db, Table: name}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "table name") {
			t.Fatalf("table %q: %v", name, err)
		}
	}
}

func TestTraceReportsCorruptRows(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sql.DB) {
		s := openStore(t, db, Config{Table: "spans_corrupt"})
		export(t, s, stub("ses_c", 1, 0, "ok", 0, 1))
		if _, err := db.ExecContext(ctxT(t), "UPDATE spans_corrupt SET attributes = ? WHERE session_id = ?", []byte{0xc1}, "ses_c"); err != nil {
			t.Fatal(err)
		}
		_, err := s.Trace(ctxT(t), "ses_c")
		if err == nil || !strings.Contains(err.Error(), "ses_c") || !strings.Contains(err.Error(), "0000000000000001") || !strings.Contains(err.Error(), "corrupt attributes") {
			t.Fatalf("corrupt row: err = %v, want one naming session, span and column", err)
		}
	})
}

func TestBackgroundRetentionCountsOnlyWhenOverTheSlack(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sql.DB) {
		s := openStore(t, db, Config{MaxSpans: 10, MaxAge: -1})
		next := 0
		add := func(n int) {
			var stubs []tracetest.SpanStub
			for range n {
				next++
				stubs = append(stubs, stub("ses_g", byte(next), 0, fmt.Sprint("s", next), next, 1))
			}
			export(t, s, stubs...)
		}
		stored := func() int {
			got, err := s.Trace(ctxT(t), "ses_g")
			if err != nil {
				t.Fatal(err)
			}
			return len(got)
		}
		steps := []struct {
			add, wantPruned, wantStored int
			exact                       bool
		}{
			{add: 12, wantPruned: 2, wantStored: 10}, // first run counts: over the limit
			{add: 1, wantPruned: 0, wantStored: 11},  // within the slack (10 + 1): no count
			{add: 1, wantPruned: 2, wantStored: 10},  // over the slack
			{add: 1, wantPruned: 1, wantStored: 10, exact: true},
		}
		for i, st := range steps {
			add(st.add)
			n, err := s.prune(ctxT(t), st.exact)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(st.wantPruned) || stored() != st.wantStored {
				t.Fatalf("step %d: pruned %d, stored %d; want %d, %d", i, n, stored(), st.wantPruned, st.wantStored)
			}
		}
	})
}
