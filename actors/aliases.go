package actors

import (
	"github.com/sessionrt/sessionrt/actors/protocol"
)

// The Session actor is actors/shell's and its protocol actors/protocol's;
// its commands, answers, errors, fault points and live items keep their
// names here, so that callers of the facade name them as before.

// Commands (protocol/commands.go).
type (
	Create          = protocol.Create
	Rename          = protocol.Rename
	Delete          = protocol.Delete
	Prompt          = protocol.Prompt
	Run             = protocol.Run
	Wake            = protocol.Wake
	Interrupt       = protocol.Interrupt
	Move            = protocol.Move
	SwitchAgent     = protocol.SwitchAgent
	SwitchModel     = protocol.SwitchModel
	ReplyPermission = protocol.ReplyPermission
	WaitIdle        = protocol.WaitIdle
	Compact         = protocol.Compact
	Revert          = protocol.Revert
)

// Answers.
type (
	Info       = protocol.Info
	Receipt    = protocol.Receipt
	Outcome    = protocol.Outcome
	Done       = protocol.Done
	RevertInfo = protocol.RevertInfo
)

// Revert operations (Revert.Op).
const (
	RevertStage  = protocol.RevertStage
	RevertCommit = protocol.RevertCommit
	RevertClear  = protocol.RevertClear
	RevertShow   = protocol.RevertShow
	RevertDiff   = protocol.RevertDiff
)

// Errors (protocol/errors.go).
type CommandError = protocol.CommandError

const (
	CodeInvalid  = protocol.CodeInvalid
	CodeNotFound = protocol.CodeNotFound
	CodeConflict = protocol.CodeConflict
	CodeBacklog  = protocol.CodeBacklog
	CodeFenced   = protocol.CodeFenced
	CodeBusy     = protocol.CodeBusy
	CodeJournal  = protocol.CodeJournal
	CodeInternal = protocol.CodeInternal
)

var (
	ErrInvalid  = protocol.ErrInvalid
	ErrNotFound = protocol.ErrNotFound
	ErrConflict = protocol.ErrConflict
	ErrBacklog  = protocol.ErrBacklog
	ErrFenced   = protocol.ErrFenced
	ErrBusy     = protocol.ErrBusy
	ErrJournal  = protocol.ErrJournal
)

func errorCode(err error) string { return protocol.ErrorCode(err) }

func invalidf(msg string) error { return &CommandError{Code: CodeInvalid, Msg: msg} }

// Fault points (protocol/faults.go).
type (
	FaultPoint    = protocol.FaultPoint
	InjectedFault = protocol.InjectedFault
)

const (
	FaultAfterAdmission  = protocol.FaultAfterAdmission
	FaultAfterPromotion  = protocol.FaultAfterPromotion
	FaultMidStream       = protocol.FaultMidStream
	FaultAfterToolCalled = protocol.FaultAfterToolCalled
	FaultMidTool         = protocol.FaultMidTool
	FaultAfterSettlement = protocol.FaultAfterSettlement
	FaultBeforeTurnEnd   = protocol.FaultBeforeTurnEnd
	FaultRevertCommitted = protocol.FaultRevertCommitted
	FaultMidRestore      = protocol.FaultMidRestore
)

// FaultPoints lists every fault point of a drain.
var FaultPoints = protocol.FaultPoints

// Recovery (protocol/recovery.go).
type Recovery = protocol.Recovery

const (
	RecoverResume          = protocol.RecoverResume
	RecoverInterrupt       = protocol.RecoverInterrupt
	InterruptedToolError   = protocol.InterruptedToolError
	RestartNote            = protocol.RestartNote
	JournalNote            = protocol.JournalNote
	LeftoverPermissionNote = protocol.LeftoverPermissionNote
	QuestionTool           = protocol.QuestionTool
	QuestionRejectedError  = protocol.QuestionRejectedError
)

// Live items, inspections.
type (
	Live            = protocol.Live
	SessionStatus   = protocol.SessionStatus
	Inspection      = protocol.Inspection
	DrainInspection = protocol.DrainInspection
	TurnInspection  = protocol.TurnInspection
)
