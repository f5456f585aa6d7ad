package cluster_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/cluster"
	"github.com/sessionrt/sessionrt/cluster/internal/echograin"
)

// member is one echomember subprocess.
type member struct {
	cmd    *exec.Cmd
	health string // automanaged health host:port
	addr   string // actor address
	ctl    string // control HTTP address
	stderr string // log file
}

// buildMember compiles the echo member without -race: protoactor's
// cluster races under the race detector (notes/protoactor.md).
func buildMember(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", bin, "./internal/"+name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build echomember: %v\n%s", err, out)
	}
	return bin
}

// freePorts reserves n loopback ports by listening and closing.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var lns []net.Listener
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// startMembers starts n members of bin on loopback; extra gives member i's
// further flags.
func startMembers(t *testing.T, bin string, n int, extra func(i int) []string) []*member {
	t.Helper()
	ports := freePorts(t, n)
	var peers []string
	for _, p := range ports {
		peers = append(peers, "127.0.0.1:"+strconv.Itoa(p))
	}
	dir := t.TempDir()
	ms := make([]*member, n)
	ready := make(chan error, n)
	for i := range n {
		logPath := filepath.Join(dir, fmt.Sprintf("member%d.log", i))
		logf, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"-health", strconv.Itoa(ports[i]), "-members", strings.Join(peers, ","), "-refresh", "300ms"}
		if extra != nil {
			args = append(args, extra(i)...)
		}
		cmd := exec.Command(bin, args...)
		cmd.Stderr = logf
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		m := &member{cmd: cmd, health: peers[i], stderr: logPath}
		ms[i] = m
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			logf.Close()
			if t.Failed() {
				b, _ := os.ReadFile(logPath)
				t.Logf("member %d log (last 3000 bytes):\n%s", i, tail(b, 3000))
			}
		})
		go func() {
			sc := bufio.NewScanner(stdout)
			if sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) == 3 && f[0] == "READY" {
					m.addr, m.ctl = f[1], f[2]
					ready <- nil
					_, _ = io.Copy(io.Discard, stdout)
					return
				}
				ready <- fmt.Errorf("member %d: unexpected first line %q", i, sc.Text())
				return
			}
			ready <- fmt.Errorf("member %d exited before READY", i)
		}()
	}
	// A member that exits before READY fails the test at once; one that is
	// merely slow (a loaded machine starts processes slowly: over 30 s at
	// load 70 on two cores) is waited for, up to a backstop.
	deadline := time.After(memberStartBackstop)
	for range n {
		select {
		case err := <-ready:
			if err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatalf("members not ready within %v (alive, but never printed READY)", memberStartBackstop)
		}
	}
	return ms
}

// memberStartBackstop bounds a member's start: far beyond a slow start,
// so that only a stuck member reaches it.
const memberStartBackstop = 5 * time.Minute

// stepBackstop bounds a step that waits for the cluster (a topology, a
// failover): far beyond a slow step, so that only a stuck one reaches it.
const stepBackstop = 5 * time.Minute

func peersOf(ms []*member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.health)
	}
	return out
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// httpc bounds a control call by a backstop only: each call passes its own
// timeout to the member, and a loaded machine answers slowly.
var httpc = &http.Client{Timeout: stepBackstop}

// callTimeout bounds one grain call or turn that a member makes for a test:
// a backstop far beyond a slow call on a loaded machine (at load 70 on two
// cores a first activation took over 5 s), reached only by a stuck one.
const callTimeout = 2 * time.Minute

// attemptTimeout bounds one attempt of a call that eventually retries (a
// call racing a failover may reach the dead member): a slow attempt is
// retried with the same ID, never failed.
const attemptTimeout = 15 * time.Second

func getJSON(url string, v any) error {
	res, err := httpc.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", url, res.Status, strings.TrimSpace(string(b)))
	}
	return json.Unmarshal(b, v)
}

func call(m *member, id string, timeout time.Duration) (echograin.Pong, error) {
	var p echograin.Pong
	err := getJSON(fmt.Sprintf("http://%s/call?id=%s&timeout=%d", m.ctl, id, timeout.Milliseconds()), &p)
	return p, err
}

