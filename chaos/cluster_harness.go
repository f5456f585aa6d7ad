package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/sessionrt/sessionrt/persistence"
)

// Cluster is a running set of member processes (Member) on one shared
// journal, driven through their control APIs: for benchmarks and tests
// that need members but no kill.
type Cluster struct {
	ms []*runMember
}

// StartCluster starts cfg.Members member processes (cfg.Data, JournalURL
// and Command are required; Sessions and ToolSleep are unused) and waits
// until each sees all of them. The caller must Stop it.
func StartCluster(ctx context.Context, cfg MemberKillConfig) (*Cluster, error) {
	if cfg.Members <= 0 {
		cfg.Members = 3
	}
	if cfg.Members == 1 {
		cfg.Members = 2 // pass the checks below, then start one
		if err := cfg.defaults(); err != nil {
			return nil, err
		}
		cfg.Members = 1
	} else if err := cfg.defaults(); err != nil {
		return nil, err
	}
	ms, err := startRunMembers(ctx, cfg, func(turnLine) {})
	c := &Cluster{ms: ms}
	if err != nil {
		c.Stop()
		return nil, err
	}
	if err := waitTopology(ctx, ms); err != nil {
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
	if err := getJSON(ctx, c.ms[0].ctl, "/where", url.Values{"id": {sid}}, &addr); err != nil {
		return 0, err
	}
	for _, m := range c.ms {
		if m.addr == addr {
			return m.i, nil
		}
	}
	return 0, fmt.Errorf("session %s placed on %q, not a member", sid, addr)
}

// Create creates sid in loc through member via.
func (c *Cluster) Create(ctx context.Context, via int, sid, loc string) error {
	return getJSON(ctx, c.ms[via].ctl, "/create", url.Values{"id": {sid}, "loc": {loc}}, nil)
}

// Turn admits one prompt (text "plain …" answers at once; "tool …" runs
// a tool first) through member via and waits for the drain to end.
func (c *Cluster) Turn(ctx context.Context, via int, sid, msgID, text string) error {
	if err := getJSON(ctx, c.ms[via].ctl, "/admit", url.Values{"id": {sid}, "msg": {msgID}, "text": {text}}, nil); err != nil {
		return err
	}
	var out struct{ Err, Kind string }
	if err := getJSON(ctx, c.ms[via].ctl, "/wait", url.Values{"id": {sid}, "timeout": {"60000"}}, &out); err != nil {
		return err
	}
	if out.Err != "" {
		return fmt.Errorf("session %s: drain ended with %s: %s", sid, out.Kind, out.Err)
	}
	return nil
}

// Admit admits one prompt through member via without waiting for its drain.
func (c *Cluster) Admit(ctx context.Context, via int, sid, msgID, text string) error {
	return getJSON(ctx, c.ms[via].ctl, "/admit", url.Values{"id": {sid}, "msg": {msgID}, "text": {text}}, nil)
}

// Markers counts each tool call's side effect in the Location loc.
func Markers(loc string) (map[string]int, error) { return countMarkers(loc) }

// SessionOfMarker names the session of a tool call's side effect.
func SessionOfMarker(m string) string { return sessionOfMarker(m) }

// Settled reports whether a session is idle with nothing pending or open
// and its last turn answered "done".
func Settled(ctx context.Context, j *persistence.Journal, sid string) (bool, error) {
	return settled(ctx, j, sid)
}

// Stop SIGKILLs every member.
func (c *Cluster) Stop() {
	for _, m := range c.ms {
		if m != nil && m.cmd.Process != nil {
			_ = m.cmd.Process.Kill()
			_ = m.cmd.Wait()
		}
	}
}

// waitTopology waits until every member sees all of ms (progress: the
// members they see, summed).
func waitTopology(ctx context.Context, ms []*runMember) error {
	return waitProgress(ctx, progressStall, func() (int, error) {
		seen, short := 0, ""
		for _, m := range ms {
			var n int
			if err := getJSON(ctx, m.ctl, "/members", nil, &n); err != nil {
				return seen, err
			}
			seen += n
			if n != len(ms) && short == "" {
				short = fmt.Sprintf("member %d sees %d members", m.i, n)
			}
		}
		if short != "" {
			return seen, errors.New(short)
		}
		return seen, nil
	})
}
