package actors

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/cockroachdb/datadriven"

	"github.com/sessionrt/sessionrt/messages"
)

// The commands of TestScripts (script_test.go) that act on sessions
// through the Sessions facade: create, admit, run, wait, revert, and what
// they leave (pending inbox, provider requests, files).

func (e *scriptEnv) cmdCreate(td *datadriven.TestData) string {
	h := e.h
	t := e.t
	var out strings.Builder
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
	return out.String()
}

func (e *scriptEnv) cmdCreateConcurrently(td *datadriven.TestData) string {
	h := e.h
	t := e.t
	var out strings.Builder
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
	return out.String()
}

func (e *scriptEnv) cmdAdmit(td *datadriven.TestData) string {
	h := e.h
	t := e.t
	var out strings.Builder
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
	return out.String()
}

func (e *scriptEnv) cmdAdmitMany(td *datadriven.TestData) string {
	h := e.h
	t := e.t
	var out strings.Builder
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
	return out.String()
}

func (e *scriptEnv) cmdRun(td *datadriven.TestData) string {
	return outcomeOrError(e.h.sessions.Run(e.ctx(), e.session(td)))
}

func (e *scriptEnv) cmdWaitIdle(td *datadriven.TestData) string {
	return outcomeOrError(e.h.sessions.WaitIdle(e.ctx(), e.session(td)))
}

// outcomeOrError prints a drain's outcome, or the error that stood in for it.
func outcomeOrError(o *Outcome, err error) string {
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	return outcome(o)
}

func (e *scriptEnv) cmdAwait(td *datadriven.TestData) string {
	h := e.h
	t := e.t
	var out strings.Builder
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
	return out.String()
}

func (e *scriptEnv) cmdRevert(td *datadriven.TestData) string {
	h := e.h
	t := e.t
	var out strings.Builder
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
	return out.String()
}

func (e *scriptEnv) cmdLs(td *datadriven.TestData) string {
	h := e.h
	var out strings.Builder
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
	return out.String()
}

func (e *scriptEnv) cmdPending(td *datadriven.TestData) string {
	h := e.h
	var out strings.Builder
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
	return out.String()
}

func (e *scriptEnv) cmdRequests(td *datadriven.TestData) string {
	h := e.h
	var out strings.Builder
	reqs := h.prov.Requests()
	for i := e.requests; i < len(reqs); i++ {
		fmt.Fprintf(&out, "request %d: %s\n", i+1, strings.Join(requestRoles(reqs[i]), " | "))
	}
	if e.requests == len(reqs) {
		out.WriteString("(no new request)\n")
	}
	e.requests = len(reqs)
	return out.String()
}

func (e *scriptEnv) cmdSessions(td *datadriven.TestData) string {
	h := e.h
	var out strings.Builder
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
	return out.String()
}

func outcome(o *Outcome) string {
	if o.Err == "" {
		return fmt.Sprintf("outcome: completed (last seq %d)\n", o.LastSeq)
	}
	return fmt.Sprintf("outcome: %s: %s (last seq %d)\n", o.Kind, o.Err, o.LastSeq)
}
