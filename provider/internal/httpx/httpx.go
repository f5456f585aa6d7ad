package httpx

import (
	"io"
	"net"
	"net/http"
	"time"
)

// MaxIdleConnsPerHost is how many idle connections the default client keeps
// per host. An LLM API is one host, and every concurrent session holds one
// connection for its turn: net/http's default of 2 (and our former 16) closed
// the rest after each wave of turns, so the next wave dialled (and for https
// handshook) again.
const MaxIdleConnsPerHost = 256

// NewTransport returns the default transport of the adapters.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: 10 * time.Minute, // a large prompt can take long to first byte
		MaxIdleConnsPerHost:   MaxIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
}

// NewClient returns a client over NewTransport.
func NewClient() *http.Client {
	return &http.Client{Transport: NewTransport()}
}

// Drain bounds: what a server may still send after the stream's last event.
const (
	drainBytes = 64 << 10
	drainWait  = 250 * time.Millisecond
)

// DrainClose closes a response body whose last event was read. net/http reuses
// a connection only when the body was read to its end, and a stream's last
// event usually arrives a moment before the end (the chunked terminator), so
// closing right away threw the connection away. A server that keeps sending,
// or holds the body open, is cut off after drainBytes or drainWait; that costs
// its connection, nothing more.
func DrainClose(body io.ReadCloser) error {
	t := time.AfterFunc(drainWait, func() { _ = body.Close() })
	_, _ = io.Copy(io.Discard, io.LimitReader(body, drainBytes))
	t.Stop()
	return body.Close()
}

// DrainCloseInBackground runs DrainClose on its own goroutine: the caller (a
// session finishing its turn) does not wait for the body's end. The channel
// is closed when the body is.
func DrainCloseInBackground(body io.ReadCloser) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = DrainClose(body)
	}()
	return done
}
