package actors

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// threeTurnEdits is an agent that, for its k-th prompt (k = 0, 1, 2), runs
// one bash call changing files, then answers "done k": turn 1 rewrites
// a.txt, turn 2 rewrites it again and creates b.txt, turn 3 creates
// d/c.txt and deletes keep.txt. Later prompts get a plain answer.
func threeTurnEdits(req *provider.Request, n int) (scripted.Turn, error) {
	cmds := []string{
		`printf 'turn one\n' > a.txt`,
		`printf 'turn two\n' > a.txt && printf 'new file\n' > b.txt`,
		`mkdir -p d && printf 'deep\n' > d/c.txt && rm keep.txt`,
	}
	if n%2 == 1 || n/2 >= len(cmds) {
		return scripted.Turn{Text: "done"}, nil
	}
	return scripted.Turn{ToolCalls: []scripted.ToolCall{{ID: "call_" + string(rune('a'+n)), Name: "bash",
		Args: []byte(`{"command":"` + cmds[n/2] + `","description":"edit"}`)}}}, nil
}

func withSnapshots(t *testing.T, dir string) harnessOption {
	st, err := filesnap.Open(filesnap.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) { c.Snapshots = st }
}

// tree reads every file under dir.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return out
}

// editThreeTurns runs the three prompts msg_1..msg_3 and returns the files
// as they were after turn 1 and after turn 3.
func editThreeTurns(t *testing.T, h *harness, id string) (afterOne, afterThree map[string]string) {
	writeFile(t, filepath.Join(h.loc, "a.txt"), "original\n")
	writeFile(t, filepath.Join(h.loc, "keep.txt"), "keep me\n")
	for i, text := range []string{"one", "two", "three"} {
		h.prompt(id, "msg_"+string(rune('1'+i)), text, messages.Queue, true)
		if out := h.waitIdle(id); out.Err != "" {
			t.Fatalf("prompt %s: %s", text, out.Err)
		}
		if i == 0 {
			afterOne = tree(t, h.loc)
		}
	}
	return afterOne, tree(t, h.loc)
}

func (h *harness) revert(id, op, msg string) *RevertInfo {
	h.t.Helper()
	info, err := h.sessions.Revert(h.ctx(), id, Revert{Op: op, MessageID: msg})
	if err != nil {
		h.t.Fatalf("revert %s %s: %v", op, msg, err)
	}
	return info
}

func userTexts(h *harness, id string) []string {
	var out []string
	for _, m := range h.history(id) {
		if strings.HasPrefix(m, "U:") {
			out = append(out, m)
		}
	}
	return out
}

