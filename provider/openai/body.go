package openai

import (
	"net/http"

	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/provider/internal/reqbody"
)

// Request bodies are written into pooled buffers (internal/reqbody, which says when a
// buffer is returned): a body is the whole history and every tool schema, re-sent on each
// turn, and was one of a turn's largest allocations.

// pooledBody is one encoded request body; Stream holds one reference while Do runs.
type pooledBody struct{ b *reqbody.Body }

// encodePooled encodes req into a pooled buffer, holding one reference for the caller.
func encodePooled(a *Adapter, req *provider.Request) (pooledBody, error) {
	b, err := reqbody.Encode(bodySize(req), func(dst []byte) ([]byte, error) { return a.appendBody(dst, req) })
	return pooledBody{b}, err
}

// attach makes the encoded bytes hreq's body, with its length and GetBody set.
func (p pooledBody) attach(hreq *http.Request) { p.b.Attach(hreq) }

// release drops the caller's reference.
func (p pooledBody) release() { p.b.Release() }
