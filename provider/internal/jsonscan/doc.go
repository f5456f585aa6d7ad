// Package jsonscan is a small strict JSON reader without reflection, for the
// hot path of the stream decoders: a provider sends thousands of tiny chunks
// per turn and encoding/json's reflection dominated their cost.
//
// It validates everything it reads or skips (RFC 8259 grammar), so invalid
// input is always an error; decoders fall back to encoding/json on any error
// to produce the precise message, so the fast path never has to be clever.
// It does not build values it is not asked for.
package jsonscan
