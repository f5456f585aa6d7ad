package protocol

import "github.com/sessionrt/sessionrt/session"

// InterruptedToolError is what a tool left running by an interruption or a
// dead process settles with (session.InterruptedToolError).
const InterruptedToolError = session.InterruptedToolError

// RestartNote is the model-visible note added when a session mid-drain is
// resumed after its process died.
const RestartNote = "The server restarted while you were working. Tool calls that were still running were stopped and failed with \"" + InterruptedToolError + "\"; their side effects may be partial. Continue from the conversation above."

// JournalNote is the model-visible note added when a drain that a journal
// write failure stopped is resumed.
const JournalNote = "The journal could not store your work for a while (a write failed, e.g. on a full disk), so your work stopped until it accepted writes again. Tool calls that were still running were stopped and failed with \"" + InterruptedToolError + "\"; their side effects may be partial. Continue from the conversation above."

// LeftoverPermissionNote is the feedback of the reject that closes a
// permission request whose tool call a dead drain left running
// (session.LeftoverPermissionNote: the core writes it, Leftovers).
const LeftoverPermissionNote = session.LeftoverPermissionNote

// RecoverSession asks an activation to apply the restart policy; the reply is
// an *Outcome when resumed (after the drain) or *Done when marked interrupted.
type RecoverSession struct{ Policy Recovery }

// Recovery says what happens to a session found mid-drain after a restart.
type Recovery string

const (
	// RecoverResume runs the session once more, telling the model the server restarted.
	RecoverResume Recovery = "resume"
	// RecoverInterrupt marks the session interrupted; its inbox stays,
	// held, for the client's next fresh wake, prompt or run (no restart,
	// takeover or journal resume runs it).
	RecoverInterrupt Recovery = "interrupt"
)

// QuestionTool is the tool the session answers itself (session.QuestionTool).
const QuestionTool = session.QuestionTool

// QuestionRejectedError is what the model sees of a dismissed question.
const QuestionRejectedError = session.QuestionRejectedError