func TestRevertRestoresFilesHidesMessagesAndClearBringsThemBack(t *testing.T) {
	h := newHarness(t, threeTurnEdits)
	h.restart(withSnapshots(t, filepath.Join(h.data, "snapshots")))
	id := h.create("")
	afterOne, afterThree := editThreeTurns(t, h, id)
	if want := map[string]string{"a.txt": "turn one\n", "keep.txt": "keep me\n"}; !reflect.DeepEqual(afterOne, want) {
		t.Fatalf("after turn 1: %v", afterOne)
	}
	fullHistory := h.history(id)

	// Stage: the files a commit would change, nothing changed yet.
	info := h.revert(id, RevertStage, "msg_2")
	if info.Open == nil || info.Open.MessageID != "msg_2" || info.Open.Committed {
		t.Fatalf("staged %+v", info.Open)
	}
	status := map[string]filesnap.Status{}
	for _, f := range info.Files {
		status[f.Path] = f.Status
	}
	// From now back to after turn 1: b.txt and d/c.txt go, keep.txt comes back.
	if want := map[string]filesnap.Status{"a.txt": filesnap.Modified, "b.txt": filesnap.Deleted, "d/c.txt": filesnap.Deleted, "keep.txt": filesnap.Added}; !reflect.DeepEqual(status, want) {
		t.Fatalf("staged files %v, want %v", status, want)
	}
	if got := tree(t, h.loc); !reflect.DeepEqual(got, afterThree) {
		t.Fatalf("staging changed files: %v", got)
	}
	// A retried stage writes nothing.
	n := len(h.events(id))
	h.revert(id, RevertStage, "msg_2")
	if len(h.events(id)) != n {
		t.Fatal("a repeated stage wrote an event")
	}

	// Commit: the exact bytes of turn 1, created files and directories gone.
	h.revert(id, RevertCommit, "")
	if got := tree(t, h.loc); !reflect.DeepEqual(got, afterOne) {
		t.Fatalf("after commit %v, want %v", got, afterOne)
	}
	if _, err := os.Stat(filepath.Join(h.loc, "d")); !os.IsNotExist(err) {
		t.Fatalf("created directory d survived the revert: %v", err)
	}
	if got := userTexts(h, id); !reflect.DeepEqual(got, []string{"U:one"}) {
		t.Fatalf("history after commit: %q", h.history(id))
	}
	n = len(h.events(id))
	h.revert(id, RevertCommit, "")
	if len(h.events(id)) != n {
		t.Fatal("a repeated commit wrote an event")
	}
	h.checkReplay()

	// Clear: everything back.
	h.revert(id, RevertClear, "")
	if got := tree(t, h.loc); !reflect.DeepEqual(got, afterThree) {
		t.Fatalf("after clear %v, want %v", got, afterThree)
	}
	if got := h.history(id); !reflect.DeepEqual(got, fullHistory) {
		t.Fatalf("history after clear %q, want %q", got, fullHistory)
	}
	n = len(h.events(id))
	h.revert(id, RevertClear, "")
	if len(h.events(id)) != n {
		t.Fatal("a repeated clear wrote an event")
	}

	// Revert again, then prompt: the reverted messages leave the request.
	h.revert(id, RevertStage, "msg_2")
	h.revert(id, RevertCommit, "msg_2")
	h.prompt(id, "msg_4", "four", messages.Queue, true)
	h.waitIdle(id)
	reqs := h.prov.Requests()
	got := requestRoles(reqs[len(reqs)-1])
	for _, m := range got {
		if strings.Contains(m, "two") || strings.Contains(m, "three") {
			t.Fatalf("the reverted messages reached the model: %q", got)
		}
	}
	if got := userTexts(h, id); !reflect.DeepEqual(got, []string{"U:one", "U:four"}) {
		t.Fatalf("history after the next prompt: %q", h.history(id))
	}
	// The drain finalized the revert: nothing to clear, history stays.
	if info := h.revert(id, RevertShow, ""); info.Open != nil {
		t.Fatalf("open revert after a drain: %+v", info.Open)
	}
	h.revert(id, RevertClear, "")
	if got := userTexts(h, id); !reflect.DeepEqual(got, []string{"U:one", "U:four"}) {
		t.Fatalf("a clear after the drain brought messages back: %q", h.history(id))
	}
	h.restart(withSnapshots(t, filepath.Join(h.data, "snapshots")))
	if got := userTexts(h, id); !reflect.DeepEqual(got, []string{"U:one", "U:four"}) {
		t.Fatalf("after a restart: %q", h.history(id))
	}
	h.checkReplay()
}

func TestRevertIsRefusedWhileADrainRuns(t *testing.T) {
	started := make(chan int, 1)
	h := newHarness(t, hangFirst(started))
	h.restart(withSnapshots(t, filepath.Join(h.data, "snapshots")))
	id := h.create("")
	h.prompt(id, "msg_1", "one", messages.Queue, true)
	<-started // the drain's turn streams
	for _, op := range []string{RevertStage, RevertCommit, RevertClear} {
		_, err := h.sessions.Revert(h.ctx(), id, Revert{Op: op, MessageID: "msg_1"})
		if !errors.Is(err, ErrBusy) {
			t.Fatalf("%s during a drain: %v, want busy", op, err)
		}
	}
	if err := h.sessions.Interrupt(h.ctx(), id); err != nil {
		t.Fatal(err)
	}
	h.revert(id, RevertStage, "msg_1")
}

