package ptys

// scrollback is a ring of the last len(buf) bytes of a stream, addressed by
// absolute offset: byte o of the stream, if still kept, is buf[o%len(buf)].
// It is not safe for concurrent use.
type scrollback struct {
	buf []byte
	end int64 // offset just past the last byte written
}

func newScrollback(size int) *scrollback { return &scrollback{buf: make([]byte, size)} }

// start is the offset of the oldest byte still kept.
func (s *scrollback) start() int64 { return max(0, s.end-int64(len(s.buf))) }

// write appends p, dropping the oldest bytes beyond the ring's size.
func (s *scrollback) write(p []byte) {
	n := len(s.buf)
	if len(p) > n {
		s.end += int64(len(p) - n)
		p = p[len(p)-n:]
	}
	for len(p) > 0 {
		i := int(s.end % int64(n))
		c := copy(s.buf[i:], p)
		p = p[c:]
		s.end += int64(c)
	}
}

// read copies up to max bytes starting at offset from. It returns nil when
// from is at or past the end, and behind=true (and nil) when the bytes at
// from were already dropped.
func (s *scrollback) read(from int64, max int) (data []byte, behind bool) {
	if from < s.start() {
		return nil, true
	}
	if from >= s.end {
		return nil, false
	}
	n := int(min(s.end-from, int64(max)))
	out := make([]byte, n)
	size := int64(len(s.buf))
	for k := 0; k < n; {
		i := int((from + int64(k)) % size)
		k += copy(out[k:], s.buf[i:min(len(s.buf), i+n-k)])
	}
	return out, false
}
