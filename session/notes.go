package session

// SettledPermissionNote is the feedback of the reject that closes a
// permission request whose tool call settled before anyone answered it (an
// interrupt cancelled it, it was killed, timed out or failed): no reply can
// be acted on any more, so the request is closed in the settlement's
// transaction.
const SettledPermissionNote = "Nobody answered before the tool call that asked ended (it was interrupted, killed or failed); the request is closed."