func TestRevertSurvivesCrashesBetweenStageAndCommitAndMidCommit(t *testing.T) {
	h := newHarness(t, threeTurnEdits)
	snaps := filepath.Join(h.data, "snapshots")
	h.restart(withSnapshots(t, snaps))
	id := h.create("")
	afterOne, _ := editThreeTurns(t, h, id)
	h.revert(id, RevertStage, "msg_2")

	// A crash between stage and commit: the staged revert is durable.
	// atCrash is the Location as the crash left it, read in the fault
	// itself: the supervisor restarts the crashed actor at once, and its
	// activation finishes the restore, maybe before the test looks.
	crash := true
	var atCrash map[string]string
	h.restart(withSnapshots(t, snaps), func(c *Config) {
		c.Faults = func(p FaultPoint, _ string) bool {
			if p == FaultMidRestore && crash {
				crash = false
				atCrash = tree(t, h.loc)
				return true
			}
			return false
		}
	})
	if info := h.revert(id, RevertShow, ""); info.Open == nil || info.Open.MessageID != "msg_2" || info.Open.Committed {
		t.Fatalf("after a restart the staged revert is %+v", info.Open)
	}
	// A crash in the middle of the commit: one file restored, the others not.
	if _, err := h.sessions.Revert(h.ctx(), id, Revert{Op: RevertCommit}); err == nil {
		t.Fatal("the commit survived its injected crash")
	}
	if atCrash == nil || reflect.DeepEqual(atCrash, afterOne) {
		t.Fatalf("the crash came after every file was restored (or never: %v)", atCrash == nil)
	}
	// The restarted actor finishes the commit before anything else.
	h.restart(withSnapshots(t, snaps))
	info := h.revert(id, RevertShow, "")
	if info.Open == nil || !info.Open.Committed {
		t.Fatalf("after the crash the revert is %+v", info.Open)
	}
	if got := tree(t, h.loc); !reflect.DeepEqual(got, afterOne) {
		t.Fatalf("after recovery %v, want %v", got, afterOne)
	}
	evs := h.events(id)
	if evs[len(evs)-1] != "revert.restored" {
		t.Fatalf("events end with %v", evs[len(evs)-3:])
	}
	if got := userTexts(h, id); !reflect.DeepEqual(got, []string{"U:one"}) {
		t.Fatalf("history: %q", h.history(id))
	}
	h.checkReplay()
}

func TestMovedSessionRevertsOnItsNewLocation(t *testing.T) {
	h := newHarness(t, threeTurnEdits)
	h.restart(withSnapshots(t, filepath.Join(h.data, "snapshots")))
	id := h.create("")
	afterOne, afterThree := editThreeTurns(t, h, id)
	// The project moves: a copy of it elsewhere.
	dest := t.TempDir()
	var paths []string
	for p := range afterThree {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		os.MkdirAll(filepath.Dir(filepath.Join(dest, p)), 0o755)
		writeFile(t, filepath.Join(dest, p), afterThree[p])
	}
	if _, err := h.sessions.Move(h.ctx(), id, dest); err != nil {
		t.Fatal(err)
	}
	h.revert(id, RevertStage, "msg_2")
	h.revert(id, RevertCommit, "")
	if got := tree(t, dest); !reflect.DeepEqual(got, afterOne) {
		t.Fatalf("new Location after the revert %v, want %v", got, afterOne)
	}
	if got := tree(t, h.loc); !reflect.DeepEqual(got, afterThree) {
		t.Fatalf("the old Location changed: %v", got)
	}
	h.checkReplay()
}

func TestRevertToASnapshotThisServerLacksIsRefusedByName(t *testing.T) {
	h := newHarness(t, threeTurnEdits)
	snaps := filepath.Join(h.data, "snapshots")
	h.restart(withSnapshots(t, snaps))
	id := h.create("")
	editThreeTurns(t, h, id)
	// Another store: as on a cluster member that took none of the turns.
	h.restart(withSnapshots(t, filepath.Join(h.data, "other-snapshots")))
	_, err := h.sessions.Revert(h.ctx(), id, Revert{Op: RevertStage, MessageID: "msg_2"})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "not in this server's snapshot store") {
		t.Fatalf("stage without the snapshot: %v", err)
	}
	if info := h.revert(id, RevertShow, ""); info.Open != nil {
		t.Fatalf("a refused stage left %+v", info.Open)
	}
}

// lossyTakes fails the Takes whose 1-based numbers are in fail.
type lossyTakes struct {
	SnapshotStore
	mu   sync.Mutex
	n    int
	fail map[int]bool
}

func (l *lossyTakes) Take(dir string) (string, error) {
	l.mu.Lock()
	l.n++
	fail := l.fail[l.n]
	l.mu.Unlock()
	if fail {
		return "", errors.New("lost")
	}
	return l.SnapshotStore.Take(dir)
}

func TestRevertLeavesFilesTheSessionNeverTouched(t *testing.T) {
	t.Run("tool snapshots", func(t *testing.T) { revertLeavesHandEdits(t, false) })
	// As in a journal from before tool snapshots (or after a crash in a
	// tool): what a tool changed is read from the next turn's snapshot.
	t.Run("tool snapshots lost", func(t *testing.T) { revertLeavesHandEdits(t, true) })
}

