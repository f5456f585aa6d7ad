package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Approval is one saved allow (or deny) rule of a project: what an "always" reply to a
// permission request adds, so later calls in the same project are not asked again.
type Approval struct {
	Action   string
	Resource string
	Effect   string
}

var (
	qApprovals      = stmt(`SELECT action, resource, effect FROM {project_approvals} WHERE project = ? ORDER BY id`)
	qInsertApproval = stmt(`INSERT INTO {project_approvals} (project, action, resource, effect) VALUES (?, ?, ?, ?)`)
)

// Approvals returns the rules saved for project, oldest first (rules are evaluated in
// order, the last match winning, so the order is part of the meaning).
func (j *Journal) Approvals(ctx context.Context, project string) ([]Approval, error) {
	return j.approvals(ctx, j.db, project)
}

func (j *Journal) approvals(ctx context.Context, db querier, project string) ([]Approval, error) {
	rows, err := db.QueryContext(ctx, j.n.q(qApprovals), project)
	if err != nil {
		return nil, fmt.Errorf("read approvals of %s: %w", project, err)
	}
	defer rows.Close()
	var out []Approval
	for rows.Next() {
		var a Approval
		if err := rows.Scan(&a.Action, &a.Resource, &a.Effect); err != nil {
			return nil, fmt.Errorf("read approvals of %s: %w", project, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read approvals of %s: %w", project, err)
	}
	return out, nil
}

// Approve saves rules for project in one transaction. A rule already saved is not
// added again, so a retried reply (or two sessions approving the same thing) leaves
// one copy.
func (j *Journal) Approve(ctx context.Context, project string, rules []Approval) error {
	if project == "" {
		return errors.New("approve: empty project")
	}
	for i, r := range rules {
		if r.Action == "" || r.Resource == "" || r.Effect == "" {
			return fmt.Errorf("approve: rule %d %+v: action, resource and effect are required", i, r)
		}
	}
	if len(rules) == 0 {
		return nil
	}
	return j.inTx(ctx, func(tx *sql.Tx) error {
		have, err := j.approvals(ctx, tx, project)
		if err != nil {
			return err
		}
		saved := make(map[Approval]bool, len(have))
		for _, a := range have {
			saved[a] = true
		}
		for _, r := range rules {
			if saved[r] {
				continue
			}
			saved[r] = true
			if _, err := tx.ExecContext(ctx, j.n.q(qInsertApproval), project, r.Action, r.Resource, r.Effect); err != nil {
				return fmt.Errorf("save approval for %s: %w", project, err)
			}
		}
		return nil
	}, false)
}

// SavedApproval is one saved approval with its row ID and project.
type SavedApproval struct {
	ID      int64
	Project string
	Approval
}

var (
	qAllApprovals   = stmt(`SELECT id, project, action, resource, effect FROM {project_approvals} ORDER BY id`)
	qDeleteApproval = stmt(`DELETE FROM {project_approvals} WHERE id = ?`)
)

// SavedApprovals lists every project's saved approvals, oldest first.
func (j *Journal) SavedApprovals(ctx context.Context) ([]SavedApproval, error) {
	rows, err := j.db.QueryContext(ctx, j.n.q(qAllApprovals))
	if err != nil {
		return nil, fmt.Errorf("read saved approvals: %w", err)
	}
	defer rows.Close()
	var out []SavedApproval
	for rows.Next() {
		var a SavedApproval
		if err := rows.Scan(&a.ID, &a.Project, &a.Action, &a.Resource, &a.Effect); err != nil {
			return nil, fmt.Errorf("read saved approvals: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// RemoveApproval deletes the saved approval id; false when there was none.
// The next permission check of its project asks again.
func (j *Journal) RemoveApproval(ctx context.Context, id int64) (bool, error) {
	res, err := j.db.ExecContext(ctx, j.n.q(qDeleteApproval), id)
	if err != nil {
		return false, fmt.Errorf("remove saved approval %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
