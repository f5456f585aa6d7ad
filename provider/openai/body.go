package openai

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/sessionrt/sessionrt/provider"
)

// Request bodies are written into pooled buffers: a body is the whole history and every
// tool schema, re-sent on each turn, and was one of a turn's largest allocations.
//
// A buffer goes back to the pool only when nothing can read it any more: Stream holds one
// reference while the client's Do runs (the transport may call GetBody to resend the body
// on a fresh connection, and redirects do too), and every body handed to the transport
// holds one until it is closed. The transport closes every body it was given, possibly
// after Do returned (http.RoundTripper's contract), and reads none after closing it. A
// transport that never closes a body only costs the buffer's reuse.
var bodyPool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBody bounds the buffers kept: a rare huge request (attachments) is not held.
const maxPooledBody = 256 << 10

// pooledBody is one encoded request body and its references.
type pooledBody struct {
	buf  *[]byte
	refs atomic.Int32
}

// encodePooled encodes req into a pooled buffer, holding one reference for the caller.
func encodePooled(a *Adapter, req *provider.Request) (*pooledBody, error) {
	buf := bodyPool.Get().(*[]byte)
	dst := (*buf)[:0]
	if size := bodySize(req); cap(dst) < size {
		dst = make([]byte, 0, size)
	}
	b, err := a.appendBody(dst, req)
	if err != nil {
		*buf = dst
		bodyPool.Put(buf)
		return nil, err
	}
	*buf = b
	p := &pooledBody{buf: buf}
	p.refs.Store(1)
	return p, nil
}

// attach makes the encoded bytes hreq's body, with its length and GetBody set as
// http.NewRequest sets them for a bytes.Reader.
func (p *pooledBody) attach(hreq *http.Request) {
	hreq.ContentLength = int64(len(*p.buf))
	hreq.Body = p.reader()
	hreq.GetBody = func() (io.ReadCloser, error) { return p.reader(), nil }
}

// reader is a new body over the bytes, holding a reference until it is closed.
func (p *pooledBody) reader() io.ReadCloser {
	p.refs.Add(1)
	r := &bodyReader{p: p}
	r.Reset(*p.buf)
	return r
}

// release drops one reference; the last returns the buffer to the pool.
func (p *pooledBody) release() {
	if p.refs.Add(-1) != 0 {
		return
	}
	if cap(*p.buf) <= maxPooledBody {
		bodyPool.Put(p.buf)
	}
}

type bodyReader struct {
	bytes.Reader
	p      *pooledBody
	closed atomic.Bool
}

// Close releases the body's reference once, however often the transport closes it.
func (r *bodyReader) Close() error {
	if r.closed.CompareAndSwap(false, true) {
		r.p.release()
	}
	return nil
}
