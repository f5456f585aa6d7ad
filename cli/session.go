package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sessionrt/sessionrt/api/client"
	"github.com/sessionrt/sessionrt/api/wire"
)

// SessionCmd groups the commands on sessions of a running server.
type SessionCmd struct {
	ClientFlags `embed:""`

	Create    SessionCreateCmd    `cmd:"" help:"Create a session in a directory."`
	List      SessionListCmd      `cmd:"" help:"List sessions, newest first."`
	Show      SessionShowCmd      `cmd:"" help:"Show one session."`
	Prompt    SessionPromptCmd    `cmd:"" help:"Send a prompt and print the answer."`
	Interrupt SessionInterruptCmd `cmd:"" help:"Stop a session's running drain (its inbox is kept)."`
	Run       SessionRunCmd       `cmd:"" help:"Resume a session explicitly and wait for the drain to end."`
	Compact   SessionCompactCmd   `cmd:"" help:"Compact an idle session's history now (summary + recent context)."`
	Move      SessionMoveCmd      `cmd:"" help:"Move a session to another directory."`
	Revert    SessionRevertCmd    `cmd:"" help:"Undo a session's file changes and messages back to a message (stage; --commit applies, --clear undoes)."`
	Fork      SessionForkCmd      `cmd:"" help:"Create a session holding a session's history before a message (all of it without one)."`
	Diff      SessionDiffCmd      `cmd:"" help:"Print the files a session changed, from its snapshots."`
	Messages  SessionMessagesCmd  `cmd:"" help:"Print a session's messages."`
	Events    SessionEventsCmd    `cmd:"" help:"Print a session's durable events (--follow to keep tailing)."`
}

func (c *SessionCmd) Help() string {
	return `Talk to a running server (sessionrt serve). Exit codes: 0 ok, 1 failure,
2 usage or invalid request, 3 not found, 4 conflict.

Examples:
  sessionrt session create --dir ~/src/project
  sessionrt session prompt new "explain this repository"
  sessionrt session prompt ses_0190… "and now the tests" --queue
  sessionrt session list --json
  sessionrt session events ses_0190… --follow`
}

// sessionRef is how commands name a session.
type sessionRef struct {
	Session string `arg:"" help:"Session ID (ses_…)."`
}

// SessionCreateCmd creates a session.
type SessionCreateCmd struct {
	Dir   string `help:"The session's Location (default: the current directory)." type:"path"`
	ID    string `help:"Session ID to use (ses_…); an existing one is returned unchanged."`
	Agent string `help:"Agent (default: the server's default agent)."`
	Model string `help:"Model as provider/model (default: the server's default model)."`
}

func (c *SessionCreateCmd) Help() string {
	return "Examples:\n  sessionrt session create\n  sessionrt session create --dir ../other --model openai/gpt-4.1 --json"
}

func parseModel(s string) (*wire.ModelRef, error) {
	if s == "" {
		return nil, nil
	}
	p, m, ok := strings.Cut(s, "/")
	if !ok || p == "" || m == "" {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("--model %q: want provider/model", s)}
	}
	return &wire.ModelRef{ProviderID: p, ID: m}, nil
}

func (c *SessionCreateCmd) Run(g *Globals, s *SessionCmd) error {
	cl, err := s.client(g)
	if err != nil {
		return err
	}
	req := wire.CreateSessionRequest{ID: c.ID, Agent: c.Agent}
	if req.Model, err = parseModel(c.Model); err != nil {
		return err
	}
	dir := c.Dir
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return err
		}
	}
	req.Location = &wire.LocationRef{Directory: dir}
	info, err := cl.CreateSession(context.Background(), req)
	if err != nil {
		return failed("session create", err)
	}
	if s.JSON {
		return printJSON(g.out(), info)
	}
	_, err = fmt.Fprintln(g.out(), info.ID)
	return err
}

// SessionListCmd lists sessions.
type SessionListCmd struct {
	Limit int    `help:"At most this many sessions." default:"50"`
	Order string `help:"asc (oldest first) or desc." enum:"asc,desc" default:"desc"`
	Dir   string `help:"Only sessions in this directory." type:"path"`
	All   bool   `help:"Follow the cursor through every page."`
}

func (c *SessionListCmd) Help() string {
	return "Examples:\n  sessionrt session list\n  sessionrt session list --dir . --json"
}

