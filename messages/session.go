package messages

// The session event family. Field tags are short msgpack map keys: a payload
// is a map, so adding an optional field later stays readable by old rows.
// Every event that belongs to a provider turn carries the owning assistant
// message ID, because provider call IDs may repeat across turns.

// ModelRef names a model at a provider, and the variant selected of it
// (one of the model's named option sets, such as "high": OpenCode's model
// variants; empty means the model's defaults).
type ModelRef struct {
	Provider string `msgpack:"p"`
	ID       string `msgpack:"id"`
	Variant  string `msgpack:"v,omitempty"`
}

// SameModel says whether m and o name the same model, whatever variant
// each selects: what a model produced (reasoning signatures) is replayed to
// that model under any of its variants.
func (m ModelRef) SameModel(o ModelRef) bool { return m.Provider == o.Provider && m.ID == o.ID }

// Attachment is one typed prompt attachment. Data is inline content; URI a
// reference resolved later. Either may be empty.
type Attachment struct {
	Kind      string `msgpack:"k"` // e.g. "file", "image", "resource"
	Name      string `msgpack:"n,omitempty"`
	MediaType string `msgpack:"mt,omitempty"`
	URI       string `msgpack:"u,omitempty"`
	Data      []byte `msgpack:"d,omitempty"`
}

// Prompt is what a user sends: text plus attachments.
type Prompt struct {
	Text        string       `msgpack:"t"`
	Attachments []Attachment `msgpack:"a,omitempty"`
}

// Delivery says when an admitted prompt becomes model-visible.
type Delivery string

const (
	// Steer promotes at the next safe provider-turn boundary, inside the current drain.
	Steer Delivery = "steer"
	// Queue opens a future activity, one queued prompt per activity, FIFO.
	Queue Delivery = "queue"
)

// Valid reports whether d is one of the two delivery modes.
func (d Delivery) Valid() bool { return d == Steer || d == Queue }

// Usage is a provider turn's token accounting.
type Usage struct {
	InputTokens      int64 `msgpack:"in,omitempty"`
	OutputTokens     int64 `msgpack:"out,omitempty"`
	ReasoningTokens  int64 `msgpack:"rs,omitempty"`
	CacheReadTokens  int64 `msgpack:"cr,omitempty"`
	CacheWriteTokens int64 `msgpack:"cw,omitempty"`
}

// SessionCreated is always a session's first event (seq 1).
type SessionCreated struct {
	Location string   `msgpack:"loc"`
	Agent    string   `msgpack:"ag"`
	Model    ModelRef `msgpack:"m"`
	// Title is the title the client gave at creation ("": none yet).
	Title string `msgpack:"ti,omitempty"`
}

// SessionRenamed gives the session a title (a client's rename); it
// changes nothing the model sees.
type SessionRenamed struct {
	Title string `msgpack:"t"`
}

// SessionDeleted ends the session for every client: it leaves the lists
// and its routes answer not found. The journal keeps its events (an
// audit trail, and what Verify replays); nothing is appended after it.
type SessionDeleted struct{}

// PromptAdmitted puts a prompt into the durable inbox; it is not yet
// model-visible. MessageID is the idempotency key of the admission.
//
// Held records that the client asked for no drain (V2 resume:false, V1
// noReply): the prompt waits for a later wake, run or prompt, and start-up
// recovery must not run it on its own. Without the flag such a prompt looks
// exactly like one whose server died between its receipt and its drain,
// which recovery does run. It is not part of the admission's identity (a
// retry that differs only in it is the same prompt).
type PromptAdmitted struct {
	MessageID string   `msgpack:"id"`
	Prompt    Prompt   `msgpack:"pr"`
	Delivery  Delivery `msgpack:"dl"`
	Held      bool     `msgpack:"hd,omitempty"`
}

// PromptPromoted makes admitted prompts model-visible user messages, in the
// order given (their admission order).
type PromptPromoted struct {
	MessageIDs []string `msgpack:"ids"`
}

// ContextEpochInitialized starts the first epoch: Baseline is the exact
// provider-cache prefix, Snapshot the model-hidden per-source state. Location
// must equal the session's current Location (epoch initialization is fenced
// against moves).
type ContextEpochInitialized struct {
	Revision int64  `msgpack:"rev"`
	Baseline string `msgpack:"b"`
	Snapshot []byte `msgpack:"s"`
	Location string `msgpack:"loc"`
}

