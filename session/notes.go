package session

// SettledPermissionNote is the feedback of the reject that closes a
// permission request whose tool call settled before anyone answered it (an
// interrupt cancelled it, it was killed, timed out or failed): no reply can
// be acted on any more, so the request is closed in the settlement's
// transaction.
const SettledPermissionNote = "Nobody answered before the tool call that asked ended (it was interrupted, killed or failed); the request is closed."

// InterruptedToolError is what a tool left running by an interruption or a
// dead process settles with (OpenCode's wording, kept for parity).
const InterruptedToolError = "Tool execution interrupted"

// LeftoverPermissionNote is the feedback of the reject that closes a
// permission request whose tool call was interrupted before anyone
// answered it (its drain died): no reply could be acted on any more.
const LeftoverPermissionNote = "Nobody answered before the tool call that asked was interrupted (its drain stopped: the server restarted or the journal failed); the request is closed."
