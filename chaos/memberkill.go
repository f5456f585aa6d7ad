package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

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
	Command func(cfg MemberConfig) *exec.Cmd
	// Timeout bounds the whole run, a backstop only: each wait inside
	// fails once it sees no progress for a minute (progressStall,
	// settleStall), with what it waited for. Default 10 minutes.
	Timeout time.Duration
	Logf    func(format string, args ...any)
	// LocationRoots pins Locations to members (see MemberConfig); none by default.
	LocationRoots map[string]string
	// LocationOnVictim pins the sessions' Location to the member that is
	// killed: every session's tool runs there, so the sessions hosted on
	// survivors lose their running tool (settled as interrupted by their
	// member's proxy) and those hosted on the victim fail over too.
	LocationOnVictim bool
	// AskBash makes every bash call ask for permission (see MemberConfig).
	AskBash bool
	// Spans keeps the members' span stores (see MemberConfig).
	Spans bool
	// ResumeAtStart makes the members resume what the journal shows
	// mid-drain once their topology forms (see MemberConfig).
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

// runMember is one member process as the driver sees it.
type runMember struct {
	i    int
	mc   MemberConfig
	cmd  *exec.Cmd
	addr string // actor address
	ctl  string // control address
	dead bool
}

type turnLine struct {
	at     time.Time
	sid    string
	member int
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
func RunMemberKills(ctx context.Context, cfg MemberKillConfig) (MemberKillReport, error) {
	rep := MemberKillReport{Report: Report{Mode: "member-kill", Faults: map[string]int{}}}
	if err := cfg.defaults(); err != nil {
		return rep, err
	}
	rep.Members = cfg.Members
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	loc := filepath.Join(cfg.Data, "project")
	if err := os.MkdirAll(loc, 0o755); err != nil {
		return rep, err
	}
	if cfg.LocationOnVictim {
		canon, err := filepath.EvalSymlinks(loc)
		if err != nil {
			return rep, err
		}
		// The victim is the last member.
		cfg.LocationRoots = map[string]string{canon: fmt.Sprintf("m%d", cfg.Members-1)}
		rep.Mode = "member-kill (Location on the killed member)"
	}
	j, err := persistence.OpenURL(ctx, "", cfg.JournalURL, false, persistence.Config{}) // creates the schema once
	if err != nil {
		return rep, err
	}
	defer j.Close()

	var mu sync.Mutex
	var turns []turnLine
	onTurn := func(l turnLine) {
		mu.Lock()
		turns = append(turns, l)
		mu.Unlock()
	}
	ms, err := startRunMembers(ctx, cfg, onTurn)
	defer func() {
		for _, m := range ms {
			if m != nil && !memberDead(&mu, m) {
				_ = m.cmd.Process.Kill()
				_ = m.cmd.Wait()
			}
		}
	}()
	if err != nil {
		return rep, err
	}
	if err := waitTopology(ctx, ms); err != nil {
		return rep, fmt.Errorf("topology: %w", err)
	}
	cfg.Logf("%d members joined", len(ms))

	sids := make([]string, cfg.Sessions)
	for i := range sids {
		sids[i] = fmt.Sprintf("ses_mk_%03d", i)
	}
	entry := func(i int) *runMember { return ms[i%len(ms)] }
	if err := parallel(ctx, 16, len(sids), func(i int) error {
		return getJSON(ctx, entry(i).ctl, "/create", url.Values{"id": {sids[i]}, "loc": {loc}}, nil)
	}); err != nil {
		return rep, fmt.Errorf("create sessions: %w", err)
	}
	victim := ms[len(ms)-1]
	onVictim := map[string]bool{}
	for _, sid := range sids {
		var addr string
		if err := getJSON(ctx, ms[0].ctl, "/where", url.Values{"id": {sid}}, &addr); err != nil {
			return rep, err
		}
		if addr == victim.addr {
			onVictim[sid] = true
		}
	}
	rep.SessionsOnVictim = len(onVictim)
	// The sessions the kill interrupts: those hosted on the victim, and
	// every session when their Location (so their tools) is there.
	affected := onVictim
	if cfg.LocationOnVictim {
		affected = map[string]bool{}
		for _, sid := range sids {
			affected[sid] = true
		}
	}
	if len(onVictim) == 0 {
		return rep, fmt.Errorf("no session is placed on member %d: nothing to kill", victim.i)
	}
	cfg.Logf("%d sessions created, %d placed on member %d", len(sids), len(onVictim), victim.i)

	// Prompt every session through its entry member; a caller whose
	// member dies goes on through a survivor with the same message ID.
	acked := map[string][]string{}
	var ackMu sync.Mutex
	survivor := func(i int) *runMember {
		mu.Lock() // dead is written under mu when the victim is killed
		defer mu.Unlock()
		for k := range ms {
			if m := ms[(i+k)%len(ms)]; !m.dead && m != victim {
				return m
			}
		}
		return nil
	}
	through := func(i int, path string, q url.Values, out any) error {
		return retryCall(ctx, func(attempt int) error {
			m := entry(i)
			if attempt > 0 || m == victim && memberDead(&mu, victim) {
				m = survivor(i)
			}
			return getJSON(ctx, m.ctl, path, q, out)
		})
	}
	prompt := func(i int, msg, text string) error {
		sid := sids[i]
		if err := through(i, "/admit", url.Values{"id": {sid}, "msg": {msg}, "text": {text}}, nil); err != nil {
			return fmt.Errorf("admit %s to %s: %w", msg, sid, err)
		}
		ackMu.Lock()
		acked[sid] = append(acked[sid], msg)
		ackMu.Unlock()
		return nil
	}
	wait := func(i int) error {
		var out struct{ Err, Kind string }
		if err := through(i, "/wait", url.Values{"id": {sids[i]}, "timeout": {"60000"}}, &out); err != nil {
			return fmt.Errorf("wait for %s: %w", sids[i], err)
		}
		return nil
	}
	// touch waits a while for a session's drain through a live member: a
	// caller, so a session whose host died is activated on a survivor.
	touch := func(i int) {
		if m := survivor(i); m != nil {
			_ = getJSON(ctx, m.ctl, "/wait", url.Values{"id": {sids[i]}, "timeout": {"10000"}}, nil)
		}
	}
	live := func() []*runMember {
		mu.Lock()
		defer mu.Unlock()
		var out []*runMember
		for _, m := range ms {
			if !m.dead {
				out = append(out, m)
			}
		}
		return out
	}
	settle := func(phase string) error {
		return settleAll(ctx, j, sids, settleStall, touch, func(stuck []string) {
			cfg.Logf("%s: %d sessions made no progress for %v:", phase, len(stuck), settleStall)
			for _, sid := range stuck {
				cfg.Logf("%s", diagnose(ctx, j, live(), cfg.Data, sid))
			}
		})
	}
	// The first round's tools wait for a gate that opens only after the
	// kill: every tool the kill affects is running when it comes, however
	// slowly the machine gets there.
	gate := filepath.Join(loc, GateFile)
	if err := os.Remove(gate); err != nil && !os.IsNotExist(err) {
		return rep, err
	}
	// The callers of the first round wait for their drains through the
	// kill (a killed member's go on through a survivor); whether a
	// session settles is judged by the journal below, not by them.
	firstRound := make(chan error, 1)
	go func() {
		firstRound <- parallel(ctx, len(sids), len(sids), func(i int) error {
			if err := prompt(i, "msg_"+sids[i]+"_1", "gated s="+sids[i]); err != nil {
				return err
			}
			if err := wait(i); err != nil {
				cfg.Logf("first round: %v", err)
			}
			return nil
		})
	}()

	// Kill once every affected session has started its tool.
	if err := waitProgress(ctx, progressStall, func() (int, error) {
		markers, err := countMarkers(loc)
		if err != nil {
			return 0, err
		}
		started := 0
		for m := range markers {
			if affected[sessionOfMarker(m)] {
				started++
			}
		}
		rep.MidToolAtKill = started
		if started < len(affected) {
			return started, fmt.Errorf("%d of %d sessions the kill affects have started their tool", started, len(affected))
		}
		return started, nil
	}); err != nil {
		return rep, err
	}
	mu.Lock()
	victim.dead = true
	mu.Unlock()
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return rep, err
	}
	killed := time.Now()
	_ = victim.cmd.Wait()
	// Release the tools still running on survivors (and the killed
	// member's orphaned ones, whose results nobody takes any more).
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		return rep, err
	}
	rep.ProcessKills = 1
	rep.Faults["member-sigkill"] = 1
	cfg.Logf("member %d SIGKILLed with %d sessions mid-tool", victim.i, rep.MidToolAtKill)

	// Every session settles (the killed member's resumed on survivors).
	if err := settle("after the kill"); err != nil {
		return rep, err
	}
	if err := <-firstRound; err != nil {
		return rep, fmt.Errorf("first round: %w", err)
	}
	rep.SessionsCompleted = len(sids)
	// Each resumed session's first provider turn on a survivor after the kill.
	mu.Lock()
	first := map[string]time.Time{}
	for _, l := range turns {
		if affected[l.sid] && l.member != victim.i && l.at.After(killed) {
			if t, ok := first[l.sid]; !ok || l.at.Before(t) {
				first[l.sid] = l.at
			}
		}
	}
	mu.Unlock()
	slowest := ""
	for sid, at := range first {
		rep.Resumed = append(rep.Resumed, at.Sub(killed))
		if slowest == "" || at.After(first[slowest]) {
			slowest = sid
		}
	}
	if slowest != "" {
		// A figure, not a limit: a loaded machine resumes slowly, a stuck
		// session fails the settle wait above.
		cfg.Logf("slowest resumption: session %s (hosted on the killed member: %v), %v after the kill", slowest, onVictim[slowest], first[slowest].Sub(killed).Round(time.Millisecond))
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

	// A second prompt to every session, through survivors only.
	if err := parallel(ctx, 16, len(sids), func(i int) error {
		if err := prompt(i, "msg_"+sids[i]+"_2", "plain s="+sids[i]); err != nil {
			return err
		}
		return nil
	}); err != nil {
		return rep, fmt.Errorf("second round: %w", err)
	}
	if err := settle("second round"); err != nil {
		return rep, err
	}
	rep.SecondPromptsServed = len(sids)

	if cfg.Rejoin {
		if err := os.Remove(gate); err != nil && !os.IsNotExist(err) {
			return rep, err
		}
		before, err := countMarkers(loc)
		if err != nil {
			return rep, err
		}
		// Every session runs a tool that waits for the gate.
		if err := parallel(ctx, 16, len(sids), func(i int) error {
			return prompt(i, "msg_"+sids[i]+"_3", "gated s="+sids[i])
		}); err != nil {
			return rep, fmt.Errorf("gated round: %w", err)
		}
		if err := waitProgress(ctx, progressStall, func() (int, error) {
			markers, err := countMarkers(loc)
			if err != nil {
				return 0, err
			}
			per := map[string]int{}
			for m := range markers {
				per[sessionOfMarker(m)]++
			}
			started := 0
			for _, sid := range sids {
				if per[sid] >= 2 { // the first round's tool and the gated one
					started++
				}
			}
			if started < len(sids) {
				return started, fmt.Errorf("%d of %d sessions have started their gated tool", started, len(sids))
			}
			return started, nil
		}); err != nil {
			return rep, err
		}
		// The killed member rejoins; disthash places its sessions on it
		// again while their old activations wait in the gated tool.
		r, err := restartMember(ctx, cfg, victim, onTurn)
		if err != nil {
			return rep, fmt.Errorf("rejoin: %w", err)
		}
		ms[victim.i] = r
		rep.Rejoins = 1
		if err := waitTopology(ctx, ms); err != nil {
			return rep, fmt.Errorf("topology after the rejoin: %w", err)
		}
		// The rejoined member has a new ID, and rendezvous hashing weighs
		// IDs: the sessions it now holds are not the ones it held before.
		var moved []int
		for i, sid := range sids {
			var addr string
			if err := getJSON(ctx, r.ctl, "/where", url.Values{"id": {sid}}, &addr); err != nil {
				return rep, err
			}
			if addr == r.addr {
				moved = append(moved, i)
			}
		}
		if len(moved) == 0 {
			return rep, fmt.Errorf("no session is placed on the rejoined member %d", r.i)
		}
		rep.SessionsMovedBack = len(moved)
		cfg.Logf("member %d rejoined; %d sessions move to it mid-tool", victim.i, len(moved))
		// Touch each moved session through the rejoined member (its own
		// placement is fresh; another member may still route a first call
		// to the old activation until the library moves the grain), again
		// while its gated call is open: the activation there takes a new
		// epoch and fails the gated call durably.
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
				_ = getJSON(ctx, r.ctl, "/wait", url.Values{"id": {sids[i]}, "timeout": {"10000"}}, nil)
				touchMu.Lock()
				delete(touching, i)
				touchMu.Unlock()
			}()
		}
		if err := waitProgress(ctx, progressStall, func() (int, error) {
			closed, stillOpen := 0, ""
			for _, i := range moved {
				open, err := j.ToolCalls(ctx, sids[i], persistence.ToolPending, persistence.ToolRunning)
				if err != nil {
					return closed, err
				}
				if len(open) == 0 {
					closed++
					continue
				}
				stillOpen = sids[i]
				touchOnRejoined(i)
			}
			if closed < len(moved) {
				return closed, fmt.Errorf("%d of %d moved sessions have their gated call failed; %s's is still open (not re-activated on the rejoined member)", closed, len(moved), stillOpen)
			}
			return closed, nil
		}); err != nil {
			return rep, err
		}
		gatedCall := map[string]string{} // session -> its gated call
		markers, err := countMarkers(loc)
		if err != nil {
			return rep, err
		}
		for m := range markers {
			if before[m] == 0 {
				gatedCall[sessionOfMarker(m)] = m
			}
		}
		// Open the gate: the old activations' settlements must be refused.
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			return rep, err
		}
		if err := settle("after the rejoin"); err != nil {
			return rep, err
		}
		// No append from a fenced owner: a moved session's gated call is
		// settled once, as interrupted by its new activation; the old
		// activation's success was refused.
		for _, i := range moved {
			call := gatedCall[sids[i]]
			envs, err := j.ReadEvents(ctx, sids[i], 0, 1<<30)
			if err != nil {
				return rep, err
			}
			settlements := 0
			for _, e := range envs {
				switch ev := e.Event.(type) {
				case messages.ToolSucceeded:
					if ev.CallID == call {
						settlements++
						rep.problem("session %s: its gated call %s succeeded after it moved: an append from a fenced owner", sids[i], call)
					}
				case messages.ToolFailed:
					if ev.CallID == call {
						settlements++
					}
				}
			}
			if settlements != 1 {
				rep.problem("session %s: gated call %q settled %d times", sids[i], call, settlements)
			}
		}
	}

	for _, m := range ms {
		if m.dead {
			continue
		}
		var st map[string]int64
		if err := getJSON(ctx, m.ctl, "/stats", nil, &st); err != nil {
			return rep, err
		}
		rep.FencedRefused += st["fenced"]
	}
	if err := check(ctx, j, loc, acked, &rep.Report); err != nil {
		return rep, err
	}
	if rep.Rejoins > 0 && rep.FencedRefused == 0 {
		rep.problem("%d sessions moved to the rejoined member mid-tool, and no append of their old activations was refused", rep.SessionsMovedBack)
	}
	if rep.ToolsInterrupted < rep.MidToolAtKill {
		rep.problem("%d tools were running on the killed member, %d failed durably as interrupted", rep.MidToolAtKill, rep.ToolsInterrupted)
	}
	return rep, nil
}