func revertLeavesHandEdits(t *testing.T, lose bool) {
	h := newHarness(t, threeTurnEdits)
	if lose {
		st, err := filesnap.Open(filesnap.Config{Dir: filepath.Join(h.data, "snapshots")})
		if err != nil {
			t.Fatal(err)
		}
		// Per prompt: the turn's Take, the bash call's, the answer turn's.
		l := &lossyTakes{SnapshotStore: LocalSnapshots(st), fail: map[int]bool{2: true, 5: true, 8: true}}
		h.restart(func(c *Config) {
			c.Snapshots = st
			c.SnapshotPlacement = func(string) (SnapshotStore, error) { return l, nil }
		})
	} else {
		h.restart(withSnapshots(t, filepath.Join(h.data, "snapshots")))
	}
	id := h.create("")
	writeFile(t, filepath.Join(h.loc, "notes.txt"), "mine\n")
	writeFile(t, filepath.Join(h.loc, "a.txt"), "original\n")
	writeFile(t, filepath.Join(h.loc, "keep.txt"), "keep me\n")
	h.prompt(id, "msg_1", "one", messages.Queue, true)
	h.waitIdle(id)
	// By hand, between the turns: a file the session never touches is
	// changed, another created, a third removed.
	writeFile(t, filepath.Join(h.loc, "notes.txt"), "mine, edited by hand\n")
	writeFile(t, filepath.Join(h.loc, "hand.txt"), "by hand\n")
	h.prompt(id, "msg_2", "two", messages.Queue, true)
	h.waitIdle(id)
	h.prompt(id, "msg_3", "three", messages.Queue, true)
	h.waitIdle(id)
	writeFile(t, filepath.Join(h.loc, "late.txt"), "after the last turn\n")

	// Every bash call recorded the snapshot taken after it.
	envs, err := h.journal.ReadEvents(h.ctx(), id, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	tools := 0
	for _, env := range envs {
		if e, ok := env.Event.(messages.ToolSucceeded); ok {
			tools++
			if (e.Snapshot == "") != lose {
				t.Fatalf("bash call %s settled with snapshot %q", e.CallID, e.Snapshot)
			}
		}
	}
	if tools != 3 {
		t.Fatalf("%d tool settlements, want 3", tools)
	}

	info := h.revert(id, RevertStage, "msg_1")
	var staged []string
	for _, f := range info.Files {
		staged = append(staged, f.Path)
	}
	// Only what the tools changed: a.txt back, b.txt and d/c.txt gone,
	// keep.txt back; notes.txt, hand.txt and late.txt are the user's.
	if want := []string{"a.txt", "b.txt", "d/c.txt", "keep.txt"}; !reflect.DeepEqual(staged, want) {
		t.Fatalf("staged %v, want %v", staged, want)
	}
	diff, err := h.sessions.Revert(h.ctx(), id, Revert{Op: RevertDiff})
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, f := range diff.Files {
		changed = append(changed, f.Path)
	}
	if want := []string{"a.txt", "b.txt", "d/c.txt", "keep.txt"}; !reflect.DeepEqual(changed, want) {
		t.Fatalf("session diff %v, want %v", changed, want)
	}
	h.revert(id, RevertCommit, "")
	want := map[string]string{"a.txt": "original\n", "keep.txt": "keep me\n", "notes.txt": "mine, edited by hand\n",
		"hand.txt": "by hand\n", "late.txt": "after the last turn\n"}
	if got := tree(t, h.loc); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the revert %v, want %v", got, want)
	}
	h.revert(id, RevertClear, "")
	want = map[string]string{"a.txt": "turn two\n", "b.txt": "new file\n", "d/c.txt": "deep\n", "notes.txt": "mine, edited by hand\n",
		"hand.txt": "by hand\n", "late.txt": "after the last turn\n"}
	if got := tree(t, h.loc); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the clear %v, want %v", got, want)
	}
	h.checkReplay()
}

