package reqbody

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// A buffer goes back to the pool only when nothing can read it any more: the adapter holds
// one reference while the client's Do runs (the transport may call GetBody to resend the
// body on a fresh connection, and redirects do too), and every body handed to the
// transport holds one until it is closed. The transport closes every body it was given,
// possibly after Do returned (http.RoundTripper's contract), and reads none after closing
// it. A transport that never closes a body only costs the buffer's reuse.
var pool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooled bounds the buffers kept: a rare huge request (attachments) is not held.
const maxPooled = 256 << 10

// Body is one encoded request body and its references.
type Body struct {
	buf  *[]byte
	refs atomic.Int32
}

// Encode has write append a body to a pooled buffer of at least size bytes, and returns it
// holding one reference for the caller, who must Release it once Do returned.
func Encode(size int, write func(dst []byte) ([]byte, error)) (*Body, error) {
	buf := pool.Get().(*[]byte)
	dst := (*buf)[:0]
	if cap(dst) < size {
		dst = make([]byte, 0, size)
	}
	b, err := write(dst)
	if err != nil {
		*buf = dst
		pool.Put(buf)
		return nil, err
	}
	*buf = b
	p := &Body{buf: buf}
	p.refs.Store(1)
	return p, nil
}

// Attach makes the encoded bytes hreq's body, with its length and GetBody set as
// http.NewRequest sets them for a bytes.Reader.
func (p *Body) Attach(hreq *http.Request) {
	hreq.ContentLength = int64(len(*p.buf))
	hreq.Body = p.reader()
	hreq.GetBody = func() (io.ReadCloser, error) { return p.reader(), nil }
}

// reader is a new body over the bytes, holding a reference until it is closed.
func (p *Body) reader() io.ReadCloser {
	p.refs.Add(1)
	r := &reader{p: p}
	r.Reset(*p.buf)
	return r
}

// Release drops one reference; the last returns the buffer to the pool.
func (p *Body) Release() {
	if p.refs.Add(-1) != 0 {
		return
	}
	if cap(*p.buf) <= maxPooled {
		pool.Put(p.buf)
	}
}

type reader struct {
	bytes.Reader
	p      *Body
	closed atomic.Bool
}

// Close releases the body's reference once, however often the transport closes it.
func (r *reader) Close() error {
	if r.closed.CompareAndSwap(false, true) {
		r.p.Release()
	}
	return nil
}
