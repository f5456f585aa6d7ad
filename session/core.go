package session

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/sessionrt/sessionrt/compaction"
	"github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
)

// Core is a session as a state machine, in the style of etcd's raft: its
// owner feeds what happened in through Step, takes what must happen next
// from the Ready that Step returns, does the I/O (the journal append first,
// then the effects) and feeds the results back in as further inputs.
// Nothing here touches a journal, an actor, a provider or a clock.
//
// The Session actor (actors/shell/drain.go execute) carries out every Ready:
// the drain's start and follow-up, its boundaries, the turn in flight and
// its tools, permission requests, questions and their replies, compaction
// (before a turn, after an overflow, manual) and interruption are decided
// here; the scripts in
// testdata/ and the simulator in sim/ drive the same core.
type Core struct {
	// Config is the owner's configuration, set when it builds the Core.
	Config Config
	// State is the session as its durable events left it (Apply).
	State State
	// Drain is the drain in progress, nil between drains.
	Drain *Drain
	// Carry are events decided but not yet written: the next Append carries
	// them first, in one transaction with its own events. Decisions that no
	// effect acts on before the next provider request (a promotion, a
	// context update, the turn's last results and TurnEnded) wait here so
	// that they become durable together with the TurnStarted of the
	// request that acts on them, or with the Idle that ends the drain. An
	// Append other than the TurnStarted's (a compaction's, a fresh
	// baseline's) takes all but the promotion, which is written only with
	// the turn that answers it (takeCarry). What must be written before
	// the owner's next input is Flush's (carry.go).
	Carry []messages.Event
	// WakeAgain: a wake arrived during the drain; its end starts at most
	// one follow-up drain (an interrupt suppresses it). WakeAgainOwed:
	// only owed wakes arrived (Wake.Owed): the follow-up is one too.
	WakeAgain, WakeAgainOwed bool
	// ContinueOwed: the drain ended moved with its last turn's tool
	// results unanswered (its runner may start no turn): its end starts a
	// drain that answers them at the destination (StartDrain.Continue).
	ContinueOwed bool
	// Stopping: the server is shutting down (the Stopping input): every
	// drain stops at its next safe boundary (Ready.Stop).
	Stopping bool
	// snapshot is the epoch's snapshot, decoded (epochSnapshot).
	snapshot snapshotCache
}

// Config is what the core decides with that comes from its owner's
// configuration rather than from inputs.
type Config struct {
	// Compaction is the compaction configuration: Auto, an over-budget
	// request compacts first and an overflow compacts once and retries
	// once (off, the request is sent as is and an overflow ends the
	// drain); Buffer and Keep shape every plan, manual ones included.
	Compaction compaction.Config
}

// Limits are a model's, as the owner's configuration gives them (0:
// unknown): its context window and its output limit.
type Limits struct{ Window, Output int }

// Drain is the pure part of a drain: the span that promotes input and runs
// provider turns until nothing needs continuation. It has no durable
// identity (a restart finds the session busy and resumes it).
type Drain struct {
	// Location is where the drain started: every turn is fenced against
	// it. Moved: the session moved during the drain (back to Location
	// too: its epoch is cleared all the same), which fences it as well.
	Location     string
	Moved        bool
	RunOwed      bool // an explicit run's provider attempt is still owed
	Continuation bool // the last turn's tool results need an answer
	// answering: the turn being prepared answers the last turn's tool
	// results (Continuation was true when the boundary called), until a
	// turn ends: a move before it opens still owes them their answer.
	answering   bool
	TurnsUsed   int
	TurnLimit   int // the agent's allowance; <= 0 means DefaultTurnLimit
	LastTurn    bool
	Interrupted bool
	// Compacted: a compaction completed for the current logical turn (it
	// is never compacted twice).
	Compacted bool
	// LastErr is how the last turn failed, if it did: the drain ends with
	// it unless a steer admitted meanwhile still runs.
	LastErr *Outcome
	// Manual: the drain runs a manual compaction and nothing else.
	Manual bool
	// Turn is the provider turn in flight, nil between turns.
	Turn *Turn
	// Compaction is the compaction being planned or run, nil when none.
	Compaction *Compaction
	// carrying: the carry waits for the TurnStarted of the turn being
	// prepared (carry.go); promotedAhead: the history shows a carried
	// promotion applied ahead (ApplyCarryAhead).
	carrying, promotedAhead bool
}

// CompactionCause is why a compaction runs.
type CompactionCause uint8

const (
	CompactManual     CompactionCause = iota // asked for (Drain.Manual)
	CompactBeforeTurn                        // the turn's request is over budget
	CompactOverflow                          // the provider said the context overflowed
)

// Compaction is the pure part of a compaction: planned (Ready.Compact),
// then running (its CompactionStarted written, Ready.Summarize) until
// CompactionDone.
type Compaction struct {
	Cause   CompactionCause
	ID      string // set once planned and started
	Running bool   // the summary request runs (cancelled by an interrupt)
	// start is the turn an over-budget request was built for: it opens
	// as is when there is nothing to compact; maxOutput is its request's
	// output cap (the plan's output allowance).
	start     messages.TurnStarted
	maxOutput int
}

// Turn is the pure part of a provider turn in flight: its stream, the
// tool calls it recorded and which of them settled.
type Turn struct {
	AssistantMessageID string
	Agent              string // the turn's agent: every call it makes keeps it
	Model              messages.ModelRef
	Streaming          bool
	// Finish and Usage are what the stream said (PartFinish, PartUsage);
	// ended is how it ended (StreamEnded). The turn's end (CloseTurn) is
	// decided from them.
	Finish    string
	Usage     messages.Usage
	ended     StreamEnded
	Calls     int // calls recorded (ToolCalled written)
	Unsettled int // recorded calls not settled yet
	// Recorded: durable output exists (text, reasoning or a tool call), so
	// an overflow is not retried.
	Recorded bool
	settled  map[string]bool // by call ID: recorded, and whether settled
	// asks are the turn's open permission requests (request ID to call
	// ID); stops are the calls the user rejected without feedback, whose
	// settlement stops the drain.
	asks  map[string]string
	stops map[string]bool
	// text and reasoning accumulate the stream's deltas into the final
	// values StreamEnded stores; reasonMeta is the reasoning's provider
	// metadata (replayed to the same model only).
	text, reasoning strings.Builder
	reasonMeta      map[string]string
}

// Running reports whether call is a recorded call of the turn in flight
// (assistant's) that has not settled: a settlement of any other is
// dropped (ToolSettled), so the owner need not act on it first.
func (c *Core) Running(assistant, call string) bool {
	if c.Drain == nil || c.Drain.Turn == nil || c.Drain.Turn.AssistantMessageID != assistant {
		return false
	}
	settled, ok := c.Drain.Turn.settled[call]
	return ok && !settled
}

// CallIDs are the turn's recorded calls, settled and not, each in order.
func (t *Turn) CallIDs() (settled, unsettled []string) {
	for id, done := range t.settled {
		if done {
			settled = append(settled, id)
		} else {
			unsettled = append(unsettled, id)
		}
	}
	slices.Sort(settled)
	slices.Sort(unsettled)
	return settled, unsettled
}

// OutcomeKind classifies how a drain ended.
type OutcomeKind string

