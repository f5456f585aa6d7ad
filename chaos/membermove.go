package chaos

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessionrt/sessionrt/cluster/clustertest"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/telemetry/spanstore"
)

// MoveReport is what a member-move run saw: which member ran each tool.
type MoveReport struct {
	Session   string
	Host      string   // the member (name) whose grain ran the session
	LocationA string   // held by member m0
	LocationB string   // held by member m1
	RanOn     []string // per tool call, in order: the member that ran it
	Asks      int      // permission requests answered (every bash call asks)
	// RemoteSpans are the Location members' location.run spans found in
	// the drain's trace, each the child of the execute_tool span the
	// session's member recorded: "<member> <trace id>".
	RemoteSpans []string
	// InterruptedRemoteTool: an Interrupt through m0 ended a tool running
	// on m1 (its settlement came back before Interrupt answered).
	InterruptedRemoteTool bool
	// Metrics are the cluster lines of each member's /metrics at the end.
	Metrics map[string][]string
}

// RunMemberMove starts a cluster whose Location A is held by member m0 and
// Location B by m1, runs a session hosted on another member (m2) in A,
// moves it to B, and runs it again: it reports where each tool ran (read
// from the tool outputs in the journal: "ran-on=<member>"). Every bash
// call asks for permission first, so each ask crosses from the Location's
// member to the session's and is answered by the driver. cfg's Sessions,
// ToolSleep and LocationRoots are set by the run.
func RunMemberMove(ctx context.Context, cfg MemberKillConfig) (MoveReport, error) {
	var rep MoveReport
	cfg.Members = 3
	if cfg.ToolSleep <= 0 {
		cfg.ToolSleep = 1 // as short as the tool allows: nothing is killed
	}
	if err := cfg.defaults(); err != nil {
		return rep, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	rep.LocationA, rep.LocationB = filepath.Join(cfg.Data, "loc-a"), filepath.Join(cfg.Data, "loc-b")
	for _, d := range []string{rep.LocationA, rep.LocationB} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return rep, err
		}
	}
	// The roots are canonical (the Session records canonical directories).
	a, err := filepath.EvalSymlinks(rep.LocationA)
	if err != nil {
		return rep, err
	}
	b, err := filepath.EvalSymlinks(rep.LocationB)
	if err != nil {
		return rep, err
	}
	rep.LocationA, rep.LocationB = a, b
	cfg.LocationRoots = map[string]string{a: "m0", b: "m1"}
	cfg.AskBash = true
	cfg.Spans = true
	j, err := persistence.OpenURL(ctx, "", cfg.JournalURL, false, persistence.Config{})
	if err != nil {
		return rep, err
	}
	defer j.Close()
	ms, err := clustertest.StartMembers(ctx, cfg.members(nil))
	defer func() {
		for _, m := range ms {
			m.Kill()
		}
	}()
	if err != nil {
		return rep, err
	}
	if err := clustertest.WaitTopology(ctx, ms); err != nil {
		return rep, fmt.Errorf("topology: %w", err)
	}
	// A session whose grain runs on m2, holder of neither Location.
	for i := 0; rep.Session == ""; i++ {
		if i == 200 {
			return rep, fmt.Errorf("no session ID among 200 is placed on member m2")
		}
		sid := fmt.Sprintf("ses_move_%d", i)
		var addr string
		if err := clustertest.Get(ctx, ms[0].Ctl, "/where", url.Values{"id": {sid}}, &addr); err != nil {
			return rep, err
		}
		if addr == ms[2].Addr {
			rep.Session, rep.Host = sid, "m2"
		}
	}
	sid := rep.Session
	turn := func(via *clustertest.Proc, k int) error {
		msg := fmt.Sprintf("msg_%s_%d", sid, k)
		if err := clustertest.Get(ctx, via.Ctl, "/admit", url.Values{"id": {sid}, "msg": {msg}, "text": {"tool s=" + sid}}, nil); err != nil {
			return fmt.Errorf("admit %s: %w", msg, err)
		}
		// Progress: the session's events (each answered ask adds some).
		return clustertest.WaitProgress(ctx, clustertest.ProgressStall, func() (int, error) {
			pending, err := j.PendingPermissions(ctx, sid)
			if err != nil {
				return 0, err
			}
			for _, p := range pending {
				if err := clustertest.Get(ctx, via.Ctl, "/reply", url.Values{"id": {sid}, "req": {p.RequestID}, "answer": {"once"}}, nil); err != nil {
					return 0, err
				}
				rep.Asks++
			}
			s, err := j.Session(ctx, sid)
			if err != nil {
				return 0, err
			}
			ok, err := clustertest.Settled(ctx, j, sid)
			if err == nil && !ok {
				err = fmt.Errorf("session %s not settled: %s", sid, describe(j, sid))
			}
			return int(s.LastSeq), err
		})
	}
	if err := clustertest.Get(ctx, ms[0].Ctl, "/create", url.Values{"id": {sid}, "loc": {rep.LocationA}}, nil); err != nil {
		return rep, fmt.Errorf("create: %w", err)
	}
	if err := turn(ms[1], 1); err != nil {
		return rep, err
	}
	if err := clustertest.Get(ctx, ms[0].Ctl, "/move", url.Values{"id": {sid}, "to": {rep.LocationB}}, nil); err != nil {
		return rep, fmt.Errorf("move: %w", err)
	}
	if err := turn(ms[0], 2); err != nil {
		return rep, err
	}
	// Interrupt a tool running on B from A: the cancel crosses members, the
	// gated tool (whose gate never opens) is killed and settled interrupted.
	if err := clustertest.Get(ctx, ms[2].Ctl, "/admit", url.Values{"id": {sid}, "msg": {"msg_" + sid + "_3"}, "text": {"gated s=" + sid}}, nil); err != nil {
		return rep, fmt.Errorf("admit the gated prompt: %w", err)
	}
	if err := clustertest.WaitProgress(ctx, clustertest.ProgressStall, func() (int, error) {
		pending, err := j.PendingPermissions(ctx, sid)
		if err != nil {
			return 0, err
		}
		for _, p := range pending {
			if err := clustertest.Get(ctx, ms[2].Ctl, "/reply", url.Values{"id": {sid}, "req": {p.RequestID}, "answer": {"once"}}, nil); err != nil {
				return 0, err
			}
			rep.Asks++
		}
		s, err := j.Session(ctx, sid)
		if err != nil {
			return 0, err
		}
		markers, err := clustertest.Markers(rep.LocationB)
		if err != nil {
			return 0, err
		}
		if len(markers) < 2 { // the second turn's tool and the gated one
			return int(s.LastSeq), fmt.Errorf("the gated tool has not started on B")
		}
		return int(s.LastSeq), nil
	}); err != nil {
		return rep, err
	}
	if err := clustertest.Get(ctx, ms[0].Ctl, "/interrupt", url.Values{"id": {sid}}, nil); err != nil {
		return rep, fmt.Errorf("interrupt: %w", err)
	}
	open, err := j.ToolCalls(ctx, sid, messages.ToolStatePending, messages.ToolStateRunning)
	if err != nil {
		return rep, err
	}
	rep.InterruptedRemoteTool = len(open) == 0
	rep.Metrics = map[string][]string{}
	for _, m := range ms {
		text, err := clustertest.GetText(ctx, m.Ctl, "/metrics")
		if err != nil {
			return rep, err
		}
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "sessionrt_cluster_") {
				rep.Metrics[fmt.Sprintf("m%d", m.I)] = append(rep.Metrics[fmt.Sprintf("m%d", m.I)], l)
			}
		}
	}
	if rep.RemoteSpans, err = remoteSpans(ctx, j, sid, 2); err != nil {
		return rep, err
	}
	envs, err := j.ReadEvents(ctx, sid, 0, 1<<30)
	if err != nil {
		return rep, err
	}
	for _, e := range envs {
		switch ev := e.Event.(type) {
		case messages.ToolSucceeded:
			on := "?"
			if _, after, ok := strings.Cut(ev.Output, "ran-on="); ok {
				on = strings.Fields(after + " ")[0]
			}
			rep.RanOn = append(rep.RanOn, on)
		case messages.ToolFailed:
			rep.RanOn = append(rep.RanOn, "failed: "+ev.Error)
		}
	}
	return rep, nil
}

