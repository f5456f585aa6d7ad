package session

import (
	"fmt"
	"strings"

	"github.com/sessionrt/sessionrt/messages"
)

// A client's commands that change the session's row (a rename, an agent
// or model switch, a delete) are inputs like any other: the owner does
// what needs I/O (the Location's configuration, whether a model is served)
// and passes the results in; the core decides whether anything changes,
// refuses what it may not do (Ready.Refused), and returns the command's
// events in Ready.Append.
//
// Those events are written alone, never with what the core carries. The
// carry waits for the TurnStarted of the request that acts on it (a
// promotion, a context update, the last turn's results and end) or for the
// drain's end: writing it with a rename that happens to arrive meanwhile
// would make a promotion durable before the turn that answers it, and a
// drain that then ends without that turn would leave the prompt promoted
// with no answer (scenario 41's rule). Writing the command's events first
// moves what is carried one seq or two later, which only matters to what
// was computed for the seqs it would have got:
//   - a ContextEpochInitialized or ContextEpochReplaced embeds its own seq
//     (Revision), but it is never carried: the owner computes it from the
//     seqs of the carry (its nextSeq) in the very step that puts it in
//     Append, so no command can come between;
//   - the history a request was built from shows the carry applied ahead
//     at the seqs it would get (State.ApplyAhead): that copy is now wrong
//     (the carry's seqs move past it), so it is dropped and read again
//     (the request already built shows the same messages, and a rename or
//     switch changes none of them).

// MaxTitle bounds a session's title (the journal's sessions.title column
// holds 1024 bytes).
const MaxTitle = 1024

// Refusal says why the core refused a client's command: nothing is
// written, and the owner answers the client with it.
type Refusal struct {
	Kind RefusalKind
	Err  string
}

// RefusalKind classifies a refusal.
type RefusalKind uint8

const (
	RefusedNotFound RefusalKind = iota + 1 // the session does not exist (or was deleted)
	RefusedInvalid                         // the command asks for something the session cannot take
	RefusedBusy                            // the session is running (or owes a drain)
	RefusedConflict                        // the command contradicts the session's state (a revert to another message, before a compaction, to a lost snapshot)
)

// Rename: a client names the session. A client's title always wins: a
// generated title still carried is dropped.
type Rename struct{ Title string }

// SwitchAgent: a client switches the session's agent, whose configuration
// the owner found at the session's Location. Model is the agent's own
// model (nil when it names none): it comes with the agent, in the same
// append. ModelErr: the owner's providers do not serve Model (the switch
// is refused only if it would take it).
type SwitchAgent struct {
	Agent    string
	Model    *messages.ModelRef
	ModelErr string
}

// SwitchModel: a client switches the session's model. ModelErr: the
// owner's providers do not serve it.
type SwitchModel struct {
	Model    messages.ModelRef
	ModelErr string
}

// Delete: a client deletes the session. It is refused while a drain runs
// or is owed: interrupt it first.
type Delete struct{}

// CompactCommand: a client asks for a manual compaction. It runs as a
// drain of its own (StartDrain.Manual), which the client waits for; it is
// refused while a drain runs: compact when idle, or interrupt first.
type CompactCommand struct{}

// Reply: a client replies to a request the session waits on: a question
// (a que_ request ID: QuestionReply, Answers its answers) or a
// permission request (PermissionReplied). Reply is once, always or
// reject (a question's reject dismisses it); Feedback is why. An unknown
// reply, or a request that is not open, is refused.
type Reply struct {
	RequestID string
	Reply     messages.PermissionReply
	Answers   [][]string
	Feedback  string
}

// Prompt is a client's prompt, as the owner admits it (Admission).
// Delivery "" is steer; Resume: a drain should act on it (otherwise it
// is held until the client's next wake, prompt or run).
type Prompt struct {
	MessageID string
	Prompt    messages.Prompt
	Delivery  messages.Delivery
	Resume    bool
}

// Admission is how the owner admits prompt p (the journal's AdmitPrompt,
// with its duplicate check, writes ev): the event, and the inbox limit the
// journal must check (0: none). State.Pending is the exact pending inbox
// (the owner is its only writer), so below inboxLimit the journal need
// not count it again; at the limit it does, after its duplicate check, so
// that an exact retry still gets its receipt rather than a refusal.
// Refused: the session does not exist, or the delivery is unknown. Nothing
// changes until the owner folds ev.
func (c *Core) Admission(p Prompt, inboxLimit int) (ev messages.PromptAdmitted, limit int, refused *Refusal) {
	if !c.State.Exists {
		return ev, 0, c.notFound().Refused
	}
	if p.Delivery == "" {
		p.Delivery = messages.Steer
	}
	if !p.Delivery.Valid() {
		return ev, 0, &Refusal{Kind: RefusedInvalid, Err: fmt.Sprintf("delivery %q: want steer or queue", p.Delivery)}
	}
	if len(c.State.Pending) >= inboxLimit {
		limit = inboxLimit
	}
	return messages.PromptAdmitted{MessageID: p.MessageID, Prompt: p.Prompt, Delivery: p.Delivery, Held: !p.Resume}, limit, nil
}

func (Rename) input()         {}
func (SwitchAgent) input()    {}
func (SwitchModel) input()    {}
func (Delete) input()         {}
func (CompactCommand) input() {}
func (Reply) input()          {}

