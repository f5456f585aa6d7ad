package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
)

// TestInteraction runs the scenario scripts in testdata/: inputs in, Ready
// out, like etcd raft's interaction tests. The env below plays the shell
// faithfully: it writes Ready.Append (folding it into the state at the next
// seqs; an Outcome's Append holds the drain's last events, Idle among
// them), then ends the drain, and builds a turn's request. Regenerate the
// expectations on purpose with: go test ./session -run TestInteraction -rewrite
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		env := &interactionEnv{}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return env.handle(t, td)
		})
	})
}

type interactionEnv struct {
	c       Core
	journal []messages.Event // every event written, journal[i] at seq i+1
	turns   int
	turn    string // the open turn's assistant message ID
	calls   int    // requests made to the provider
	init    bool   // the outstanding observation is for a first baseline
	// source is the value of the session's one context source ("" is
	// "baseline"): an observation with update=X changes it to X.
	source string
	// over: the next requests built are over budget (over-budget, within-budget)
	over bool
	// plan is how the next compactions plan: "" ok, "nothing", "failed";
	// the core plans from its history, so the harness sets the facts
	// that lead there (the recent context's size, the model's window).
	plan        string
	compactions int
	compaction  string // the running compaction's ID
	recent      string // its plan's recent context
	// titles are the title requests the core asked for (Ready.Title).
	titles []string
	// turnEnds are the turns' ends the core reported (Ready.TurnEnd).
	turnEnds []string
	// questionDenied: the agent's rules deny the question call being made.
	questionDenied bool
}

