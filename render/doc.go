// Package render turns a session's model-visible history into the provider
// request of its next turn: Request(Turn) is pure, so the same history and
// model always give the same request, byte for byte, which keeps the
// provider's prompt-cache prefix stable across restarts and moves.
//
// What it decides: how each history message is lowered (user prompts and
// their attachments, mid-conversation system messages, a compaction's
// summary and recent context, an assistant message with its reasoning and
// tool calls followed by one tool message per call); that reasoning and its
// provider signature are replayed only to the model that produced them; and
// what a last allowed turn looks like (no tools, the maximum-steps
// instruction).
//
//	req := render.Request(render.Turn{Model: model, Baseline: epoch.Baseline,
//		History: history, Tools: tools, Settings: agent.Request})
//
// It reads history, it never loads it: no journal, actor system or clock
// here (the Session actor loads the history and sends the request).
// testdata/ holds its scripts (render_test.go).
package render
