// Package jsonw appends JSON to a byte slice without reflection, for the
// request encoders: encoding/json's reflection and its re-compaction of
// every json.RawMessage (tool schemas, arguments) were most of a turn's
// adapter overhead.
//
// The Writer tracks only whether a comma is due; callers are responsible for
// a well-formed nesting of Open/Close and Key/value (the encoders' tests
// decode every body they produce). Raw values must already be valid JSON.
package jsonw