// ContextEpochReplaced starts a fresh epoch (after a completed compaction).
// Revision must be greater than the stored one (optimistic check).
type ContextEpochReplaced struct {
	Revision int64  `msgpack:"rev"`
	Baseline string `msgpack:"b"`
	Snapshot []byte `msgpack:"s"`
	Location string `msgpack:"loc"`
}

// ContextEpochCleared ends the epoch (after a move); the next run initializes one.
type ContextEpochCleared struct {
	Reason string `msgpack:"r,omitempty"`
}

// ContextUpdated is a Mid-Conversation System Message: Text becomes a
// chronological system message and Snapshot replaces the epoch's snapshot in
// the same transaction. MessageID is optional; empty means "ctx_<seq>".
type ContextUpdated struct {
	MessageID string `msgpack:"id,omitempty"`
	Text      string `msgpack:"t"`
	Snapshot  []byte `msgpack:"s"`
}

// AgentSwitched selects the agent for the next provider turn.
type AgentSwitched struct {
	Agent string `msgpack:"ag"`
}

// ModelSwitched selects the model for the next provider turn.
type ModelSwitched struct {
	Model ModelRef `msgpack:"m"`
}

// Moved changes the session's Location.
type Moved struct {
	From string `msgpack:"f"`
	To   string `msgpack:"t"`
}

// TurnStarted opens a provider turn and its assistant message. Snapshot
// names the file snapshot of the session's Location taken just before the
// turn (a filesnap tree ID; empty when none was taken): a revert to this
// turn, or to the prompt before it, restores the files to it.
type TurnStarted struct {
	AssistantMessageID string   `msgpack:"am"`
	Agent              string   `msgpack:"ag"`
	Model              ModelRef `msgpack:"m"`
	Snapshot           string   `msgpack:"sn,omitempty"`
}

// TurnEnded closes a provider turn normally (any finish reason, including
// content-filter and length).
type TurnEnded struct {
	AssistantMessageID string `msgpack:"am"`
	FinishReason       string `msgpack:"fr"`
	Usage              Usage  `msgpack:"u"`
	ProviderMetadata   []byte `msgpack:"pm,omitempty"` // opaque, provider-defined
}

// TurnFailed closes a provider turn with an error.
type TurnFailed struct {
	AssistantMessageID string `msgpack:"am"`
	ErrorKind          string `msgpack:"k"` // e.g. "provider", "interrupted", "overflow", "turn_limit"
	Message            string `msgpack:"msg"`
}

// TextEnded stores one complete text part of the assistant message.
type TextEnded struct {
	AssistantMessageID string `msgpack:"am"`
	Text               string `msgpack:"t"`
	ProviderMetadata   []byte `msgpack:"pm,omitempty"`
}

// ReasoningEnded stores one complete reasoning part.
type ReasoningEnded struct {
	AssistantMessageID string `msgpack:"am"`
	Text               string `msgpack:"t"`
	ProviderMetadata   []byte `msgpack:"pm,omitempty"`
}

// ToolInputStarted: the provider began streaming a tool call's input.
type ToolInputStarted struct {
	AssistantMessageID string `msgpack:"am"`
	CallID             string `msgpack:"c"`
	Tool               string `msgpack:"tl"`
}

// ToolInputEnded: the tool call's input is complete (Input is JSON).
type ToolInputEnded struct {
	AssistantMessageID string `msgpack:"am"`
	CallID             string `msgpack:"c"`
	Tool               string `msgpack:"tl"`
	Input              []byte `msgpack:"in"`
}

// ToolCalled records a complete tool call before it runs. Agent is the
// effective agent of the turn that issued it.
type ToolCalled struct {
	AssistantMessageID string `msgpack:"am"`
	CallID             string `msgpack:"c"`
	Tool               string `msgpack:"tl"`
	Input              []byte `msgpack:"in"` // JSON
	Agent              string `msgpack:"ag"`
	ProviderMetadata   []byte `msgpack:"pm,omitempty"`
}

// ToolProgress is a durable progress note of a running tool (title/metadata).
type ToolProgress struct {
	AssistantMessageID string `msgpack:"am"`
	CallID             string `msgpack:"c"`
	Title              string `msgpack:"t,omitempty"`
	Metadata           []byte `msgpack:"md,omitempty"`
}