func (c *SessionListCmd) Run(g *Globals, s *SessionCmd) error {
	cl, err := s.client(g)
	if err != nil {
		return err
	}
	var all []wire.Session
	opts := client.ListOptions{Limit: c.Limit, Order: c.Order, Directory: c.Dir}
	for {
		page, err := cl.ListSessions(context.Background(), opts)
		if err != nil {
			return failed("session list", err)
		}
		all = append(all, page.Data...)
		if !c.All || page.Cursor.Next == "" {
			break
		}
		opts.Cursor = page.Cursor.Next
	}
	if s.JSON {
		if all == nil {
			all = []wire.Session{}
		}
		return printJSON(g.out(), all)
	}
	rows := [][]string{{"ID", "STATUS", "AGENT", "MODEL", "LAST SEQ", "UPDATED", "DIRECTORY", "TITLE"}}
	for _, x := range all {
		rows = append(rows, []string{x.ID, x.Status, x.Agent, modelName(x.Model), strconv.FormatInt(x.LastSeq, 10), msTime(x.Time.Updated), x.Location.Directory, oneLine(x.Title, 40)})
	}
	return table(g.out(), rows)
}

func modelName(m *wire.ModelRef) string {
	if m == nil {
		return "-"
	}
	return m.ProviderID + "/" + m.ID
}

// SessionShowCmd shows a session.
type SessionShowCmd struct {
	sessionRef
}

func (c *SessionShowCmd) Run(g *Globals, s *SessionCmd) error {
	cl, err := s.client(g)
	if err != nil {
		return err
	}
	ctx := context.Background()
	info, err := cl.Session(ctx, c.Session)
	if err != nil {
		return failed("session show", err)
	}
	if s.JSON {
		return printJSON(g.out(), info)
	}
	perms, err := cl.Permissions(ctx, c.Session)
	if err != nil {
		return failed("session show", err)
	}
	rows := [][]string{
		{"id", info.ID},
		{"title", info.Title},
		{"status", info.Status},
		{"directory", info.Location.Directory},
		{"agent", info.Agent},
		{"model", modelName(info.Model)},
		{"last seq", strconv.FormatInt(info.LastSeq, 10)},
		{"created", msTime(info.Time.Created)},
		{"updated", msTime(info.Time.Updated)},
		{"pending permissions", strconv.Itoa(len(perms))},
	}
	if info.Status == "idle" {
		// An idle session answers at once with how its last drain ended.
		if o, err := cl.WaitOutcome(ctx, c.Session); err == nil && o.Error != "" {
			rows = append(rows, []string{"last drain", fmt.Sprintf("failed (%s): %s", o.Kind, o.Error)})
		}
	}
	return table(g.out(), rows)
}

// SessionPromptCmd admits a prompt and, unless --no-wait, waits for the
// drain and prints the assistant's answer.
type SessionPromptCmd struct {
	Session string   `arg:"" help:"Session ID (ses_…), or \"new\" to create one in the current directory first."`
	Text    []string `arg:"" help:"The prompt text (words are joined with spaces)."`
	Queue   bool     `help:"Queue the prompt as a later activity instead of steering the current one."`
	ID      string   `help:"Message ID (msg_…) to make retries idempotent."`
	NoWait  bool     `help:"Print the receipt and return without waiting for the answer."`
	Hold    bool     `help:"Admit only: do not start a drain (implies --no-wait)."`
}

func (c *SessionPromptCmd) Help() string {
	return `Without --no-wait, prints the assistant's answer once the session is idle.

Examples:
  sessionrt session prompt new "what does this project do?"
  sessionrt session prompt ses_0190… "run the tests" --queue --no-wait
  sessionrt session prompt ses_0190… "hello" --id msg_hello1 --json`
}

