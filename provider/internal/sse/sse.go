package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// MaxEvent bounds one event's data (a guard against a server that never
// sends a blank line).
const MaxEvent = 16 << 20

// ErrEventTooLarge is returned when one event exceeds MaxEvent bytes.
var ErrEventTooLarge = errors.New("sse: event too large")

// ErrReleased is returned by Next after Release.
var ErrReleased = errors.New("sse: reader released")

// bufSize is the read buffer; longer lines are joined in Reader.line.
const bufSize = 16 << 10

// bufs holds the read buffers of released Readers: a server with many
// concurrent sessions otherwise allocates one per provider turn.
var bufs = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufSize) }}

// Event is one dispatched event. Name is "" when the stream gave none
// (the spec's default "message"). Data joins multiple data lines with '\n'.
type Event struct {
	Name []byte
	Data []byte
	// Fields are the event's field lines the spec does not define (it says to
	// ignore them), in order. Some servers report failures in one: llama.cpp
	// builds of 2025 end a failed stream with "error: {…}" and no data line.
	Fields []Field
}

// Field is a field line other than data, event, id and retry.
type Field struct {
	Name, Value []byte
}

// Field returns the value of the event's first field line called name.
func (e *Event) Field(name string) ([]byte, bool) {
	for i := range e.Fields {
		if string(e.Fields[i].Name) == name {
			return e.Fields[i].Value, true
		}
	}
	return nil, false
}

// Reader reads events from a body.
type Reader struct {
	r    *bufio.Reader
	name []byte
	data []byte
	line []byte
	n    int64
	// other holds the current event's other field lines; allocated on the
	// first one, as well-behaved servers send none.
	other *otherFields
	// lastPartial is the line being read when the body ended, quoted in
	// errors about a cut stream.
	lastPartial []byte
}

// otherFields holds field lines back to back in buf: marks[i] is where field
// i's name ends and its value starts, ends[i] where its value ends. fields is
// built from them at dispatch.
type otherFields struct {
	buf    []byte
	marks  []int
	ends   []int
	fields []Field
}

// NewReader returns a Reader over body. Call Release when done with it to
// let the next Reader reuse its buffer.
func NewReader(body io.Reader) *Reader {
	r := &Reader{}
	r.Reset(body)
	return r
}

// Reset makes r read body with a pooled buffer, as NewReader does (for a
// Reader held by value).
func (r *Reader) Reset(body io.Reader) {
	br := bufs.Get().(*bufio.Reader)
	br.Reset(body)
	*r = Reader{r: br}
}

// Release returns the read buffer for reuse; Next then returns ErrReleased.
// BytesRead and Partial keep working, and slices returned by the last Next
// stay valid (they never alias the read buffer). It must not run
// concurrently with Next; a second call does nothing.
func (r *Reader) Release() {
	if r.r == nil {
		return
	}
	// Reset drops unread bytes and the body, so no later user sees either.
	r.r.Reset(nil)
	bufs.Put(r.r)
	r.r = nil
}

// BytesRead is the number of body bytes consumed so far.
func (r *Reader) BytesRead() int64 { return r.n }

// Partial returns the incomplete trailing line when the body ended mid-line.
func (r *Reader) Partial() []byte { return r.lastPartial }

// Next returns the next event with data or a name. At the end of the body it
// returns io.EOF if the body ended on an event boundary, and
// io.ErrUnexpectedEOF when a partially received event was pending (the
// stream was cut). Other errors are the body's read errors.
func (r *Reader) Next() (Event, error) {
	if r.r == nil {
		return Event{}, ErrReleased
	}
	r.name = r.name[:0]
	r.data = r.data[:0]
	if o := r.other; o != nil {
		o.buf, o.marks, o.ends = o.buf[:0], o.marks[:0], o.ends[:0]
	}
	hasData, pending := false, false
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && (pending || len(line) > 0) {
				r.lastPartial = append(r.lastPartial[:0], line...)
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData || len(r.name) > 0 || (r.other != nil && len(r.other.ends) > 0) {
				return Event{Name: r.name, Data: r.data, Fields: r.otherFields()}, nil
			}
			pending = false
			continue
		}
		pending = true
		if line[0] == ':' { // comment (keep-alive)
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if hasData {
				r.data = append(r.data, '\n')
			}
			if len(r.data)+len(value) > MaxEvent {
				return Event{}, fmt.Errorf("%w (more than %d bytes)", ErrEventTooLarge, MaxEvent)
			}
			r.data = append(r.data, value...)
			hasData = true
		case "event":
			r.name = append(r.name[:0], value...)
		case "id", "retry":
			// Irrelevant to a single-request stream.
		default:
			if r.other == nil {
				r.other = &otherFields{}
			}
			o := r.other
			if len(o.buf)+len(line) > MaxEvent {
				return Event{}, fmt.Errorf("%w (more than %d bytes)", ErrEventTooLarge, MaxEvent)
			}
			o.buf = append(o.buf, field...)
			o.marks = append(o.marks, len(o.buf))
			o.buf = append(o.buf, value...)
			o.ends = append(o.ends, len(o.buf))
		}
	}
}

// otherFields returns the current event's other field lines (nil when none,
// which is every event of a well-behaved server).
func (r *Reader) otherFields() []Field {
	o := r.other
	if o == nil || len(o.ends) == 0 {
		return nil
	}
	o.fields = o.fields[:0]
	start := 0
	for i, end := range o.ends {
		o.fields = append(o.fields, Field{Name: o.buf[start:o.marks[i]], Value: o.buf[o.marks[i]:end]})
		start = end
	}
	return o.fields
}

// readLine returns one line without its terminator (\n, \r\n). At the end of
// the body it returns the unterminated remainder with io.EOF.
func (r *Reader) readLine() ([]byte, error) {
	b, err := r.r.ReadSlice('\n')
	r.n += int64(len(b))
	if err == bufio.ErrBufferFull {
		r.line = append(r.line[:0], b...)
		for err == bufio.ErrBufferFull {
			b, err = r.r.ReadSlice('\n')
			r.n += int64(len(b))
			r.line = append(r.line, b...)
			if len(r.line) > MaxEvent {
				return nil, fmt.Errorf("%w (line longer than %d bytes)", ErrEventTooLarge, MaxEvent)
			}
		}
		b = r.line
	}
	if err != nil {
		return b, err
	}
	b = b[:len(b)-1]
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b, nil
}
