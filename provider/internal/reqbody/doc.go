// Package reqbody holds the pooled request bodies of the provider adapters: a body is the
// whole history and every tool schema, re-sent on each turn, and was one of a turn's
// largest allocations.
package reqbody
