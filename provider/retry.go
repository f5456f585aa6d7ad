package provider

import (
	"context"
	"errors"
	"sync"
	"time"
)

// RetryConfig configures Retry. The zero value means the defaults below.
type RetryConfig struct {
	// MaxAttempts bounds the attempts, the first included. Default 5.
	MaxAttempts int
	// Backoff is the delay before attempt 2, 3, …; the last entry repeats.
	// Default 2s, 4s, 8s, 16s.
	Backoff []time.Duration
	// MaxRetryAfter: a provider asking to wait longer than this is not
	// retried (the error is returned at once). Default 60s.
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx is done (returning ctx's error). Default: a
	// timer. Tests inject a recorder so nothing waits.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, if set, is told of each retry before its delay (for the
	// Session's events and telemetry). attempt is the attempt about to start.
	OnRetry func(attempt int, delay time.Duration, err error)
}

func (c RetryConfig) withDefaults() RetryConfig {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if len(c.Backoff) == 0 {
		c.Backoff = []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = time.Minute
	}
	if c.Sleep == nil {
		c.Sleep = sleepCtx
	}
	return c
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Retry wraps p so that retryable errors (KindRateLimited, KindRetryable)
// are retried with backoff — but only while nothing has been yielded to the
// caller. Metadata parts are held back until the first content part so that
// an error right after a provider's "message started" event is still
// retried. Once a content part was yielded, errors pass through unchanged:
// the caller may have recorded output, and a retry would duplicate it.
func Retry(p Provider, cfg RetryConfig) Provider {
	return &retrier{p: p, cfg: cfg.withDefaults()}
}

type retrier struct {
	p   Provider
	cfg RetryConfig
}

func (r *retrier) Stream(ctx context.Context, req *Request) (Stream, error) {
	// Close cancels this context, which also ends a wait between attempts.
	ctx, cancel := context.WithCancel(ctx)
	s := &retryStream{r: r, ctx: ctx, cancel: cancel, req: req}
	if err := s.open(nil); err != nil {
		cancel()
		return nil, err
	}
	return s, nil
}

type retryStream struct {
	r        *retrier
	ctx      context.Context
	cancel   context.CancelFunc
	req      *Request
	err      error      // sticky terminal error
	mu       sync.Mutex // guards cur and closed against a concurrent Close
	cur      Stream
	closed   bool
	attempt  int
	held     []Part // metadata held back before the first content part
	yielded  bool
	heldNext int
}

// open starts attempts until one yields a stream, or returns the final
// error. last is the error that ended the previous attempt (nil at first).
func (s *retryStream) open(last error) error {
	for {
		if last != nil {
			if err := s.ctx.Err(); err != nil && KindOf(last) != KindInterrupted {
				return &Error{Kind: KindInterrupted, Message: "cancelled while retrying", Err: errors.Join(err, last)}
			}
			d, ok := s.delay(last)
			if !ok {
				return last
			}
			if s.r.cfg.OnRetry != nil {
				s.r.cfg.OnRetry(s.attempt+1, d, last)
			}
			if err := s.r.cfg.Sleep(s.ctx, d); err != nil {
				return &Error{Kind: KindInterrupted, Message: "waiting to retry", Err: errors.Join(err, last)}
			}
		}
		s.attempt++
		st, err := s.r.p.Stream(s.ctx, s.req)
		if err == nil {
			s.mu.Lock()
			closed := s.closed
			if !closed {
				s.cur = st
			}
			s.mu.Unlock()
			if closed {
				st.Close()
				return &Error{Kind: KindInterrupted, Message: "stream closed"}
			}
			return nil
		}
		last = err
	}
}

// delay returns how long to wait before the next attempt, or false when err
// must not be retried.
func (s *retryStream) delay(err error) (time.Duration, bool) {
	var pe *Error
	if !errors.As(err, &pe) || !pe.Retryable() || s.attempt >= s.r.cfg.MaxAttempts {
		return 0, false
	}
	if pe.RetryAfter > 0 {
		if pe.RetryAfter > s.r.cfg.MaxRetryAfter {
			return 0, false
		}
		return pe.RetryAfter, true
	}
	i := s.attempt - 1
	if i >= len(s.r.cfg.Backoff) {
		i = len(s.r.cfg.Backoff) - 1
	}
	return s.r.cfg.Backoff[i], true
}

func (s *retryStream) Next() (Part, error) {
	if s.err != nil {
		return Part{}, s.err
	}
	for {
		if s.yielded && s.heldNext < len(s.held) {
			p := s.held[s.heldNext]
			s.heldNext++
			return p, nil
		}
		if s.yielded {
			return s.cur.Next()
		}
		p, err := s.cur.Next()
		if err != nil {
			if KindOf(err) == KindUnknown { // io.EOF before any content
				return p, err
			}
			s.cur.Close()
			s.held = s.held[:0]
			if oerr := s.open(err); oerr != nil {
				s.err = oerr
				return Part{}, oerr
			}
			continue
		}
		if p.Kind == PartMetadata {
			s.held = append(s.held, p)
			continue
		}
		s.yielded = true
		if len(s.held) > 0 {
			// Yield the held metadata first, then p.
			s.held = append(s.held, p)
			continue
		}
		return p, nil
	}
}

func (s *retryStream) Close() error {
	s.cancel()
	s.mu.Lock()
	s.closed = true
	cur := s.cur
	s.mu.Unlock()
	if cur == nil {
		return nil
	}
	return cur.Close()
}
