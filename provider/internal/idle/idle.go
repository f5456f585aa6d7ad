package idle

import (
	"io"
	"sync/atomic"
	"time"
)

// Body wraps an io.ReadCloser with an idle timeout.
type Body struct {
	rc      io.ReadCloser
	timeout time.Duration
	timer   *time.Timer
	expired atomic.Bool
}

// Wrap returns rc guarded by timeout; timeout <= 0 returns a Body that never
// expires.
func Wrap(rc io.ReadCloser, timeout time.Duration) *Body {
	b := &Body{rc: rc, timeout: timeout}
	if timeout > 0 {
		b.timer = time.AfterFunc(timeout, func() {
			b.expired.Store(true)
			rc.Close()
		})
	}
	return b
}

// Read reads from the body, restarting the idle clock on every byte received.
func (b *Body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && b.timer != nil && !b.expired.Load() {
		b.timer.Reset(b.timeout)
	}
	return n, err
}

// Close stops the clock and closes the body.
func (b *Body) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	return b.rc.Close()
}

// Expired reports whether the body was closed for silence.
func (b *Body) Expired() bool { return b.expired.Load() }
