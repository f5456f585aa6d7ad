package messages

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"
)

// EventType names an event schema: a dotted name and a version. A changed
// payload shape gets a new version, never a reused one.
type EventType struct {
	Name    string
	Version int
}

// String renders "name.vN", e.g. "session.prompt.admitted.v1".
func (t EventType) String() string { return fmt.Sprintf("%s.v%d", t.Name, t.Version) }

// Event is a durable fact. Implementations are value types with msgpack tags.
type Event interface {
	EventType() EventType
}

// Envelope is one stored event with its position in the session's stream.
type Envelope struct {
	SessionID string
	Seq       int64 // 1-based, contiguous per session
	Type      EventType
	Time      time.Time // commit-side time stamp (UTC, microseconds)
	Event     Event
}

// NewID returns a fresh identifier "prefix_<time-ordered hex>": 48 bits of
// Unix milliseconds then 64 random bits, so IDs sort by creation time.
func NewID(prefix string) string {
	var b [14]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 0; i < 6; i++ {
		b[i] = byte(ms >> (8 * (5 - i)))
	}
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never fails on supported platforms
	return prefix + "_" + hex.EncodeToString(b[:])
}

// NewIDs returns fresh identifiers, one per prefix, that sort in the order
// given, as NewID's of one millisecond do not (their random bits decide):
// messages copied in one go keep their order under clients that sort by ID.
func NewIDs(prefixes ...string) []string {
	var b [14]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 0; i < 6; i++ {
		b[i] = byte(ms >> (8 * (5 - i)))
	}
	_, _ = rand.Read(b[6:])
	b[6] &= 0x7f // room to count up without carrying into the time
	tail := binary.BigEndian.Uint64(b[6:])
	out := make([]string, len(prefixes))
	for i, p := range prefixes {
		binary.BigEndian.PutUint64(b[6:], tail+uint64(i))
		out[i] = p + "_" + hex.EncodeToString(b[:])
	}
	return out
}
