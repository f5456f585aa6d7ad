package sse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/internal/httpx"
	"github.com/sessionrt/sessionrt/provider/internal/idle"
)

// Decoder is an adapter's side of a Stream: it turns one provider's events
// into parts.
type Decoder interface {
	// Event decodes one event. It queues parts with Stream.Emit and calls
	// Stream.Finish after the last, or returns the turn's terminal error. An
	// event made only of a non-standard "error:" field line arrives as an
	// event named "error" whose data is that line's value.
	Event(ev Event) error
	// EndOfBody is called when the body ended before Finish. An adapter
	// whose finish reason already arrived finishes the turn (some servers
	// omit the last event) and returns true; false makes it a cut stream.
	EndOfBody() bool
}

// Stream is the shell every HTTP adapter's provider.Stream is built on: it
// reads events, hands them to the Decoder, yields the queued parts, turns read
// failures into classified errors, and on Close keeps a finished stream's
// connection for the next turn. An adapter embeds it and calls Init.
type Stream struct {
	provider string
	ctx      context.Context
	body     io.ReadCloser
	rd       Reader // by value: one allocation less per turn
	dec      Decoder

	queue []provider.Part
	qi    int
	done  bool
	err   error

	closeOnce sync.Once
	closed    atomic.Bool
	// finished: the last event was read, so Close drains the body's end to
	// keep the connection (Close may run on another goroutine than Next).
	finished atomic.Bool
	drained  <-chan struct{} // set by Close when it drains; closed when done
}

// Init starts s reading body for dec; name is the adapter kind stamped on
// errors.
func (s *Stream) Init(ctx context.Context, name string, body io.ReadCloser, dec Decoder) {
	s.provider, s.ctx, s.body, s.dec = name, ctx, body, dec
	s.rd.Reset(body)
}

// Emit queues p for Next.
func (s *Stream) Emit(p provider.Part) { s.queue = append(s.queue, p) }

// Finish marks the turn complete: Next yields what is queued, then io.EOF.
func (s *Stream) Finish() { s.done = true }

// Drained is closed once Close's background drain of a finished stream's
// body is over; nil when Close did not drain (tests of connection reuse).
func (s *Stream) Drained() <-chan struct{} { return s.drained }

// Close ends the stream; it may run concurrently with Next.
func (s *Stream) Close() error {
	s.closed.Store(true)
	s.closeOnce.Do(func() {
		if s.finished.Load() {
			s.drained = httpx.DrainCloseInBackground(s.body)
			return
		}
		s.body.Close()
	})
	return nil
}

// Next returns the next part, io.EOF after the finish part, or the turn's
// terminal *provider.Error.
func (s *Stream) Next() (provider.Part, error) {
	for {
		if s.qi < len(s.queue) {
			p := s.queue[s.qi]
			s.qi++
			return p, nil
		}
		s.queue, s.qi = s.queue[:0], 0
		if s.err != nil {
			return provider.Part{}, s.err
		}
		if s.done {
			return provider.Part{}, io.EOF
		}
		if err := s.step(); err != nil {
			s.err = err
			s.Close()
		}
		if s.err != nil || s.done {
			// step is not called again: the read buffer can serve another stream.
			s.rd.Release()
			s.finished.Store(s.err == nil)
		}
	}
}

// step reads one event and hands it to the decoder, or returns the terminal
// error of a failed read.
func (s *Stream) step() error {
	ev, err := s.rd.Next()
	if err != nil {
		return s.readError(err)
	}
	if len(ev.Data) == 0 {
		v, ok := ev.Field("error")
		if !ok {
			return nil // a named event without data says nothing
		}
		ev = Event{Name: errorName, Data: v}
	}
	return s.dec.Event(ev)
}

var errorName = []byte("error")

// readError classifies why the body could not be read further.
func (s *Stream) readError(err error) error {
	if s.ctx.Err() != nil {
		return provider.TransportError(s.ctx, s.provider, "read stream", err)
	}
	if s.closed.Load() {
		return &provider.Error{Kind: provider.KindInterrupted, Provider: s.provider, Message: "stream closed", Err: err}
	}
	if ib, ok := s.body.(*idle.Body); ok && ib.Expired() {
		return &provider.Error{Kind: provider.KindRetryable, Provider: s.provider,
			Message: fmt.Sprintf("no data from the provider for too long after %d bytes", s.rd.BytesRead()), Err: err}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if s.dec.EndOfBody() {
			s.Finish()
			return nil
		}
		return &provider.Error{Kind: provider.KindRetryable, Provider: s.provider,
			Message: fmt.Sprintf("stream cut before its finish after %d bytes", s.rd.BytesRead()),
			Snippet: provider.Quote(s.rd.Partial()), Err: io.ErrUnexpectedEOF}
	}
	if errors.Is(err, ErrEventTooLarge) {
		return &provider.Error{Kind: provider.KindMalformed, Provider: s.provider, Message: "read stream", Err: err}
	}
	return provider.TransportError(s.ctx, s.provider, fmt.Sprintf("read stream after %d bytes", s.rd.BytesRead()), err)
}
