// Package permission decides whether a tool call may act on a resource.
//
// Rules are {action, resource pattern, effect allow|deny|ask}, from agent and session
// configuration. The last matching rule wins; no match means ask. Saved project
// approvals ("always" replies) turn an ask into allow, never a configured deny.
//
// Evaluate and Hidden are pure. Authorize adds the two pieces of I/O a decision may
// need, both supplied by the caller: an ApprovalStore for saved project approvals and an
// Asker that raises a pending permission request and waits for the client's reply. The
// package owns no durability: the Session implements Asker by journaling the request
// and its reply.
package permission