func (c *SessionPromptCmd) Run(g *Globals, s *SessionCmd) error {
	cl, err := s.client(g)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	text := strings.Join(c.Text, " ")
	if strings.TrimSpace(text) == "" {
		return &exitError{code: exitUsage, err: errors.New("session prompt: the prompt text is empty")}
	}
	id := c.Session
	if id == "new" {
		dir, err := os.Getwd()
		if err != nil {
			return err
		}
		info, err := cl.CreateSession(ctx, wire.CreateSessionRequest{Location: &wire.LocationRef{Directory: dir}})
		if err != nil {
			return failed("session create", err)
		}
		id = info.ID
		if !s.JSON {
			fmt.Fprintf(g.errOut(), "session %s\n", id)
		}
	}
	req := wire.PromptRequest{ID: c.ID, Prompt: &wire.Prompt{Text: text}}
	if c.Queue {
		req.Delivery = "queue"
	}
	if c.Hold {
		no := false
		req.Resume = &no
	}
	if c.NoWait || c.Hold {
		rec, err := cl.Prompt(ctx, id, req)
		if err != nil {
			return failed("session prompt", err)
		}
		if s.JSON {
			return printJSON(g.out(), rec)
		}
		_, err = fmt.Fprintf(g.out(), "admitted %s at seq %d in %s\n", rec.ID, rec.AdmittedSeq, id)
		return err
	}
	var live *liveAnswer
	if !s.JSON {
		live = startLive(ctx, cl, id, g.out())
	}
	rec, err := cl.Prompt(ctx, id, req)
	if err != nil {
		live.stop()
		return failed("session prompt", err)
	}
	outcome, err := cl.WaitOutcome(ctx, id)
	if err != nil {
		live.stop()
		return failed("session prompt: wait", err)
	}
	answer, err := messagesAfter(ctx, cl, id, rec.AdmittedSeq)
	if err != nil {
		live.stop()
		return failed("session prompt: read answer", err)
	}
	if s.JSON {
		if err := printJSON(g.out(), struct {
			Receipt  wire.InputAdmitted `json:"receipt"`
			Messages []wire.Message     `json:"messages"`
			Outcome  wire.Outcome       `json:"outcome"`
		}{rec, answer, outcome}); err != nil {
			return err
		}
		return drainFailed(outcome)
	}
	var last int64
	if n := len(answer); n > 0 {
		last = answer[n-1].Metadata.Seq
	}
	if head, err := cl.Session(ctx, id); err == nil {
		last = head.LastSeq
	}
	complete := live.finish(last)
	for _, m := range answer {
		if m.Type != "assistant" {
			continue
		}
		switch {
		case !complete: // the live stream missed some: print everything
			if err := printAssistant(g, m, true); err != nil {
				return err
			}
		case live.printed[m.ID]: // its text streamed already
			if m.Error != nil {
				fmt.Fprintf(g.out(), "error: %s\n", m.Error.Message)
			}
		default: // no deltas (a provider that does not stream): its text now
			if err := printAssistant(g, m, false); err != nil {
				return err
			}
		}
	}
	return drainFailed(outcome)
}

// drainFailed is the error a command exits with when the drain it waited
// for ended in error: the user learns why nothing (more) was answered.
func drainFailed(o wire.Outcome) error {
	if o.Error == "" {
		return nil
	}
	return &exitError{code: exitFailure, err: fmt.Errorf("the session stopped (%s): %s", o.Kind, o.Error)}
}

// liveAnswer prints an answer as it streams on the server's live stream
// (text deltas and tool calls), so a prompt shows progress; the durable
// messages read afterwards fill in whatever the live stream did not carry.
type liveAnswer struct {
	w  io.Writer
	st *client.Stream

	mu      sync.Mutex
	printed map[string]bool // assistant messages whose text streamed
	midLine bool
	lastSeq int64
	target  int64 // stop once a durable event reaches this seq
	cut     bool  // the stream ended early: output may be partial
	done    chan struct{}
	exited  chan struct{} // closed when read returns
	once    sync.Once
}

// startLive subscribes before the prompt is sent (it returns once the server
// has confirmed the subscription); nil when the stream is unavailable.
func startLive(ctx context.Context, cl *client.Client, id string, w io.Writer) *liveAnswer {
	st, err := cl.GlobalEvents(ctx, id)
	if err != nil {
		return nil
	}
	if ev, err := st.Next(); err != nil || ev.Event.Type != wire.EventConnected {
		st.Close()
		return nil
	}
	l := &liveAnswer{w: w, st: st, printed: map[string]bool{}, done: make(chan struct{}), exited: make(chan struct{})}
	go l.read()
	return l
}

func (l *liveAnswer) end(cut bool) {
	l.once.Do(func() {
		l.cut = cut
		close(l.done)
	})
}

