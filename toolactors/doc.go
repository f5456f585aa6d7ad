// Package toolactors owns the tools of a Location as actors: the Location-scoped Tool
// Registry actor, one child actor per tool call, output bounding into Managed Tool
// Output Files, permission checks, and PTY actors (subpackage pty).
//
// Start here: Props(Config) gives the registry actor. Send it, as plain messages:
//
//	Contribute / CloseScope    add or remove a scope's tools (rebuilds the catalog)
//	CatalogRequest → *Catalog  tool definitions with JSON Schema inputs, fully denied tools hidden
//	ExecuteTool → *ToolSettled exactly one settlement, sent to ReplyTo (or the sender)
//	CancelTool → *CancelAck    interrupt one call, or every call of a session; acked once stopped
//	ListCalls → *Calls         the running calls and their actors
//
// Execution: decode and validate the input (a bad field is a tool error naming it, the
// tool never starts) → spawn a call actor → authorize (permission rules, saved project
// approvals, or an ask through the caller's permission.Asker) → run → validate the
// structured output → bound the text (package bound; the complete text goes to a
// Managed Tool Output File, package managed) → settle. Once a tool has succeeded,
// bounding and settling are not interruptible. Every failure, a panic included, becomes
// a typed ToolError settlement; nothing is lost to an actor crash.
//
// What it must not do: journal anything (the Session records the settlement and the
// permission requests), decide drain behaviour, or bound provider-executed tool results.
// Subpackages with pure logic (bound, permission, schema, patch) stay free of actors and
// I/O; tools and proc hold the tool implementations and the process runner.
package toolactors