// eventually polls cond every 50 ms until it holds. What it waits for has
// no wall-clock limit (under load a healthy step is slow): stepBackstop
// only ends a stuck one.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	end := time.Now().Add(stepBackstop)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not after %v (backstop): %v", what, stepBackstop, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitTopology(t *testing.T, ms []*member, want []*member) {
	t.Helper()
	wantAddrs := map[string]bool{}
	for _, m := range want {
		wantAddrs[m.addr] = true
	}
	for _, m := range ms {
		eventually(t, "member "+m.addr+" sees the topology", func() error {
			var infos []cluster.MemberInfo
			if err := getJSON("http://"+m.ctl+"/members", &infos); err != nil {
				return err
			}
			got := map[string]bool{}
			for _, in := range infos {
				got[in.Address] = true
			}
			if len(got) != len(wantAddrs) {
				return fmt.Errorf("sees %v, want %v", got, wantAddrs)
			}
			for a := range wantAddrs {
				if !got[a] {
					return fmt.Errorf("sees %v, want %v", got, wantAddrs)
				}
			}
			return nil
		})
	}
}

func TestGrainAnswersThroughEveryMemberAndFailsOverAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (builds a member binary, runs 3 processes)")
	}
	bin := buildMember(t, "echomember")
	ms := startMembers(t, bin, 3, nil)
	waitTopology(t, ms, ms)

	// Activated through one member, the same activation answers through all.
	const id = "grain-1"
	first, err := call(ms[0], id, callTimeout)
	if err != nil {
		t.Fatalf("first call through %s: %v", ms[0].addr, err)
	}
	var host *member
	for _, m := range ms {
		if m.addr == first.Member {
			host = m
		}
	}
	if host == nil || host.cmd.Process.Pid != first.PID {
		t.Fatalf("grain answered from %s pid %d, not one of the members", first.Member, first.PID)
	}
	served := first.Served
	for _, m := range ms {
		p, err := call(m, id, callTimeout)
		if err != nil {
			t.Fatalf("call through %s: %v", m.addr, err)
		}
		served++
		if p.Member != host.addr || p.Served != served {
			t.Fatalf("through %s: answered by %s (served %d), want the one activation on %s (served %d)", m.addr, p.Member, p.Served, host.addr, served)
		}
	}

	// A client process joining through the static peer list sees the three
	// members and places the grain where it runs.
	out, err := exec.Command(bin, "-client", "3", "-where", id, "-members", strings.Join(peersOf(ms), ","), "-refresh", "300ms").Output()
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	var topo struct {
		Members []cluster.MemberInfo
		Where   string
	}
	if err := json.Unmarshal(out, &topo); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	if len(topo.Members) != 3 || topo.Where != host.addr {
		t.Fatalf("client sees %d members and places %s on %q; want 3 and %s", len(topo.Members), id, topo.Where, host.addr)
	}

	// SIGKILL the host: the grain comes back on a survivor.
	var survivors []*member
	for _, m := range ms {
		if m != host {
			survivors = append(survivors, m)
		}
	}
	if err := host.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var after echograin.Pong
	eventually(t, "grain re-activated on a survivor", func() error {
		p, err := call(survivors[0], id, attemptTimeout)
		if err != nil {
			return err
		}
		after = p
		return nil
	})
	failover := time.Since(killed)
	if after.Member == host.addr || after.Served != 1 {
		t.Fatalf("after the kill: answered by %s (served %d), want a fresh activation on a survivor", after.Member, after.Served)
	}
	if after.Member != survivors[0].addr && after.Member != survivors[1].addr {
		t.Fatalf("after the kill: answered by %s, not a survivor", after.Member)
	}
	t.Logf("failover: SIGKILL of %s to first answer from %s: %v", host.addr, after.Member, failover)

	// The other survivor reaches the same new activation once its view of
	// the topology has caught up (it polls membership too).
	eventually(t, "the other survivor reaches the new activation", func() error {
		p, err := call(survivors[1], id, attemptTimeout)
		if err != nil {
			return err
		}
		if p.Member != after.Member || p.Served < 2 {
			return fmt.Errorf("answered by %s (served %d), want the activation on %s", p.Member, p.Served, after.Member)
		}
		return nil
	})
}