// progressStall is how long a wait of the run may see no progress (tools
// started, members seen, calls settled) before it fails. Waits are bounded
// by progress, not by wall time: on a loaded machine a healthy run is slow,
// a stuck one makes no progress.
const progressStall = 60 * time.Second

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
			ok, err := settled(ctx, j, sid)
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
		if err := getJSON(ctx, live[0].ctl, "/where", url.Values{"id": {sid}}, &addr); err != nil {
			fmt.Fprintf(&b, "  placement: %v\n", err)
		}
		for _, m := range live {
			if m.addr == addr {
				fmt.Fprintf(&b, "  placed on member %d (%s)\n", m.i, addr)
			}
		}
	}
	for _, m := range live {
		var in MemberInspection
		if err := getJSON(ctx, m.ctl, "/inspect", url.Values{"id": {sid}}, &in); err != nil {
			fmt.Fprintf(&b, "  member %d: %v\n", m.i, err)
			continue
		}
		out, _ := json.Marshal(in)
		fmt.Fprintf(&b, "  member %d: %s\n", m.i, out)
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

func memberDead(mu *sync.Mutex, v *runMember) bool {
	mu.Lock()
	defer mu.Unlock()
	return v.dead
}

// sessionOfMarker reads the session out of a marker "call_<session>_<pid>_<n>".
func sessionOfMarker(m string) string {
	m = strings.TrimPrefix(m, "call_")
	for range 2 {
		i := strings.LastIndexByte(m, '_')
		if i < 0 {
			return "" // not a member-kill marker
		}
		m = m[:i]
	}
	return m
}

func startRunMembers(ctx context.Context, cfg MemberKillConfig, turn func(turnLine)) ([]*runMember, error) {
	var peers []string
	var ports []int
	for range cfg.Members {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports = append(ports, p)
		peers = append(peers, net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	}
	ms := make([]*runMember, cfg.Members)
	ready := make(chan error, cfg.Members)
	for i := range cfg.Members {
		mc := MemberConfig{Name: fmt.Sprintf("m%d", i), Health: ports[i], Members: peers, Refresh: cfg.Refresh,
			JournalURL: cfg.JournalURL, Data: memberDataDir(cfg.Data, i), ToolSleep: cfg.ToolSleep, LocationRoots: cfg.LocationRoots, AskBash: cfg.AskBash, Spans: cfg.Spans, ResumeAtStart: cfg.ResumeAtStart}
		m, err := launchMember(cfg, mc, i, fmt.Sprintf("member%d.log", i), turn, ready)
		if err != nil {
			return ms, err
		}
		ms[i] = m
	}
	return ms, awaitReady(ctx, ready, cfg.Members)
}

// restartMember starts member old.i again with its configuration (same
// name and health port: it rejoins the cluster) and waits for READY.
func restartMember(ctx context.Context, cfg MemberKillConfig, old *runMember, turn func(turnLine)) (*runMember, error) {
	ready := make(chan error, 1)
	m, err := launchMember(cfg, old.mc, old.i, fmt.Sprintf("member%d-rejoined.log", old.i), turn, ready)
	if err != nil {
		return nil, err
	}
	if err := awaitReady(ctx, ready, 1); err != nil {
		_ = m.cmd.Process.Kill()
		_ = m.cmd.Wait()
		return nil, err
	}
	return m, nil
}

func launchMember(cfg MemberKillConfig, mc MemberConfig, i int, logName string, turn func(turnLine), ready chan<- error) (*runMember, error) {
	cmd := cfg.Command(mc)
	logf, err := os.Create(filepath.Join(cfg.Data, logName))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start member %d: %w", i, err)
	}
	m := &runMember{i: i, cmd: cmd, mc: mc}
	go func() {
		defer logf.Close()
		sc := bufio.NewScanner(stdout)
		isReady := false
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 3 && f[0] == "READY" && !isReady:
				m.addr, m.ctl, isReady = f[1], f[2], true
				ready <- nil
			case len(f) == 3 && f[0] == "turn":
				if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					turn(turnLine{at: time.Unix(0, ns), sid: f[2], member: i})
				}
			}
		}
		if !isReady {
			ready <- fmt.Errorf("member %d exited before READY (see %s)", i, logf.Name())
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	return m, nil
}