func (l *liveAnswer) read() {
	defer close(l.exited)
	for {
		ev, err := l.st.Next()
		l.mu.Lock()
		if err != nil || ev.Event.Type == wire.EventCut {
			l.end(true)
			l.mu.Unlock()
			return
		}
		var d struct {
			AssistantMessageID string
			Delta              string
			Tool               string
		}
		_ = json.Unmarshal(ev.Event.Data, &d)
		switch ev.Event.Type {
		case "session.next.text.delta":
			fmt.Fprint(l.w, d.Delta)
			l.printed[d.AssistantMessageID] = true
			l.midLine = !strings.HasSuffix(d.Delta, "\n")
		case "session.next.text.ended":
			l.newline()
		case "session.next.tool.called":
			l.newline()
			fmt.Fprintf(l.w, "[%s]\n", d.Tool)
		}
		if ev.Event.Durable != nil {
			l.lastSeq = ev.Event.Durable.Seq
			if l.target > 0 && l.lastSeq >= l.target {
				l.end(false)
				l.mu.Unlock()
				return
			}
		}
		l.mu.Unlock()
	}
}

func (l *liveAnswer) newline() {
	if l.midLine {
		fmt.Fprintln(l.w)
		l.midLine = false
	}
}

// finish waits (briefly) until the stream has shown every event up to seq,
// stops it and reports whether it showed them all.
func (l *liveAnswer) finish(seq int64) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	l.target = seq
	if l.lastSeq >= seq {
		l.end(false)
	}
	l.mu.Unlock()
	select {
	case <-l.done:
	case <-time.After(10 * time.Second):
		l.mu.Lock()
		l.end(true)
		l.mu.Unlock()
	}
	l.st.Close()
	<-l.exited // nothing prints behind the caller's back
	l.newline()
	return !l.cut
}

func (l *liveAnswer) stop() {
	if l != nil {
		l.st.Close()
		<-l.exited
	}
}