const (
	Completed      OutcomeKind = ""
	Provider       OutcomeKind = "provider"        // the provider failed the turn
	Overflow       OutcomeKind = "overflow"        // the context overflowed again after one compaction
	TurnLimit      OutcomeKind = "turn_limit"      // work remained after the last allowed turn
	ContextBlocked OutcomeKind = "context_blocked" // the context could not be observed or reconciled
	Interrupted    OutcomeKind = "interrupted"
	Moved          OutcomeKind = "moved" // the session moved to another Location mid-drain
	LocationFailed OutcomeKind = "location"
	ConfigFailed   OutcomeKind = "config"
	ToolsFailed    OutcomeKind = "tools"
	CompactFailed  OutcomeKind = "compaction"
	Model          OutcomeKind = "model" // no provider serves the session's model
	Internal       OutcomeKind = "internal"
	// The owner's own ends, which it cannot write: it lost ownership or
	// is stopping (Fenced), or the journal refused a write (Journal).
	Fenced  OutcomeKind = "fenced"
	Journal OutcomeKind = "journal"
)

// Outcome is how a drain ended: Kind, and why (empty when it completed).
type Outcome struct {
	Kind OutcomeKind
	Err  string
}

// failure is the durable DrainFailed event that tells the user why the
// drain ended, or nil when it ended normally. An interrupted drain writes
// Interrupted instead; a moved one is not a failure (the destination
// continues), and a fenced or journal outcome cannot be written.
func (o *Outcome) failure() *messages.DrainFailed {
	switch o.Kind {
	case Completed, Interrupted, Moved, Fenced, Journal:
		return nil
	}
	if o.Err == "" {
		return nil
	}
	return &messages.DrainFailed{Kind: string(o.Kind), Message: o.Err}
}

// Ready is what the core needs its owner to do, in this order. The
// durability rule, as raft's Ready states it for entries and messages:
// Append is written to the journal in one transaction, and only once the
// journal took it may any effect below run. If the append fails, no effect
// runs and the owner ends the drain (or stops, when it lost ownership).
type Ready struct {
	// Append: events to write now, in one transaction, before any effect.
	// It begins with whatever the core carried (Core.Carry).
	Append []messages.Event

	// Effects, each run only after Append is durable:

	// StartDrain: start a drain (resolve its Location, then AtBoundary
	// follows via LocationResolved). Run: an explicit run, owed one
	// provider attempt even with nothing to promote.
	StartDrain *StartDrain

	// Observe asks the Location for a context observation (Init: for the
	// first baseline of an epoch; otherwise to reconcile, with the tool
	// catalog when WithCatalog). When not Init, what Core.Carry holds (the
	// promotion, the last turn's TurnEnded) waits for the TurnStarted of
	// the request this observation leads to, in one transaction; an end of
	// the drain before that writes it with Idle, less the promotion (the
	// prompt stays pending).
	Observe *Observe
	// StartTurn: the context is observed and reconciled; the provider
	// turn's request can be built (TurnBuilt follows). What Core.Carry
	// holds (the promotion, the context update, the last turn's TurnEnded)
	// is written with its TurnStarted, in one transaction.
	StartTurn *StartTurn
	// Stream: the turn's TurnStarted is in Append (with what was
	// carried); once it is durable, send the request built for it.
	Stream bool
	// Compact: a compaction is decided; the core plans it from the history
	// as it is once Append is written: load State.History if it is not,
	// and look up the model's limits and the summary's provider
	// (CompactionFacts follows; nothing is written for it yet).
	Compact *Compact
	// Summarize: the compaction's CompactionStarted is in Append; once it
	// is durable, run its summary request (CompactionDone follows).
	Summarize *Summarize
	// StartTools: the calls to start, each recorded by Append (ToolCalled)
	// first. Each settles exactly once (ToolSettled), or the next owner
	// fails it as interrupted: a recorded call is never started again.
	StartTools []messages.ToolCalled
	// Cancel: stop the turn's stream and kill its running tools (each
	// settles as interrupted), or the compaction in flight; an interrupt
	// is under way.
	Cancel bool
	// TurnOver: the turn's stream ended and every call settled; the owner
	// closes it (CloseTurn), and the core ends it as its stream said.
	TurnOver bool
	// TurnEnd: the turn in flight ended with this Ready (its TurnFailed
	// is in Append, or its TurnEnded carried to the next one): what an
	// observer of the drain records once Append is durable (the turn's
	// span and counters). Nothing acts on it.
	TurnEnd *TurnEnd
	// Settled: the calls of the turn in flight this Ready settled
	// (ToolSettled), whose settlements are in Append or carried: what an
	// observer records of their execution (spans, counters). Nothing acts
	// on it.
	Settled []Settled
	// Stop: the server is shutting down; the drain stops at this safe
	// boundary without Idle, so that the next start finds the session
	// mid-drain and resumes it.
	Stop bool
	// Outcome ends the drain, and Append holds its last events: what is
	// carried (less a promotion: the prompt stays pending), then DrainFailed
	// when it failed, and Idle; an interrupt (Kind Interrupted: nothing is
	// outstanding any more, the inbox stays) writes a TurnFailed for the
	// open turn, then Interrupted and Idle. Once Append is durable the
	// owner closes the drain (its turn, span and metrics), answers its
	// callers with Outcome, and steps DrainEnded. Busy, with Outcome: no
	// Idle, only what is carried is written: the session stays busy, as a
	// moved drain's last tool results are owed an answer that the drain
	// DrainEnded starts gives (a restart before it resumes the busy
	// session instead).
	Outcome *Outcome
	Busy    bool

	// KillTools: a previous incarnation of the session may still run the
	// calls Leftovers is about to fail: kill the session's tools at its
	// Location first (nothing is in Append), then step Leftovers again
	// with ToolsKilled. A call is recorded as interrupted only once it
	// cannot run any more.
	KillTools bool

	// Answer: hand this permission reply (in Append) to the call waiting
	// for it, once it is durable.
	Answer *messages.PermissionReplied
	// Closed: permission requests whose call settled before anyone
	// answered; their closing rejects (SettledPermissionNote) are in
	// Append or carried with the settlement. The owner drops whatever
	// still waits on them whether or not Append is taken (not an effect:
	// the call already settled, and no reply will come).
	Closed []string

	// Live: deltas to publish to the session's subscribers as they are,
	// beside anything above; never journaled (the final values are, once,
	// by TextEnded and ReasoningEnded). Each Ready's slice is its own.
	Live []messages.Delta

	// Title, beside any effect above: ask the title model for the
	// session's title (title.go); TitleGenerated follows, or nothing.
	Title *Title

	// Refused: a client's command was refused (commands.go); nothing is
	// written, and the owner answers the client with it.
	Refused *Refusal

	// Revert: what a revert command (RevertCommand) or an owed file
	// restore (FinishRestore) needs once Append is durable (revert.go).
	Revert *RevertNext
}

// TurnEnd is how a provider turn ended, for an observer: the model it
// asked, what its stream said (finish reason, usage) and, when it failed,
// how (Kind Provider, Overflow or Interrupted, and Err); Kind is empty
// when it ended normally.
type TurnEnd struct {
	AssistantMessageID string
	Model              messages.ModelRef
	Finish             string
	Usage              messages.Usage
	Kind               OutcomeKind
	Err                string
}

// Observe is a context observation to make.
type Observe struct {
	Init        bool
	WithCatalog bool
}

// StartTurn is the provider turn to start. Tools: the request carries the
// tool catalog (every turn but the last allowed one).
type StartTurn struct{ Tools bool }

// StartDrain is a drain to start. Continue: it answers the tool results
// of a turn a moved drain ended (its Drain.Continuation is set): its first
// boundary calls the provider with nothing to promote, and queued input
// waits for that continuation as it would have in the moved drain.
// Manual: it runs a manual compaction and nothing else (Drain.Manual;
// CompactCommand).
type StartDrain struct{ Run, Continue, Manual bool }

// Compact is a compaction to plan.
type Compact struct{ Cause CompactionCause }