func (c *Core) notFound() Ready {
	return Ready{Refused: &Refusal{Kind: RefusedNotFound, Err: fmt.Sprintf("session %s not found", c.State.Row.ID)}}
}

func (c *Core) stepReply(in Reply) Ready {
	if !c.State.Exists {
		return c.notFound()
	}
	switch in.Reply {
	case messages.ReplyOnce, messages.ReplyAlways, messages.ReplyReject:
	default:
		return Ready{Refused: &Refusal{Kind: RefusedInvalid, Err: fmt.Sprintf("permission reply %q: want once, always or reject", in.Reply)}}
	}
	notPending := func(kind string) Ready {
		return Ready{Refused: &Refusal{Kind: RefusedNotFound, Err: fmt.Sprintf("session %s has no pending %s request %s", c.State.Row.ID, kind, in.RequestID)}}
	}
	if strings.HasPrefix(in.RequestID, "que_") {
		rd := c.stepQuestionReply(QuestionReply{RequestID: in.RequestID, Answers: in.Answers, Reject: in.Reply == messages.ReplyReject, Feedback: in.Feedback})
		if len(rd.Append) == 0 {
			return notPending("question")
		}
		return rd
	}
	rd := c.stepPermissionReplied(messages.PermissionReplied{RequestID: in.RequestID, Reply: in.Reply, Feedback: in.Feedback})
	if rd.Answer == nil {
		return notPending("permission")
	}
	return rd
}

func (c *Core) stepRename(in Rename) Ready {
	if !c.State.Exists {
		return c.notFound()
	}
	if len(in.Title) > MaxTitle {
		return Ready{Refused: &Refusal{Kind: RefusedInvalid, Err: fmt.Sprintf("title is %d bytes, at most %d", len(in.Title), MaxTitle)}}
	}
	c.dropCarriedTitle()
	if in.Title == c.State.Row.Title {
		return Ready{}
	}
	return c.command(messages.SessionRenamed{Title: in.Title})
}

// dropCarriedTitle forgets a generated title that waits in the carry: it
// would be written after the client's and replace it.
func (c *Core) dropCarriedTitle() {
	kept := c.Carry[:0]
	for _, ev := range c.Carry {
		if _, ok := ev.(messages.SessionRenamed); !ok {
			kept = append(kept, ev)
		}
	}
	clear(c.Carry[len(kept):])
	c.Carry = kept
	if len(c.Carry) == 0 {
		c.Carry = nil
	}
}

func (c *Core) stepSwitchAgent(in SwitchAgent) Ready {
	if !c.State.Exists {
		return c.notFound()
	}
	if in.Agent == c.State.Row.Agent {
		return Ready{}
	}
	evs := []messages.Event{messages.AgentSwitched{Agent: in.Agent}}
	if m := in.Model; m != nil && m.ID != "" && *m != c.State.Row.Model {
		if in.ModelErr != "" {
			return Ready{Refused: &Refusal{Kind: RefusedInvalid, Err: in.ModelErr}}
		}
		evs = append(evs, messages.ModelSwitched{Model: *m})
	}
	return c.command(evs...)
}

func (c *Core) stepSwitchModel(in SwitchModel) Ready {
	switch {
	case !c.State.Exists:
		return c.notFound()
	case in.Model.ID == "" || in.Model.Provider == "":
		return Ready{Refused: &Refusal{Kind: RefusedInvalid, Err: "model switch needs a provider and a model ID"}}
	case in.ModelErr != "":
		return Ready{Refused: &Refusal{Kind: RefusedInvalid, Err: in.ModelErr}}
	case in.Model == c.State.Row.Model:
		return Ready{}
	}
	return c.command(messages.ModelSwitched{Model: in.Model})
}

func (c *Core) stepDelete() Ready {
	s := &c.State
	if !s.Exists {
		return c.notFound()
	}
	if c.Drain != nil || s.Row.Status == StatusBusy {
		return Ready{Refused: &Refusal{Kind: RefusedBusy, Err: fmt.Sprintf("session %s is running; interrupt it before deleting it", s.Row.ID)}}
	}
	for _, in := range s.Pending {
		if !in.Held {
			// Its drain is owed (and about to start): deleting now would
			// drop a prompt the client holds a receipt for.
			return Ready{Refused: &Refusal{Kind: RefusedBusy, Err: fmt.Sprintf("session %s has prompt %s waiting to run; interrupt it before deleting it", s.Row.ID, in.MessageID)}}
		}
	}
	return c.command(messages.SessionDeleted{})
}

func (c *Core) stepCompact() Ready {
	switch {
	case !c.State.Exists:
		return c.notFound()
	case c.Drain != nil:
		return Ready{Refused: &Refusal{Kind: RefusedBusy, Err: fmt.Sprintf("session %s is running; compact it when idle (or interrupt it first)", c.State.Row.ID)}}
	}
	return Ready{StartDrain: &StartDrain{Manual: true}}
}

// command is a client command's events, written alone: what is carried
// stays carried (see the top of this file for why that is safe).
func (c *Core) command(evs ...messages.Event) Ready {
	if h := &c.State.History; h.Through > c.State.Row.LastSeq {
		// Applied ahead at seqs the carry no longer gets.
		h.Unload()
	}
	return Ready{Append: evs}
}
