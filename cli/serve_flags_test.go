package cli

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestServePprofRefusesNonLoopback(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--data", t.TempDir(), "serve", "--pprof", "0.0.0.0:0"}, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "--pprof is only allowed on a loopback address") {
		t.Fatalf("exit %d, stderr %q: want a refusal naming --pprof", code, errb.String())
	}
}

func TestServePprofServesProfiles(t *testing.T) {
	addr, stop, err := servePprof("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile") {
		t.Fatalf("pprof answered %d %.80q", resp.StatusCode, body)
	}
}

func TestServePprofRefusesReboundHosts(t *testing.T) {
	addr, stop, err := servePprof("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	req, _ := http.NewRequest("GET", "http://"+addr+"/debug/pprof/heap", nil)
	req.Host = "rebind.evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("pprof with Host %s: %d, want 403", req.Host, resp.StatusCode)
	}
}

func TestServeRefusesABadCORSOrigin(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--data", t.TempDir(), "serve", "--listen", "127.0.0.1:0", "--cors", "app.example"}, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), `CORS origin "app.example"`) {
		t.Fatalf("exit %d, stderr %q: want a refusal naming the origin", code, errb.String())
	}
}

func TestServeClusterMemberRefusesAnUnsharedJournal(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--data", t.TempDir(), "serve", "--cluster-member", "m1", "--cluster-peers", "127.0.0.1:1", "--cluster-health", "1"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "needs a journal every member shares") {
		t.Fatalf("exit %d, stderr %q: want a usage error asking for --journal", code, errb.String())
	}
	errb.Reset()
	code = run([]string{"--data", t.TempDir(), "--journal", "mysql://root@127.0.0.1:1/x", "serve", "--cluster-member", "m1"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "--cluster-peers") {
		t.Fatalf("exit %d, stderr %q: want a usage error asking for the peers", code, errb.String())
	}
}

func TestServeRefusesANonPositiveGCPercent(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--data", t.TempDir(), "serve", "--gc-percent", "0"}, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "--gc-percent must be positive") {
		t.Fatalf("exit %d, stderr %q: want a refusal naming --gc-percent", code, errb.String())
	}
}