// Summarize is a planned compaction's summary request to run: Plan holds
// the request and the recent context its CompactionEnded stores.
type Summarize struct {
	ID     string
	Manual bool
	Plan   *compaction.Plan
}

// Input is something that happened, fed to Core.Step.
type Input interface{ input() }

// AtBoundary: the drain reached a safe provider-turn boundary (its start,
// once the Location is resolved, or every tool of the last turn settled).
type AtBoundary struct{}

// Stopping: the server is shutting down. From here on every drain stops at
// its next safe boundary without Idle (Ready.Stop), so that the next start
// finds the session mid-drain and resumes it.
type Stopping struct{}

// CloseTurn: the owner closed the turn Ready.TurnOver said is over (its
// stream ended and every call settled). The core ends it as its stream
// said: TurnEnded with the finish reason and usage the stream gave (a
// content-filter finish continues nothing), or TurnFailed when the stream
// failed, when it ended without a finish reason (malformed), or when the
// provider said the context overflowed (the core compacts once and retries
// once when Config.Compaction.Auto allows, never after durable output,
// never twice in one logical turn). The questions of the turn still open
// are the core's own (State.Questions): while one is, the turn does not
// continue.
type CloseTurn struct{}

// ErrNoFinish is how a turn whose stream ended without an error and
// without a finish reason fails (its TurnFailed's message is its text):
// the provider's stream was malformed.
var ErrNoFinish = &provider.Error{Kind: provider.KindMalformed, Message: "stream ended without a finish reason"}

// TurnBuilt: the owner built the request a StartTurn asked for. Started
// is its TurnStarted (IDs, agent, model, file snapshot: the owner's);
// Limits are its model's, Estimate the request's size in tokens
// (compaction.Estimate) and MaxOutput its output cap: the core decides
// whether it is over budget (compaction.Needed).
type TurnBuilt struct {
	Started   messages.TurnStarted
	Limits    Limits
	Estimate  int
	MaxOutput int
}

// CompactionFacts: what a Compact asked for: State.History is loaded,
// Limits are the session's model's, and ID is the compaction's; Err: the
// owner could not get them (no provider serves the model for the summary).
// The core plans the compaction (compaction.NewPlan).
type CompactionFacts struct {
	ID     string
	Limits Limits
	Err    string
}

// CompactionDone: a compaction's summary request finished (Err: failed
// or cancelled).
type CompactionDone struct {
	ID, Summary, RecentContext string
	Err                        string
}

// LocationResolved: the drain's Location answered at its start (Err: it
// could not be resolved; ConfigErr: its configuration does not give the
// session's agent). TurnLimit is the agent's allowance.
type LocationResolved struct {
	Err       string
	ConfigErr string
	TurnLimit int
}

// ContextObserved: the observation a Ready.Observe asked for came back.
// The core reconciles it with the epoch (contextsources.Initialize for the
// epoch's first baseline, Reconcile otherwise): an update, a fresh baseline
// once a compaction moved the history boundary past the epoch's, blocked
// context, or nothing changed.
type ContextObserved struct {
	Init      bool
	ConfigErr string // the configuration does not give the session's agent at this boundary
	Err       string // the observation failed: the context is blocked
	TurnLimit int    // the agent's allowance, as configured at this boundary
	// Observation is what the context's sources gave.
	Observation contextsources.Observation
	// UpdateID is the MessageID a ContextUpdated gets if the observation
	// changed a source (IDs arrive in inputs).
	UpdateID string
	// Catalog: the tool catalog came with the observation (CatalogErr:
	// it could not be listed).
	Catalog    bool
	CatalogErr string
}

// CatalogLoaded: the tool catalog a StartTurn with Tools needed was
// listed on its own (Err: it could not be).
type CatalogLoaded struct{ Err string }

// PartKind says what a StreamPart carries.
type PartKind uint8

const (
	PartText          PartKind = iota + 1 // a text delta (Text)
	PartReasoning                         // a reasoning delta (Text)
	PartToolInput                         // a fragment (Text) of call CallID's input as it streams
	PartToolCall                          // a complete call (CallID, Tool, Args: its JSON input)
	PartUsage                             // the turn's token usage (Usage)
	PartFinish                            // why the model stopped (Finish): the stream's last part
	PartReasoningMeta                     // reasoning metadata (Key, Text: its value)
)

// StreamPart: the turn's stream delivered a part, decoded by the owner
// from its provider's. The core publishes deltas (Ready.Live),
// accumulates the turn's final text and reasoning, and records a complete
// call (Ready.StartTools); a part after an interrupt, after the finish or
// of no turn streaming is dropped.
type StreamPart struct {
	Kind         PartKind
	Text         string
	CallID, Tool string
	Args         []byte
	Key          string
	Usage        messages.Usage
	Finish       string
}

// StreamEnded: the turn's stream is over (finished, failed or cancelled):
// what it streamed is the turn's final text and reasoning. Err is the
// stream's error as the owner met it ("": none) and Kind its class
// (provider.KindOf; KindUnknown for an error that is not the provider's):
// how the turn ends is decided from them once it closes (CloseTurn).
type StreamEnded struct {
	Err  string
	Kind provider.Kind
}

// ToolSettled: a recorded call's one settlement (Result is its
// ToolSucceeded or ToolFailed). StopsDrain: the user rejected it without
// feedback, which stops the drain as an interrupt does (with feedback the
// model sees the error and the drain goes on). Kind is how the call
// failed as its runner classified it ("" when it did not): it decides
// nothing, and is handed to observers with the settlement (Ready.Settled).
type ToolSettled struct {
	Result     messages.Event
	StopsDrain bool
	Kind       string
}

// Settled is a call a Ready settled, for an observer (its span and
// counters): Kind and Err are how it failed ("" when it did not).
type Settled struct {
	CallID    string
	Kind, Err string
}

// QuestionAsked: the owner asks the user instead of running a question
// call of the turn in flight (a Ready.StartTools call of QuestionTool,
// handed back as Call). RequestID is the owner's new request ID; Denied
// is the owner's permission verdict (the agent's rules deny
// QuestionTool). The core decides what is journaled (stepQuestionAsked).
type QuestionAsked struct {
	RequestID string
	Call      messages.ToolCalled
	Denied    bool
}

// Interrupt: a client asked to stop the drain. Waiting: the owner waits
// for an asynchronous result (the Location, an observation, a catalog, a
// compaction), whose arrival finishes the interrupt.
type Interrupt struct{ Waiting bool }

// Wake: admitted input may be waiting (a prompt admitted with resume, a
// client's wake, recovery). A wake never calls the provider by itself.
// Owed: the wake is recovery's (start-up, a cluster takeover, the
// journal's return), not a client's: only input a drain is owed starts
// one, not input held back (PromptAdmitted.Held, or left pending by an
// interrupt): that waits for the client's next fresh wake, prompt or run.
type Wake struct{ Owed bool }

// Leftovers: the owner activated the session, before anything else can
// call a provider: whatever a dead owner (another process, or this
// actor's previous incarnation) left open is closed durably. Every call
// still pending or running (State.Calls) fails with InterruptedToolError,
// unless it asked a question still awaiting its answer; an unanswered
// permission request of such a call is rejected first
// (LeftoverPermissionNote); and when a drain or a call was left open,
// every unfinished turn (State.Turns) fails as interrupted, with Why. No
// tool is ever run again. ToolsKilled: the owner killed what a previous
// incarnation may still run (Ready.KillTools asked for it): only then are
// the calls failed.
type Leftovers struct {
	Why         string
	ToolsKilled bool
}

