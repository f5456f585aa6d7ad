package actors

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// The commands of TestScripts (script_test.go) that read the journal as a
// client does: events after a cursor, tails of them, history pages; and
// how events and messages print.

func (e *scriptEnv) cmdEvents(td *datadriven.TestData) string {
	h := e.h
	t := e.t
	var out strings.Builder
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
	return out.String()
}

func (e *scriptEnv) cmdTail(td *datadriven.TestData) string {
	t := e.t
	var out strings.Builder
	id := e.session(td)
	name := "t"
	var after int64
	td.MaybeScanArgs(t, "name", &name)
	td.ScanArgs(t, "after", &after)
	e.startTail(name, id, after)
	fmt.Fprintf(&out, "tail %s of %s after %d\n", name, id, after)
	return out.String()
}

func (e *scriptEnv) cmdTailUntil(td *datadriven.TestData) string {
	var out strings.Builder
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
	return out.String()
}

func (e *scriptEnv) cmdTailsUntil(td *datadriven.TestData) string {
	var out strings.Builder
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
	return out.String()
}

func (e *scriptEnv) cmdTailStop(td *datadriven.TestData) string {
	var out strings.Builder
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
	return out.String()
}

func (e *scriptEnv) cmdHistory(td *datadriven.TestData) string {
	h := e.h
	t := e.t
	var out strings.Builder
	id := e.session(td)
	if !td.HasArg("limit") {
		all, err := h.journal.ModelHistory(e.ctx(), id)
		if err != nil {
			e.fatalf("%v", err)
		}
		printMessages(&out, all)
		return out.String()
	}
	var limit int
	td.ScanArgs(t, "limit", &limit)
	page, err := h.journal.Messages(e.ctx(), id, e.cursor(td), limit)
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	printPage(&out, page)
	return out.String()
}

func (e *scriptEnv) cmdHistoryPages(td *datadriven.TestData) string {
	h := e.h
	t := e.t
	var out strings.Builder
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
