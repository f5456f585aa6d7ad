package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/internal/testdb"
)

// clusterMembers reads the sessionrt_cluster_members gauge of a member: the
// topology as that member sees it.
func clusterMembers(s *server) (int, error) {
	req, _ := http.NewRequest("GET", s.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "sessionrt_cluster_members "); ok {
			var n int
			_, err := fmt.Sscan(v, &n)
			return n, err
		}
	}
	return 0, fmt.Errorf("%s: no sessionrt_cluster_members in /metrics (%s)", s.url, res.Status)
}

// waitMembers polls until member s sees want members.
func waitMembers(t *testing.T, s *server, want int, within time.Duration) {
	t.Helper()
	var n int
	var err error
	for deadline := time.Now().Add(within); ; {
		if n, err = clusterMembers(s); err == nil && n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s sees %d cluster members (err %v), want %d within %v", s.url, n, err, want, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// clusterClient runs `sessionrt cluster members` through etcd, waiting a
// little for expect members, and returns its output (JSON, or the error).
func clusterClient(t *testing.T, bin, etcd, name string, expect int) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, "--data", t.TempDir(), "cluster", "--provider", "etcd", "--etcd", etcd,
		"--name", name, "--expect", fmt.Sprint(expect), "--wait", "2s", "--json", "members")
	cmd.Env = env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Two `sessionrt serve --cluster-member` processes that find each other through
// etcd (--cluster-provider etcd): both see both, a session created through one is
// prompted through the other, and after SIGKILL of the first, its lease expires,
// the survivor sees itself alone and answers the next prompt.
func TestServeAsClusterMembersThroughEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	etcd := testdb.Etcd(t)
	bin := build(t)
	db := testdb.MariaDB(t)
	// Tests share the etcd: the cluster name is the members' key prefix.
	name := fmt.Sprintf("e2e-etcd-%d-%dx", os.Getpid(), time.Now().UnixNano())
	member := func(i int) *server {
		return serve(t, bin, t.TempDir(), "--journal", db.URL(), "--cluster-member", fmt.Sprintf("m%d", i),
			"--cluster-name", name, "--cluster-provider", "etcd", "--cluster-etcd", etcd)
	}
	m0, m1 := member(0), member(1)
	waitMembers(t, m0, 2, 15*time.Second)
	waitMembers(t, m1, 2, 15*time.Second)
	// A client joining through etcd sees both; a client of a cluster whose name
	// is a prefix of theirs sees none of them (the provider watches a bare
	// key prefix).
	out, err := clusterClient(t, bin, etcd, name, 2)
	if err != nil || strings.Count(out, `"ID": "`+name+"@") != 2 {
		t.Fatalf("sessionrt cluster members of %s: %v\n%s", name, err, out)
	}
	other := strings.TrimSuffix(name, "x")
	if out, err := clusterClient(t, bin, etcd, other, 1); err == nil || !strings.Contains(out, "0 of 1 members seen") {
		t.Fatalf("cluster %s sees the members of cluster %s: %v\n%s", other, name, err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c0, _ := client.New(client.Config{BaseURL: m0.url, Token: token})
	c1, _ := client.New(client.Config{BaseURL: m1.url, Token: token})
	s, err := c0.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: t.TempDir()}})
	if err != nil {
		t.Fatalf("create through m0: %v", err)
	}
	if _, err := c1.Prompt(ctx, s.ID, wire.PromptRequest{Prompt: &wire.Prompt{Text: "hello through the other member"}}); err != nil {
		t.Fatalf("prompt through m1: %v", err)
	}
	if err := c1.Wait(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if n := answers(ctx, t, c0, s.ID); n != 1 {
		t.Fatalf("answers seen through m0 after a prompt through m1: %d, want 1", n)
	}

	_ = m0.cmd.Process.Signal(syscall.SIGKILL)
	// The provider's lease (3 s TTL) lapses and etcd tells the survivor.
	waitMembers(t, m1, 1, 15*time.Second)
	if _, err := c1.Prompt(ctx, s.ID, wire.PromptRequest{ID: "msg_after_kill", Prompt: &wire.Prompt{Text: "still there?"}}); err != nil {
		t.Fatalf("prompt through m1 after m0 died: %v", err)
	}
	checkFailover(ctx, t, c1, s.ID)
}