// Recover: the owner found the session as a dead owner left it (at its
// activation, once the dead owner's tools and turn were failed durably:
// Leftovers).
// A session mid-drain (busy) is resumed once with a note for the model
// (NoteID, Note: a ContextUpdated when an epoch exists), or, with
// Interrupt (the restart policy), marked interrupted: its pending input
// is then held like any an interrupt leaves. A session not mid-drain is
// woken as by an owed wake: admitted input no drain acted on (its owner
// died between the receipt and the drain's start) is owed its drain.
type Recover struct {
	Interrupt    bool
	NoteID, Note string
}

// Move: a client moves the session to another Location (To, canonical).
// The epoch is cleared with the move in one transaction: a drain running
// at the old Location starts no new turn (its boundary is fenced), and the
// destination builds a fresh baseline before any prompt promotes.
type Move struct{ To string }

// Run: a client asked for a run (it waits for the drain in progress, or
// one started for it, which owes it a provider attempt).
type Run struct{}

// DrainEnded: the owner ended the drain (wrote Idle, answered its
// callers) after an Outcome.
type DrainEnded struct{}

// Abort: the owner cannot carry the drain on (no provider serves the
// model, the history or the open questions could not be read, an append
// the journal refused for what it held): the drain ends with Outcome,
// written as any end is (Ready.Outcome).
type Abort struct{ Outcome Outcome }

// PermissionReplied: a client answered a permission request. The core
// takes the reply only for an open request of the turn in flight, once
// (Append journals it, Ready.Answer hands it to the waiting call);
// otherwise Ready is empty and the owner refuses it. What it means is the
// call's: once runs it, always runs it and saves the approval (the
// permission layer's), reject fails it, and a reject without feedback
// stops the drain when the call settles (with feedback the model sees
// the error and the drain goes on).
type PermissionReplied struct{ Replied messages.PermissionReplied }

// PermissionAsked: a tool call asks the user for permission. The core
// takes the request (Append journals it; the owner holds the tool until
// the reply) only from a call of the turn in flight that is still running;
// otherwise Ready is empty and the owner refuses the ask.
type PermissionAsked struct{ Asked messages.PermissionAsked }

func (AtBoundary) input()        {}
func (Stopping) input()          {}
func (PermissionAsked) input()   {}
func (PermissionReplied) input() {}
func (Wake) input()              {}
func (Recover) input()           {}
func (Leftovers) input()         {}
func (Move) input()              {}
func (Run) input()               {}
func (DrainEnded) input()        {}
func (Abort) input()             {}
func (TurnBuilt) input()         {}
func (CompactionFacts) input()   {}
func (CompactionDone) input()    {}
func (StreamPart) input()        {}
func (StreamEnded) input()       {}
func (ToolSettled) input()       {}
func (QuestionAsked) input()     {}
func (QuestionReply) input()     {}
func (Interrupt) input()         {}
func (CloseTurn) input()         {}
func (LocationResolved) input()  {}
func (ContextObserved) input()   {}
func (CatalogLoaded) input()     {}

// Step takes one input and returns what must happen next.
func (c *Core) Step(in Input) Ready {
	rd := c.step(in)
	if rd.StartDrain != nil {
		// A drain starts over a revert: it is finalized first (its event
		// is durable before the drain begins).
		rd.Append = append(rd.Append, c.finalizeRevert()...)
	}
	if rd.Outcome != nil || rd.Stop {
		// The drain ends (or stops) before the turn a promotion was
		// carried for: the prompt stays pending (unpromoted), so that the
		// next drain delivers it, after a fresh baseline when the session
		// moved (scenario 41), and a later wake still finds it.
		c.Carry = withoutPromotion(c.Carry)
		rd.Append = withoutPromotion(rd.Append)
	}
	if rd.Outcome != nil {
		if t := c.Drain.Turn; t != nil && rd.Outcome.Kind == Interrupted && rd.TurnEnd == nil {
			rd.TurnEnd = t.end(Interrupted, "interrupted") // ending writes its TurnFailed
		}
		rd.Append = append(rd.Append, c.ending(rd)...)
	}
	c.track(rd)
	return rd
}

// end is how t ended (kind "": normally).
func (t *Turn) end(kind OutcomeKind, why string) *TurnEnd {
	return &TurnEnd{AssistantMessageID: t.AssistantMessageID, Model: t.Model, Finish: t.Finish, Usage: t.Usage, Kind: kind, Err: why}
}

// ending is what an Outcome writes after the Ready's own events: what is
// carried, then how the drain ended (ready's Outcome doc).
func (c *Core) ending(rd Ready) []messages.Event {
	evs := c.takeCarryForTurn()
	switch out := rd.Outcome; {
	case out.Kind == Interrupted:
		if t := c.Drain.Turn; t != nil {
			evs = append(evs, messages.TurnFailed{AssistantMessageID: t.AssistantMessageID, ErrorKind: string(Interrupted), Message: "interrupted"})
		}
		evs = append(evs, messages.Interrupted{Reason: "interrupted by client"}, messages.Idle{})
	case rd.Busy:
	default:
		if f := out.failure(); f != nil {
			evs = append(evs, *f)
		}
		evs = append(evs, messages.Idle{})
	}
	return evs
}

// interrupted finishes an interrupt: nothing is outstanding any more.
func (c *Core) interrupted() Ready {
	return Ready{Outcome: &Outcome{Kind: Interrupted, Err: "interrupted"}}
}

func (c *Core) step(in Input) Ready {
	switch in := in.(type) {
	case Wake:
		return c.stepWake(in.Owed)
	case Recover:
		return c.stepRecover(in)
	case Leftovers:
		return c.stepLeftovers(in)
	case Move:
		if !c.State.Exists || in.To == c.State.Row.Location {
			return Ready{}
		}
		if c.Drain != nil {
			c.Drain.Moved = true
			// The drain ends at its next step, leaving what it had not
			// promoted pending (scenario 41): its end owes the destination
			// a drain for it, as a restart would, so the prompt is answered
			// without the client waking the session again.
			c.WakeAgainOwed = true
		}
		return Ready{Append: append(c.carryAcrossMove(), messages.Moved{From: c.State.Row.Location, To: in.To}, messages.ContextEpochCleared{Reason: "moved"})}
	case Run:
		if !c.State.Exists || c.Drain != nil {
			return Ready{} // the drain in progress serves the run
		}
		return Ready{StartDrain: &StartDrain{Run: true}}
	case Abort:
		if c.Drain == nil {
			return Ready{}
		}
		out := in.Outcome
		return Ready{Outcome: &out}
	case DrainEnded:
		if c.ContinueOwed {
			// The destination answers what the moved drain left; it
			// serves the wakes that arrived meanwhile too.
			c.ContinueOwed, c.WakeAgain, c.WakeAgainOwed = false, false, false
			if c.State.Exists {
				return Ready{StartDrain: &StartDrain{Continue: true}}
			}
			return Ready{}
		}
		again, owed := c.WakeAgain, c.WakeAgainOwed && !c.WakeAgain
		c.WakeAgain, c.WakeAgainOwed = false, false
		if again || owed {
			return c.stepWake(owed)
		}
		return Ready{}
	case Stopping:
		c.Stopping = true
		return Ready{}
	case AtBoundary:
		return c.stepBoundary(in)
	case CloseTurn:
		return c.stepCloseTurn(in)
	case LocationResolved:
		return c.stepLocationResolved(in)
	case ContextObserved:
		return c.stepContextObserved(in)
	case CatalogLoaded:
		return c.stepCatalogLoaded(in)
	case TurnBuilt:
		return c.stepTurnBuilt(in)
	case CompactionFacts:
		return c.stepCompactionFacts(in)
	case CompactionDone:
		return c.stepCompactionDone(in)
	case StreamPart:
		return c.stepPart(&in)
	case StreamEnded:
		return c.stepStreamEnded(in)
	case ToolSettled:
		return c.stepToolSettled(in)
	case QuestionAsked:
		return c.stepQuestionAsked(in)
	case QuestionReply:
		return c.stepQuestionReply(in)
	case Interrupt:
		return c.stepInterrupt(in)
	case TitleGenerated:
		return c.stepTitleGenerated(in)
	case PermissionAsked:
		d := c.Drain
		if d == nil || d.Turn == nil || d.Turn.AssistantMessageID != in.Asked.AssistantMessageID {
			return Ready{}
		}
		t := d.Turn
		if settled, ok := t.settled[in.Asked.CallID]; !ok || settled {
			return Ready{}
		}
		if _, dup := t.asks[in.Asked.RequestID]; dup || in.Asked.RequestID == "" {
			return Ready{}
		}
		if t.asks == nil {
			t.asks = map[string]string{}
		}
		t.asks[in.Asked.RequestID] = in.Asked.CallID
		return Ready{Append: append(c.takeCarry(), in.Asked)}
	case PermissionReplied:
		return c.stepPermissionReplied(in.Replied)
	case Rename:
		return c.stepRename(in)
	case SwitchAgent:
		return c.stepSwitchAgent(in)
	case SwitchModel:
		return c.stepSwitchModel(in)
	case Delete:
		return c.stepDelete()
	case CompactCommand:
		return c.stepCompact()
	case Reply:
		return c.stepReply(in)
	case RevertCommand:
		return c.stepRevert(in)
	case RestoreDone:
		return c.stepRestoreDone(in)
	case FinishRestore:
		return c.stepFinishRestore()
	}
	return Ready{}
}

