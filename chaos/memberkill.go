package chaos

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
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sessionrt/sessionrt/cluster/clustertest"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// MemberKillConfig configures a run that SIGKILLs a cluster member while its
// sessions' tools run.
type MemberKillConfig struct {
	Data       string // the run's directory
	JournalURL string // the shared mysql:// journal (required; its schema is created)
	Members    int    // default 3
	Sessions   int    // default 100
	// ToolSleep is how long a "tool" prompt's tool runs after its side
	// effect (the kill rounds use gated tools, which run until released).
	// Default 4 s.
	ToolSleep time.Duration
	Refresh   time.Duration // automanaged poll interval; default 300 ms
	// Command builds the command that runs Member with cfg (a test's
	// member binary, or `sessionrt chaos member`).
	Command func(cfg clustertest.MemberConfig) *exec.Cmd
	// Timeout bounds the whole run, a backstop only: each wait inside
	// fails once it sees no progress for a minute (ProgressStall,
	// settleStall), with what it waited for. Default 10 minutes.
	Timeout time.Duration
	Logf    func(format string, args ...any)
	// LocationRoots pins Locations to members (see clustertest.MemberConfig); none by default.
	LocationRoots map[string]string
	// LocationOnVictim pins the sessions' Location to the member that is
	// killed: every session's tool runs there, so the sessions hosted on
	// survivors lose their running tool (settled as interrupted by their
	// member's proxy) and those hosted on the victim fail over too.
	LocationOnVictim bool
	// AskBash makes every bash call ask for permission (see clustertest.MemberConfig).
	AskBash bool
	// Spans keeps the members' span stores (see clustertest.MemberConfig).
	Spans bool
	// ResumeAtStart makes the members resume what the journal shows
	// mid-drain once their topology forms (see clustertest.MemberConfig).
	ResumeAtStart bool
	// Rejoin adds a phase after the kill: every session runs a tool that
	// waits for a gate, the killed member starts again and rejoins, its
	// sessions are activated there (a new ownership epoch, their gated call
	// failed durably) while their old activations still wait in the tool;
	// then the gate opens and every settlement of an old activation must be
	// refused (fenced appends refused >= sessions moved).
	Rejoin bool
}

// MemberKillReport is a member-kill run's counts on top of the journal checks.
type MemberKillReport struct {
	Report
	Members             int             `json:"members"`
	SessionsOnVictim    int             `json:"sessions_on_killed_member"`
	MidToolAtKill       int             `json:"sessions_mid_tool_at_kill"`
	FencedRefused       int64           `json:"fenced_appends_refused"`
	ResumedOnSurvivor   int             `json:"sessions_resumed_on_survivor"`
	KillToFirstResumed  time.Duration   `json:"kill_to_first_resumed_turn_ns"`
	KillToResumedP50    time.Duration   `json:"kill_to_resumed_turn_p50_ns"`
	KillToResumedMax    time.Duration   `json:"kill_to_resumed_turn_max_ns"`
	Resumed             []time.Duration `json:"-"`
	SessionsCompleted   int             `json:"sessions_completed"`
	SecondPromptsServed int             `json:"second_prompts_completed"`
	Rejoins             int             `json:"rejoins"`
	SessionsMovedBack   int             `json:"sessions_moved_to_rejoined_member"`
	// AtKill and AtEnd are the cluster counters the survivors' /metrics
	// show just before the kill and at the end of the run (the killed
	// member's die with it; the rejoined member's are not counted).
	AtKill ClusterCounters `json:"survivor_counters_at_kill"`
	AtEnd  ClusterCounters `json:"survivor_counters_at_end"`
}

// ClusterCounters are counters of the members' /metrics (parsed with
// Prometheus's text parser), summed over members and label values.
type ClusterCounters struct {
	PlacementChanges float64 `json:"placement_changes"` // sessionrt_cluster_placement_changes_total
	Failovers        float64 `json:"failovers"`         // sessionrt_cluster_failovers_total
	FencedAppends    float64 `json:"fenced_appends"`    // sessionrt_journal_fenced_appends_total
}

