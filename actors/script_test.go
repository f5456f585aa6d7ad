package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/scripted"
)

// TestScripts runs the shell's scenario scripts in testdata/ against the
// real runtime: the real Session actors, the real journal on the real
// embedded engine in a temporary directory (the harness's), and the
// scripted provider as the only stand-in. Each script ends with scenario
// 60's check (every projection rebuilt from the event log equals the
// stored one; under TestS60_ also in a fresh process). Regenerate with
// go test ./actors -run TestScripts -rewrite and read the diff.
//
// Commands (session= defaults to the last session created):
//
//	start [inbox-limit=n] [recovery=resume|interrupt]   (re)start the process on the same data
//	provider                  the next provider turns, one a line, then the default "a<n>":
//	                          `text <t>`, `error <kind>`, or a scripted.Turn as JSON;
//	                          `hold ` before one holds its stream until release
//	await-stream              wait until a held turn's stream is open
//	release                   let the held turn go on
//	fault at=<point> [times=n]  kill the session actor at a fault point (faults.go)
//	create [id=] [title=] [loc=other]
//	create-concurrently id= n=   n creates of one ID at once
//	admit [session=] [id=] text= [queue] [resume]
//	admit-many [session=] n= [prefix=] [concurrency=] [tails=k]   n held steers from
//	                          concurrent callers; tails=k starts k tails after seq 2
//	                          (during-1…during-k) while they land
//	run | wait-idle [session=]
//	await [session=] idle=n   wait until the journal holds n idle events
//	revert op=stage|commit|clear [msg=]   a revert command
//	ls                        the files in the Location and their contents
//	journal fail-writes|heal  the journal's storage refuses every write (a full disk), or not
//	subscribe [session=]      subscribe to the live bus
//	status type=              read the bus until a session status of that type
//	recover                   start-up recovery: the sessions it woke
//	pending | history [after=seq.index] [limit=] | history-pages limit=
//	events [after=] [limit=]  the durable events, runs of one type in one line
//	tail [name=] after=       start tailing the events (Journal.Events)
//	tail-until [name=] seq=n|last   what the tail received up to there
//	tails-until seq=n|last    the same for every during- tail, one line each
//	tail-stop [name=]         stop it; anything it received later is a duplicate
//	sessions                  every session in the journal
//	requests                  the provider requests made since the last requests
//	                          (numbered anew in each process)
//	verify                    projections = the event log replayed (scenario 60)
//
// Generated IDs print as <ses 1>, <msg 1>... in order of appearance;
// the session's Location as $LOC, the notes a resumed drain adds as
// <RestartNote> and <JournalNote>.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		e := &scriptEnv{t: t, ids: map[string]string{}, tails: map[string]*scriptTail{}, faults: map[FaultPoint]int{}}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			defer func() { e.td = nil }()
			e.td = td
			return e.normalize(e.handle(td))
		})
		if e.h != nil && !t.Failed() {
			e.h.checkReplay()
		}
	})
}

// scriptWait bounds every wait of a script: a script that hangs fails.
const scriptWait = 30 * time.Second

type scriptEnv struct {
	t   *testing.T
	td  *datadriven.TestData
	h   *harness
	ses string // the last session created

	mu     sync.Mutex
	turns  []scriptTurn
	held   chan struct{} // closed by release
	opened chan struct{} // a held turn's stream is open
	faults map[FaultPoint]int

	ids      map[string]string // generated ID -> its name in the output
	requests int               // provider requests printed so far
	tails    map[string]*scriptTail
	sub      *Subscription // the live bus, for status
	other    string        // the second Location
}

type scriptTurn struct {
	turn scripted.Turn
	hold bool
}

type scriptTail struct {
	cancel context.CancelFunc
	got    chan tailed
	last   int64 // the last seq printed
}

type tailed struct {
	env messages.Envelope
	err error
}

func (e *scriptEnv) fatalf(format string, args ...any) {
	e.t.Helper()
	pos := ""
	if e.td != nil {
		pos = e.td.Pos + ": "
	}
	e.t.Fatalf(pos+format, args...)
}

// turn answers the harness's provider: the next scripted turn, else "a<n>".
func (e *scriptEnv) turn(ctx context.Context, _ *provider.Request, n int) (scripted.Turn, error) {
	e.mu.Lock()
	if len(e.turns) == 0 {
		e.mu.Unlock()
		return scripted.Turn{Text: fmt.Sprintf("a%d", n+1)}, nil
	}
	st := e.turns[0]
	e.turns = e.turns[1:]
	held, opened := e.held, e.opened
	e.mu.Unlock()
	if st.hold {
		close(opened)
		select {
		case <-held:
		case <-ctx.Done():
			return scripted.Turn{}, ctx.Err()
		}
	}
	return st.turn, nil
}

