// Package sse is the stream shell of the HTTP adapters. Reader reads a
// text/event-stream (Server-Sent Events) body: event name, data and any field
// line the spec does not define, one event at a time, with the bytes read so
// far counted for error messages. Stream is the provider.Stream every adapter
// embeds: it feeds events to the adapter's Decoder, yields the parts it
// queues, classifies read failures (cut, silent, cancelled, closed) and keeps
// a finished stream's connection for the next turn.
//
// It does no JSON: what an event means is the Decoder's business. Slices
// returned by Reader alias an internal buffer and are valid only until the
// next call to Next.
package sse