// messagesAfter reads every message created after seq.
func messagesAfter(ctx context.Context, cl *client.Client, id string, seq int64) ([]wire.Message, error) {
	var out []wire.Message
	cursor := ""
	for {
		page, err := cl.Messages(ctx, id, client.MessagesOptions{Limit: 1000, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, m := range page.Data {
			if m.Metadata.Seq > seq {
				out = append(out, m)
			}
		}
		if cursor = page.Cursor.Next; cursor == "" {
			return out, nil
		}
	}
}

func printAssistant(g *Globals, m wire.Message, tools bool) error {
	w := g.out()
	for _, p := range m.Content {
		switch p.Type {
		case "text":
			fmt.Fprintln(w, p.Text)
		case "reasoning":
			fmt.Fprintf(w, "(thinking) %s\n", oneLine(p.Text, 200))
		case "tool":
			if !tools {
				continue
			}
			status := ""
			if p.State != nil {
				status = p.State.Status
			}
			fmt.Fprintf(w, "[%s %s]\n", p.Name, status)
		}
	}
	if m.Error != nil {
		fmt.Fprintf(w, "error: %s\n", m.Error.Message)
	}
	return nil
}

// SessionInterruptCmd stops a drain.
type SessionInterruptCmd struct {
	sessionRef
}

func (c *SessionInterruptCmd) Run(g *Globals, s *SessionCmd) error {
	cl, err := s.client(g)
	if err != nil {
		return err
	}
	if err := cl.Interrupt(context.Background(), c.Session); err != nil {
		return failed("session interrupt", err)
	}
	if s.JSON {
		return printJSON(g.out(), map[string]string{"interrupted": c.Session})
	}
	_, err = fmt.Fprintf(g.out(), "interrupted %s\n", c.Session)
	return err
}

// SessionRunCmd runs a drain explicitly.
type SessionRunCmd struct {
	sessionRef
}

func (c *SessionRunCmd) Run(g *Globals, s *SessionCmd) error {
	cl, err := s.client(g)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	out, err := cl.Run(ctx, c.Session)
	if err != nil {
		return failed("session run", err)
	}
	if s.JSON {
		if err := printJSON(g.out(), out); err != nil {
			return err
		}
	} else if out.Error == "" {
		fmt.Fprintf(g.out(), "drain ended normally at seq %d\n", out.LastSeq)
	}
	if out.Error != "" {
		return &exitError{code: exitFailure, err: fmt.Errorf("session run: drain ended at seq %d: %s (%s)", out.LastSeq, out.Error, out.Kind)}
	}
	return nil
}

// SessionCompactCmd runs a manual compaction.
type SessionCompactCmd struct {
	sessionRef
}

func (c *SessionCompactCmd) Run(g *Globals, s *SessionCmd) error {
	cl, err := s.client(g)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := cl.Compact(ctx, c.Session); err != nil {
		return failed("session compact", err)
	}
	if s.JSON {
		return printJSON(g.out(), map[string]bool{"compacted": true})
	}
	fmt.Fprintln(g.out(), "compacted")
	return nil
}

// SessionMoveCmd moves a session.
type SessionMoveCmd struct {
	sessionRef
	Dir string `arg:"" help:"The new Location." type:"path"`
}

func (c *SessionMoveCmd) Run(g *Globals, s *SessionCmd) error {
	cl, err := s.client(g)
	if err != nil {
		return err
	}
	info, err := cl.Move(context.Background(), c.Session, c.Dir)
	if err != nil {
		return failed("session move", err)
	}
	if s.JSON {
		return printJSON(g.out(), info)
	}
	_, err = fmt.Fprintf(g.out(), "moved %s to %s\n", info.ID, info.Location.Directory)
	return err
}

// SessionRevertCmd stages, commits or clears a revert.
type SessionRevertCmd struct {
	sessionRef
	Message string `arg:"" optional:"" help:"The first message to revert (it and everything after it). Required unless --clear."`
	Commit  bool   `help:"Apply the revert: restore the files and hide the messages." xor:"op"`
	Clear   bool   `help:"Undo a staged or committed revert." xor:"op"`
	Patch   bool   `help:"Print the patch of every file that changes."`
}

func (c *SessionRevertCmd) Run(g *Globals, s *SessionCmd) error {
	cl, err := s.client(g)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if c.Clear {
		if err := cl.RevertClear(ctx, c.Session); err != nil {
			return failed("session revert --clear", err)
		}
		if s.JSON {
			return printJSON(g.out(), map[string]bool{"cleared": true})
		}
		_, err := fmt.Fprintln(g.out(), "revert cleared")
		return err
	}
	if c.Message == "" {
		return &exitError{code: exitUsage, err: errors.New("session revert: MESSAGE is required (or --clear)")}
	}
	st, err := cl.RevertStage(ctx, c.Session, c.Message)
	if err != nil {
		return failed("session revert", err)
	}
	if c.Commit {
		if err := cl.RevertCommit(ctx, c.Session); err != nil {
			return failed("session revert --commit", err)
		}
	}
	if s.JSON {
		return printJSON(g.out(), map[string]any{"revert": st, "committed": c.Commit})
	}
	return printFileDiffs(g.out(), st.Files, c.Patch, map[bool]string{true: "reverted", false: "staged (apply with --commit)"}[c.Commit])
}

// SessionForkCmd forks a session.
type SessionForkCmd struct {
	sessionRef
	Message string `arg:"" optional:"" help:"The first message the fork leaves out (default: none, the whole history)."`
}

func (c *SessionForkCmd) Run(g *Globals, s *SessionCmd) error {
	cl, err := s.client(g)
	if err != nil {
		return err
	}
	info, err := cl.Fork(context.Background(), c.Session, c.Message)
	if err != nil {
		return failed("session fork", err)
	}
	if s.JSON {
		return printJSON(g.out(), info)
	}
	_, err = fmt.Fprintln(g.out(), info.ID)
	return err
}

func printFileDiffs(w io.Writer, files []wire.FileDiff, patch bool, what string) error {
	rows := [][]string{{"STATUS", "FILE", "+", "-"}}
	for _, f := range files {
		rows = append(rows, []string{f.Status, f.Path, strconv.Itoa(f.Additions), strconv.Itoa(f.Deletions)})
	}
	if len(files) > 0 {
		if err := table(w, rows); err != nil {
			return err
		}
	}
	if patch {
		for _, f := range files {
			fmt.Fprint(w, f.Patch)
		}
	}
	_, err := fmt.Fprintf(w, "%s: %d files\n", what, len(files))
	return err
}

// SessionDiffCmd prints what a session changed.
type SessionDiffCmd struct {
	sessionRef
	Message string `arg:"" optional:"" help:"Only the changes of the turns that answered this user message."`
	Patch   bool   `help:"Print the patches."`
}

func (c *SessionDiffCmd) Run(g *Globals, s *SessionCmd) error {
	cl, err := s.client(g)
	if err != nil {
		return err
	}
	files, err := cl.Diff(context.Background(), c.Session, c.Message)
	if err != nil {
		return failed("session diff", err)
	}
	if s.JSON {
		return printJSON(g.out(), files)
	}
	return printFileDiffs(g.out(), files, c.Patch, "changed")
}

// SessionMessagesCmd prints messages.
type SessionMessagesCmd struct {
	sessionRef
	Limit  int    `help:"Messages per page." default:"100"`
	Order  string `help:"asc (oldest first) or desc." enum:"asc,desc" default:"asc"`
	Cursor string `help:"Start after this cursor (from a previous --json page)."`
	All    bool   `help:"Follow the cursor through every page."`
}

func (c *SessionMessagesCmd) Help() string {
	return "Examples:\n  sessionrt session messages ses_0190… --all\n  sessionrt session messages ses_0190… --order desc --limit 5 --json"
}

func (c *SessionMessagesCmd) Run(g *Globals, s *SessionCmd) error {
	cl, err := s.client(g)
	if err != nil {
		return err
	}
	opts := client.MessagesOptions{Limit: c.Limit, Order: c.Order, Cursor: c.Cursor}
	var all []wire.Message
	next := ""
	for {
		page, err := cl.Messages(context.Background(), c.Session, opts)
		if err != nil {
			return failed("session messages", err)
		}
		all = append(all, page.Data...)
		next = page.Cursor.Next
		if !c.All || next == "" {
			break
		}
		opts.Cursor = next
	}
	if s.JSON {
		if all == nil {
			all = []wire.Message{}
		}
		return printJSON(g.out(), wire.MessagesResponse{Data: all, Cursor: wire.Cursor{Next: next}})
	}
	rows := [][]string{{"SEQ", "TYPE", "ID", "TEXT"}}
	for _, m := range all {
		rows = append(rows, []string{strconv.FormatInt(m.Metadata.Seq, 10), m.Type, m.ID, oneLine(messageText(m), 80)})
	}
	if err := table(g.out(), rows); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(g.errOut(), "more: --cursor %s\n", next)
	}
	return nil
}

func messageText(m wire.Message) string {
	switch m.Type {
	case "assistant":
		var parts []string
		for _, p := range m.Content {
			switch p.Type {
			case "text":
				parts = append(parts, p.Text)
			case "tool":
				st := ""
				if p.State != nil {
					st = " " + p.State.Status
				}
				parts = append(parts, "["+p.Name+st+"]")
			}
		}
		if m.Error != nil {
			parts = append(parts, "error: "+m.Error.Message)
		}
		return strings.Join(parts, " ")
	case "compaction":
		return m.Summary
	}
	return m.Text
}

// SessionEventsCmd prints durable events.
type SessionEventsCmd struct {
	sessionRef
	After  int64 `help:"Print only events after this seq."`
	Follow bool  `short:"f" help:"Keep printing new events as they commit (reconnects from the last seq; until interrupted)."`
}

func (c *SessionEventsCmd) Help() string {
	return "Examples:\n  sessionrt session events ses_0190…\n  sessionrt session events ses_0190… --after 40 --follow --json"
}

func (c *SessionEventsCmd) Run(g *Globals, s *SessionCmd) error {
	cl, err := s.client(g)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	print := func(ev wire.Event) error {
		if s.JSON {
			return printJSONLine(g, ev)
		}
		_, err := fmt.Fprintf(g.out(), "%6d  %-34s %s\n", ev.Durable.Seq, ev.Type, oneLine(string(ev.Data), 160))
		return err
	}
	if c.Follow {
		return failed("session events", cl.Follow(ctx, c.Session, c.After, print))
	}
	after := c.After
	for {
		page, err := cl.History(ctx, c.Session, after, 1000)
		if err != nil {
			return failed("session events", err)
		}
		for _, ev := range page.Data {
			if err := print(ev); err != nil {
				return err
			}
			after = ev.Durable.Seq
		}
		if !page.HasMore {
			return nil
		}
	}
}

func printJSONLine(g *Globals, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(g.out(), "%s\n", b)
	return err
}