func (e *interactionEnv) handle(t *testing.T, td *datadriven.TestData) string {
	var out strings.Builder
	switch td.Cmd {
	case "create":
		loc, title := "/p", ""
		td.MaybeScanArgs(t, "loc", &loc)
		td.MaybeScanArgs(t, "title", &title) // the client's
		e.c.State = NewState("ses_1")
		// The default configuration's, with a recent context of one
		// token: the scripts' short histories have something to compact.
		e.c.Config = Config{Compaction: compaction.Config{Auto: true, Keep: 1}}
		e.write(&out, messages.SessionCreated{Location: loc, Agent: "build", Model: messages.ModelRef{Provider: "p", ID: "m"}, Title: title})
	case "exchange":
		// An earlier exchange, written as a drain writes it: the prompt
		// id, answered by turn a_id (something to compact).
		var id string
		td.ScanArgs(t, "id", &id)
		row := e.c.State.Row
		e.write(&out, messages.PromptAdmitted{MessageID: id, Prompt: messages.Prompt{Text: id}, Delivery: messages.Steer},
			messages.PromptPromoted{MessageIDs: []string{id}},
			messages.TurnStarted{AssistantMessageID: "a_" + id, Agent: row.Agent, Model: row.Model},
			messages.TurnEnded{AssistantMessageID: "a_" + id, FinishReason: "stop"},
			messages.Idle{})
	case "admit":
		var id string
		td.ScanArgs(t, "id", &id)
		dl := messages.Steer
		if td.HasArg("queue") {
			dl = messages.Queue
		}
		e.write(&out, messages.PromptAdmitted{MessageID: id, Prompt: messages.Prompt{Text: id}, Delivery: dl})
	case "epoch":
		gen, err := contextsources.Initialize(observation(e.sourceValue(), false))
		if err != nil {
			t.Fatal(err)
		}
		snap, err := gen.Snapshot.Encode()
		if err != nil {
			t.Fatal(err)
		}
		e.write(&out, messages.ContextEpochInitialized{Revision: int64(len(e.journal) + 1), Baseline: gen.Baseline, Snapshot: snap, Location: e.c.State.Row.Location})
	case "switch":
		// A client switches the agent (with its own model, when model is
		// given too) or the model; the next turn uses it.
		var agent, model string
		td.MaybeScanArgs(t, "agent", &agent)
		td.MaybeScanArgs(t, "model", &model)
		ref := messages.ModelRef{Provider: "p", ID: model}
		switch {
		case agent != "" && model != "":
			e.ready(&out, e.c.Step(SwitchAgent{Agent: agent, Model: &ref}))
		case agent != "":
			e.ready(&out, e.c.Step(SwitchAgent{Agent: agent}))
		default:
			e.ready(&out, e.c.Step(SwitchModel{Model: ref}))
		}
		fmt.Fprintf(&out, "agent=%s model=%s\n", e.c.State.Row.Agent, e.c.State.Row.Model.ID)
	case "rename":
		// A client renames the session.
		var title string
		td.ScanArgs(t, "title", &title)
		e.ready(&out, e.c.Step(Rename{Title: title}))
		fmt.Fprintf(&out, "title=%q\n", e.c.State.Row.Title)
	case "delete":
		e.ready(&out, e.c.Step(Delete{}))
		fmt.Fprintf(&out, "exists=%v\n", e.c.State.Exists)
	case "move":
		var to string
		td.ScanArgs(t, "to", &to)
		e.ready(&out, e.c.Step(Move{To: to}))
	case "compact":
		// A client's manual compaction: a drain of its own, or refused.
		e.ready(&out, e.c.Step(CompactCommand{}))
	case "drain":
		if e.c.Drain != nil {
			t.Fatalf("%s: a drain is running", td.Pos)
		}
		d := &Drain{Location: e.c.State.Row.Location, RunOwed: td.HasArg("run")}
		td.MaybeScanArgs(t, "limit", &d.TurnLimit)
		e.c.Drain = d
		fmt.Fprintf(&out, "drain started run=%v\n", d.RunOwed)
	case "wake":
		// Input may be waiting (a prompt admitted with resume, a client's
		// wake; owed: recovery's, a takeover's or the journal's return).
		e.ready(&out, e.c.Step(Wake{Owed: td.HasArg("owed")}))
	case "leftovers":
		// A new owner closes what the dead one left, before anything
		// else (the core decides: Leftovers): the previous incarnation's
		// tools are killed first, then every unanswered request of a
		// dying call, every recorded call not settled (none is run
		// again) and the unfinished turn fail.
		rd := e.c.Step(Leftovers{Why: "session restarted"})
		if rd.KillTools {
			out.WriteString("kill the previous owner's tools\n")
			rd = e.c.Step(Leftovers{Why: "session restarted", ToolsKilled: true})
		}
		if len(rd.Append) == 0 {
			out.WriteString("nothing left over\n")
		}
		e.ready(&out, rd)
	case "recover":
		// The restart policy (resume, or interrupt), once the leftovers
		// are failed.
		e.ready(&out, e.c.Step(Recover{Interrupt: td.HasArg("interrupt"), NoteID: fmt.Sprintf("ctx%d", len(e.journal)+1), Note: "the server restarted"}))
	case "inbox":
		for _, p := range e.c.State.Pending {
			fmt.Fprintf(&out, "%s/%s@%d held=%v\n", p.MessageID, p.Delivery, p.AdmittedSeq, p.Held)
		}
	case "run":
		// A client's run: it waits for the drain in progress or one
		// started for it.
		e.ready(&out, e.c.Step(Run{}))
	case "located":
		// The drain's Location answered (or failed, or its configuration
		// lost the agent).
		e.stopping(td)
		in := LocationResolved{TurnLimit: e.c.Drain.TurnLimit}
		td.MaybeScanArgs(t, "limit", &in.TurnLimit)
		if td.HasArg("failed") {
			in.Err = "location /p: no such directory"
		}
		if td.HasArg("config-failed") {
			in.ConfigErr = "agent build: not configured"
		}
		e.ready(&out, e.c.Step(in))
	case "turn-ends":
		// How each turn ended, as an observer is told (Ready.TurnEnd).
		for _, te := range e.turnEnds {
			fmt.Fprintln(&out, te)
		}
	case "titles":
		// The title requests asked for so far, with their prompts.
		fmt.Fprintf(&out, "title requests: %d %q\n", len(e.titles), e.titles)
	case "titled":
		// The title model answered; or a client renamed (rename).
		var title string
		td.ScanArgs(t, "title", &title)
		if td.HasArg("rename") {
			e.ready(&out, e.c.Step(Rename{Title: title}))
		} else {
			e.ready(&out, e.c.Step(TitleGenerated{Title: title}))
		}
		fmt.Fprintf(&out, "title=%q\n", e.c.State.Row.Title)
	case "boundary":
		e.stopping(td)
		e.ready(&out, e.c.Step(AtBoundary{}))
	case "observed":
		// The observation an Observe asked for came back: the context
		// source's value unchanged or changed to X (update=X), the source
		// unavailable (blocked: the core blocks a baseline, a fresh one
		// too, on it), the observation failed, or the agent gone from the
		// configuration; its tool catalog with it unless the turn is the
		// last allowed (catalog-failed: it could not be listed).
		d := e.c.Drain
		e.stopping(td)
		in := ContextObserved{Init: e.init, TurnLimit: d.TurnLimit, Catalog: !e.init && !d.LastTurn}
		in.UpdateID = fmt.Sprintf("ctx%d", int64(len(e.journal)+len(withoutPromotion(e.c.Carry)))+1)
		switch {
		case td.HasArg("failed"):
			in.Err = "source agents: timeout"
		case td.HasArg("config-failed"):
			in.ConfigErr = "agent build: not configured"
		default:
			td.MaybeScanArgs(t, "update", &e.source)
			in.Observation = observation(e.sourceValue(), td.HasArg("blocked"))
		}
		if td.HasArg("catalog-failed") {
			in.CatalogErr = "tool registry: stopped"
		}
		rd := e.c.Step(in)
		// replaced says what the script expects: the core decides it (a
		// compaction moved the history boundary past the epoch's).
		if td.HasArg("replaced") && !slices.ContainsFunc(rd.Append, func(ev messages.Event) bool {
			_, ok := ev.(messages.ContextEpochReplaced)
			return ok
		}) {
			t.Fatalf("%s: the observation did not replace the baseline", td.Pos)
		}
		e.ready(&out, rd)
	case "catalog":
		// The catalog a StartTurn needed, listed on its own.
		var in CatalogLoaded
		if td.HasArg("failed") {
			in.Err = "tool registry: stopped"
		}
		e.ready(&out, e.c.Step(in))
	case "config":
		// The owner's configuration (the core's Config): auto-compaction
		// on or off.
		var auto string
		td.ScanArgs(t, "auto-compaction", &auto)
		e.c.Config.Compaction.Auto = auto == "on"
	case "turn-ok", "turn-failed", "overflow":
		// The turn ends: its stream (unless stream-end ended it) with the
		// finish stop (content_filter: filter), failed with a 503, or
		// with the provider's context overflow, unprinted; then it closes
		// (close-turn), printed.
		if d := e.c.Drain; d != nil && d.Turn != nil && d.Turn.Streaming {
			in := StreamEnded{}
			switch td.Cmd {
			case "turn-ok":
				finish := "stop"
				if td.HasArg("filter") {
					finish = "content_filter"
				}
				e.silent(t, td, StreamPart{Kind: PartFinish, Finish: finish})
			case "turn-failed":
				in = StreamEnded{Err: "503 unavailable", Kind: provider.KindServerError}
			case "overflow":
				in = StreamEnded{Err: "prompt is too long", Kind: provider.KindContextOverflow}
			}
			if rd := e.c.Step(in); len(rd.Append) > 0 || !rd.TurnOver {
				t.Fatalf("%s: the stream's end wrote %v, turn over %v", td.Pos, rd.Append, rd.TurnOver)
			}
		} else if td.Cmd != "turn-ok" || td.HasArg("filter") {
			t.Fatalf("%s: the stream ended already: say how with stream-end, then close-turn", td.Pos)
		}
		fallthrough
	case "close-turn":
		// Every call settled and the stream ended: the shell closes the
		// turn (Ready.TurnOver).
		e.stopping(td)
		e.ready(&out, e.c.Step(CloseTurn{}))
	case "over-budget":
		// The requests built from now on are over the model's budget.
		e.over = true
	case "within-budget":
		e.over = false
	case "plan":
		// How the next compactions plan: ok, nothing (to compact), failed.
		td.ScanArgs(t, "result", &e.plan)
		if e.plan == "ok" {
			e.plan = ""
		}
		// nothing: everything fits in the recent context.
		e.c.Config.Compaction.Keep = 1
		if e.plan == "nothing" {
			e.c.Config.Compaction.Keep = 1 << 20
		}
	case "compacted":
		// The running compaction's summary request finished (failed: it
		// did not, or it was cancelled).
		in := CompactionDone{ID: e.compaction, Summary: "summary of " + e.compaction, RecentContext: e.recent}
		if td.HasArg("failed") {
			in = CompactionDone{ID: e.compaction, Err: "context canceled"}
		}
		e.ready(&out, e.c.Step(in))
	case "call":
		// The stream delivered a complete tool call: the core records it
		// and starts it.
		var id string
		td.ScanArgs(t, "id", &id)
		tool := "bash"
		td.MaybeScanArgs(t, "tool", &tool)
		var args []byte
		if tool == QuestionTool {
			// A question call asks "Which color?" unless its input is
			// one of the malformed ones; denied: the agent's rules deny
			// the question tool (the shell's permission verdict).
			input := "ok"
			td.MaybeScanArgs(t, "input", &input)
			args = []byte(map[string]string{
				"ok":       `{"questions":[{"question":"Which color?"}]}`,
				"not-json": `not json`,
				"none":     `{"questions":[]}`,
				"blank":    `{"questions":[{"question":"Which color?"},{"question":" "}]}`,
			}[input])
			if args == nil {
				t.Fatalf("%s: unknown question input %q", td.Pos, input)
			}
			e.questionDenied = td.HasArg("denied")
		}
		// The call keeps the agent of the turn that issued it (the core's).
		e.ready(&out, e.c.Step(StreamPart{Kind: PartToolCall, CallID: id, Tool: tool, Args: args}))
	case "settle":
		// The tool's one settlement (ok, failed, interrupted when the
		// drain cancelled it, or rejected by the user without feedback).
		var id string
		td.ScanArgs(t, "id", &id)
		in := ToolSettled{Result: messages.ToolSucceeded{AssistantMessageID: e.turn, CallID: id, Output: "ok"}}
		switch {
		case td.HasArg("failed"):
			in.Result = messages.ToolFailed{AssistantMessageID: e.turn, CallID: id, Error: "exit status 1"}
			in.Kind = "failed" // the runner's kind, for observers only
		case td.HasArg("interrupted"):
			in.Result = messages.ToolFailed{AssistantMessageID: e.turn, CallID: id, Error: "Tool execution interrupted"}
			in.Kind = "interrupted"
		case td.HasArg("rejected"):
			in.Result = messages.ToolFailed{AssistantMessageID: e.turn, CallID: id, Error: "permission rejected"}
			in.StopsDrain = true
			in.Kind = "rejected"
		case td.HasArg("declined"):
			// The call failed as the user's reply rejected it (what that
			// means for the drain is the core's: PermissionReplied).
			in.Result = messages.ToolFailed{AssistantMessageID: e.turn, CallID: id, Error: "the user rejected permission"}
			in.Kind = "rejected"
		}
		e.ready(&out, e.c.Step(in))
	case "answer":
		// A client answers question request que_<id> (blue, or answers:
		// a comma-separated list), or dismisses it (rejected; feedback:
		// why). The core takes it only for an open request.
		var id, answers, feedback string
		td.ScanArgs(t, "id", &id)
		answers = "blue"
		td.MaybeScanArgs(t, "answers", &answers)
		td.MaybeScanArgs(t, "feedback", &feedback)
		in := Reply{RequestID: "que_" + id, Reply: messages.ReplyOnce, Answers: [][]string{strings.Split(answers, ",")}, Feedback: feedback}
		if td.HasArg("rejected") {
			in.Reply = messages.ReplyReject
		}
		rd := e.c.Step(in)
		for _, ev := range rd.Append {
			if r, ok := ev.(messages.ToolSucceeded); ok {
				fmt.Fprintf(&out, "the model reads for %s: %q\n", r.CallID, r.Output)
			}
		}
		e.ready(&out, rd)
	case "questions":
		// The open question requests, in the order they were asked.
		var open []string
		for id, q := range e.c.State.Questions {
			open = append(open, fmt.Sprintf("%s@%d(%s %s)", id, q.Seq, q.AssistantMessageID, q.CallID))
		}
		sort.Strings(open)
		fmt.Fprintf(&out, "open questions: [%s]\n", strings.Join(open, " "))
	case "permission":
		// A tool call asks the user for permission.
		var id, turn string
		td.ScanArgs(t, "id", &id)
		turn = e.turn
		td.MaybeScanArgs(t, "turn", &turn)
		rd := e.c.Step(PermissionAsked{Asked: messages.PermissionAsked{RequestID: "per_" + id, AssistantMessageID: turn, CallID: id, Action: "bash"}})
		if len(rd.Append) == 0 {
			out.WriteString("permission refused: not a running call of the turn in flight\n")
		}
		e.ready(&out, rd)
	case "reply":
		// A client answers permission request per_<id>: once, always,
		// or reject (feedback: with feedback the model sees; as: any
		// other reply). The core refuses a reply it does not know, or
		// one to a request that is not open.
		var id, as string
		td.ScanArgs(t, "id", &id)
		r := Reply{RequestID: "per_" + id, Reply: messages.ReplyOnce}
		switch {
		case td.HasArg("always"):
			r.Reply = messages.ReplyAlways
		case td.HasArg("reject"):
			r.Reply = messages.ReplyReject
		}
		if td.HasArg("as") {
			td.ScanArgs(t, "as", &as)
			r.Reply = messages.PermissionReply(as)
		}
		td.MaybeScanArgs(t, "feedback", &r.Feedback)
		rd := e.c.Step(r)
		if rd.Answer != nil {
			fmt.Fprintf(&out, "answer the call waiting on %s: %s\n", rd.Answer.RequestID, rd.Answer.Reply)
		}
		e.ready(&out, rd)
	case "part":
		// The stream delivered a part: a text, reasoning or tool-input
		// (input=<call>) delta, usage (tokens) or the finish (finish).
		in := StreamPart{Kind: PartText}
		td.MaybeScanArgs(t, "text", &in.Text)
		switch {
		case td.HasArg("reasoning"):
			in.Kind = PartReasoning
			td.ScanArgs(t, "reasoning", &in.Text)
		case td.HasArg("input"):
			in.Kind = PartToolInput
			td.ScanArgs(t, "input", &in.CallID)
		case td.HasArg("tokens"):
			in.Kind = PartUsage
			td.ScanArgs(t, "tokens", &in.Usage.OutputTokens)
		case td.HasArg("finish"):
			in.Kind = PartFinish
			td.ScanArgs(t, "finish", &in.Finish)
		}
		e.ready(&out, e.c.Step(in))
	case "stream-end":
		// The stream is over, with its final text (and reasoning): given
		// here, they stream as one delta each first, then its finish stop
		// (finish=X; none: no-finish, failed, overflow), unprinted. It
		// failed (with a 503), or the provider said the context
		// overflowed (overflow).
		var text, reasoning string
		finish := "stop"
		td.MaybeScanArgs(t, "text", &text)
		td.MaybeScanArgs(t, "reasoning", &reasoning)
		td.MaybeScanArgs(t, "finish", &finish)
		in := StreamEnded{}
		switch {
		case td.HasArg("failed"):
			in = StreamEnded{Err: "503 unavailable", Kind: provider.KindServerError}
		case td.HasArg("overflow"):
			in = StreamEnded{Err: "prompt is too long", Kind: provider.KindContextOverflow}
		}
		if in.Err != "" || td.HasArg("no-finish") {
			finish = ""
		}
		parts := []StreamPart{{Kind: PartReasoning, Text: reasoning}, {Kind: PartText, Text: text}}
		if finish != "" {
			parts = append(parts, StreamPart{Kind: PartFinish, Finish: finish})
		}
		e.silent(t, td, parts...)
		e.ready(&out, e.c.Step(in))
	case "abort":
		// The shell cannot carry the drain on (no provider serves the
		// model, or kind=internal: the history could not be read).
		kind := string(Model)
		td.MaybeScanArgs(t, "kind", &kind)
		e.ready(&out, e.c.Step(Abort{Outcome: Outcome{Kind: OutcomeKind(kind), Err: "cannot go on: " + kind}}))
	case "interrupt":
		// waiting: an observation (or the Location, a catalog, a
		// compaction) is outstanding.
		out.WriteString("interrupt requested\n")
		e.ready(&out, e.c.Step(Interrupt{Waiting: td.HasArg("waiting")}))
	case "agents":
		// The agent and model of every turn, and the agent of every call.
		for _, ev := range e.journal {
			switch ev := ev.(type) {
			case messages.TurnStarted:
				fmt.Fprintf(&out, "turn %s: agent=%s model=%s\n", ev.AssistantMessageID, ev.Agent, ev.Model.ID)
			case messages.ToolCalled:
				fmt.Fprintf(&out, "call %s of %s: agent=%s\n", ev.CallID, ev.AssistantMessageID, ev.Agent)
			}
		}
	case "revert":
		// A client's revert command (op=stage|commit|clear|show|diff, of
		// message id), played as the shell plays it: the message's
		// position read from the journal first, then the core stepped
		// until it answers. The snapshot facts it asks for are snap<seq>
		// (the first turn's), now (the Location) and the files a.txt and
		// b.txt; missing: the store lacks snap<seq>; lost: a later tree
		// of the span; no-snapshots: this server keeps none. crash: the
		// process dies in the first file restore (replay, then activate).
		var op, id string
		td.ScanArgs(t, "op", &op)
		td.MaybeScanArgs(t, "id", &id)
		e.revert(t, &out, td, RevertCommand{Op: RevertOp(op), MessageID: id, Message: e.messageAt(id)})
	case "activate":
		// A new owner activates: a file restore a crash left owed is
		// finished before anything else.
		e.revert(t, &out, td, FinishRestore{})
	case "reverts":
		// The revert state (State.Reverts).
		r := &e.c.State.Reverts
		if o := r.Open; o != nil {
			fmt.Fprintf(&out, "open: %s@%d.%d committed=%v snapshot=%s current=%s files=%v\n", o.MessageID, o.BoundarySeq, o.BoundaryIndex, o.Committed, o.Snapshot, o.Current, o.Files)
		}
		if rs := r.Restore; rs != nil {
			fmt.Fprintf(&out, "restore owed: %v to %s\n", rs.Files, rs.Tree)
		}
		for _, h := range r.Hidden {
			fmt.Fprintf(&out, "hidden: %d.%d to %d\n", h.FromSeq, h.FromIndex, h.ToSeq)
		}
		if r.Empty() {
			out.WriteString("no revert\n")
		}
	case "state":
		e.state(&out)
	case "replay":
		// A fresh process folds the journal from seq 1.
		st := NewState(e.c.State.Row.ID)
		for i, ev := range e.journal {
			if err := st.Apply(int64(i+1), ev); err != nil {
				t.Fatalf("%s: replay: %v", td.Pos, err)
			}
		}
		e.c = Core{State: st, Config: e.c.Config}
		e.state(&out)
	default:
		t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	}
	// The owner writes what the core says must be durable before its
	// next input (carry.go).
	if evs := e.c.Flush(); len(evs) > 0 {
		out.WriteString("flush:\n")
		e.write(&out, evs...)
	}
	return out.String()
}