// ToolSucceeded settles a call. Output is the bounded model-visible text;
// ManagedPath names the managed file with the full output ("" when none);
// Lossy says the output was truncated without a saved file.
type ToolSucceeded struct {
	AssistantMessageID string `msgpack:"am"`
	CallID             string `msgpack:"c"`
	Output             string `msgpack:"o"`
	Structured         []byte `msgpack:"st,omitempty"`
	ManagedPath        string `msgpack:"mp,omitempty"`
	Lossy              bool   `msgpack:"l,omitempty"`
	ProviderMetadata   []byte `msgpack:"pm,omitempty"`
	// Snapshot is the Location's file snapshot taken once a tool that
	// changes files (bash, apply_patch, write, edit) returned: with the
	// snapshot before it (the turn's, or the previous tool's) it says which
	// files the session changed. Empty for other tools.
	Snapshot string `msgpack:"sn,omitempty"`
}

// ToolFailed settles a call with an error the model sees.
type ToolFailed struct {
	AssistantMessageID string `msgpack:"am"`
	CallID             string `msgpack:"c"`
	Error              string `msgpack:"e"`
	// Snapshot: as ToolSucceeded's (a failed bash may have changed files).
	Snapshot string `msgpack:"sn,omitempty"`
}

// PermissionAsked raises a pending permission request for a tool call.
type PermissionAsked struct {
	RequestID          string   `msgpack:"id"`
	AssistantMessageID string   `msgpack:"am"`
	CallID             string   `msgpack:"c"`
	Action             string   `msgpack:"a"`
	Resources          []string `msgpack:"r,omitempty"`
}

// PermissionReply is how a client answers a permission request.
type PermissionReply string

const (
	ReplyOnce   PermissionReply = "once"
	ReplyAlways PermissionReply = "always"
	ReplyReject PermissionReply = "reject"
)

// PermissionReplied answers a pending permission request.
type PermissionReplied struct {
	RequestID string          `msgpack:"id"`
	Reply     PermissionReply `msgpack:"r"`
	Feedback  string          `msgpack:"fb,omitempty"`
}

// CompactionStarted durably identifies a compaction attempt.
type CompactionStarted struct {
	CompactionID string `msgpack:"id"`
}

// CompactionEnded completes a compaction: it becomes the model-visible
// checkpoint and the history boundary.
type CompactionEnded struct {
	CompactionID  string `msgpack:"id"`
	Summary       string `msgpack:"s"`
	RecentContext string `msgpack:"rc"`
}

// Interrupted records that the drain was stopped by a client.
type Interrupted struct {
	Reason string `msgpack:"r,omitempty"`
}

// Question is one question the question tool asks the user.
type Question struct {
	Question string           `msgpack:"q"`
	Header   string           `msgpack:"h,omitempty"`
	Options  []QuestionOption `msgpack:"o,omitempty"`
	Multiple bool             `msgpack:"m,omitempty"`
	Custom   bool             `msgpack:"c,omitempty"`
}

// QuestionOption is one choice of a Question.
type QuestionOption struct {
	Label       string `msgpack:"l"`
	Description string `msgpack:"d,omitempty"`
}

// QuestionAsked raises a question request for a question tool call. The
// call stays open until QuestionReplied or QuestionRejected settles it;
// the drain ends meanwhile, so the wait is durable (restarts, moves).
type QuestionAsked struct {
	RequestID          string     `msgpack:"id"`
	AssistantMessageID string     `msgpack:"am"`
	CallID             string     `msgpack:"c"`
	Questions          []Question `msgpack:"qs"`
}

// QuestionReplied answers a pending question request: one answer (the
// selected labels or the user's own text) per question, in order.
type QuestionReplied struct {
	RequestID string     `msgpack:"id"`
	Answers   [][]string `msgpack:"a"`
}

// QuestionRejected dismisses a pending question request (the user
// declined, or sent a new prompt instead).
type QuestionRejected struct {
	RequestID string `msgpack:"id"`
	Reason    string `msgpack:"r,omitempty"`
}