func (e *scriptEnv) start(td *datadriven.TestData) {
	var opts []harnessOption
	if td != nil && td.HasArg("inbox-limit") {
		var n int
		td.ScanArgs(e.t, "inbox-limit", &n)
		opts = append(opts, func(c *Config) { c.InboxLimit = n })
	}
	if td != nil && td.HasArg("recovery") {
		var r string
		td.ScanArgs(e.t, "recovery", &r)
		opts = append(opts, func(c *Config) { c.Recovery = Recovery(r) })
	}
	opts = append(opts, func(c *Config) {
		c.Faults = func(p FaultPoint, _ string) bool {
			e.mu.Lock()
			defer e.mu.Unlock()
			if e.faults[p] > 0 {
				e.faults[p]--
				return true
			}
			return false
		}
	})
	if e.h == nil {
		e.h = newHarness(e.t, func(*provider.Request, int) (scripted.Turn, error) { return scripted.Turn{}, nil }, opts...)
		e.other = e.t.TempDir()
	} else {
		for name, tl := range e.tails {
			tl.cancel()
			delete(e.tails, name)
		}
		e.h.restart(opts...)
		// The new process has a provider of its own.
		e.requests = 0
		// A turn the stopped process held open goes nowhere now.
		e.mu.Lock()
		if e.held != nil {
			select {
			case <-e.held:
			default:
				close(e.held)
			}
		}
		e.mu.Unlock()
	}
	// The harness's provider passes the request count, not the context:
	// the held turn waits on the harness's context instead.
	e.h.mu.Lock()
	e.h.turns = func(req *provider.Request, n int) (scripted.Turn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), scriptWait)
		defer cancel()
		return e.turn(ctx, req, n)
	}
	e.h.mu.Unlock()
}

func (e *scriptEnv) session(td *datadriven.TestData) string {
	id := e.ses
	td.MaybeScanArgs(e.t, "session", &id)
	if id == "" {
		e.fatalf("no session: create one first or name it")
	}
	return id
}

func (e *scriptEnv) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), scriptWait)
	e.t.Cleanup(cancel)
	return ctx
}

func (e *scriptEnv) handle(td *datadriven.TestData) string {
	if e.h == nil || td.Cmd == "start" {
		e.start(td)
		if td.Cmd == "start" {
			return "started\n"
		}
	}
	cmd, ok := scriptCommands[td.Cmd]
	if !ok {
		e.fatalf("unknown command %q", td.Cmd)
	}
	return cmd(e, td)
}

// scriptCommands are the commands of TestScripts' doc, by name: those
// that drive the process here, the sessions' in script_sessions_test.go,
// the journal's reads in script_reads_test.go.
var scriptCommands = map[string]func(*scriptEnv, *datadriven.TestData) string{
	"provider":            (*scriptEnv).cmdProvider,
	"await-stream":        (*scriptEnv).cmdAwaitStream,
	"release":             (*scriptEnv).cmdRelease,
	"fault":               (*scriptEnv).cmdFault,
	"journal":             (*scriptEnv).cmdJournal,
	"subscribe":           (*scriptEnv).cmdSubscribe,
	"status":              (*scriptEnv).cmdStatus,
	"recover":             (*scriptEnv).cmdRecover,
	"verify":              (*scriptEnv).cmdVerify,
	"create":              (*scriptEnv).cmdCreate,
	"create-concurrently": (*scriptEnv).cmdCreateConcurrently,
	"admit":               (*scriptEnv).cmdAdmit,
	"admit-many":          (*scriptEnv).cmdAdmitMany,
	"run":                 (*scriptEnv).cmdRun,
	"wait-idle":           (*scriptEnv).cmdWaitIdle,
	"await":               (*scriptEnv).cmdAwait,
	"revert":              (*scriptEnv).cmdRevert,
	"ls":                  (*scriptEnv).cmdLs,
	"pending":             (*scriptEnv).cmdPending,
	"requests":            (*scriptEnv).cmdRequests,
	"sessions":            (*scriptEnv).cmdSessions,
	"events":              (*scriptEnv).cmdEvents,
	"tail":                (*scriptEnv).cmdTail,
	"tail-until":          (*scriptEnv).cmdTailUntil,
	"tails-until":         (*scriptEnv).cmdTailsUntil,
	"tail-stop":           (*scriptEnv).cmdTailStop,
	"history":             (*scriptEnv).cmdHistory,
	"history-pages":       (*scriptEnv).cmdHistoryPages,
}

func (e *scriptEnv) cmdProvider(td *datadriven.TestData) string {

	e.mu.Lock()
	defer e.mu.Unlock()
	for _, l := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		l = strings.TrimSpace(l)
		var st scriptTurn
		if rest, ok := strings.CutPrefix(l, "hold "); ok {
			st.hold, l = true, rest
			e.held, e.opened = make(chan struct{}), make(chan struct{})
		}
		word, rest, _ := strings.Cut(l, " ")
		switch {
		case word == "text":
			st.turn.Text = rest
		case word == "error":
			st.turn.Error = &scripted.ErrorSpec{Kind: rest}
		case strings.HasPrefix(l, "{"):
			if err := json.Unmarshal([]byte(l), &st.turn); err != nil {
				e.fatalf("provider turn %q: %v", l, err)
			}
		default:
			e.fatalf("provider turn %q: want text, error or a JSON turn", l)
		}
		e.turns = append(e.turns, st)
	}
	return ""

}

