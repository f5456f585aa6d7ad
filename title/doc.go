// Package title names a session from its first prompt: the request a title
// model is asked (Request), and the one line read back from its answer
// (Ask, Clean). OpenCode users know it as the session title its small
// model writes; sessionrt asks the same way, off the session's turn.
//
// The package builds and reads one provider request and nothing else: it
// decides neither when a session is titled (the session core does:
// session.Ready.Title) nor which model answers (the Session actor: the
// Location's small_model, else OpenCode's small model of the session's
// provider, catalog.SmallModel, else the session's).
//
//	req := title.Request(provider.ModelRef{Provider: "openai", Model: "gpt-4o-mini"}, firstPrompt)
//	name, err := title.Ask(ctx, prov, req) // "" and an error: keep the default title
package title
