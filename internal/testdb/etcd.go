package testdb

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// DefaultEtcd is where a developer's or CI's etcd listens for clients.
const DefaultEtcd = "127.0.0.1:2379"

// Like the MariaDB server, the throwaway etcd is shared by every test of one
// process and written once.
var (
	etcdOnce sync.Once
	etcdAddr string
	etcdErr  error
)

// Etcd returns the host:port of an etcd for cluster membership tests: the one
// on DefaultEtcd when it answers, else a throwaway etcd started for the test
// process. Tests share it: each must use its own key prefix (cluster name).
// It skips the test, loudly, when there is neither.
func Etcd(t testing.TB) string {
	t.Helper()
	etcdOnce.Do(func() {
		if etcdHealthy(DefaultEtcd) == nil {
			etcdAddr = DefaultEtcd
			return
		}
		etcdAddr, etcdErr = startEtcd()
	})
	if etcdErr != nil {
		t.Skipf("\n\n*** SKIPPING: no etcd for the cluster's etcd provider: %v ***\n"+
			"*** install etcd-server (apt-get install etcd-server; see .ci/run) so this test runs ***\n\n", etcdErr)
	}
	return etcdAddr
}

// etcdHealthy asks etcd's /health endpoint, which answers only once the
// member has a leader and serves requests.
func etcdHealthy(addr string) error {
	c := &http.Client{Timeout: 2 * time.Second}
	res, err := c.Get("http://" + addr + "/health")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var b [256]byte
	n, _ := res.Body.Read(b[:])
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b[:n]), `"true"`) {
		return fmt.Errorf("etcd on %s unhealthy: %s %s", addr, res.Status, b[:n])
	}
	return nil
}

// startEtcd starts a single-member etcd on two free loopback ports, its data
// in a directory named after this process (swept by a later run once the
// process is gone: etcd dies with us, by Pdeathsig, leaving nobody to clean).
func startEtcd() (string, error) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return "", fmt.Errorf("nothing answers on %s and etcd is not installed", DefaultEtcd)
	}
	sweepEtcdDirs()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d", etcdDirPrefix, os.Getpid()))
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	ports, err := twoFreePorts()
	if err != nil {
		return "", err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cmd := exec.Command(bin, "--name", "testdb", "--data-dir", dir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "testdb="+peer, "--initial-cluster-state", "new",
		"--logger", "zap", "--log-level", "error")
	cmd.Stdout, cmd.Stderr = nil, nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		// Pdeathsig fires when the creating thread exits: pin this goroutine
		// to its thread and never return.
		runtime.LockOSThread()
		started <- cmd.Start()
		cmd.Wait()
		close(exited)
		select {}
	}()
	if err := <-started; err != nil {
		return "", fmt.Errorf("start etcd: %w", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := etcdHealthy(addr)
		if err == nil {
			return addr, nil
		}
		select {
		case <-exited:
			return "", fmt.Errorf("throwaway etcd exited: %v (ports %v may have been taken)", cmd.ProcessState, ports)
		default:
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("throwaway etcd on %s did not answer within 30 s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const etcdDirPrefix = "sessionrt-etcd-"

// sweepEtcdDirs removes the data directories of test processes that are gone.
func sweepEtcdDirs() {
	ents, _ := os.ReadDir(os.TempDir())
	for _, e := range ents {
		pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), etcdDirPrefix))
		if !strings.HasPrefix(e.Name(), etcdDirPrefix) || err != nil {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(filepath.Join(os.TempDir(), e.Name()))
		}
	}
}

func twoFreePorts() ([2]int, error) {
	var ports [2]int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return ports, err
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
