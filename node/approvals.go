package node

import (
	"context"

	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/toolactors/permission"
)

// journalApprovals keeps saved project approvals ("always" replies) in the journal, so
// they hold across restarts and on every cluster member sharing the journal.
type journalApprovals struct{ j *persistence.Journal }

var _ permission.ApprovalStore = journalApprovals{}

func (a journalApprovals) Approvals(ctx context.Context, project string) ([]permission.Rule, error) {
	saved, err := a.j.Approvals(ctx, project)
	if err != nil {
		return nil, err
	}
	rules := make([]permission.Rule, len(saved))
	for i, s := range saved {
		rules[i] = permission.Rule{Action: s.Action, Resource: s.Resource, Effect: permission.Effect(s.Effect)}
	}
	return rules, nil
}

func (a journalApprovals) Approve(ctx context.Context, project string, rules []permission.Rule) error {
	saved := make([]persistence.Approval, len(rules))
	for i, r := range rules {
		saved[i] = persistence.Approval{Action: r.Action, Resource: r.Resource, Effect: string(r.Effect)}
	}
	return a.j.Approve(ctx, project, saved)
}
