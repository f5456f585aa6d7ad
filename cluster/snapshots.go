package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors"
	"github.com/sessionrt/sessionrt/filesnap"
)

// A Location's file snapshots live on the member that holds its directory,
// as its tools run there: a Session on any member takes, reads and restores
// them through that member's Location grain (Placement.Snapshots), so a
// session that fails over to another member still reverts to the snapshots
// its turns took.

// Snapshot operations (RemoteSnapshot.Op).
const (
	snapTake    = "take"
	snapHas     = "has"
	snapChanged = "changed"
	snapDiff    = "diff"
	snapRestore = "restore"
)

// RemoteSnapshot is one actors.SnapshotStore call on the store of the
// member holding the Location (the grain's identity is the directory).
type RemoteSnapshot struct {
	Op       string
	Dir      string
	ID       string   // has, restore: the tree
	From, To string   // changed, diff
	Paths    []string // diff: only these (nil: all); restore: these
	All      bool     // diff: Paths is nil, not empty
}

// RemoteSnapshotReply answers RemoteSnapshot.
type RemoteSnapshotReply struct {
	ID    string
	Has   bool
	Paths []string
	Diffs []filesnap.FileDiff
	Err   string
	// Kind classifies Err: "not_found" (filesnap.ErrNotFound),
	// "too_many" (filesnap.ErrTooManyFiles), "" otherwise.
	Kind string
}

// snapshotDone carries a finished store call back to the grain, which
// sends the reply (its sender middleware encodes it for the wire).
type snapshotDone struct {
	to    *actor.PID
	reply *RemoteSnapshotReply
}

// onSnapshot runs a store call off the grain's mailbox (a first Take of a
// large project reads every file; tool calls must not wait behind it).
func (g *locationGrain) onSnapshot(ctx actor.Context, m *RemoteSnapshot) {
	to := ctx.Sender()
	if to == nil {
		return
	}
	st, system, self := g.snaps, ctx.ActorSystem(), ctx.Self()
	if st == nil {
		ctx.Respond(&RemoteSnapshotReply{Err: fmt.Sprintf("member %s keeps no file snapshots", g.member)})
		return
	}
	if m.Dir != g.dir {
		ctx.Respond(&RemoteSnapshotReply{Err: fmt.Sprintf("snapshot of %s sent to the Location grain of %s", m.Dir, g.dir)})
		return
	}
	go func() {
		r := &RemoteSnapshotReply{}
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("snapshot store panicked: %v", p)
				}
			}()
			err = runSnapshot(st, m, r)
		}()
		if err != nil {
			r.Err = err.Error()
			switch {
			case errors.Is(err, filesnap.ErrNotFound):
				r.Kind = "not_found"
			case errors.Is(err, filesnap.ErrTooManyFiles):
				r.Kind = "too_many"
			}
		}
		system.Root.Send(self, &snapshotDone{to: to, reply: r})
	}()
}

func runSnapshot(st *filesnap.Store, m *RemoteSnapshot, r *RemoteSnapshotReply) (err error) {
	switch m.Op {
	case snapTake:
		r.ID, err = st.Take(m.Dir)
	case snapHas:
		r.Has, err = actors.LocalSnapshots(st).Has(m.ID)
	case snapChanged:
		r.Paths, err = st.Changed(m.From, m.To)
	case snapDiff:
		only := m.Paths
		if m.All {
			only = nil
		} else if only == nil {
			only = []string{}
		}
		r.Diffs, err = st.Diff(m.From, m.To, only...)
	case snapRestore:
		err = st.Restore(m.Dir, m.ID, m.Paths)
	default:
		err = fmt.Errorf("unknown snapshot operation %q", m.Op)
	}
	return err
}

// snapshotTimeout bounds one remote store call (a first Take of a large
// project, a restore of many files).
const snapshotTimeout = 2 * time.Minute

// Snapshots is an actors.SnapshotPlacement: the store of the member
// holding dir when that is another member, nil for one held here (or
// under no root).
func (p *Placement) Snapshots(dir string) (actors.SnapshotStore, error) {
	holder := p.Holder(dir)
	if holder == "" || holder == p.self {
		return nil, nil
	}
	p.mu.Lock()
	m := p.m
	p.mu.Unlock()
	if m == nil {
		return nil, fmt.Errorf("location %s is held by member %s, and this member has not joined the cluster", dir, holder)
	}
	return &remoteSnapshots{m: m, kind: LocationKindName(holder), holder: holder, dir: dir}, nil
}

// remoteSnapshots is the SnapshotStore of a Location another member holds.
type remoteSnapshots struct {
	m            *Member
	kind, holder string
	dir          string
}

func (r *remoteSnapshots) call(req *RemoteSnapshot) (*RemoteSnapshotReply, error) {
	if !r.m.hostsKind(r.kind) {
		return nil, fmt.Errorf("location %s: its member %s is not in the cluster; its file snapshots are there", r.dir, r.holder)
	}
	req.Dir = r.dir
	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	res, err := r.m.Request(ctx, r.dir, r.kind, req, CallOptions{Timeout: snapshotTimeout})
	if err != nil {
		return nil, fmt.Errorf("location %s on member %s: snapshot %s: %w", r.dir, r.holder, req.Op, err)
	}
	rep, ok := res.(*RemoteSnapshotReply)
	if !ok {
		return nil, fmt.Errorf("location %s on member %s: snapshot %s answered %T", r.dir, r.holder, req.Op, res)
	}
	if rep.Err != "" {
		err := errors.New(rep.Err)
		switch rep.Kind {
		case "not_found":
			err = fmt.Errorf("member %s: %s: %w", r.holder, rep.Err, filesnap.ErrNotFound)
		case "too_many":
			err = fmt.Errorf("member %s: %s: %w", r.holder, rep.Err, filesnap.ErrTooManyFiles)
		}
		return nil, err
	}
	return rep, nil
}

func (r *remoteSnapshots) Take(string) (string, error) {
	rep, err := r.call(&RemoteSnapshot{Op: snapTake})
	if err != nil {
		return "", err
	}
	return rep.ID, nil
}

func (r *remoteSnapshots) Has(id string) (bool, error) {
	rep, err := r.call(&RemoteSnapshot{Op: snapHas, ID: id})
	if err != nil {
		return false, err
	}
	return rep.Has, nil
}

func (r *remoteSnapshots) Changed(from, to string) ([]string, error) {
	rep, err := r.call(&RemoteSnapshot{Op: snapChanged, From: from, To: to})
	if err != nil {
		return nil, err
	}
	return rep.Paths, nil
}

func (r *remoteSnapshots) Diff(from, to string, only []string) ([]filesnap.FileDiff, error) {
	rep, err := r.call(&RemoteSnapshot{Op: snapDiff, From: from, To: to, Paths: only, All: only == nil})
	if err != nil {
		return nil, err
	}
	return rep.Diffs, nil
}

func (r *remoteSnapshots) Restore(_, id string, paths []string) error {
	_, err := r.call(&RemoteSnapshot{Op: snapRestore, ID: id, Paths: paths})
	return err
}
