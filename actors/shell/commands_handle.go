package shell

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sessionrt/sessionrt/actors/protocol"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
	"github.com/sessionrt/sessionrt/supervisor"
)

func (a *sessionActor) notFound() error {
	return &protocol.CommandError{Code: protocol.CodeNotFound, Msg: fmt.Sprintf("session %s not found", a.id)}
}

func (a *sessionActor) create(m *protocol.Create) any {
	if a.core.State.Exists {
		return &protocol.Info{Session: a.row()}
	}
	// What it starts with is the runtime's to resolve (its Location's
	// configuration); the actor writes it.
	ev, err := a.rt.Creation(m)
	if err != nil {
		return err
	}
	st, created, err := a.journal.Create(ev, m.Copied...)
	if err != nil {
		if stale(err) {
			a.stop(err, false)
		}
		return err
	}
	// Created here: the state is the fold of its one event, as a reload
	// would find it; else another activation created it and it was read.
	a.core.State = st
	if created {
		a.publish(1, ev)
		for i, h := range m.Copied {
			a.publish(int64(2+i), h)
		}
	}
	return &protocol.Info{Session: a.row(), Created: created}
}

func (a *sessionActor) prompt(m *protocol.Prompt) any {
	if m.MessageID == "" {
		m.MessageID = messages.NewID("msg")
	}
	// Whether and how it is admitted is the core's; the journal checks
	// the duplicate and, at the limit, the inbox (Core.Admission).
	ev, limit, r := a.core.Admission(session.Prompt{MessageID: m.MessageID, Prompt: m.Prompt, Delivery: m.Delivery, Resume: m.Resume}, a.rt.InboxLimit)
	if r != nil {
		return refused(r)
	}
	rec, err := a.journal.AdmitPrompt(ev, limit)
	if err != nil {
		if stale(err) {
			a.stop(err, false)
		}
		return err
	}
	if !rec.Duplicate {
		a.fold(rec.AdmittedSeq, ev)
		a.publish(rec.AdmittedSeq, ev)
	}
	a.fault(protocol.FaultAfterAdmission)
	if m.Resume {
		a.drainTrace = m.TraceParent
		a.wake()
		a.drainTrace = ""
	}
	return &rec
}

func (a *sessionActor) move(m *protocol.Move) any {
	if !a.core.State.Exists {
		return a.notFound()
	}
	to, err := supervisor.Canonical(m.To)
	if err != nil {
		return invalidf(err.Error())
	}
	// The core writes the move with the epoch's clearing (the old
	// Location's runner finds it gone and fenced).
	return a.command(session.Move{To: to})
}

func (a *sessionActor) switchAgent(m *protocol.SwitchAgent) any {
	if !a.core.State.Exists {
		return a.notFound()
	}
	in, err := a.rt.AgentSwitch(a.core.State.Row.Location, m.Agent)
	if err != nil {
		return err
	}
	return a.command(in)
}

func (a *sessionActor) deleteSession() any {
	return a.command(session.Delete{})
}

func (a *sessionActor) rename(m *protocol.Rename) any {
	return a.command(session.Rename{Title: m.Title})
}

func (a *sessionActor) switchModel(m *protocol.SwitchModel) any {
	if !a.core.State.Exists {
		return a.notFound()
	}
	in, err := a.rt.ModelSwitch(a.core.State.Row.Location, m.Model)
	if err != nil {
		return err
	}
	return a.command(in)
}

// command steps a client's command and writes what the core decided: its
// events alone, without what the core carries for the next turn (see
// session/commands.go), then answers with the session's row.
func (a *sessionActor) command(in session.Input) any {
	rd := a.core.Step(in)
	if r := rd.Refused; r != nil {
		return refused(r)
	}
	if err := a.write(rd.Append); err != nil {
		return err
	}
	return &protocol.Info{Session: a.row()}
}

// refused is the client's error for a refusal of the core.
func refused(r *session.Refusal) error {
	return &protocol.CommandError{Code: refusalCode[r.Kind], Msg: r.Err}
}

// refusalCode is the error code a client sees for each refusal.
var refusalCode = [...]string{
	session.RefusedNotFound: protocol.CodeNotFound,
	session.RefusedInvalid:  protocol.CodeInvalid,
	session.RefusedBusy:     protocol.CodeBusy,
	session.RefusedConflict: protocol.CodeConflict,
}

func (a *sessionActor) run(ctx actor.Context) {
	if !a.core.State.Exists {
		a.respond(ctx, a.notFound())
		return
	}
	// The caller waits for the drain in progress, or the one the core
	// starts for it.
	a.execute(a.core.Step(session.Run{}))
	if a.drain == nil {
		a.respond(ctx, &protocol.Outcome{LastSeq: a.journal.Seq()})
		return
	}
	a.drain.waiters = append(a.drain.waiters, ctx.Sender())
}

// wake tells the core input may be waiting: it starts a drain, or one
// follow-up drain after the one in progress.
func (a *sessionActor) wake() {
	a.execute(a.core.Step(session.Wake{}))
}