// awaitReady waits until n members printed READY. A member that exits
// first fails it at once; one that is merely slow (a loaded machine
// starts processes slowly) is waited for as long as the run lasts.
func awaitReady(ctx context.Context, ready <-chan error, n int) error {
	for range n {
		select {
		case err := <-ready:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return fmt.Errorf("members not ready: %w", ctx.Err())
		}
	}
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

var ctlClient = &http.Client{Timeout: 90 * time.Second}

// getJSON calls a member's control API.
func getJSON(ctx context.Context, ctl, path string, q url.Values, out any) error {
	u := "http://" + ctl + path
	if q != nil {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	res, err := ctlClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", path, res.Status, strings.TrimSpace(string(b)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// getText reads a member's control API as text.
func getText(ctx context.Context, ctl, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ctl+path, nil)
	if err != nil {
		return "", err
	}
	res, err := ctlClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", path, res.Status)
	}
	return string(b), err
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

// waitProgress polls cond until it holds (returns nil). cond also returns a
// measure of progress (how many sessions started their tool, …): the wait
// fails once that measure has not changed for stall, or when ctx ends.
func waitProgress(ctx context.Context, stall time.Duration, cond func() (progress int, err error)) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last, since := -1, time.Now()
	for {
		n, err := cond()
		if err == nil {
			return nil
		}
		if n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) > stall {
			return fmt.Errorf("no progress for %v: %w", stall, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		case <-tick.C:
		}
	}
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