func (e *scriptEnv) cmdAwaitStream(td *datadriven.TestData) string {

	e.mu.Lock()
	opened := e.opened
	e.mu.Unlock()
	select {
	case <-opened:
		return "the held stream is open\n"
	case <-time.After(scriptWait):
		e.fatalf("no held stream opened")
	}
	return ""
}

func (e *scriptEnv) cmdRelease(td *datadriven.TestData) string {

	e.mu.Lock()
	select {
	case <-e.held:
		e.fatalf("no held turn to release")
	default:
		close(e.held)
	}
	e.mu.Unlock()
	return "released\n"

}

func (e *scriptEnv) cmdFault(td *datadriven.TestData) string {
	t := e.t
	var at string
	n := 1
	td.ScanArgs(t, "at", &at)
	td.MaybeScanArgs(t, "times", &n)
	e.mu.Lock()
	e.faults[FaultPoint(at)] = n
	e.mu.Unlock()
	return ""

}

func (e *scriptEnv) cmdJournal(td *datadriven.TestData) string {
	h := e.h
	var out strings.Builder
	// The journal's storage refuses every write (a full disk) or
	// accepts them again.
	switch {
	case td.HasArg("fail-writes"):
		h.faults.FailWrites(nil)
		out.WriteString("writes fail: no space left on device\n")
	case td.HasArg("heal"):
		h.faults.Heal()
		out.WriteString("writes go through\n")
	default:
		e.fatalf("journal fail-writes or journal heal")
	}
	return out.String()
}

func (e *scriptEnv) cmdSubscribe(td *datadriven.TestData) string {
	h := e.h
	var out strings.Builder
	id := e.session(td)
	if e.sub != nil {
		e.sub.Close()
	}
	e.sub = h.bus.Subscribe(id, 1<<14)
	e.t.Cleanup(e.sub.Close)
	fmt.Fprintf(&out, "subscribed to %s\n", id)
	return out.String()
}

func (e *scriptEnv) cmdStatus(td *datadriven.TestData) string {
	t := e.t
	// Reads the live bus until a session status of this type.
	var typ string
	td.ScanArgs(t, "type", &typ)
	if e.sub == nil {
		e.fatalf("subscribe first")
	}
	deadline := time.After(scriptWait)
	for {
		select {
		case it, ok := <-e.sub.C():
			if !ok {
				e.fatalf("the live subscription ended: %v", e.sub.Err())
			}
			if st := it.Status; st != nil && st.Type == typ {
				if st.Message == "" {
					return fmt.Sprintf("status %s\n", st.Type)
				}
				return fmt.Sprintf("status %s: %s\n", st.Type, st.Message)
			}
		case <-deadline:
			e.fatalf("no %s status on the live bus", typ)
		}
	}
}

func (e *scriptEnv) cmdRecover(td *datadriven.TestData) string {
	h := e.h
	var out strings.Builder
	ids, err := h.sessions.Recover(e.ctx(), nil)
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	fmt.Fprintf(&out, "recovered %v\n", ids)
	return out.String()
}

func (e *scriptEnv) cmdVerify(td *datadriven.TestData) string {
	h := e.h
	var out strings.Builder
	h.checkReplay()
	out.WriteString("the projections equal the event log replayed\n")
	return out.String()
}

var generatedID = regexp.MustCompile(`\b([a-z]{3})_[0-9a-f]{28}\b`)

// normalize names generated IDs by order of appearance and the Locations.
func (e *scriptEnv) normalize(s string) string {
	s = generatedID.ReplaceAllStringFunc(s, func(id string) string {
		if name, ok := e.ids[id]; ok {
			return name
		}
		prefix := id[:3]
		n := 1
		for _, name := range e.ids {
			if strings.HasPrefix(name, "<"+prefix+" ") {
				n++
			}
		}
		e.ids[id] = fmt.Sprintf("<%s %d>", prefix, n)
		return e.ids[id]
	})
	// The restart note is long and told in one place (RestartNote).
	s = strings.ReplaceAll(s, RestartNote, "<RestartNote>")
	s = strings.ReplaceAll(s, strconv.Quote(RestartNote), "<RestartNote>")
	s = strings.ReplaceAll(s, JournalNote, "<JournalNote>")
	s = strings.ReplaceAll(s, strconv.Quote(JournalNote), "<JournalNote>")
	if e.h != nil {
		s = strings.ReplaceAll(s, e.other, "$OTHER")
		s = strings.ReplaceAll(s, e.h.loc, "$LOC")
	}
	return s
}
