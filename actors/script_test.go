package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
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
	done   bool
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
	t := e.t
	if e.h == nil || td.Cmd == "start" {
		e.start(td)
		if td.Cmd == "start" {
			return "started\n"
		}
	}
	h := e.h
	var out strings.Builder
	switch td.Cmd {
	case "provider":
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
	case "await-stream":
		e.mu.Lock()
		opened := e.opened
		e.mu.Unlock()
		select {
		case <-opened:
			return "the held stream is open\n"
		case <-time.After(scriptWait):
			e.fatalf("no held stream opened")
		}
	case "release":
		e.mu.Lock()
		select {
		case <-e.held:
			e.fatalf("no held turn to release")
		default:
			close(e.held)
		}
		e.mu.Unlock()
		return "released\n"
	case "fault":
		var at string
		n := 1
		td.ScanArgs(t, "at", &at)
		td.MaybeScanArgs(t, "times", &n)
		e.mu.Lock()
		e.faults[FaultPoint(at)] = n
		e.mu.Unlock()
		return ""
	case "create":
		var id, title, loc string
		td.MaybeScanArgs(t, "id", &id)
		td.MaybeScanArgs(t, "title", &title)
		td.MaybeScanArgs(t, "loc", &loc)
		dir := h.loc
		if loc == "other" {
			dir = e.other
		}
		info, err := h.sessions.Create(e.ctx(), id, Create{Location: dir, Title: title})
		if err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		e.ses = info.Session.ID
		verb := "existing"
		if info.Created {
			verb = "created"
		}
		s := info.Session
		fmt.Fprintf(&out, "%s %s at %s title=%q (created at seq %d, last %d)\n", verb, s.ID, s.Location, s.Title, s.CreatedSeq, s.LastSeq)
	case "create-concurrently":
		var id string
		var n int
		td.ScanArgs(t, "id", &id)
		td.ScanArgs(t, "n", &n)
		var wg sync.WaitGroup
		infos := make([]*Info, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				infos[i], errs[i] = h.sessions.Create(e.ctx(), id, Create{Location: h.loc})
			}()
		}
		wg.Wait()
		created := 0
		for i := range n {
			switch {
			case errs[i] != nil:
				fmt.Fprintf(&out, "error: %v\n", errs[i])
			case infos[i].Session.ID != id || infos[i].Session.CreatedSeq != 1:
				fmt.Fprintf(&out, "another session: %+v\n", infos[i].Session)
			case infos[i].Created:
				created++
			}
		}
		e.ses = id
		fmt.Fprintf(&out, "%d concurrent creates of %s: %d created it, %d got the existing session\n", n, id, created, n-created)
	case "admit":
		id := e.session(td)
		var msg, text string
		td.MaybeScanArgs(t, "id", &msg)
		td.ScanArgs(t, "text", &text)
		d := messages.Steer
		if td.HasArg("queue") {
			d = messages.Queue
		}
		rec, err := h.sessions.Prompt(e.ctx(), id, Prompt{MessageID: msg, Prompt: messages.Prompt{Text: text}, Delivery: d, Resume: td.HasArg("resume")})
		if err != nil {
			msg := err.Error()
			if errorCode(err) == CodeJournal {
				// Which write failed first (the activation's or the
				// admission's) is the actor's timing: the cause is not.
				msg = msg[strings.LastIndex(msg, ": ")+2:]
			}
			return fmt.Sprintf("refused (%s): %s\n", errorCode(err), msg)
		}
		verb := "admitted"
		if rec.Duplicate {
			verb = "duplicate: the receipt of"
		}
		fmt.Fprintf(&out, "%s %s %s at seq %d (last %d)\n", verb, rec.MessageID, rec.Delivery, rec.AdmittedSeq, rec.LastSeq)
	case "admit-many":
		id := e.session(td)
		var n int
		prefix, conc := "p", 4
		td.ScanArgs(t, "n", &n)
		td.MaybeScanArgs(t, "prefix", &prefix)
		td.MaybeScanArgs(t, "concurrency", &conc)
		// tails=k starts k tails after=2 spread over the admissions, so
		// that hand-overs from replay to live happen while commits land.
		var tails int
		td.MaybeScanArgs(t, "tails", &tails)
		seqs := make([]int64, n)
		var wg sync.WaitGroup
		var failed sync.Map
		for w := range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += conc {
					if w == 0 && tails > 0 && i%(n/tails) < conc && i/(n/tails) < tails {
						k := i/(n/tails) + 1
						e.mu.Lock()
						e.startTail(fmt.Sprintf("during-%d", k), id, 2)
						e.mu.Unlock()
					}
					rec, err := h.sessions.Prompt(e.ctx(), id, Prompt{MessageID: fmt.Sprintf("%s%d", prefix, i+1), Prompt: messages.Prompt{Text: fmt.Sprintf("%s%d", prefix, i+1)}})
					if err != nil {
						failed.Store(i, err)
						continue
					}
					seqs[i] = rec.AdmittedSeq
				}
			}()
		}
		wg.Wait()
		failed.Range(func(k, v any) bool {
			fmt.Fprintf(&out, "%s%d refused: %v\n", prefix, k.(int)+1, v)
			return true
		})
		sorted := append([]int64(nil), seqs...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		for i := 1; i < len(sorted); i++ {
			if sorted[i] != sorted[i-1]+1 {
				fmt.Fprintf(&out, "admitted seqs not contiguous: %d then %d\n", sorted[i-1], sorted[i])
			}
		}
		fmt.Fprintf(&out, "%d admitted by %d callers at once, at seqs %d..%d\n", n, conc, sorted[0], sorted[len(sorted)-1])
	case "run":
		id := e.session(td)
		o, err := h.sessions.Run(e.ctx(), id)
		if err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		fmt.Fprint(&out, outcome(o))
	case "wait-idle":
		id := e.session(td)
		o, err := h.sessions.WaitIdle(e.ctx(), id)
		if err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		fmt.Fprint(&out, outcome(o))
	case "await":
		id := e.session(td)
		var want int
		td.ScanArgs(t, "idle", &want)
		ctx, cancel := context.WithTimeout(context.Background(), scriptWait)
		defer cancel()
		n := 0
		for env, err := range h.journal.Events(ctx, id, 0) {
			if err != nil {
				e.fatalf("awaiting idle %d: %v (%d seen)", want, err, n)
			}
			if env.Type.Name == (messages.Idle{}).EventType().Name {
				if n++; n == want {
					return fmt.Sprintf("idle %d at seq %d\n", n, env.Seq)
				}
			}
		}
	case "revert":
		id := e.session(td)
		var op, msg string
		td.ScanArgs(t, "op", &op)
		td.MaybeScanArgs(t, "msg", &msg)
		info, err := h.sessions.Revert(e.ctx(), id, Revert{Op: op, MessageID: msg})
		if err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		if o := info.Open; o != nil {
			fmt.Fprintf(&out, "revert to before %s committed=%v\n", o.MessageID, o.Committed)
		} else {
			out.WriteString("no revert open\n")
		}
	case "ls":
		// The Location's files: what tools did to it.
		entries, err := os.ReadDir(h.loc)
		if err != nil {
			e.fatalf("%v", err)
		}
		for _, en := range entries {
			b, _ := os.ReadFile(filepath.Join(h.loc, en.Name()))
			fmt.Fprintf(&out, "%s %q\n", en.Name(), b)
		}
		if len(entries) == 0 {
			out.WriteString("(empty)\n")
		}
	case "journal":
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
	case "subscribe":
		id := e.session(td)
		if e.sub != nil {
			e.sub.Close()
		}
		e.sub = h.bus.Subscribe(id, 1<<14)
		e.t.Cleanup(e.sub.Close)
		fmt.Fprintf(&out, "subscribed to %s\n", id)
	case "status":
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
	case "recover":
		ids, err := h.sessions.Recover(e.ctx(), nil)
		if err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		fmt.Fprintf(&out, "recovered %v\n", ids)
	case "pending":
		id := e.session(td)
		inbox, err := h.journal.PendingInbox(e.ctx(), id)
		if err != nil {
			e.fatalf("%v", err)
		}
		for _, en := range inbox {
			held := ""
			if en.Held {
				held = " held"
			}
			fmt.Fprintf(&out, "%s %s %q admitted at %d%s\n", en.MessageID, en.Delivery, en.Prompt.Text, en.AdmittedSeq, held)
		}
		if len(inbox) == 0 {
			out.WriteString("(none)\n")
		}
	case "history":
		id := e.session(td)
		if !td.HasArg("limit") {
			all, err := h.journal.ModelHistory(e.ctx(), id)
			if err != nil {
				e.fatalf("%v", err)
			}
			printMessages(&out, all)
			break
		}
		var limit int
		td.ScanArgs(t, "limit", &limit)
		page, err := h.journal.Messages(e.ctx(), id, e.cursor(td), limit)
		if err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		printPage(&out, page)
	case "history-pages":
		id := e.session(td)
		var limit int
		td.ScanArgs(t, "limit", &limit)
		all, err := h.journal.ModelHistory(e.ctx(), id)
		if err != nil {
			e.fatalf("%v", err)
		}
		var read []messages.Message
		cur := persistence.Cursor{}
		for i := 1; ; i++ {
			page, err := h.journal.Messages(e.ctx(), id, cur, limit)
			if err != nil {
				return out.String() + fmt.Sprintf("error: %v\n", err)
			}
			fmt.Fprintf(&out, "page %d after %d.%d:\n", i, cur.Seq, cur.Index)
			printPage(&out, page)
			read = append(read, page.Messages...)
			if !page.More || i > len(all)+1 {
				break
			}
			cur = page.Next
		}
		same := len(read) == len(all)
		for i := 0; same && i < len(all); i++ {
			same = read[i].ID == all[i].ID
		}
		fmt.Fprintf(&out, "%d messages paged, the history has %d: same messages in the same order: %v\n", len(read), len(all), same)
	case "events":
		id := e.session(td)
		var after int64
		limit := 100000
		td.MaybeScanArgs(t, "after", &after)
		td.MaybeScanArgs(t, "limit", &limit)
		envs, err := h.journal.ReadEvents(e.ctx(), id, after, limit)
		if err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		printEvents(&out, after, envs)
	case "tail":
		id := e.session(td)
		name := "t"
		var after int64
		td.MaybeScanArgs(t, "name", &name)
		td.ScanArgs(t, "after", &after)
		e.startTail(name, id, after)
		fmt.Fprintf(&out, "tail %s of %s after %d\n", name, id, after)
	case "tail-until":
		tl, name := e.tail(td)
		until := e.seqArg(td)
		from := tl.last
		got, problem := tl.until(until)
		printEvents(&out, from, got)
		if problem != "" {
			fmt.Fprintf(&out, "tail %s: %s\n", name, problem)
		} else {
			fmt.Fprintf(&out, "tail %s: %d events after %d, each seq once, in order\n", name, len(got), from)
		}
	case "tails-until":
		// Every tail admit-many started, each summed up in one line.
		until := e.seqArg(td)
		var names []string
		for name := range e.tails {
			if strings.HasPrefix(name, "during-") {
				names = append(names, name)
			}
		}
		sort.Slice(names, func(i, j int) bool {
			return len(names[i]) < len(names[j]) || len(names[i]) == len(names[j]) && names[i] < names[j]
		})
		for _, name := range names {
			tl := e.tails[name]
			from := tl.last
			got, problem := tl.until(until)
			if problem == "" {
				problem = fmt.Sprintf("%d events after %d, each seq once, in order", len(got), from)
			}
			fmt.Fprintf(&out, "tail %s: %s\n", name, problem)
		}
	case "tail-stop":
		tl, name := e.tail(td)
		tl.cancel()
		var extra []string
		for g := range tl.got {
			if g.err == nil {
				extra = append(extra, fmt.Sprint(g.env.Seq))
			}
		}
		delete(e.tails, name)
		if len(extra) > 0 {
			// The session was idle: every seq at or before the last
			// printed one is a duplicate, every later one unprinted.
			fmt.Fprintf(&out, "tail %s received after %d: %s\n", name, tl.last, strings.Join(extra, " "))
		} else {
			fmt.Fprintf(&out, "tail %s stopped at %d; nothing more was received\n", name, tl.last)
		}
	case "requests":
		reqs := h.prov.Requests()
		for i := e.requests; i < len(reqs); i++ {
			fmt.Fprintf(&out, "request %d: %s\n", i+1, strings.Join(requestRoles(reqs[i]), " | "))
		}
		if e.requests == len(reqs) {
			out.WriteString("(no new request)\n")
		}
		e.requests = len(reqs)
	case "sessions":
		ids, err := h.journal.SessionIDs(e.ctx())
		if err != nil {
			e.fatalf("%v", err)
		}
		names := make([]string, len(ids))
		for i, id := range ids {
			names[i] = e.normalize(id)
		}
		sort.Strings(names)
		fmt.Fprintf(&out, "%d sessions: %s\n", len(names), strings.Join(names, " "))
	case "verify":
		h.checkReplay()
		out.WriteString("the projections equal the event log replayed\n")
	default:
		e.fatalf("unknown command %q", td.Cmd)
	}
	return out.String()
}