// scrapeCounters sums ClusterCounters over the members' /metrics.
func scrapeCounters(ctx context.Context, ms []*runMember) (ClusterCounters, error) {
	var c ClusterCounters
	for _, m := range ms {
		text, err := clustertest.GetText(ctx, m.Ctl, "/metrics")
		if err != nil {
			return c, fmt.Errorf("member %d /metrics: %w", m.I, err)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			return c, fmt.Errorf("member %d /metrics: %w", m.I, err)
		}
		for name, dst := range map[string]*float64{
			"sessionrt_cluster_placement_changes_total": &c.PlacementChanges,
			"sessionrt_cluster_failovers_total":         &c.Failovers,
			"sessionrt_journal_fenced_appends_total":    &c.FencedAppends,
		} {
			for _, s := range mfs[name].GetMetric() {
				*dst += s.GetCounter().GetValue()
			}
		}
	}
	return c, nil
}

// String prints the journal checks, then the cluster's counts.
func (r MemberKillReport) String() string {
	var b strings.Builder
	b.WriteString(r.Report.String())
	fmt.Fprintf(&b, "  members                         %d\n", r.Members)
	fmt.Fprintf(&b, "  sessions on the killed member   %d\n", r.SessionsOnVictim)
	fmt.Fprintf(&b, "  sessions mid-tool at the kill   %d\n", r.MidToolAtKill)
	fmt.Fprintf(&b, "  resumed on a survivor           %d\n", r.ResumedOnSurvivor)
	fmt.Fprintf(&b, "  kill -> first resumed turn      %v\n", r.KillToFirstResumed.Round(time.Millisecond))
	fmt.Fprintf(&b, "  kill -> resumed turn p50 / max  %v / %v\n", r.KillToResumedP50.Round(time.Millisecond), r.KillToResumedMax.Round(time.Millisecond))
	fmt.Fprintf(&b, "  sessions completed              %d\n", r.SessionsCompleted)
	fmt.Fprintf(&b, "  second prompts completed        %d\n", r.SecondPromptsServed)
	if r.Rejoins > 0 {
		fmt.Fprintf(&b, "  member rejoins                  %d\n", r.Rejoins)
		fmt.Fprintf(&b, "  sessions moved to it mid-tool   %d\n", r.SessionsMovedBack)
	}
	fmt.Fprintf(&b, "  fenced appends refused          %d\n", r.FencedRefused)
	fmt.Fprintf(&b, "  survivors' /metrics at the kill: placement changes %v, failovers %v, fenced appends %v\n",
		r.AtKill.PlacementChanges, r.AtKill.Failovers, r.AtKill.FencedAppends)
	fmt.Fprintf(&b, "  survivors' /metrics at the end:  placement changes %v, failovers %v, fenced appends %v\n",
		r.AtEnd.PlacementChanges, r.AtEnd.Failovers, r.AtEnd.FencedAppends)
	return b.String()
}

