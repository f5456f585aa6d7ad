package proc

import (
	"io"
	"sync"
)

// copyBufs holds ReadFrom's read buffers. Without ReadFrom, io.Copy from the output
// pipe (an *os.File, whose WriteTo falls back to a generic copy) allocated a fresh
// 32 KiB buffer for every command; a pool shared by all commands keeps a few.
var copyBufs = sync.Pool{New: func() any {
	b := make([]byte, 32<<10)
	return &b
}}

// capture keeps the first and last halves of at most max bytes and counts what fell
// between them. Safe for concurrent writes.
type capture struct {
	mu      sync.Mutex
	max     int
	head    []byte
	tail    []byte // ring buffer once full
	tailPos int
	tailFul bool
	dropped int64
}

func newCapture(max int) *capture {
	return &capture{max: max}
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	headCap := c.max - c.max/2
	if room := headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	tailCap := c.max / 2
	for len(p) > 0 && tailCap > 0 {
		if !c.tailFul {
			k := min(tailCap-len(c.tail), len(p))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			if len(c.tail) == tailCap {
				c.tailFul = true
				c.tailPos = 0
			}
			continue
		}
		// Overwrite the oldest tail bytes; they are dropped.
		k := min(tailCap-c.tailPos, len(p))
		copy(c.tail[c.tailPos:], p[:k])
		c.dropped += int64(k)
		c.tailPos = (c.tailPos + k) % tailCap
		p = p[k:]
	}
	if tailCap == 0 {
		c.dropped += int64(len(p))
	}
	return n, nil
}

// ReadFrom copies r into the capture until EOF with a pooled buffer; io.Copy uses it.
// Only the bytes just read are passed on, so whatever a previous user left in the
// buffer is never seen, and Write copies them, so nothing aliases the buffer after.
func (c *capture) ReadFrom(r io.Reader) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = c.Write(buf[:n])
			total += int64(n)
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// result returns head, the tail in order, and the dropped byte count.
func (c *capture) result() (head, tail []byte, dropped int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.tailFul {
		return c.head, c.tail, c.dropped
	}
	t := make([]byte, 0, len(c.tail))
	t = append(t, c.tail[c.tailPos:]...)
	t = append(t, c.tail[:c.tailPos]...)
	return c.head, t, c.dropped
}