// startTail tails the session's events after a seq in the background.
func (e *scriptEnv) startTail(name, id string, after int64) {
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	tl := &scriptTail{cancel: cancel, got: make(chan tailed, 1<<16), last: after}
	e.tails[name] = tl
	go func() {
		defer close(tl.got)
		for env, err := range e.h.journal.Events(ctx, id, after) {
			tl.got <- tailed{env, err}
			if err != nil {
				return
			}
		}
	}()
}

// until reads the tail up to seq until; problem says how it fell short or
// where a seq came twice or was skipped.
func (tl *scriptTail) until(until int64) (got []messages.Envelope, problem string) {
	timeout := time.After(scriptWait)
	var problems []string
	for tl.last < until {
		select {
		case g, ok := <-tl.got:
			if !ok || g.err != nil {
				return got, fmt.Sprintf("ended at %d: %v", tl.last, g.err)
			}
			if g.env.Seq != tl.last+1 {
				problems = append(problems, fmt.Sprintf("seq %d after %d: a gap or a duplicate", g.env.Seq, tl.last))
			}
			tl.last = g.env.Seq
			got = append(got, g.env)
		case <-timeout:
			return got, fmt.Sprintf("stuck at %d, waiting for %d", tl.last, until)
		}
	}
	return got, strings.Join(problems, "; ")
}