func (c *MemberKillConfig) defaults() error {
	if c.JournalURL == "" || c.Command == nil || c.Data == "" {
		return errors.New("member-kill run: Data, JournalURL and Command are required")
	}
	if c.Members <= 0 {
		c.Members = 3
	}
	if c.Members < 2 {
		return errors.New("member-kill run: needs at least 2 members")
	}
	if c.Rejoin && c.LocationOnVictim {
		return errors.New("member-kill run: Rejoin and LocationOnVictim do not combine (the gated tools would have no Location member)")
	}
	if c.Sessions <= 0 {
		c.Sessions = 100
	}
	if c.ToolSleep <= 0 {
		c.ToolSleep = 4 * time.Second
	}
	if c.Refresh <= 0 {
		c.Refresh = 300 * time.Millisecond
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return nil
}

// members is the member processes' configuration of the run.
func (c MemberKillConfig) members(onTurn func(clustertest.Turn)) clustertest.Config {
	return clustertest.Config{Data: c.Data, JournalURL: c.JournalURL, Members: c.Members, ToolSleep: c.ToolSleep, Refresh: c.Refresh,
		Command: c.Command, LocationRoots: c.LocationRoots, AskBash: c.AskBash, Spans: c.Spans, ResumeAtStart: c.ResumeAtStart, OnTurn: onTurn}
}

// runMember is one member process of a run, and whether the run killed it.
type runMember struct {
	*clustertest.Proc
	dead bool // written under killRun.mu
}

// RunMemberKills starts a cluster of member processes on one shared
// journal, creates Sessions sessions through different members, prompts
// each (through the member it was created through) with a turn that runs
// a side-effecting tool, SIGKILLs one member once every session it hosts
// has started its tool, and then checks that every session completes on a
// survivor (the killed member's callers retry through survivors with the
// same message IDs), takes a second prompt, and that the journal holds the
// invariants: no acknowledged prompt lost, no tool run twice, every
// interrupted tool failed durably, contiguous seqs, projections equal a
// replay. It measures the time from the kill to each resumed session's
// first provider turn on a survivor.
//
// The run goes through named phases (killRun's methods), each bounded by
// progress; a failing phase ends the run with its name.
func RunMemberKills(ctx context.Context, cfg MemberKillConfig) (MemberKillReport, error) {
	rep := MemberKillReport{Report: Report{Mode: "member-kill", Faults: map[string]int{}}}
	if err := cfg.defaults(); err != nil {
		return rep, err
	}
	rep.Members = cfg.Members
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	r := &killRun{cfg: cfg, rep: &rep, acked: map[string][]string{}}
	defer r.stop()
	phases := []struct {
		name string
		run  func(context.Context) error
	}{
		{"start", r.start},
		{"create sessions", r.createSessions},
		{"kill a member mid-tool", r.killMidTool},
		{"measure resumption", r.measureResumption},
		{"second round", r.secondRound},
	}
	if cfg.Rejoin {
		phases = append(phases, []struct {
			name string
			run  func(context.Context) error
		}{
			{"gated round", r.gatedRound},
			{"rejoin", r.rejoin},
			{"fail the moved sessions' gated calls", r.failMovedGatedCalls},
			{"open the gate to the fenced activations", r.openGateToFenced},
		}...)
	}
	phases = append(phases, struct {
		name string
		run  func(context.Context) error
	}{"check the journal", r.checkJournal})
	for _, p := range phases {
		if err := p.run(ctx); err != nil {
			return rep, fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return rep, nil
}

// killRun is the state a member-kill run carries from phase to phase.
type killRun struct {
	cfg  MemberKillConfig
	rep  *MemberKillReport
	j    *persistence.Journal
	loc  string // the sessions' Location
	gate string // the gated tools' gate in loc
	sids []string

	mu     sync.Mutex // guards ms (dead flags, the rejoined member) and turns
	ms     []*runMember
	turns  []clustertest.Turn
	victim *runMember // the member killed (the last one)

	survivors []*runMember // the members alive after the kill (not the rejoined one)

	onVictim map[string]bool // sessions hosted on the victim
	affected map[string]bool // sessions whose tool the kill interrupts
	killed   time.Time

	ackMu sync.Mutex
	acked map[string][]string // session -> its acknowledged message IDs

	// The rejoin phases: the rejoined member, the sessions now placed on
	// it, and the markers before the gated round.
	rejoined *runMember
	moved    []int
	before   map[string]int
}

// start opens the journal (creating its schema) and starts the members
// (pinning the sessions' Location to the victim if asked).
func (r *killRun) start(ctx context.Context) error {
	r.loc = filepath.Join(r.cfg.Data, "project")
	r.gate = filepath.Join(r.loc, clustertest.GateFile)
	if err := os.MkdirAll(r.loc, 0o755); err != nil {
		return err
	}
	if r.cfg.LocationOnVictim {
		canon, err := filepath.EvalSymlinks(r.loc)
		if err != nil {
			return err
		}
		// The victim is the last member.
		r.cfg.LocationRoots = map[string]string{canon: fmt.Sprintf("m%d", r.cfg.Members-1)}
		r.rep.Mode = "member-kill (Location on the killed member)"
	}
	j, err := persistence.OpenURL(ctx, "", r.cfg.JournalURL, false, persistence.Config{}) // creates the schema once
	if err != nil {
		return err
	}
	r.j = j
	procs, err := clustertest.StartMembers(ctx, r.cfg.members(r.onTurn))
	r.mu.Lock()
	for _, p := range procs {
		if p != nil {
			r.ms = append(r.ms, &runMember{Proc: p})
		}
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	r.victim = r.ms[len(r.ms)-1]
	if err := clustertest.WaitTopology(ctx, r.procs()); err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	r.cfg.Logf("%d members joined", len(r.ms))
	return nil
}

// stop kills the members still alive and closes the journal.
func (r *killRun) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.ms {
		if !m.dead {
			m.Kill()
		}
	}
	if r.j != nil {
		r.j.Close()
	}
}

func (r *killRun) onTurn(t clustertest.Turn) {
	r.mu.Lock()
	r.turns = append(r.turns, t)
	r.mu.Unlock()
}

// procs is every member's process (dead ones included).
func (r *killRun) procs() []*clustertest.Proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*clustertest.Proc
	for _, m := range r.ms {
		out = append(out, m.Proc)
	}
	return out
}

// live is the members not killed.
func (r *killRun) live() []*runMember {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runMember
	for _, m := range r.ms {
		if !m.dead {
			out = append(out, m)
		}
	}
	return out
}

// entry is the member session i is created and prompted through.
func (r *killRun) entry(i int) *runMember {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ms[i%len(r.ms)]
}

// survivor is a live member other than the victim, chosen by i.
func (r *killRun) survivor(i int) *runMember {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.ms {
		if m := r.ms[(i+k)%len(r.ms)]; !m.dead && m != r.victim {
			return m
		}
	}
	return nil
}

func (r *killRun) victimDead() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.victim.dead
}

// through calls session i's entry member, and a survivor once the entry
// is the dead victim or a call failed (the commands are idempotent).
func (r *killRun) through(ctx context.Context, i int, path string, q url.Values, out any) error {
	return retryCall(ctx, func(attempt int) error {
		m := r.entry(i)
		if attempt > 0 || m == r.victim && r.victimDead() {
			m = r.survivor(i)
		}
		return clustertest.Get(ctx, m.Ctl, path, q, out)
	})
}

// prompt admits a prompt to session i and records its acknowledgement.
func (r *killRun) prompt(ctx context.Context, i int, msg, text string) error {
	sid := r.sids[i]
	if err := r.through(ctx, i, "/admit", url.Values{"id": {sid}, "msg": {msg}, "text": {text}}, nil); err != nil {
		return fmt.Errorf("admit %s to %s: %w", msg, sid, err)
	}
	r.ackMu.Lock()
	r.acked[sid] = append(r.acked[sid], msg)
	r.ackMu.Unlock()
	return nil
}

// promptAll prompts every session with "<kind> s=<session>" as message
// msg_<session>_<n>.
func (r *killRun) promptAll(ctx context.Context, n int, kind string) error {
	return parallel(ctx, 16, len(r.sids), func(i int) error {
		return r.prompt(ctx, i, fmt.Sprintf("msg_%s_%d", r.sids[i], n), kind+" s="+r.sids[i])
	})
}

// touch waits a while for a session's drain through a live member: a
// caller, so a session whose host died is activated on a survivor.
func (r *killRun) touch(ctx context.Context, i int) {
	if m := r.survivor(i); m != nil {
		_ = clustertest.Get(ctx, m.Ctl, "/wait", url.Values{"id": {r.sids[i]}, "timeout": {"10000"}}, nil)
	}
}

// settle waits until every session settles; on a stall it prints each
// stuck session's diagnosis.
func (r *killRun) settle(ctx context.Context, phase string) error {
	return settleAll(ctx, r.j, r.sids, settleStall, func(i int) { r.touch(ctx, i) }, func(stuck []string) {
		r.cfg.Logf("%s: %d sessions made no progress for %v:", phase, len(stuck), settleStall)
		for _, sid := range stuck {
			r.cfg.Logf("%s", diagnose(ctx, r.j, r.live(), r.cfg.Data, sid))
		}
	})
}

// createSessions creates the sessions through different members and
// finds those the victim hosts (and those the kill affects).
func (r *killRun) createSessions(ctx context.Context) error {
	r.sids = make([]string, r.cfg.Sessions)
	for i := range r.sids {
		r.sids[i] = fmt.Sprintf("ses_mk_%03d", i)
	}
	if err := parallel(ctx, 16, len(r.sids), func(i int) error {
		return clustertest.Get(ctx, r.entry(i).Ctl, "/create", url.Values{"id": {r.sids[i]}, "loc": {r.loc}}, nil)
	}); err != nil {
		return err
	}
	r.onVictim = map[string]bool{}
	for _, sid := range r.sids {
		var addr string
		if err := clustertest.Get(ctx, r.ms[0].Ctl, "/where", url.Values{"id": {sid}}, &addr); err != nil {
			return err
		}
		if addr == r.victim.Addr {
			r.onVictim[sid] = true
		}
	}
	r.rep.SessionsOnVictim = len(r.onVictim)
	// The sessions the kill interrupts: those hosted on the victim, and
	// every session when their Location (so their tools) is there.
	r.affected = r.onVictim
	if r.cfg.LocationOnVictim {
		r.affected = map[string]bool{}
		for _, sid := range r.sids {
			r.affected[sid] = true
		}
	}
	if len(r.onVictim) == 0 {
		return fmt.Errorf("no session is placed on member %d: nothing to kill", r.victim.I)
	}
	r.cfg.Logf("%d sessions created, %d placed on member %d", len(r.sids), len(r.onVictim), r.victim.I)
	return nil
}

// killMidTool prompts every session with a gated tool, SIGKILLs the victim
// once every session the kill affects has started its tool, opens the
// gate, and waits until every session settles (the killed member's
// resumed on survivors).
func (r *killRun) killMidTool(ctx context.Context) error {
	// The first round's tools wait for a gate that opens only after the
	// kill: every tool the kill affects is running when it comes, however
	// slowly the machine gets there.
	if err := os.Remove(r.gate); err != nil && !os.IsNotExist(err) {
		return err
	}
	// The callers of the first round wait for their drains through the
	// kill (a killed member's go on through a survivor); whether a
	// session settles is judged by the journal below, not by them.
	firstRound := make(chan error, 1)
	go func() {
		firstRound <- parallel(ctx, len(r.sids), len(r.sids), func(i int) error {
			if err := r.prompt(ctx, i, "msg_"+r.sids[i]+"_1", "gated s="+r.sids[i]); err != nil {
				return err
			}
			var out struct{ Err, Kind string }
			if err := r.through(ctx, i, "/wait", url.Values{"id": {r.sids[i]}, "timeout": {"60000"}}, &out); err != nil {
				r.cfg.Logf("first round: wait for %s: %v", r.sids[i], err)
			}
			return nil
		})
	}()
	if err := clustertest.WaitProgress(ctx, clustertest.ProgressStall, func() (int, error) {
		markers, err := clustertest.Markers(r.loc)
		if err != nil {
			return 0, err
		}
		started := 0
		for m := range markers {
			if r.affected[clustertest.SessionOfMarker(m)] {
				started++
			}
		}
		r.rep.MidToolAtKill = started
		if started < len(r.affected) {
			return started, fmt.Errorf("%d of %d sessions the kill affects have started their tool", started, len(r.affected))
		}
		return started, nil
	}); err != nil {
		return err
	}
	for _, m := range r.live() {
		if m != r.victim {
			r.survivors = append(r.survivors, m)
		}
	}
	var err error
	if r.rep.AtKill, err = scrapeCounters(ctx, r.survivors); err != nil {
		return err
	}
	r.mu.Lock()
	r.victim.dead = true
	r.mu.Unlock()
	if err := r.victim.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	r.killed = time.Now()
	_ = r.victim.Cmd.Wait()
	// Release the tools still running on survivors (and the killed
	// member's orphaned ones, whose results nobody takes any more).
	if err := os.WriteFile(r.gate, nil, 0o644); err != nil {
		return err
	}
	r.rep.ProcessKills = 1
	r.rep.Faults["member-sigkill"] = 1
	r.cfg.Logf("member %d SIGKILLed with %d sessions mid-tool", r.victim.I, r.rep.MidToolAtKill)

	if err := r.settle(ctx, "after the kill"); err != nil {
		return err
	}
	if err := <-firstRound; err != nil {
		return fmt.Errorf("first round: %w", err)
	}
	r.rep.SessionsCompleted = len(r.sids)
	return nil
}

// measureResumption takes each affected session's first provider turn on
// a survivor after the kill: the time to it is a figure, not a limit (a
// loaded machine resumes slowly; a stuck session fails the settle wait).
func (r *killRun) measureResumption(context.Context) error {
	r.mu.Lock()
	first := map[string]time.Time{}
	for _, l := range r.turns {
		if r.affected[l.Session] && l.Member != r.victim.I && l.At.After(r.killed) {
			if t, ok := first[l.Session]; !ok || l.At.Before(t) {
				first[l.Session] = l.At
			}
		}
	}
	r.mu.Unlock()
	rep := r.rep
	slowest := ""
	for sid, at := range first {
		rep.Resumed = append(rep.Resumed, at.Sub(r.killed))
		if slowest == "" || at.After(first[slowest]) {
			slowest = sid
		}
	}
	if slowest != "" {
		r.cfg.Logf("slowest resumption: session %s (hosted on the killed member: %v), %v after the kill", slowest, r.onVictim[slowest], first[slowest].Sub(r.killed).Round(time.Millisecond))
	}
	sort.Slice(rep.Resumed, func(a, b int) bool { return rep.Resumed[a] < rep.Resumed[b] })
	rep.ResumedOnSurvivor = len(rep.Resumed)
	if n := len(rep.Resumed); n > 0 {
		rep.KillToFirstResumed = rep.Resumed[0]
		rep.KillToResumedP50 = rep.Resumed[(n-1)/2]
		rep.KillToResumedMax = rep.Resumed[n-1]
	}
	if rep.ResumedOnSurvivor < rep.MidToolAtKill {
		rep.problem("%d sessions were mid-tool on the killed member, %d resumed on a survivor", rep.MidToolAtKill, rep.ResumedOnSurvivor)
	}
	return nil
}

// secondRound prompts every session again, through survivors only, and
// waits until all settle.
func (r *killRun) secondRound(ctx context.Context) error {
	if err := r.promptAll(ctx, 2, "plain"); err != nil {
		return err
	}
	if err := r.settle(ctx, "second round"); err != nil {
		return err
	}
	r.rep.SecondPromptsServed = len(r.sids)
	return nil
}

// gatedRound prompts every session with a tool that waits for the gate and
// waits until each has started it.
func (r *killRun) gatedRound(ctx context.Context) error {
	if err := os.Remove(r.gate); err != nil && !os.IsNotExist(err) {
		return err
	}
	before, err := clustertest.Markers(r.loc)
	if err != nil {
		return err
	}
	r.before = before
	if err := r.promptAll(ctx, 3, "gated"); err != nil {
		return err
	}
	return clustertest.WaitProgress(ctx, clustertest.ProgressStall, func() (int, error) {
		markers, err := clustertest.Markers(r.loc)
		if err != nil {
			return 0, err
		}
		per := map[string]int{}
		for m := range markers {
			per[clustertest.SessionOfMarker(m)]++
		}
		started := 0
		for _, sid := range r.sids {
			if per[sid] >= 2 { // the first round's tool and the gated one
				started++
			}
		}
		if started < len(r.sids) {
			return started, fmt.Errorf("%d of %d sessions have started their gated tool", started, len(r.sids))
		}
		return started, nil
	})
}

// rejoin starts the killed member again; disthash places sessions on it
// while their old activations wait in the gated tool.
func (r *killRun) rejoin(ctx context.Context) error {
	p, err := clustertest.Restart(ctx, r.cfg.members(r.onTurn), r.victim.Proc)
	if err != nil {
		return err
	}
	re := &runMember{Proc: p}
	r.mu.Lock()
	r.ms[r.victim.I] = re
	r.mu.Unlock()
	r.rejoined = re
	r.rep.Rejoins = 1
	if err := clustertest.WaitTopology(ctx, r.procs()); err != nil {
		return fmt.Errorf("topology after the rejoin: %w", err)
	}
	// The rejoined member has a new ID, and rendezvous hashing weighs
	// IDs: the sessions it now holds are not the ones it held before.
	for i, sid := range r.sids {
		var addr string
		if err := clustertest.Get(ctx, re.Ctl, "/where", url.Values{"id": {sid}}, &addr); err != nil {
			return err
		}
		if addr == re.Addr {
			r.moved = append(r.moved, i)
		}
	}
	if len(r.moved) == 0 {
		return fmt.Errorf("no session is placed on the rejoined member %d", re.I)
	}
	r.rep.SessionsMovedBack = len(r.moved)
	r.cfg.Logf("member %d rejoined; %d sessions move to it mid-tool", re.I, len(r.moved))
	return nil
}

// failMovedGatedCalls touches each moved session through the rejoined
// member (its own placement is fresh; another member may still route a
// first call to the old activation until the library moves the grain),
// again while its gated call is open: the activation there takes a new
// epoch and fails the gated call durably.
func (r *killRun) failMovedGatedCalls(ctx context.Context) error {
	var touchMu sync.Mutex
	touching := map[int]bool{}
	touchOnRejoined := func(i int) {
		touchMu.Lock()
		defer touchMu.Unlock()
		if touching[i] {
			return
		}
		touching[i] = true
		go func() {
			_ = clustertest.Get(ctx, r.rejoined.Ctl, "/wait", url.Values{"id": {r.sids[i]}, "timeout": {"10000"}}, nil)
			touchMu.Lock()
			delete(touching, i)
			touchMu.Unlock()
		}()
	}
	return clustertest.WaitProgress(ctx, clustertest.ProgressStall, func() (int, error) {
		closed, stillOpen := 0, ""
		for _, i := range r.moved {
			open, err := r.j.ToolCalls(ctx, r.sids[i], messages.ToolStatePending, messages.ToolStateRunning)
			if err != nil {
				return closed, err
			}
			if len(open) == 0 {
				closed++
				continue
			}
			stillOpen = r.sids[i]
			touchOnRejoined(i)
		}
		if closed < len(r.moved) {
			return closed, fmt.Errorf("%d of %d moved sessions have their gated call failed; %s's is still open (not re-activated on the rejoined member)", closed, len(r.moved), stillOpen)
		}
		return closed, nil
	})
}

// openGateToFenced opens the gate: the old activations' settlements must
// be refused. A moved session's gated call is settled once, as interrupted
// by its new activation; the old activation's success is never appended.
func (r *killRun) openGateToFenced(ctx context.Context) error {
	gatedCall := map[string]string{} // session -> its gated call
	markers, err := clustertest.Markers(r.loc)
	if err != nil {
		return err
	}
	for m := range markers {
		if r.before[m] == 0 {
			gatedCall[clustertest.SessionOfMarker(m)] = m
		}
	}
	if err := os.WriteFile(r.gate, nil, 0o644); err != nil {
		return err
	}
	if err := r.settle(ctx, "after the rejoin"); err != nil {
		return err
	}
	for _, i := range r.moved {
		sid, call := r.sids[i], gatedCall[r.sids[i]]
		envs, err := r.j.ReadEvents(ctx, sid, 0, 1<<30)
		if err != nil {
			return err
		}
		settlements := 0
		for _, e := range envs {
			switch ev := e.Event.(type) {
			case messages.ToolSucceeded:
				if ev.CallID == call {
					settlements++
					r.rep.problem("session %s: its gated call %s succeeded after it moved: an append from a fenced owner", sid, call)
				}
			case messages.ToolFailed:
				if ev.CallID == call {
					settlements++
				}
			}
		}
		if settlements != 1 {
			r.rep.problem("session %s: gated call %q settled %d times", sid, call, settlements)
		}
	}
	return nil
}

// checkJournal counts the fenced appends the members refused and checks
// the journal's invariants.
func (r *killRun) checkJournal(ctx context.Context) error {
	rep := r.rep
	var err error
	if rep.AtEnd, err = scrapeCounters(ctx, r.survivors); err != nil {
		return err
	}
	for _, m := range r.live() {
		var st map[string]int64
		if err := clustertest.Get(ctx, m.Ctl, "/stats", nil, &st); err != nil {
			return err
		}
		rep.FencedRefused += st["fenced"]
	}
	if err := check(ctx, r.j, r.loc, r.acked, &rep.Report); err != nil {
		return err
	}
	if rep.Rejoins > 0 && rep.FencedRefused == 0 {
		rep.problem("%d sessions moved to the rejoined member mid-tool, and no append of their old activations was refused", rep.SessionsMovedBack)
	}
	if rep.ToolsInterrupted < rep.MidToolAtKill {
		rep.problem("%d tools were running on the killed member, %d failed durably as interrupted", rep.MidToolAtKill, rep.ToolsInterrupted)
	}
	return nil
}

// settleStall is how long a session may show no new event in the journal
// before a settle wait gives up on it: a session waiting for a settlement
// that cannot come shows none however loaded the machine, a slow one shows
// some.
const settleStall = 60 * time.Second

// settleAll waits until every session of sids is settled, touching each
// unsettled one between checks (touch blocks a while). A session whose
// journal shows no new event for stall is stuck: once every session has
// settled or is stuck, stuck is called with the stuck ones and the wait
// fails.
func settleAll(ctx context.Context, j *persistence.Journal, sids []string, stall time.Duration, touch func(i int), stuck func([]string)) error {
	var mu sync.Mutex
	var stalled []string
	err := parallel(ctx, len(sids), len(sids), func(i int) error {
		sid := sids[i]
		last, since := int64(-1), time.Now()
		for {
			ok, err := clustertest.Settled(ctx, j, sid)
			if err != nil || ok {
				return err
			}
			s, err := j.Session(ctx, sid)
			if err != nil {
				return err
			}
			if s.LastSeq != last {
				last, since = s.LastSeq, time.Now()
			}
			if time.Since(since) > stall {
				mu.Lock()
				stalled = append(stalled, sid)
				mu.Unlock()
				return fmt.Errorf("session %s: no event for %v, not settled: %s", sid, stall, describe(j, sid))
			}
			touch(i)
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	})
	if len(stalled) > 0 {
		sort.Strings(stalled)
		stuck(stalled)
	}
	return err
}

// diagnose describes why sid may not settle: what the journal shows, the
// member disthash places it on, what each live member holds of it in
// memory (its activation's drain and staged events, the tool calls a
// proxy waits for) and the members' log lines naming it.
func diagnose(ctx context.Context, j *persistence.Journal, live []*runMember, data, sid string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s\n  journal: %s\n", sid, describe(j, sid))
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if len(live) > 0 {
		var addr string
		if err := clustertest.Get(ctx, live[0].Ctl, "/where", url.Values{"id": {sid}}, &addr); err != nil {
			fmt.Fprintf(&b, "  placement: %v\n", err)
		}
		for _, m := range live {
			if m.Addr == addr {
				fmt.Fprintf(&b, "  placed on member %d (%s)\n", m.I, addr)
			}
		}
	}
	for _, m := range live {
		var in clustertest.MemberInspection
		if err := clustertest.Get(ctx, m.Ctl, "/inspect", url.Values{"id": {sid}}, &in); err != nil {
			fmt.Fprintf(&b, "  member %d: %v\n", m.I, err)
			continue
		}
		out, _ := json.Marshal(in)
		fmt.Fprintf(&b, "  member %d: %s\n", m.I, out)
	}
	logs, _ := filepath.Glob(filepath.Join(data, "member*.log"))
	for _, l := range logs {
		f, err := os.Open(l)
		if err != nil {
			continue
		}
		var lines []string
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), sid) {
				lines = append(lines, sc.Text())
			}
		}
		f.Close()
		for _, line := range lines[max(0, len(lines)-8):] {
			fmt.Fprintf(&b, "  %s: %s\n", filepath.Base(l), line)
		}
	}
	return b.String()
}

// retryCall retries a call to a member a bounded number of times (a killed
// member's callers go on through a survivor; the commands are idempotent).
func retryCall(ctx context.Context, f func(attempt int) error) error {
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		if err = f(attempt); err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// parallel runs f(0..n-1) with at most width at once and returns the first error.
func parallel(ctx context.Context, width, n int, f func(i int) error) error {
	sem := make(chan struct{}, width)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := ctx.Err(); err != nil {
				errs <- err
				return
			}
			errs <- f(i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