func TestRevertToAMessageBeforeTheLastCompactionIsRefused(t *testing.T) {
	s := &summarizer{}
	h := newHarness(t, s.turn, smallWindow(0, compactCfg(1000, 200)))
	h.restart(withSnapshots(t, filepath.Join(h.data, "snapshots")), smallWindow(0, compactCfg(1000, 200)))
	id := h.create("")
	for i, text := range []string{"one", "two", "three", "four"} {
		h.prompt(id, "msg_"+string(rune('1'+i)), text, messages.Queue, true)
		h.waitIdle(id)
	}
	if out, err := h.sessions.Compact(h.ctx(), id); err != nil || out.Err != "" || s.count() != 1 {
		t.Fatalf("compact: %+v %v", out, err)
	}
	h.prompt(id, "msg_5", "five", messages.Queue, true)
	h.waitIdle(id)
	_, err := h.sessions.Revert(h.ctx(), id, Revert{Op: RevertStage, MessageID: "msg_2"})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "before the session's last compaction") {
		t.Fatalf("stage before the compaction: %v", err)
	}
	// After it, a revert works as ever.
	h.revert(id, RevertStage, "msg_5")
	h.revert(id, RevertCommit, "")
	for _, m := range userTexts(h, id) {
		if strings.Contains(m, "five") {
			t.Fatalf("after reverting to msg_5 the history still has %v", userTexts(h, id))
		}
	}
	h.checkReplay()
}

// gatedSnapshots holds every Take until release is closed.
type gatedSnapshots struct {
	SnapshotStore
	entered chan string
	release chan struct{}
}

func (g *gatedSnapshots) Take(dir string) (string, error) {
	g.entered <- dir
	<-g.release
	return g.SnapshotStore.Take(dir)
}

func gated(t *testing.T, dir string) (harnessOption, *gatedSnapshots) {
	st, err := filesnap.Open(filesnap.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedSnapshots{SnapshotStore: LocalSnapshots(st), entered: make(chan string, 100), release: make(chan struct{})}
	return func(c *Config) {
		c.Snapshots = st
		c.SnapshotPlacement = func(string) (SnapshotStore, error) { return g, nil }
	}, g
}

func TestTurnSnapshotIsTakenOffTheMailbox(t *testing.T) {
	h := newHarness(t, func(*provider.Request, int) (scripted.Turn, error) { return scripted.Turn{Text: "hi"}, nil })
	opt, g := gated(t, filepath.Join(h.data, "snapshots"))
	h.restart(opt)
	id := h.create("")
	writeFile(t, filepath.Join(h.loc, "a.txt"), "a\n")
	h.prompt(id, "msg_1", "one", messages.Queue, true)
	<-g.entered // the turn's snapshot is being taken
	// The actor answers meanwhile: an inspection, and a revert refused
	// because a drain runs.
	in, err := h.sessions.Inspect(h.ctx(), id)
	if err != nil || in.Drain == nil || !in.Drain.Busy {
		t.Fatalf("inspect while the snapshot is taken: %+v %v", in, err)
	}
	if _, err := h.sessions.Revert(h.ctx(), id, Revert{Op: RevertStage, MessageID: "msg_1"}); !errors.Is(err, ErrBusy) {
		t.Fatalf("revert while the snapshot is taken: %v", err)
	}
	if got := h.events(id); contains(got, "turn.started") {
		t.Fatalf("the turn started before its snapshot: %v", got)
	}
	close(g.release)
	h.waitIdle(id)
	envs, err := h.journal.ReadEvents(h.ctx(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	snaps := 0
	for _, env := range envs {
		if e, ok := env.Event.(messages.TurnStarted); ok {
			if e.Snapshot == "" {
				t.Fatal("the turn has no snapshot")
			}
			snaps++
		}
	}
	if snaps != 1 {
		t.Fatalf("%d turns", snaps)
	}
	h.checkReplay()
}

func TestInterruptWhileTheTurnSnapshotIsTaken(t *testing.T) {
	h := newHarness(t, func(*provider.Request, int) (scripted.Turn, error) { return scripted.Turn{Text: "hi"}, nil })
	opt, g := gated(t, filepath.Join(h.data, "snapshots"))
	h.restart(opt)
	id := h.create("")
	h.prompt(id, "msg_1", "one", messages.Queue, true)
	<-g.entered
	done := make(chan error, 1)
	go func() { done <- h.sessions.Interrupt(h.ctx(), id) }()
	for i := 0; ; i++ {
		in, err := h.sessions.Inspect(h.ctx(), id)
		if err != nil {
			t.Fatal(err)
		}
		if in.Drain != nil && in.Drain.Interrupted {
			break
		}
		if i > 5000 {
			t.Fatal("the interrupt never reached the drain")
		}
		time.Sleep(time.Millisecond)
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := h.events(id)
	if contains(got, "turn.started") || !contains(got, "interrupted") {
		t.Fatalf("events %v", got)
	}
	h.checkReplay()
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