// seqArg is seq=n, or seq=last: the session's last seq now.
func (e *scriptEnv) seqArg(td *datadriven.TestData) int64 {
	var s string
	td.ScanArgs(e.t, "seq", &s)
	if s == "last" {
		sess, err := e.h.journal.Session(e.ctx(), e.session(td))
		if err != nil {
			e.fatalf("%v", err)
		}
		return sess.LastSeq
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		e.fatalf("seq=%q: want a seq or last", s)
	}
	return n
}

func (e *scriptEnv) tail(td *datadriven.TestData) (*scriptTail, string) {
	name := "t"
	td.MaybeScanArgs(e.t, "name", &name)
	tl := e.tails[name]
	if tl == nil {
		e.fatalf("no tail %s", name)
	}
	return tl, name
}

// cursor parses after=seq.index ("" is the zero cursor).
func (e *scriptEnv) cursor(td *datadriven.TestData) persistence.Cursor {
	var s string
	td.MaybeScanArgs(e.t, "after", &s)
	if s == "" {
		return persistence.Cursor{}
	}
	seq, idx, _ := strings.Cut(s, ".")
	var c persistence.Cursor
	var err1, err2 error
	c.Seq, err1 = strconv.ParseInt(seq, 10, 64)
	c.Index, err2 = strconv.Atoi(idx)
	if err1 != nil || err2 != nil {
		e.fatalf("after=%q: want seq.index", s)
	}
	return c
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

func outcome(o *Outcome) string {
	if o.Err == "" {
		return fmt.Sprintf("outcome: completed (last seq %d)\n", o.LastSeq)
	}
	return fmt.Sprintf("outcome: %s: %s (last seq %d)\n", o.Kind, o.Err, o.LastSeq)
}

func printPage(out *strings.Builder, p persistence.Page) {
	printMessages(out, p.Messages)
	fmt.Fprintf(out, "next=%d.%d more=%v\n", p.Next.Seq, p.Next.Index, p.More)
}

func printMessages(out *strings.Builder, msgs []messages.Message) {
	if len(msgs) == 0 {
		out.WriteString("(no messages)\n")
	}
	for _, m := range msgs {
		fmt.Fprintf(out, "%d.%d %s\n", m.Seq, m.Index, renderHistory([]messages.Message{m})[0])
	}
}

// printEvents prints events one a line as seq and what they say; a run
// of several events of one type that say nothing more is one line.
func printEvents(out *strings.Builder, after int64, envs []messages.Envelope) {
	if len(envs) == 0 {
		fmt.Fprintf(out, "(no events after %d)\n", after)
		return
	}
	for i := 0; i < len(envs); {
		j := i + 1
		name := envs[i].Type.Name
		if name == (messages.PromptAdmitted{}).EventType().Name {
			for j < len(envs) && envs[j].Type.Name == name && envs[j].Seq == envs[j-1].Seq+1 {
				j++
			}
		}
		if j-i > 3 {
			// Concurrent admissions land in any order: the run is
			// printed without its IDs.
			fmt.Fprintf(out, "%d..%d %d× prompt.admitted\n", envs[i].Seq, envs[j-1].Seq, j-i)
			i = j
			continue
		}
		for ; i < j; i++ {
			fmt.Fprintf(out, "%d %s\n", envs[i].Seq, describeEvent(envs[i].Event))
		}
	}
}

func describeEvent(ev messages.Event) string {
	name := strings.TrimPrefix(ev.EventType().Name, "session.")
	switch e := ev.(type) {
	case messages.SessionCreated:
		return fmt.Sprintf("%s at %s agent=%s model=%s/%s title=%q", name, e.Location, e.Agent, e.Model.Provider, e.Model.ID, e.Title)
	case messages.PromptAdmitted:
		held := ""
		if e.Held {
			held = " held"
		}
		return fmt.Sprintf("%s %s %s %q%s", name, e.MessageID, e.Delivery, e.Prompt.Text, held)
	case messages.PromptPromoted:
		if n := len(e.MessageIDs); n > 5 {
			// Only the first ones of a long promotion, in case
			// concurrent callers admitted the rest in any order.
			return fmt.Sprintf("%s %v and %d more", name, e.MessageIDs[:3], n-3)
		}
		return fmt.Sprintf("%s %v", name, e.MessageIDs)
	case messages.TurnStarted:
		return name + " " + e.AssistantMessageID
	case messages.TurnEnded:
		return fmt.Sprintf("%s %s %s", name, e.AssistantMessageID, e.FinishReason)
	case messages.TurnFailed:
		return fmt.Sprintf("%s %s %s", name, e.AssistantMessageID, e.ErrorKind)
	case messages.TextEnded:
		return fmt.Sprintf("%s %q", name, e.Text)
	case messages.ContextUpdated:
		return fmt.Sprintf("%s %q", name, e.Text)
	case messages.DrainFailed:
		return name + " " + e.Kind
	case messages.ToolCalled:
		return fmt.Sprintf("%s %s %s %s", name, e.CallID, e.Tool, e.Input)
	case messages.ToolSucceeded:
		return fmt.Sprintf("%s %s %q", name, e.CallID, e.Output)
	case messages.ToolFailed:
		return fmt.Sprintf("%s %s %q", name, e.CallID, e.Error)
	case messages.Interrupted:
		return fmt.Sprintf("%s %q", name, e.Reason)
	}
	return name
}
