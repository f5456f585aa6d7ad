// Package messages holds the durable session events, the live-only deltas and
// the type registry that maps an event's type name and version to its Go type.
//
// Every durable event is a plain struct implementing Event; its EventType
// (name + version, e.g. "session.prompt.admitted" v1) is what the journal
// stores next to the msgpack payload. A Registry encodes and decodes payloads
// by that type; SessionRegistry returns one that knows the whole session
// family. Envelope is an event as read back from the journal (session, seq,
// time, type and the decoded event).
//
// Delta (text, reasoning, tool-input and compaction fragments) deliberately
// does not implement Event: it is live-only, so no journal API accepts it.
//
// This package imports msgpack only. It does no I/O and holds no mutable
// package-level state.
package messages
