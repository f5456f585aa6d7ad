package persistence_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/journaltest"
)

func TestVerifyIsCleanAfterARandomizedTenThousandEventWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		// Minutes under -race on 2 cores: the embedded engine spends ~100 µs
		// analysing each statement.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		w := journaltest.New(42, 25, "ses")
		n, err := w.Run(ctx, j, 10000)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := j.Verify(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Clean() || rep.Events != n || rep.Sessions != 25 {
			t.Fatalf("verify: %d sessions, %d events (wrote %d), differences:\n%s", rep.Sessions, rep.Events, n, strings.Join(rep.Differences, "\n"))
		}
		// Every event type was exercised.
		types := map[string]bool{}
		for _, sid := range w.Sessions() {
			for _, e := range readAll(t, j, sid) {
				types[e.Type.Name] = true
			}
		}
		if len(types) < 26 {
			t.Fatalf("workload used %d event types: %v", len(types), types)
		}
	})
}

func TestVerifyReportsTamperedProjections(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := testCtx(t)
		w := journaltest.New(7, 3, "ses")
		if _, err := w.Run(ctx, j, 300); err != nil {
			t.Fatal(err)
		}
		db := j.DB()
		for _, q := range []string{
			`UPDATE sessions SET agent = 'tampered' WHERE session_id = 'ses0000'`,
			`DELETE FROM session_input WHERE session_id = 'ses0001' AND admitted_seq = (SELECT MIN(admitted_seq) FROM (SELECT admitted_seq FROM session_input WHERE session_id = 'ses0001') x)`,
			`INSERT INTO tool_calls VALUES ('ses0002', 'ghost', 'c', 'bash', '', 'running', 1, 1)`,
		} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		rep, err := j.Verify(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all := strings.Join(rep.Differences, "\n")
		for _, want := range []string{
			`sessions [ses0000]: column agent stored "tampered"`,
			`session_input [ses0001 `,
			`row missing from the stored projection`,
			`tool_calls [ses0002 ghost c]: stored row not produced by replay`,
		} {
			if !strings.Contains(all, want) {
				t.Errorf("differences lack %q:\n%s", want, all)
			}
		}
	})
}