// stepWake starts a drain when input is pending (owed: input a drain is
// owed, not held); during a drain, wakes coalesce into at most one
// follow-up drain.
func (c *Core) stepWake(owed bool) Ready {
	switch {
	case !c.State.Exists:
		return Ready{}
	case c.Drain != nil:
		if owed {
			c.WakeAgainOwed = true
		} else {
			c.WakeAgain = true
		}
		return Ready{}
	case !c.pendingFor(owed):
		return Ready{} // nothing can be promoted: a wake never calls the provider
	}
	return Ready{StartDrain: &StartDrain{}}
}

// pendingFor reports whether input is pending (owed: input a drain is
// owed, not held back).
func (c *Core) pendingFor(owed bool) bool {
	if !owed {
		return len(c.State.Pending) > 0
	}
	for _, p := range c.State.Pending {
		if !p.Held {
			return true
		}
	}
	return false
}

// stepLeftovers closes what a dead owner left open (Leftovers), in the
// journal's order: the requests, the calls, the turns.
func (c *Core) stepLeftovers(in Leftovers) Ready {
	s := &c.State
	if !s.Exists || c.Drain != nil {
		return Ready{}
	}
	var calls []CallKey
	for k := range s.Calls {
		// A question's call stays open: its answer is still awaited.
		if !s.QuestionCall(k.AssistantMessageID, k.CallID) {
			calls = append(calls, k)
		}
	}
	if len(calls) == 0 && s.Row.Status != StatusBusy {
		return Ready{} // a turn is only left unfinished by an owner that died mid-drain
	}
	if len(calls) == 0 && len(s.Turns) == 0 {
		return Ready{}
	}
	if len(calls) > 0 && !in.ToolsKilled {
		return Ready{KillTools: true}
	}
	slices.SortFunc(calls, func(a, b CallKey) int {
		if a.AssistantMessageID != b.AssistantMessageID {
			return strings.Compare(a.AssistantMessageID, b.AssistantMessageID)
		}
		return strings.Compare(a.CallID, b.CallID)
	})
	dying := map[CallKey]bool{}
	for _, k := range calls {
		dying[k] = true
	}
	var asks []string
	for id, k := range s.Asks {
		if dying[k] {
			asks = append(asks, id)
		}
	}
	slices.Sort(asks)
	evs := c.takeCarry()
	for _, id := range asks {
		evs = append(evs, messages.PermissionReplied{RequestID: id, Reply: messages.ReplyReject, Feedback: LeftoverPermissionNote})
	}
	for _, k := range calls {
		evs = append(evs, messages.ToolFailed{AssistantMessageID: k.AssistantMessageID, CallID: k.CallID, Error: InterruptedToolError})
	}
	for _, id := range s.Turns {
		evs = append(evs, messages.TurnFailed{AssistantMessageID: id, ErrorKind: string(Interrupted), Message: in.Why})
	}
	return Ready{Append: evs}
}

// stepRecover applies the restart policy once to what a dead owner left.
func (c *Core) stepRecover(in Recover) Ready {
	switch {
	case !c.State.Exists || c.Drain != nil:
		return Ready{}
	case c.State.Row.Status != StatusBusy:
		return c.stepWake(true)
	case in.Interrupt:
		// The pending input is held from here on (State.Apply): only a
		// fresh wake runs it.
		return Ready{Append: append(c.takeCarry(), messages.Interrupted{Reason: "server restarted"}, messages.Idle{})}
	}
	rd := Ready{Append: c.takeCarry(), StartDrain: &StartDrain{Run: true}}
	if c.State.Epoch != nil {
		// Tell the model, chronologically, without touching the baseline.
		rd.Append = append(rd.Append, messages.ContextUpdated{MessageID: in.NoteID, Text: in.Note, Snapshot: c.State.Epoch.Snapshot})
	}
	if len(c.State.Questions) > 0 && len(c.State.Pending) == 0 {
		// The lost turn asked the user: its answer resumes the model
		// (which reads the note then), not a run without it, which
		// would have to dismiss the question (decideBoundary).
		rd.StartDrain = nil
		rd.Append = append(rd.Append, messages.Idle{})
	}
	return rd
}

// stepPart takes one part of the turn's stream. What the user sees live
// and what the turn stores are the same parts: a part dropped here (after
// an interrupt or the finish) is neither published nor stored.
func (c *Core) stepPart(in *StreamPart) Ready {
	d := c.Drain
	if d == nil || d.Turn == nil || !d.Turn.Streaming || d.Interrupted || d.Turn.Finish != "" {
		return Ready{}
	}
	t := d.Turn
	switch in.Kind {
	case PartText:
		t.text.WriteString(in.Text)
		return c.live(messages.TextDelta, "", in.Text)
	case PartReasoning:
		t.reasoning.WriteString(in.Text)
		return c.live(messages.ReasoningDelta, "", in.Text)
	case PartToolInput:
		return c.live(messages.ToolInputDelta, in.CallID, in.Text)
	case PartToolCall:
		return c.stepToolCall(in)
	case PartUsage:
		t.Usage = in.Usage
	case PartFinish:
		t.Finish = in.Finish
	case PartReasoningMeta:
		if t.reasonMeta == nil {
			t.reasonMeta = map[string]string{}
		}
		t.reasonMeta[in.Key] = in.Text
	}
	return Ready{}
}

// live is a Ready that publishes one delta of the turn in flight (an
// empty fragment tells a renderer nothing).
func (c *Core) live(kind messages.DeltaKind, callID, text string) Ready {
	if text == "" {
		return Ready{}
	}
	return Ready{Live: []messages.Delta{{SessionID: c.State.Row.ID, AssistantMessageID: c.Drain.Turn.AssistantMessageID, CallID: callID, Kind: kind, Text: text}}}
}