// messageAt is where message id is in the stream, as the journal's
// messages projection says (nil: none).
func (e *interactionEnv) messageAt(id string) *MessageAt {
	if id == "" {
		return nil
	}
	for i, ev := range e.journal {
		seq := int64(i + 1)
		switch ev := ev.(type) {
		case messages.PromptPromoted:
			if j := slices.Index(ev.MessageIDs, id); j >= 0 {
				return &MessageAt{Seq: seq, Index: j, Role: messages.RoleUser}
			}
		case messages.TurnStarted:
			if ev.AssistantMessageID == id {
				return &MessageAt{Seq: seq, Role: messages.RoleAssistant}
			}
		case messages.ContextUpdated:
			if ev.MessageID == id {
				return &MessageAt{Seq: seq, Role: messages.RoleSystem}
			}
		}
	}
	return nil
}

// revert plays the shell's revert loop: step in, write its Append, run
// what Ready.Revert asks for (printed), until the command answers.
func (e *interactionEnv) revert(t *testing.T, out *strings.Builder, td *datadriven.TestData, in Input) {
	for range 10 {
		rd := e.c.Step(in)
		e.ready(out, rd)
		n := rd.Revert
		if _, activation := in.(FinishRestore); activation && n == nil {
			out.WriteString("no restore owed\n")
		}
		if rd.Refused != nil || n == nil {
			return
		}
		cmd, isCmd := in.(RevertCommand)
		cmd.Facts = nil
		switch {
		case n.Answer != nil:
			open := "none"
			if o := e.c.State.Reverts.Open; o != nil {
				open = fmt.Sprintf("%s committed=%v", o.MessageID, o.Committed)
			}
			fmt.Fprintf(out, "answer: open=%s files=%s\n", open, [...]string{FilesNone: "none", FilesOpen: "open", FilesDiff: "diff"}[n.Answer.Files])
			return
		case n.Restore != nil:
			fmt.Fprintf(out, "restore %v to %s\n", n.Restore.Files, n.Restore.Tree)
			if td.HasArg("crash") {
				out.WriteString("crash: the process dies mid-restore\n")
				return
			}
			e.ready(out, e.c.Step(RestoreDone{Tree: n.Restore.Tree}))
		case n.Read != nil:
			r := n.Read
			fmt.Fprintf(out, "read snapshots from seq %d diff=%v bounded=%v\n", r.Seq, r.Diff, r.Bounded)
			f := &SnapshotFacts{From: fmt.Sprintf("snap%d", r.Seq), Current: "now", Files: []string{"a.txt", "b.txt"}}
			switch {
			case td.HasArg("no-snapshots"):
				f = &SnapshotFacts{}
			case td.HasArg("missing"):
				f = &SnapshotFacts{From: f.From, FromMissing: true}
			case td.HasArg("lost"):
				f.Lost = "tree tr9: not found"
			}
			cmd.Facts = f
		case !n.Again:
			t.Fatalf("%s: Ready.Revert names nothing to do", td.Pos)
		}
		if !isCmd {
			return // an activation's restore: nothing to answer
		}
		in = cmd
	}
	t.Fatalf("%s: the revert command did not answer", td.Pos)
}

