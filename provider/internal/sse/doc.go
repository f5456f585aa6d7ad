// Package sse reads a text/event-stream (Server-Sent Events) body as the
// provider adapters need it: event name and data, one event at a time, with
// the bytes read so far counted for error messages.
//
// It does no JSON and no classification; the returned slices alias an
// internal buffer and are valid only until the next call to Next.
package sse