// stepToolCall records a complete call durably, then starts it at once:
// nothing new starts once an interrupt is under way, and a provider
// repeating a call ID within a turn keeps its first call. The call keeps
// the agent of the turn that made it.
func (c *Core) stepToolCall(in *StreamPart) Ready {
	d := c.Drain
	t := d.Turn
	if in.CallID == "" {
		return Ready{}
	}
	if _, dup := t.settled[in.CallID]; dup {
		return Ready{}
	}
	if t.settled == nil {
		t.settled = map[string]bool{}
	}
	t.settled[in.CallID] = false
	t.Calls++
	t.Unsettled++
	t.Recorded = true
	ev := messages.ToolCalled{AssistantMessageID: t.AssistantMessageID, CallID: in.CallID, Tool: in.Tool, Input: in.Args, Agent: t.Agent}
	return Ready{Append: append(c.takeCarry(), ev), StartTools: []messages.ToolCalled{ev}}
}

// stepStreamEnded stores the final text and reasoning once, as soon as the
// stream is over, whatever the tools still do: with the turn's end when
// nothing is left to settle, else at once.
func (c *Core) stepStreamEnded(in StreamEnded) Ready {
	d := c.Drain
	t := d.Turn
	if t == nil || !t.Streaming {
		return Ready{}
	}
	t.Streaming, t.ended = false, in
	if t.reasoning.Len() > 0 {
		var meta []byte
		if len(t.reasonMeta) > 0 {
			meta, _ = json.Marshal(t.reasonMeta) // a map of strings always encodes
		}
		c.Carry = append(c.Carry, messages.ReasoningEnded{AssistantMessageID: t.AssistantMessageID, Text: t.reasoning.String(), ProviderMetadata: meta})
		t.Recorded = true
	}
	if t.text.Len() > 0 {
		c.Carry = append(c.Carry, messages.TextEnded{AssistantMessageID: t.AssistantMessageID, Text: t.text.String()})
		t.Recorded = true
	}
	rd := Ready{Cancel: d.Interrupted && t.Unsettled > 0}
	if t.Unsettled == 0 {
		rd.TurnOver = true
		return rd
	}
	rd.Append = c.takeCarry()
	return rd
}

// stepToolSettled takes a call's one settlement (a second, or one for
// another turn, is dropped: that turn already failed durably). The last
// settlement of a turn is written with its end (and whatever the boundary
// decides next); any other at once.
func (c *Core) stepToolSettled(in ToolSettled) Ready {
	d := c.Drain
	var assistant, call, why string
	switch r := in.Result.(type) {
	case messages.ToolSucceeded:
		assistant, call = r.AssistantMessageID, r.CallID
	case messages.ToolFailed:
		assistant, call, why = r.AssistantMessageID, r.CallID, r.Error
	default:
		return Ready{}
	}
	if d == nil || d.Turn == nil || d.Turn.AssistantMessageID != assistant {
		return Ready{}
	}
	t := d.Turn
	if settled, ok := t.settled[call]; !ok || settled {
		return Ready{}
	}
	t.settled[call] = true
	t.Unsettled--
	// A request of the call nobody answered can never be acted on now:
	// it is closed in the settlement's transaction, so that no client is
	// shown it and a late reply is refused as not pending.
	closed := t.closeAsks(call)
	for _, id := range closed {
		c.Carry = append(c.Carry, messages.PermissionReplied{RequestID: id, Reply: messages.ReplyReject, Feedback: SettledPermissionNote})
	}
	c.Carry = append(c.Carry, in.Result)
	var rd Ready
	if in.StopsDrain || t.stops[call] {
		rd = c.stepInterrupt(Interrupt{})
	}
	rd.Closed = closed
	rd.Settled = append(rd.Settled, Settled{CallID: call, Kind: in.Kind, Err: why})
	if !t.Streaming && t.Unsettled == 0 {
		rd.TurnOver = true
		return rd
	}
	rd.Append = c.takeCarry()
	return rd
}