// silent steps stream parts that write nothing, unprinted.
func (e *interactionEnv) silent(t *testing.T, td *datadriven.TestData, parts ...StreamPart) {
	for _, p := range parts {
		if rd := e.c.Step(p); len(rd.Append) > 0 {
			t.Fatalf("%s: a part wrote %v", td.Pos, rd.Append)
		}
	}
}

// stopping steps Stopping first when the command says the server began
// shutting down (the shell feeds it before the input it came with).
func (e *interactionEnv) stopping(td *datadriven.TestData) {
	if td.HasArg("stopping") {
		e.c.Step(Stopping{})
	}
}

// write appends events to the journal and folds them.
func (e *interactionEnv) write(out *strings.Builder, evs ...messages.Event) {
	for _, ev := range evs {
		e.journal = append(e.journal, ev)
		seq := int64(len(e.journal))
		if err := e.c.State.Apply(seq, ev); err != nil {
			fmt.Fprintf(out, "fold refused seq %d: %v\n", seq, err)
			continue
		}
		fmt.Fprintf(out, "wrote %d %s\n", seq, describe(ev))
	}
}

// ready prints a Ready and plays the shell's part for it.
func (e *interactionEnv) ready(out *strings.Builder, rd Ready) {
	if r := rd.Refused; r != nil {
		fmt.Fprintf(out, "refused: %s %q\n", [...]string{RefusedNotFound: "not found", RefusedInvalid: "invalid", RefusedBusy: "busy", RefusedConflict: "conflict"}[r.Kind], r.Err)
	}
	e.askTitle(out, rd)
	if te := rd.TurnEnd; te != nil {
		// Recorded, not printed (turn-ends lists them), as titles.
		e.turnEnds = append(e.turnEnds, fmt.Sprintf("%s model=%s/%s finish=%q tokens=%d failed=%q %q", te.AssistantMessageID, te.Model.Provider, te.Model.ID, te.Finish, te.Usage.OutputTokens, te.Kind, te.Err))
	}
	if len(rd.Append) > 0 {
		e.write(out, rd.Append...)
	}
	if len(rd.Settled) > 0 {
		// What an observer records of the calls' execution (their spans
		// and counters): failed with the runner's kind, when it gave one.
		var ds []string
		for _, st := range rd.Settled {
			switch {
			case st.Err == "" && st.Kind == "":
				ds = append(ds, st.CallID+" ok")
			case st.Kind == "":
				ds = append(ds, st.CallID+" failed")
			default:
				ds = append(ds, fmt.Sprintf("%s failed(%s)", st.CallID, st.Kind))
			}
		}
		fmt.Fprintf(out, "settled: %s\n", strings.Join(ds, ", "))
	}
	for _, c := range rd.StartTools {
		fmt.Fprintf(out, "start tool %s %s\n", c.CallID, c.Tool)
		if c.Tool == QuestionTool {
			// The shell asks the user instead of running a tool.
			e.ready(out, e.c.Step(QuestionAsked{RequestID: "que_" + c.CallID, Call: c, Denied: e.questionDenied}))
		}
	}
	for _, id := range rd.Closed {
		fmt.Fprintf(out, "release the call waiting on %s: closed\n", id)
	}
	if rd.Cancel {
		out.WriteString("cancel: the stream and running tools\n")
	}
	for _, d := range rd.Live {
		fmt.Fprintf(out, "live: %s %s%s %q\n", d.Kind, d.AssistantMessageID, map[bool]string{true: " " + d.CallID}[d.CallID != ""], d.Text)
	}
	if rd.TurnOver {
		out.WriteString("turn over\n")
	}
	if len(e.c.Carry) > 0 {
		var ds []string
		for _, ev := range e.c.Carry {
			ds = append(ds, describe(ev))
		}
		fmt.Fprintf(out, "carry: %s\n", strings.Join(ds, ", "))
	}
	switch {
	case rd.Stop:
		out.WriteString("stop: mid-drain, no Idle\n")
		e.c.Drain = nil
	case rd.Outcome != nil:
		// Its last events (Idle, DrainFailed, Interrupted) were in Append.
		switch {
		case rd.Outcome.Kind == Interrupted:
			out.WriteString("finish interrupt\n")
		case rd.Outcome.Kind == Completed && rd.Outcome.Err == "":
			out.WriteString("outcome: completed\n")
		default:
			fmt.Fprintf(out, "outcome: %s %q\n", rd.Outcome.Kind, rd.Outcome.Err)
		}
		if rd.Busy {
			// The session stays busy for the drain DrainEnded starts.
			out.WriteString("no idle: the session stays busy\n")
		}
		e.c.Drain = nil
		e.ready(out, e.c.Step(DrainEnded{}))
	case rd.Observe != nil:
		e.init = rd.Observe.Init
		fmt.Fprintf(out, "observe: init=%v catalog=%v\n", rd.Observe.Init, rd.Observe.WithCatalog)
	case rd.StartDrain != nil:
		e.c.Drain = &Drain{Location: e.c.State.Row.Location, RunOwed: rd.StartDrain.Run, Continuation: rd.StartDrain.Continue, Manual: rd.StartDrain.Manual}
		if rd.StartDrain.Continue {
			out.WriteString("drain started to continue the last turn\n")
		} else {
			fmt.Fprintf(out, "drain started run=%v\n", rd.StartDrain.Run)
		}
	case rd.Compact != nil:
		// The shell plans the compaction from the history as it is once
		// what the core carries is written.
		fmt.Fprintf(out, "plan compaction (%s)\n", [...]string{"manual", "before the turn", "after an overflow"}[rd.Compact.Cause])
		// The core plans it: failed is a model whose window the summary
		// request does not fit.
		in := CompactionFacts{ID: fmt.Sprintf("cmp%d", e.compactions+1), Limits: Limits{Window: interactionWindow}}
		if e.plan == "failed" {
			in.Limits.Window = 1
		}
		e.ready(out, e.c.Step(in))
		return
	case rd.Summarize != nil:
		e.compactions++
		e.compaction, e.recent = rd.Summarize.ID, rd.Summarize.Plan.RecentContext
		fmt.Fprintf(out, "summarize %s: manual=%v\n", rd.Summarize.ID, rd.Summarize.Manual)
	case rd.StartTurn != nil:
		// The turn's request is built; the core opens it (its TurnStarted
		// carries what waited for it) or compacts first.
		fmt.Fprintf(out, "start turn: tools=%v\n", rd.StartTurn.Tools)
		if e.over {
			out.WriteString("request over budget\n")
		}
		e.turns++ // the turn is e.turn once it streams
		// The request uses the agent and model the session has now.
		row := e.c.State.Row
		est := 1
		if e.over {
			est = 2 * interactionWindow
		}
		built := e.c.Step(TurnBuilt{Started: messages.TurnStarted{AssistantMessageID: fmt.Sprintf("a%d", e.turns), Agent: row.Agent, Model: row.Model}, Limits: Limits{Window: interactionWindow}, Estimate: est})
		if !built.Stream {
			e.ready(out, built)
			return
		}
		e.write(out, built.Append...)
		e.askTitle(out, built)
		e.stream(out)
	case rd.Stream:
		e.stream(out) // its Append was written above
	}
	if d := e.c.Drain; d != nil {
		fmt.Fprintf(out, "drain: turns=%d last=%v continuation=%v\n", d.TurnsUsed, d.LastTurn, d.Continuation)
	}
}