// remoteSpans waits (bounded by progress: the spans stored) until the span
// store holds want location.run spans of sid and returns those whose parent is an execute_tool span of
// the same trace, in a trace that holds the drain's invoke_agent span.
func remoteSpans(ctx context.Context, j *persistence.Journal, sid string, want int) ([]string, error) {
	store, err := spanstore.Open(ctx, spanstore.Config{DB: j.DB(), PruneInterval: -1})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	var out []string
	err = clustertest.WaitProgress(ctx, clustertest.ProgressStall, func() (int, error) {
		spans, err := store.Trace(ctx, sid)
		if err != nil {
			return 0, err
		}
		byID := map[string]spanstore.Span{}
		agents := map[string]bool{} // traces holding an invoke_agent span
		for _, s := range spans {
			byID[s.TraceID+"/"+s.SpanID] = s
			if strings.HasPrefix(s.Name, "invoke_agent") {
				agents[s.TraceID] = true
			}
		}
		out = out[:0]
		for _, s := range spans {
			if !strings.HasPrefix(s.Name, "location.run") {
				continue
			}
			parent, ok := byID[s.TraceID+"/"+s.ParentSpanID]
			if ok && strings.HasPrefix(parent.Name, "execute_tool") && agents[s.TraceID] {
				out = append(out, fmt.Sprintf("%v %s", s.Attributes["sessionrt.member"], s.TraceID))
			}
		}
		if len(out) < want {
			return len(spans), fmt.Errorf("%d of %d location.run spans found in their drain's trace (%d spans stored)", len(out), want, len(spans))
		}
		return len(spans), nil
	})
	return out, err
}
