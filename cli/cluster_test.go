package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// clusterOnly is the command tree with just the cluster commands, until
// root.go mounts ClusterCmd.
type clusterOnly struct {
	Globals
	Cluster ClusterCmd `cmd:""`
}

func runCluster(t *testing.T, args ...string) error {
	t.Helper()
	var root clusterOnly
	var out bytes.Buffer
	root.Stdout, root.Stderr = &out, &out
	defer func() { t.Log(out.String()) }()
	p, err := kong.New(&root, kong.Bind(&root.Globals))
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := p.Parse(args)
	if err != nil {
		return err
	}
	return ctx.Run()
}

func TestClusterMembersWithoutPeersIsAUsageError(t *testing.T) {
	err := runCluster(t, "cluster", "members")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), "--peers") {
		t.Fatalf("err %v, want a usage error naming --peers", err)
	}
}

func TestClusterWhereNeedsASession(t *testing.T) {
	if err := runCluster(t, "cluster", "--peers", "127.0.0.1:1", "where"); err == nil {
		t.Fatal("where without a session ID parsed")
	}
	err := runCluster(t, "cluster", "--peers", "127.0.0.1:1", "where", " ")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage {
		t.Fatalf("err %v, want a usage error for an empty session ID", err)
	}
}

func TestClusterRejectsUnknownProvider(t *testing.T) {
	if err := runCluster(t, "cluster", "--provider", "zk", "members"); err == nil || !strings.Contains(err.Error(), "provider") {
		t.Fatalf("err %v, want the provider enum refused", err)
	}
}