// DrainFailed says why a drain ended in error, just before its Idle: the
// turn limit, blocked context, an unknown model, a provider error after
// retries, a failed compaction, a configuration error… Kind is the
// runner's classification (actors.Outcome.Kind), Message what the user is
// told. An interrupted drain writes Interrupted instead.
type DrainFailed struct {
	Kind    string `msgpack:"k"`
	Message string `msgpack:"msg"`
}

// RevertStaged stages (or moves) a revert of the session to just before
// message MessageID (at BoundarySeq/BoundaryIndex in the stream): the
// message and everything after it would leave the history, and Files
// (paths relative to the Location) would go back to how they were in the
// file snapshot Snapshot. Current is the snapshot taken when the first
// revert of a chain was staged, to which a clear restores them. Nothing
// changes until RevertCommitted.
type RevertStaged struct {
	MessageID     string   `msgpack:"id"`
	BoundarySeq   int64    `msgpack:"bs"`
	BoundaryIndex int      `msgpack:"bi,omitempty"`
	Snapshot      string   `msgpack:"sn,omitempty"`
	Current       string   `msgpack:"cur,omitempty"`
	Files         []string `msgpack:"f,omitempty"`
}

// RevertCommitted applies the staged revert: its messages leave the
// model-visible history, and its Files are owed a restore to its Snapshot
// (the restore runs after this event is durable, and again at activation
// until RevertRestored says it finished).
type RevertCommitted struct {
	MessageID string `msgpack:"id"`
}

// RevertCleared drops the staged revert, or undoes the committed one: its
// messages come back and its Files are owed a restore to its Current
// snapshot.
type RevertCleared struct{}

// RevertRestored says the owed file restore (to Snapshot) finished.
type RevertRestored struct {
	Snapshot string `msgpack:"sn,omitempty"`
}

// RevertFinalized is written when a drain starts over a revert: a
// committed revert's messages leave the history for good (they can no
// longer be cleared), a staged one is dropped.
type RevertFinalized struct{}

// HistoryCopied puts messages copied from another session's history into
// this one: a fork (OpenCode's session.fork). It is written only in the
// append that creates the session, right after its SessionCreated, so the
// copy is the session's own history from its first seq: later reverts or
// compactions of either session never touch the other.
//
// The messages keep their order and content under fresh IDs; their parts
// take this event's seq. A compaction message can only be the first of
// its event, and is then the history boundary as a CompactionEnded is (a
// fork of a compacted history writes one HistoryCopied per compaction).
type HistoryCopied struct {
	From      string          `msgpack:"f"`             // the session they were copied from
	MessageID string          `msgpack:"mid,omitempty"` // the fork point: the source's messages before it ("": all)
	Messages  []CopiedMessage `msgpack:"ms"`
}

// CopiedMessage is one message of a HistoryCopied: Body is the message as
// the history holds it (its ID, seq and role are not part of a body).
type CopiedMessage struct {
	ID   string  `msgpack:"id"`
	Role Role    `msgpack:"r"`
	Body Message `msgpack:"b"`
}

// Idle is appended by the runner when a drain ends; a session whose last
// drain event is not followed by Idle or Interrupted was mid-drain.
type Idle struct{}

