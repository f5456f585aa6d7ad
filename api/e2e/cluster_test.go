package e2e

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
	"github.com/sessionrt/sessionrt/internal/testdb"
)

// freePorts reserves n loopback ports and releases them for the members to bind.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// answers counts the assistant messages with content that c serves for session
// id: one per answered prompt, whichever member ran the turn.
func answers(ctx context.Context, t *testing.T, c *client.Client, id string) int {
	t.Helper()
	msgs, err := c.Messages(ctx, id, client.MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range msgs.Data {
		if m.Type == "assistant" && len(m.Content) > 0 {
			n++
		}
	}
	return n
}

// checkFailover waits out the turn prompted through survivor c after the
// other member was killed, and checks that c serves both answers of session
// id: the one from before the kill and the one after.
func checkFailover(ctx context.Context, t *testing.T, c *client.Client, id string) {
	t.Helper()
	if err := c.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	if n := answers(ctx, t, c, id); n != 2 {
		t.Fatalf("answers after the failover: %d, want 2 (none lost, none repeated)", n)
	}
}

// Two `sessionrt serve --cluster-member` processes on one MariaDB journal: a session
// created through one member is prompted and answered through the other, and when
// the first is SIGKILLed the survivor serves it on. (Members run without -race, as
// subprocesses: the cluster library races.)
func TestServeAsClusterMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := build(t)
	db := testdb.MariaDB(t)
	journal := fmt.Sprintf("mysql://root@%s/%s", db.Addr, db.Name)
	ports := freePorts(t, 2)
	peers := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1])
	member := func(i int) *server {
		return serve(t, bin, t.TempDir(), "--journal", journal, "--cluster-member", fmt.Sprintf("m%d", i),
			"--cluster-name", "e2e", "--cluster-peers", peers, "--cluster-health", fmt.Sprint(ports[i]))
	}
	m0, m1 := member(0), member(1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c0, _ := client.New(client.Config{BaseURL: m0.url, Token: token})
	c1, _ := client.New(client.Config{BaseURL: m1.url, Token: token})

	// The first command may meet a topology still forming; the cluster's own
	// retries cover most of that, this covers the rest within a bound.
	loc := t.TempDir()
	var s wire.Session
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; {
		if s, err = c0.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: loc}}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create through m0: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ask := func(c *client.Client, text string) {
		t.Helper()
		if _, err := c.Prompt(ctx, s.ID, wire.PromptRequest{Prompt: &wire.Prompt{Text: text}}); err != nil {
			t.Fatalf("prompt %q: %v", text, err)
		}
		if err := c.Wait(ctx, s.ID); err != nil {
			t.Fatalf("wait after %q: %v", text, err)
		}
	}
	ask(c1, "hello through the other member")
	if n := answers(ctx, t, c0, s.ID); n != 1 {
		t.Fatalf("answers seen through m0 after a prompt through m1: %d, want 1", n)
	}

	_ = m0.cmd.Process.Signal(syscall.SIGKILL)
	for deadline := time.Now().Add(60 * time.Second); ; {
		_, err := c1.Prompt(ctx, s.ID, wire.PromptRequest{ID: "msg_after_kill", Prompt: &wire.Prompt{Text: "still there?"}})
		if err == nil {
			break
		}
		if time.Now().After(deadline) { // the same message ID makes each retry idempotent
			t.Fatalf("prompt through m1 after m0 died: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	checkFailover(ctx, t, c1, s.ID)
}
