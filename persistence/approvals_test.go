package persistence_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/persistence"
)

// Saved project approvals outlive the process (S56's "always"), keep their order,
// are kept once, and are per project.
func TestApprovalsAreSavedPerProjectInOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if got, err := j.Approvals(ctx, "/p"); err != nil || len(got) != 0 {
			t.Fatalf("fresh journal: %v %v", got, err)
		}
		ls := persistence.Approval{Action: "bash", Resource: "ls *", Effect: "allow"}
		edit := persistence.Approval{Action: "edit", Resource: "src/*", Effect: "allow"}
		if err := j.Approve(ctx, "/p", []persistence.Approval{ls, edit}); err != nil {
			t.Fatal(err)
		}
		// A retried reply adds nothing; a new rule goes last.
		deny := persistence.Approval{Action: "edit", Resource: "src/secret", Effect: "deny"}
		if err := j.Approve(ctx, "/p", []persistence.Approval{ls, deny}); err != nil {
			t.Fatal(err)
		}
		want := []persistence.Approval{ls, edit, deny}
		if got, err := j.Approvals(ctx, "/p"); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("approvals of /p: %v %v, want %v", got, err, want)
		}
		if got, err := j.Approvals(ctx, "/other"); err != nil || len(got) != 0 {
			t.Fatalf("another project sees /p's approvals: %v %v", got, err)
		}
		// Verify rebuilds session projections only; saved approvals are not one.
		if rep, err := j.Verify(ctx); err != nil || !rep.Clean() {
			t.Fatalf("verify: %v %v", err, rep.Differences)
		}
	})
}

func TestApproveRefusesIncompleteRules(t *testing.T) {
	eachBackend(t, func(t *testing.T, j *persistence.Journal) {
		ctx := context.Background()
		if err := j.Approve(ctx, "", []persistence.Approval{{Action: "a", Resource: "r", Effect: "allow"}}); err == nil || !strings.Contains(err.Error(), "empty project") {
			t.Fatalf("empty project: %v", err)
		}
		err := j.Approve(ctx, "/p", []persistence.Approval{{Action: "bash", Resource: "ls"}, {Action: "x"}})
		if err == nil || !strings.Contains(err.Error(), "rule 0") {
			t.Fatalf("rule without effect: %v", err)
		}
		if got, _ := j.Approvals(ctx, "/p"); len(got) != 0 {
			t.Fatalf("a refused Approve saved %v", got)
		}
	})
}