// askTitle plays the shell's title request: it is recorded (the titles
// command lists them, titled answers one), not printed, so that the
// scripts which do not look at titles keep their output.
func (e *interactionEnv) askTitle(out *strings.Builder, rd Ready) {
	if rd.Title != nil {
		e.titles = append(e.titles, rd.Title.Prompt)
	}
}

// stream sends the request of the turn whose TurnStarted was written.
func (e *interactionEnv) stream(out *strings.Builder) {
	e.turn = e.c.Drain.Turn.AssistantMessageID
	e.calls++
	fmt.Fprintf(out, "provider request %d: %s\n", e.calls, e.request())
}

// turnClosed reports whether the open turn's end is already written.
func (e *interactionEnv) turnClosed() bool {
	for _, ev := range e.journal {
		switch ev := ev.(type) {
		case messages.TurnEnded:
			if ev.AssistantMessageID == e.turn {
				return true
			}
		case messages.TurnFailed:
			if ev.AssistantMessageID == e.turn {
				return true
			}
		}
	}
	return false
}

// request is the model-visible history a request made now carries.
func (e *interactionEnv) request() string {
	var parts []string
	for _, m := range e.c.State.History.Msgs {
		switch m.Role {
		case messages.RoleUser:
			parts = append(parts, "U("+m.Prompt.Text+")")
		case messages.RoleAssistant:
			a := "A(" + m.ID
			for _, p := range m.Parts {
				if p.Tool != nil {
					a += " " + p.Tool.CallID + ":" + string(p.Tool.State)
				}
			}
			parts = append(parts, a+")")
		case messages.RoleSystem:
			parts = append(parts, "S("+m.Text+")")
		case messages.RoleCompaction:
			parts = append(parts, "C")
		}
	}
	return strings.Join(parts, " ")
}

