package metrics

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"regexp"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The cluster's series (cluster.ExportMetrics) need a running member; their
// names are listed here instead.
var clusterSeries = []string{"sessionrt_cluster_members", "sessionrt_cluster_member_up", "sessionrt_cluster_topology_changes_total",
	"sessionrt_cluster_grains", "sessionrt_cluster_placement_changes_total", "sessionrt_cluster_failovers_total"}

// Every series the Grafana dashboard (deploy/grafana/sessionrt.json)
// queries is one the server exposes: a rename breaks this test, not the
// operators' dashboard.
func TestGrafanaDashboardQueriesExposedSeries(t *testing.T) {
	reg := NewRegistry()
	rt, err := NewRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := rt.ObserveJournal(JournalSource{
		Engine:             func() (uint64, uint64, time.Duration, bool) { return 1, 1, time.Millisecond, true },
		Size:               func(context.Context) (int64, error) { return 1, nil },
		Pool:               func() sql.DBStats { return sql.DBStats{} },
		AwaitingPermission: func(context.Context) (int64, error) { return 0, nil },
	}); err != nil {
		t.Fatal(err)
	}
	rt.SessionsActive.Inc()
	rt.JournalWaiting.Inc()
	rt.DrainFinished("completed")
	rt.TurnFinished("p", "stop")
	rt.ToolCallFinished("bash", "succeeded")
	rt.ToolCallTook(ctx, "bash", "succeeded", time.Millisecond)
	rt.JournalAppended(time.Millisecond)
	rt.JournalBatch(1)
	rt.JournalFenced()
	rt.JournalRetried("failed")
	rt.ContextObserved("all", time.Millisecond)
	rt.SourceUnavailable("git")
	rt.HTTPServed(ctx, "GET", "/api/session", 200, time.Millisecond)
	rt.GenAIOperation(ctx, Operation{Provider: "p", Model: "m", Duration: time.Second, FirstChunk: time.Millisecond, InputTokens: 1, OutputTokens: 1})

	mfs, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	exposed := map[string]bool{}
	for _, mf := range mfs {
		exposed[mf.GetName()] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				exposed[mf.GetName()+s] = true
			}
		}
	}
	for _, n := range clusterSeries {
		exposed[n] = true
	}

	raw, err := os.ReadFile("../../deploy/grafana/sessionrt.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard is not JSON: %v", err)
	}
	series := regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)
	queried := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, m := range series.FindAllStringSubmatch(tg.Expr, -1) {
				queried++
				if !exposed[m[1]] {
					t.Errorf("panel %q queries %s, which the server does not expose", p.Title, m[1])
				}
			}
		}
	}
	if queried < 30 {
		t.Fatalf("the dashboard queries only %d series", queried)
	}
}
