// Package provider owns the provider-turn contract: one streamed request to a
// model, expressed without any provider's wire format.
//
// A caller (the Session actor) builds a [Request] — the baseline system text
// (the exact provider-cache prefix), the chronological history, tool
// definitions, the tool choice, Model Request Options ([Options]), Generation
// Controls ([Controls]) and raw compatibility wire fields ([Request.Wire]) — and
// calls [Provider.Stream]. The returned [Stream] is pulled with Next until
// io.EOF; the last part before io.EOF is always a [PartFinish]. Any other end is
// an *[Error] whose [Kind] tells the caller what to do: retry, compact on
// context overflow, stop.
//
// Start with request.go and part.go, then errors.go and classify.go (Rules:
// what the servers of each provider family send when they fail, and what it
// means, each row citing its source). [Retry] wraps a Provider
// with the backoff policy (only before output was yielded). [Accumulator]
// folds parts into the assistant message to record.
//
// Adapters live in subpackages (openai, anthropic, scripted); the model
// catalog and the constructor from configuration (catalog.Open, whose
// Registry is the Provider a runtime uses) in catalog. This package does no
// I/O of its own, decides nothing about sessions (when to compact, what to
// record), and imports nothing of ours outside provider/.
package provider