func (e *interactionEnv) state(out *strings.Builder) {
	s := &e.c.State
	var pending []string
	for _, p := range s.Pending {
		pending = append(pending, fmt.Sprintf("%s/%s@%d", p.MessageID, p.Delivery, p.AdmittedSeq))
	}
	fmt.Fprintf(out, "status=%s seq=%d location=%s epoch=%v\n", s.Row.Status, s.Row.LastSeq, s.Row.Location, s.Epoch != nil)
	fmt.Fprintf(out, "pending: [%s]\n", strings.Join(pending, " "))
	fmt.Fprintf(out, "history: %s\n", e.request())
}

func describe(ev messages.Event) string {
	name := strings.TrimPrefix(ev.EventType().Name, "session.")
	switch e := ev.(type) {
	case messages.PromptAdmitted:
		return fmt.Sprintf("%s %s %s", name, e.MessageID, e.Delivery)
	case messages.PromptPromoted:
		return fmt.Sprintf("%s %v", name, e.MessageIDs)
	case messages.TurnStarted:
		return name + " " + e.AssistantMessageID
	case messages.TurnEnded:
		return name + " " + e.AssistantMessageID
	case messages.TurnFailed:
		return fmt.Sprintf("%s %s %s", name, e.AssistantMessageID, e.ErrorKind)
	case messages.DrainFailed:
		return name + " " + e.Kind
	case messages.Moved:
		return fmt.Sprintf("%s %s", name, e.To)
	case messages.SessionRenamed:
		return fmt.Sprintf("%s %q", name, e.Title)
	case messages.TextEnded:
		return fmt.Sprintf("%s %q", name, e.Text)
	case messages.ReasoningEnded:
		return fmt.Sprintf("%s %q", name, e.Text)
	case messages.ToolCalled:
		return name + " " + e.CallID
	case messages.ToolSucceeded:
		return name + " " + e.CallID
	case messages.ToolFailed:
		return fmt.Sprintf("%s %s %q", name, e.CallID, e.Error)
	case messages.PermissionReplied:
		return fmt.Sprintf("%s %s %s %q", name, e.RequestID, e.Reply, e.Feedback)
	case messages.QuestionAsked:
		return fmt.Sprintf("%s %s", name, e.RequestID)
	case messages.QuestionReplied:
		return fmt.Sprintf("%s %s %v", name, e.RequestID, e.Answers)
	case messages.QuestionRejected:
		return fmt.Sprintf("%s %s %q", name, e.RequestID, e.Reason)
	case messages.RevertStaged:
		return fmt.Sprintf("%s %s@%d.%d %s..%s %v", name, e.MessageID, e.BoundarySeq, e.BoundaryIndex, e.Snapshot, e.Current, e.Files)
	case messages.RevertCommitted:
		return name + " " + e.MessageID
	case messages.RevertRestored:
		return name + " " + e.Snapshot
	}
	return name
}

func (e *interactionEnv) sourceValue() string {
	if e.source == "" {
		return "baseline"
	}
	return e.source
}

// observation is what the session's one context source gives: its value,
// rendered as is in a baseline and an update, or (down) unavailable.
func observation(value string, down bool) contextsources.Observation {
	src := contextsources.MustMake(contextsources.Spec[string]{
		Key: "test/agents",
		Load: func(context.Context) contextsources.Result[string] {
			if down {
				return contextsources.Unavailable[string](errors.New("unavailable with no value to restate"))
			}
			return contextsources.Present(value)
		},
		Baseline: func(v string) string { return v },
	})
	sc, err := contextsources.New(src)
	if err != nil {
		panic(err)
	}
	return sc.Observe(context.Background(), contextsources.ObserveConfig{})
}

// interactionWindow is the scripts' model's context window.
const interactionWindow = 100000