// closeAsks drops the open requests of call, returning their IDs in order.
func (t *Turn) closeAsks(call string) []string {
	var ids []string
	for id, c := range t.asks {
		if c == call {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		delete(t.asks, id)
	}
	return ids
}

// stepPermissionReplied takes a reply to an open request of the turn in
// flight, once.
func (c *Core) stepPermissionReplied(r messages.PermissionReplied) Ready {
	d := c.Drain
	if d == nil || d.Turn == nil {
		return Ready{}
	}
	t := d.Turn
	call, open := t.asks[r.RequestID]
	if !open {
		return Ready{}
	}
	delete(t.asks, r.RequestID)
	if r.Reply == messages.ReplyReject && r.Feedback == "" {
		if t.stops == nil {
			t.stops = map[string]bool{}
		}
		t.stops[call] = true
	}
	return Ready{Append: append(c.takeCarry(), r), Answer: &r}
}

// stepInterrupt begins an interrupt: a turn in flight (its stream and
// tools) or a running compaction is cancelled, and its end finishes the
// interrupt (a cancelled compaction writes no CompactionEnded); an outstanding observation finishes it when it comes back;
// otherwise it finishes now. The inbox stays.
func (c *Core) stepInterrupt(in Interrupt) Ready {
	d := c.Drain
	if d == nil || d.Interrupted {
		return Ready{}
	}
	d.Interrupted = true
	c.WakeAgain, c.WakeAgainOwed = false, false // reruns queued before the interruption are suppressed
	switch {
	case d.Turn != nil, in.Waiting, d.Compaction != nil && d.Compaction.Running:
		return Ready{Cancel: true}
	}
	return c.interrupted()
}

// stepLocationResolved starts the drain's work once its Location answered:
// the first boundary, or the manual compaction it was started for.
func (c *Core) stepLocationResolved(in LocationResolved) Ready {
	d := c.Drain
	if in.Err != "" {
		return Ready{Outcome: &Outcome{Kind: LocationFailed, Err: in.Err}}
	}
	if in.ConfigErr != "" {
		return Ready{Outcome: &Outcome{Kind: ConfigFailed, Err: in.ConfigErr}}
	}
	d.TurnLimit = in.TurnLimit
	if d.Manual {
		if d.Interrupted {
			return c.interrupted()
		}
		d.Compaction = &Compaction{Cause: CompactManual}
		return Ready{Compact: &Compact{Cause: CompactManual}}
	}
	return c.stepBoundary(AtBoundary{})
}

// stepContextObserved takes an observation: a first baseline is written
// at once and the boundary decides again (now with an epoch); otherwise
// the context update waits for the turn's TurnStarted (a fresh baseline
// after a compaction is written at once) and the turn starts. Blocked
// context, a configuration that lost the agent or a move end the drain;
// the inbox stays.
func (c *Core) stepContextObserved(in ContextObserved) Ready {
	d := c.Drain
	if d.Interrupted {
		return c.interrupted()
	}
	if in.ConfigErr != "" {
		return Ready{Outcome: &Outcome{Kind: ConfigFailed, Err: in.ConfigErr}}
	}
	if in.Err != "" {
		return Ready{Outcome: &Outcome{Kind: ContextBlocked, Err: "observe context: " + in.Err}}
	}
	d.TurnLimit = in.TurnLimit
	if c.movedAway() {
		return c.moved()
	}
	if in.Init {
		ev, out := c.initialize(in.Observation)
		if out != nil {
			return Ready{Outcome: out}
		}
		// The boundary decides again as it will be once the baseline is
		// written (the Append below writes it first).
		first := append(c.takeCarry(), ev)
		rd := c.decideBoundary(AtBoundary{}, true)
		rd.Append = append(first, rd.Append...)
		return rd
	}
	var rd Ready
	if c.State.Epoch != nil {
		ev, out := c.reconcile(in)
		if out != nil {
			return Ready{Outcome: out}
		}
		switch ev := ev.(type) {
		case messages.ContextUpdated:
			// Written with the turn's TurnStarted, after the promotion.
			c.Carry = append(c.Carry, ev)
		case messages.ContextEpochReplaced:
			// Written at once (a carried promotion still waits for the
			// turn's TurnStarted).
			rd.Append = append(c.takeCarry(), ev)
		}
	}
	if in.Catalog && in.CatalogErr != "" {
		rd.Outcome = &Outcome{Kind: ToolsFailed, Err: "tool catalog: " + in.CatalogErr}
		return rd
	}
	rd.StartTurn = &StartTurn{Tools: !d.LastTurn}
	return rd
}

// overflowed ends the drain with a terminal overflow: the turn is spent.
func (c *Core) overflowed(why string) Ready {
	d := c.Drain
	d.TurnsUsed++
	d.Continuation, d.answering = false, false
	d.Compaction = nil
	d.LastErr = &Outcome{Kind: Overflow, Err: why}
	return Ready{Outcome: d.LastErr}
}

// stepTurnBuilt opens the turn, or compacts first when its request is
// over budget (once per logical turn: a compacted turn is sent as is).
func (c *Core) stepTurnBuilt(in TurnBuilt) Ready {
	d := c.Drain
	if d.Interrupted {
		return c.interrupted()
	}
	allowance := compaction.OutputAllowance(in.MaxOutput, in.Limits.Output)
	if !d.Compacted && compaction.Needed(in.Estimate, in.Limits.Window, allowance, c.Config.Compaction) {
		d.Compaction = &Compaction{Cause: CompactBeforeTurn, start: in.Started, maxOutput: in.MaxOutput}
		return Ready{Compact: &Compact{Cause: CompactBeforeTurn}}
	}
	return c.openTurn(in.Started)
}

// openTurn writes the turn's TurnStarted after what was carried (the
// promotion, the context update, the last turn's end), and streams it; the
// turn that promotes an untitled session's first prompt also asks for its
// title (titleFor).
func (c *Core) openTurn(ev messages.TurnStarted) Ready {
	if c.movedAway() {
		// Moved while the request was built: the old Location's runner
		// starts no turn (every turn is fenced against it).
		return c.moved()
	}
	c.Drain.Turn = &Turn{AssistantMessageID: ev.AssistantMessageID, Agent: ev.Agent, Model: ev.Model, Streaming: true}
	title := c.titleFor()
	return Ready{Append: append(c.takeCarryForTurn(), ev), Stream: true, Title: title}
}

// stepCompactionFacts plans the compaction and starts it (its
// CompactionStarted is written first, with what was carried but the
// promotion: the compaction summarizes the history as written, and the
// prompt follows the summary, promoted with its turn's TurnStarted). An
// over-budget turn with nothing to compact is sent as is; any other
// planning failure ends the drain (an overflow's as a terminal overflow).
func (c *Core) stepCompactionFacts(in CompactionFacts) Ready {
	d := c.Drain
	cp := d.Compaction
	if cp == nil || cp.ID != "" {
		return Ready{}
	}
	if d.Interrupted {
		d.Compaction = nil
		return c.interrupted()
	}
	why := in.Err
	var plan *compaction.Plan
	if why == "" {
		var err error
		plan, err = c.plan(cp, in.Limits)
		if errors.Is(err, compaction.ErrNothingToCompact) && cp.Cause == CompactBeforeTurn {
			d.Compaction = nil
			return c.openTurn(cp.start)
		}
		if err != nil {
			why = err.Error()
		}
	}
	if why != "" || in.ID == "" {
		if why == "" {
			why = "no compaction planned"
		}
		if cp.Cause == CompactOverflow {
			return c.overflowed(compaction.ErrOverflow.Error() + "\n" + why)
		}
		d.Compaction = nil
		return Ready{Outcome: &Outcome{Kind: CompactFailed, Err: "compaction: " + why}}
	}
	cp.ID, cp.Running, cp.start = in.ID, true, messages.TurnStarted{}
	return Ready{Append: append(c.takeCarry(), messages.CompactionStarted{CompactionID: in.ID}), Summarize: &Summarize{ID: in.ID, Manual: cp.Cause == CompactManual, Plan: plan}}
}

// plan plans compaction cp from the history as its CompactionStarted
// leaves it (the carried promotion waits for the turn, so the prompts it
// shows are left out), for the turn's model before a turn, the session's
// otherwise, within the model's limits. A manual compaction is asked for
// explicitly: automatic compaction being off does not stop it.
func (c *Core) plan(cp *Compaction, lim Limits) (*compaction.Plan, error) {
	if !c.State.History.Loaded {
		return nil, errors.New("the history is not loaded")
	}
	model, maxOutput := c.State.Row.Model, 0
	if cp.Cause == CompactBeforeTurn {
		model, maxOutput = cp.start.Model, cp.maxOutput
	}
	cfg := c.Config.Compaction
	if cp.Cause == CompactManual {
		cfg.Auto = true
	}
	return compaction.NewPlan(compaction.Input{
		History:         c.historyAsWritten(),
		Model:           provider.ModelRef{Provider: model.Provider, Model: model.ID},
		Window:          lim.Window,
		OutputAllowance: compaction.OutputAllowance(maxOutput, lim.Output),
		Config:          cfg,
	})
}

// historyAsWritten is State.History less the prompts of the carried
// promotion that an owner applied ahead (State.ApplyAhead) to build the
// turn's request: what an append other than the turn's TurnStarted makes
// durable. Only the seqs of what follows them are one ahead, which no
// plan reads.
func (c *Core) historyAsWritten() []messages.Message {
	msgs := c.State.History.Msgs
	var ids []string
	for _, ev := range c.Carry {
		if p, ok := ev.(messages.PromptPromoted); ok {
			ids = append(ids, p.MessageIDs...)
		}
	}
	if len(ids) == 0 {
		return msgs
	}
	out := make([]messages.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == messages.RoleUser && m.Seq > c.State.Row.LastSeq && slices.Contains(ids, m.ID) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// stepCompactionDone stores a completed compaction (the only event that
// moves the history boundary) or nothing at all: a failed or interrupted
// one leaves the previous boundary. A manual compaction ends its drain;
// otherwise the turn is observed and built again (the reconcile renders a
// fresh baseline past the new boundary), as the same logical turn.
func (c *Core) stepCompactionDone(in CompactionDone) Ready {
	d := c.Drain
	cp := d.Compaction
	if cp == nil || !cp.Running || cp.ID != in.ID {
		return Ready{}
	}
	d.Compaction = nil
	if d.Interrupted {
		return c.interrupted()
	}
	if in.Err != "" {
		return Ready{Outcome: &Outcome{Kind: CompactFailed, Err: "compaction failed: " + in.Err}}
	}
	ended := messages.CompactionEnded{CompactionID: in.ID, Summary: in.Summary, RecentContext: in.RecentContext}
	d.Compacted = true
	if d.Manual {
		// Written with the drain's Idle.
		c.Carry = append(c.Carry, ended)
		return Ready{Outcome: &Outcome{}}
	}
	return Ready{Append: append(c.takeCarry(), ended), Observe: &Observe{WithCatalog: !d.LastTurn}}
}

// stepCatalogLoaded starts the turn once its tool catalog is listed.
func (c *Core) stepCatalogLoaded(in CatalogLoaded) Ready {
	if c.Drain.Interrupted {
		return c.interrupted()
	}
	if in.Err != "" {
		return Ready{Outcome: &Outcome{Kind: ToolsFailed, Err: "tool catalog: " + in.Err}}
	}
	return Ready{StartTurn: &StartTurn{Tools: true}}
}

// stepCloseTurn ends the turn Ready.TurnOver said is over, as its stream
// said (CloseTurn).
func (c *Core) stepCloseTurn(CloseTurn) Ready {
	d := c.Drain
	if d == nil || d.Turn == nil {
		return Ready{}
	}
	if d.Interrupted {
		return c.interrupted() // the open turn fails as interrupted
	}
	switch t := d.Turn; {
	case t.ended.Err != "" && t.ended.Kind == provider.KindContextOverflow:
		return c.turnFailed(Overflow, t.ended.Err)
	case t.ended.Err != "":
		return c.turnFailed(Provider, t.ended.Err)
	case t.Finish == "":
		return c.turnFailed(Provider, ErrNoFinish.Error())
	}
	return c.turnSucceeded()
}

// turnSucceeded ends a turn: its TurnEnded is carried to whatever the
// boundary decides next (Idle, a promotion, or alone before the next
// observation), and its tool results need an answer unless the content
// filter stopped it or a question is open (its answer starts the next
// drain).
func (c *Core) turnSucceeded() Ready {
	d, t := c.Drain, c.Drain.Turn
	d.TurnsUsed++
	asking := c.State.openQuestionsOf(t.AssistantMessageID)
	d.Turn, d.answering = nil, false
	c.Carry = append(c.Carry, messages.TurnEnded{AssistantMessageID: t.AssistantMessageID, FinishReason: t.Finish, Usage: t.Usage})
	d.LastErr = nil
	d.Compacted = false
	contentFilter := t.Finish == string(provider.FinishContentFilter)
	d.Continuation = t.Calls > 0 && !contentFilter && asking == 0
	rd := c.stepBoundary(AtBoundary{})
	rd.TurnEnd = t.end("", "")
	return rd
}

// turnFailed records the failure at once; the drain then ends with it
// unless a steer admitted meanwhile still runs (the boundary decides). An
// overflow (kind Overflow) compacts once and retries once instead, when
// the configuration allows it.
func (c *Core) turnFailed(kind OutcomeKind, why string) Ready {
	d, t := c.Drain, c.Drain.Turn
	recorded := t.Recorded
	d.Turn = nil
	fail := append(c.takeCarry(), messages.TurnFailed{AssistantMessageID: t.AssistantMessageID, ErrorKind: string(kind), Message: why})
	if kind == Overflow {
		// Exactly one compaction and one rebuilt attempt (the same
		// logical turn), never after durable output, never a loop.
		dec := compaction.OnOverflow(compaction.OverflowState{DurableOutput: recorded, Compacted: d.Compacted}, c.Config.Compaction)
		if dec.Action == compaction.Fail {
			rd := c.overflowed(dec.Err.Error())
			rd.Append, rd.TurnEnd = fail, t.end(kind, why)
			return rd
		}
		d.Compaction = &Compaction{Cause: CompactOverflow}
		return Ready{Append: fail, Compact: &Compact{Cause: CompactOverflow}, TurnEnd: t.end(kind, why)}
	}
	d.TurnsUsed++
	d.LastErr = &Outcome{Kind: kind, Err: why}
	d.Continuation, d.answering = false, false
	rd := c.stepBoundary(AtBoundary{})
	rd.Append, rd.TurnEnd = append(fail, rd.Append...), t.end(kind, why)
	return rd
}

// stepBoundary is the boundary rule around Decide: an interrupt or a move
// ends the drain, a stopping server stops it, otherwise Decide says whether
// to promote and call. A call with no Context Epoch observes for the first
// baseline before any input becomes model-visible (blocked context leaves
// the input pending); otherwise the promotion is carried to the turn's
// TurnStarted, and the context is observed for it.
func (c *Core) stepBoundary(in AtBoundary) Ready {
	return c.decideBoundary(in, c.State.Epoch != nil)
}

// decideBoundary is stepBoundary with whether an epoch exists (or is
// about to be written) given.
func (c *Core) decideBoundary(in AtBoundary, haveEpoch bool) Ready {
	d := c.Drain
	if d.Interrupted {
		return c.interrupted()
	}
	if c.movedAway() {
		// This runner's Location may start no new turn and may not
		// recreate the epoch. The destination initializes on its next run.
		return c.moved()
	}
	if c.Stopping {
		// The turn's last facts are written first.
		return Ready{Append: c.takeCarry(), Stop: true}
	}
	step := Decide(c.boundary())
	if step.Err != nil {
		return Ready{Outcome: &Outcome{Kind: TurnLimit, Err: step.Err.Error()}}
	}
	if !step.Call {
		out := d.LastErr
		if out == nil {
			out = &Outcome{}
		}
		return Ready{Outcome: out}
	}
	if !haveEpoch {
		return Ready{Append: c.takeCarry(), Observe: &Observe{Init: true}}
	}
	// The model is never asked again while a question of its is open
	// (the history must not hold a call without a result, which a late
	// answer would then rewrite): the user spoke instead of answering,
	// or resumed the session without answering (an explicit run). The
	// open questions are dismissed before the turn, in the carried
	// append.
	c.Carry = append(c.Carry, c.dismissQuestions(len(step.Promote) > 0)...)
	if len(step.Promote) > 0 {
		c.Carry = append(c.Carry, messages.PromptPromoted{MessageIDs: step.Promote})
		d.Compacted = false // a new logical turn
	}
	d.TurnsUsed, d.LastTurn, d.RunOwed = step.TurnsUsed, step.LastTurn, false
	d.answering = d.answering || d.Continuation
	d.Continuation = false
	// Promoted input precedes any context update at this boundary.
	return Ready{Observe: &Observe{WithCatalog: !d.LastTurn}}
}

// boundary is what Decide needs to know.
func (c *Core) boundary() Boundary {
	d := c.Drain
	b := Boundary{Continuation: d.Continuation, RunOwed: d.RunOwed, TurnsUsed: d.TurnsUsed, TurnLimit: d.TurnLimit}
	if len(c.State.Pending) > 0 {
		b.Pending = make([]Pending, len(c.State.Pending))
		for i, p := range c.State.Pending {
			b.Pending[i] = Pending{MessageID: p.MessageID, Seq: p.AdmittedSeq, Delivery: p.Delivery}
		}
	}
	return b
}

// moved ends a drain whose session moved: its runner may start no turn.
// Tool results its last turn left unanswered (a continuation owed, or the
// turn being prepared for it) are owed a drain at the destination: the
// session stays busy (no Idle) and DrainEnded starts that drain.
func (c *Core) moved() Ready {
	d := c.Drain
	rd := Ready{Outcome: &Outcome{Kind: Moved, Err: "session moved to " + c.State.Row.Location}}
	if d.Continuation || d.answering {
		c.ContinueOwed, rd.Busy = true, true
	}
	return rd
}

// movedAway reports whether the drain's session moved since it started:
// its runner may start no new turn, nor recreate the epoch.
func (c *Core) movedAway() bool {
	return c.Drain.Moved || c.State.Row.Location != c.Drain.Location
}

// carryAcrossMove hands what is carried to a move's Append, less what
// was carried for a turn the old Location will never start: its promotion
// (the prompt stays pending for the destination, which builds a fresh
// baseline before it promotes) and its context update (of the epoch the
// move clears).
func (c *Core) carryAcrossMove() []messages.Event {
	var evs []messages.Event
	for _, ev := range c.takeCarryForTurn() {
		switch ev.(type) {
		case messages.PromptPromoted, messages.ContextUpdated:
			continue
		}
		evs = append(evs, ev)
	}
	return evs
}
