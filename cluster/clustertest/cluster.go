package clustertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// Cluster is a running set of member processes (Member) on one shared
// journal, driven through their control APIs: for tests and benchmarks
// that need members but no kill.
type Cluster struct {
	ms []*Proc
}

// StartCluster starts cfg.Members member processes (cfg.Data, JournalURL
// and Command are required) and waits until each sees all of them. The
// caller must Stop it.
func StartCluster(ctx context.Context, cfg Config) (*Cluster, error) {
	ms, err := StartMembers(ctx, cfg)
	c := &Cluster{ms: ms}
	if err != nil {
		c.Stop()
		return nil, err
	}
	if err := WaitTopology(ctx, ms); err != nil {
		c.Stop()
		return nil, fmt.Errorf("topology: %w", err)
	}
	return c, nil
}

// Size is the number of members.
func (c *Cluster) Size() int { return len(c.ms) }

// Host is the index of the member the session's grain is placed on.
func (c *Cluster) Host(ctx context.Context, sid string) (int, error) {
	var addr string
	if err := Get(ctx, c.ms[0].Ctl, "/where", url.Values{"id": {sid}}, &addr); err != nil {
		return 0, err
	}
	for _, m := range c.ms {
		if m.Addr == addr {
			return m.I, nil
		}
	}
	return 0, fmt.Errorf("session %s placed on %q, not a member", sid, addr)
}

// Create creates sid in loc through member via.
func (c *Cluster) Create(ctx context.Context, via int, sid, loc string) error {
	return Get(ctx, c.ms[via].Ctl, "/create", url.Values{"id": {sid}, "loc": {loc}}, nil)
}

// Turn admits one prompt (text "plain …" answers at once; "tool …" runs
// a tool first) through member via and waits for the drain to end.
func (c *Cluster) Turn(ctx context.Context, via int, sid, msgID, text string) error {
	if err := Get(ctx, c.ms[via].Ctl, "/admit", url.Values{"id": {sid}, "msg": {msgID}, "text": {text}}, nil); err != nil {
		return err
	}
	var out struct{ Err, Kind string }
	if err := Get(ctx, c.ms[via].Ctl, "/wait", url.Values{"id": {sid}, "timeout": {"60000"}}, &out); err != nil {
		return err
	}
	if out.Err != "" {
		return fmt.Errorf("session %s: drain ended with %s: %s", sid, out.Kind, out.Err)
	}
	return nil
}

// Admit admits one prompt through member via without waiting for its drain.
func (c *Cluster) Admit(ctx context.Context, via int, sid, msgID, text string) error {
	return Get(ctx, c.ms[via].Ctl, "/admit", url.Values{"id": {sid}, "msg": {msgID}, "text": {text}}, nil)
}

// Stop SIGKILLs every member.
func (c *Cluster) Stop() {
	for _, m := range c.ms {
		m.Kill()
	}
}

// Markers reads the side-effect file (SideEffects) of the Location loc:
// how often each tool call's marker was written.
func Markers(loc string) (map[string]int, error) {
	f, err := os.Open(filepath.Join(loc, SideEffects))
	if os.IsNotExist(err) {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := strings.TrimSpace(sc.Text()); m != "" {
			out[m]++
		}
	}
	return out, sc.Err()
}

// SessionOfMarker reads the session out of a member's marker
// "call_<session>_<pid>_<n>" ("" for another marker).
func SessionOfMarker(m string) string {
	m = strings.TrimPrefix(m, "call_")
	for range 2 {
		i := strings.LastIndexByte(m, '_')
		if i < 0 {
			return ""
		}
		m = m[:i]
	}
	return m
}

// Settled reports whether a session is idle with nothing pending or open
// and its last turn answered "done" (what the scripted providers answer
// once their work is done). A session whose creation never became durable,
// or that was created and never prompted (its client died first), owes
// nothing and is settled.
func Settled(ctx context.Context, j *persistence.Journal, sid string) (bool, error) {
	s, err := j.Session(ctx, sid)
	if errors.Is(err, persistence.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	pending, err := j.PendingInbox(ctx, sid)
	if err != nil {
		return false, err
	}
	open, err := j.ToolCalls(ctx, sid, messages.ToolStatePending, messages.ToolStateRunning)
	if err != nil {
		return false, err
	}
	if s.Status != persistence.StatusIdle || len(pending) > 0 || len(open) > 0 {
		return false, nil
	}
	hist, err := j.ModelHistory(ctx, sid)
	if err != nil {
		return false, err
	}
	if len(hist) == 0 {
		return true, nil
	}
	last := hist[len(hist)-1]
	return last.Role == messages.RoleAssistant && last.Finished && last.Error == "" && len(last.Parts) > 0 && last.Parts[len(last.Parts)-1].Text == "done", nil
}

// MemberPackage is the command that runs Member with its configuration
// (JSON) as its only argument.
const MemberPackage = "github.com/sessionrt/sessionrt/cluster/internal/chaosmember"

// BuildMember compiles MemberPackage into dir and returns the binary's
// path. It builds without -race: protoactor's cluster races under the race
// detector (notes/protoactor.md).
func BuildMember(dir string) (string, error) {
	bin := filepath.Join(dir, "chaosmember")
	cmd := exec.Command("go", "build", "-o", bin, MemberPackage)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", MemberPackage, err, out)
	}
	return bin, nil
}

// MemberCommand runs the member binary bin with a member's configuration.
func MemberCommand(bin string) func(MemberConfig) *exec.Cmd {
	return func(cfg MemberConfig) *exec.Cmd {
		b, _ := json.Marshal(cfg)
		return exec.Command(bin, string(b))
	}
}
