package actors

import (
	"time"

	"github.com/sessionrt/sessionrt/actors/shell"
)

// The Session actor is actors/shell's; its commands, answers, errors,
// fault points and live items keep their names here, so that callers of
// the facade name them as before.

// Commands (shell/commands.go).
type (
	Create          = shell.Create
	Rename          = shell.Rename
	Delete          = shell.Delete
	Prompt          = shell.Prompt
	Run             = shell.Run
	Wake            = shell.Wake
	Interrupt       = shell.Interrupt
	Move            = shell.Move
	SwitchAgent     = shell.SwitchAgent
	SwitchModel     = shell.SwitchModel
	ReplyPermission = shell.ReplyPermission
	WaitIdle        = shell.WaitIdle
	Compact         = shell.Compact
	Revert          = shell.Revert
)

// Answers.
type (
	Info       = shell.Info
	Receipt    = shell.Receipt
	Outcome    = shell.Outcome
	Done       = shell.Done
	RevertInfo = shell.RevertInfo
)

// Revert operations (Revert.Op).
const (
	RevertStage  = shell.RevertStage
	RevertCommit = shell.RevertCommit
	RevertClear  = shell.RevertClear
	RevertShow   = shell.RevertShow
	RevertDiff   = shell.RevertDiff
)

// Errors (shell/errors.go).
type CommandError = shell.CommandError

const (
	CodeInvalid  = shell.CodeInvalid
	CodeNotFound = shell.CodeNotFound
	CodeConflict = shell.CodeConflict
	CodeBacklog  = shell.CodeBacklog
	CodeFenced   = shell.CodeFenced
	CodeBusy     = shell.CodeBusy
	CodeJournal  = shell.CodeJournal
	CodeInternal = shell.CodeInternal
)

var (
	ErrInvalid  = shell.ErrInvalid
	ErrNotFound = shell.ErrNotFound
	ErrConflict = shell.ErrConflict
	ErrBacklog  = shell.ErrBacklog
	ErrFenced   = shell.ErrFenced
	ErrBusy     = shell.ErrBusy
	ErrJournal  = shell.ErrJournal
)

func errorCode(err error) string { return shell.ErrorCode(err) }

func invalidf(msg string) error { return &CommandError{Code: CodeInvalid, Msg: msg} }

// Fault points (shell/faults.go).
type (
	FaultPoint    = shell.FaultPoint
	InjectedFault = shell.InjectedFault
)

const (
	FaultAfterAdmission  = shell.FaultAfterAdmission
	FaultAfterPromotion  = shell.FaultAfterPromotion
	FaultMidStream       = shell.FaultMidStream
	FaultAfterToolCalled = shell.FaultAfterToolCalled
	FaultMidTool         = shell.FaultMidTool
	FaultAfterSettlement = shell.FaultAfterSettlement
	FaultBeforeTurnEnd   = shell.FaultBeforeTurnEnd
	FaultRevertCommitted = shell.FaultRevertCommitted
	FaultMidRestore      = shell.FaultMidRestore
)

// FaultPoints lists every fault point of a drain.
var FaultPoints = shell.FaultPoints

// Recovery (shell/recovery.go).
type Recovery = shell.Recovery

const (
	RecoverResume          = shell.RecoverResume
	RecoverInterrupt       = shell.RecoverInterrupt
	InterruptedToolError   = shell.InterruptedToolError
	RestartNote            = shell.RestartNote
	JournalNote            = shell.JournalNote
	LeftoverPermissionNote = shell.LeftoverPermissionNote
	QuestionTool           = shell.QuestionTool
	QuestionRejectedError  = shell.QuestionRejectedError
)

// Live items, inspections, idle tracking.
type (
	Live            = shell.Live
	SessionStatus   = shell.SessionStatus
	Inspection      = shell.Inspection
	DrainInspection = shell.DrainInspection
	TurnInspection  = shell.TurnInspection
	IdleTimer       = shell.IdleTimer
	Idler           = shell.Idler
)

// NewIdleTimer reports a silence of after; zero or less never fires.
func NewIdleTimer(after time.Duration) IdleTimer { return shell.NewIdleTimer(after) }

// TrackIdle arms an Idler's idle timer at every message (shell.TrackIdle).
var TrackIdle = shell.TrackIdle