func (SessionCreated) EventType() EventType { return EventType{"session.created", 1} }
func (PromptAdmitted) EventType() EventType { return EventType{"session.prompt.admitted", 1} }
func (PromptPromoted) EventType() EventType { return EventType{"session.prompt.promoted", 1} }
func (ContextEpochInitialized) EventType() EventType {
	return EventType{"session.context.epoch.initialized", 1}
}
func (ContextEpochReplaced) EventType() EventType {
	return EventType{"session.context.epoch.replaced", 1}
}
func (ContextEpochCleared) EventType() EventType {
	return EventType{"session.context.epoch.cleared", 1}
}
func (ContextUpdated) EventType() EventType    { return EventType{"session.context.updated", 1} }
func (AgentSwitched) EventType() EventType     { return EventType{"session.agent.switched", 1} }
func (SessionRenamed) EventType() EventType    { return EventType{"session.renamed", 1} }
func (SessionDeleted) EventType() EventType    { return EventType{"session.deleted", 1} }
func (ModelSwitched) EventType() EventType     { return EventType{"session.model.switched", 1} }
func (Moved) EventType() EventType             { return EventType{"session.moved", 1} }
func (TurnStarted) EventType() EventType       { return EventType{"session.turn.started", 1} }
func (TurnEnded) EventType() EventType         { return EventType{"session.turn.ended", 1} }
func (TurnFailed) EventType() EventType        { return EventType{"session.turn.failed", 1} }
func (TextEnded) EventType() EventType         { return EventType{"session.text.ended", 1} }
func (ReasoningEnded) EventType() EventType    { return EventType{"session.reasoning.ended", 1} }
func (ToolInputStarted) EventType() EventType  { return EventType{"session.tool.input.started", 1} }
func (ToolInputEnded) EventType() EventType    { return EventType{"session.tool.input.ended", 1} }
func (ToolCalled) EventType() EventType        { return EventType{"session.tool.called", 1} }
func (ToolProgress) EventType() EventType      { return EventType{"session.tool.progress", 1} }
func (ToolSucceeded) EventType() EventType     { return EventType{"session.tool.succeeded", 1} }
func (ToolFailed) EventType() EventType        { return EventType{"session.tool.failed", 1} }
func (PermissionAsked) EventType() EventType   { return EventType{"session.permission.asked", 1} }
func (PermissionReplied) EventType() EventType { return EventType{"session.permission.replied", 1} }
func (CompactionStarted) EventType() EventType { return EventType{"session.compaction.started", 1} }
func (CompactionEnded) EventType() EventType   { return EventType{"session.compaction.ended", 1} }
func (Interrupted) EventType() EventType       { return EventType{"session.interrupted", 1} }
func (QuestionAsked) EventType() EventType     { return EventType{"session.question.asked", 1} }
func (QuestionReplied) EventType() EventType   { return EventType{"session.question.replied", 1} }
func (QuestionRejected) EventType() EventType  { return EventType{"session.question.rejected", 1} }
func (DrainFailed) EventType() EventType       { return EventType{"session.drain.failed", 1} }
func (Idle) EventType() EventType              { return EventType{"session.idle", 1} }
func (RevertStaged) EventType() EventType      { return EventType{"session.revert.staged", 1} }
func (RevertCommitted) EventType() EventType   { return EventType{"session.revert.committed", 1} }
func (RevertCleared) EventType() EventType     { return EventType{"session.revert.cleared", 1} }
func (RevertRestored) EventType() EventType    { return EventType{"session.revert.restored", 1} }
func (RevertFinalized) EventType() EventType   { return EventType{"session.revert.finalized", 1} }
func (HistoryCopied) EventType() EventType     { return EventType{"session.history.copied", 1} }

// SessionEvents returns one zero value of every session event type.
func SessionEvents() []Event {
	return []Event{
		SessionCreated{}, PromptAdmitted{}, PromptPromoted{},
		ContextEpochInitialized{}, ContextEpochReplaced{}, ContextEpochCleared{}, ContextUpdated{},
		AgentSwitched{}, ModelSwitched{}, Moved{}, SessionRenamed{}, SessionDeleted{},
		TurnStarted{}, TurnEnded{}, TurnFailed{}, TextEnded{}, ReasoningEnded{},
		ToolInputStarted{}, ToolInputEnded{}, ToolCalled{}, ToolProgress{}, ToolSucceeded{}, ToolFailed{},
		PermissionAsked{}, PermissionReplied{}, QuestionAsked{}, QuestionReplied{}, QuestionRejected{},
		CompactionStarted{}, CompactionEnded{}, Interrupted{}, DrainFailed{}, Idle{},
		RevertStaged{}, RevertCommitted{}, RevertCleared{}, RevertRestored{}, RevertFinalized{},
		HistoryCopied{},
	}
}

// DeltaKind says which live fragment a Delta carries.
type DeltaKind string

const (
	TextDelta       DeltaKind = "text"
	ReasoningDelta  DeltaKind = "reasoning"
	ToolInputDelta  DeltaKind = "tool-input"
	CompactionDelta DeltaKind = "compaction"
)

// Delta is a live-only streaming fragment for connected renderers. It is not
// an Event: it never reaches the journal, never advances a durable cursor and
// is not replayed. The final values are stored once by the *Ended events.
type Delta struct {
	SessionID          string    `msgpack:"sid"`
	AssistantMessageID string    `msgpack:"am,omitempty"`
	CallID             string    `msgpack:"c,omitempty"`
	Kind               DeltaKind `msgpack:"k"`
	Text               string    `msgpack:"t"`
}
