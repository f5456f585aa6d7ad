package actors

import (
	"errors"
	"fmt"

	"github.com/sessionrt/sessionrt/filesnap"
)

// SnapshotStore is where a Location's file snapshots are taken, read and
// restored: this process's filesnap.Store, or, in a cluster, the store of
// the member that holds the Location (SnapshotPlacement). Tree IDs are
// content hashes, so any store answers for the trees it holds. Every
// method may block (disk, the network): call them off the mailbox, or
// only while no drain runs (revert commands).
type SnapshotStore interface {
	// Take snapshots dir and returns the tree's ID.
	Take(dir string) (string, error)
	// Has reports whether the store holds tree id.
	Has(id string) (bool, error)
	// Changed lists the paths that differ between two trees.
	Changed(from, to string) ([]string, error)
	// Diff returns the files that differ between two trees, with patches
	// (only the paths in only when it is not nil).
	Diff(from, to string, only []string) ([]filesnap.FileDiff, error)
	// Restore makes each of paths under dir what it is in tree id.
	Restore(dir, id string, paths []string) error
}

// SnapshotPlacement names the SnapshotStore of a Location held by another
// member (a nil store and nil error: this process's own). It is the
// snapshot counterpart of ToolPlacement: the files live on one member, so
// their snapshots are taken and restored there.
type SnapshotPlacement func(dir string) (SnapshotStore, error)

// SetSnapshotPlacement installs p. Call it before the first session
// activates (the cluster does, with SetToolPlacement).
func (s *Sessions) SetSnapshotPlacement(p SnapshotPlacement) { s.rt.cfg.SnapshotPlacement = p }

// LocalSnapshots is the SnapshotStore of a filesnap.Store.
func LocalSnapshots(st *filesnap.Store) SnapshotStore { return localSnapshots{st} }

type localSnapshots struct{ st *filesnap.Store }

func (l localSnapshots) Take(dir string) (string, error) { return l.st.Take(dir) }

func (l localSnapshots) Has(id string) (bool, error) {
	_, err := l.st.Tree(id)
	if errors.Is(err, filesnap.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (l localSnapshots) Changed(from, to string) ([]string, error) { return l.st.Changed(from, to) }

func (l localSnapshots) Diff(from, to string, only []string) ([]filesnap.FileDiff, error) {
	return l.st.Diff(from, to, only...)
}

func (l localSnapshots) Restore(dir, id string, paths []string) error {
	return l.st.Restore(dir, id, paths)
}

// snapshots is the store of dir's snapshots: nil when this server keeps
// none (Config.Snapshots is nil and no placement names another).
func (rt *runtime) snapshots(dir string) (SnapshotStore, error) {
	if rt.cfg.Snapshots == nil {
		return nil, nil
	}
	if place := rt.cfg.SnapshotPlacement; place != nil {
		st, err := place(dir)
		if err != nil {
			return nil, fmt.Errorf("snapshots of %s: %w", dir, err)
		}
		if st != nil {
			return st, nil
		}
	}
	return LocalSnapshots(rt.cfg.Snapshots), nil
}
