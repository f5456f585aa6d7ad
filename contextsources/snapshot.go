package contextsources

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// ErrCorruptSnapshot is returned by DecodeSnapshot when the stored document itself is not
// a snapshot; a single undecodable entry is not an error (that key is re-announced).
var ErrCorruptSnapshot = errors.New("corrupt context snapshot")

// snapshotVersion is written into every encoded snapshot.
const snapshotVersion = 1

// Snapshot is the model-hidden state of a Context Epoch: per source key, the codec
// encoding of the value last admitted to the model and, for removable sources, the
// removal text pre-rendered from that value. It is immutable; Reconcile returns a new one.
type Snapshot struct {
	entries map[string]snapEntry
}

type snapEntry struct {
	value   json.RawMessage
	removal string
	hasRem  bool
	// corrupt: the entry did not decode; raw keeps its bytes so they are not lost.
	corrupt bool
	raw     json.RawMessage
}

type snapshotWire struct {
	Version int                        `json:"version"`
	Sources map[string]json.RawMessage `json:"sources"`
}

type entryWire struct {
	Value   json.RawMessage `json:"value"`
	Removal *string         `json:"removal,omitempty"`
}

// DecodeSnapshot reads a snapshot written by Encode. Empty input is the empty snapshot.
// A malformed document yields the empty snapshot and an error wrapping
// ErrCorruptSnapshot (callers may continue with it: every source is then re-announced);
// a malformed entry only marks that key corrupt.
func DecodeSnapshot(b []byte) (Snapshot, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return Snapshot{}, nil
	}
	// Fast path: one decoding pass when every entry is well formed.
	var whole struct {
		Version int                  `json:"version"`
		Sources map[string]entryWire `json:"sources"`
	}
	if err := json.Unmarshal(b, &whole); err == nil && whole.Version == snapshotVersion {
		entries := make(map[string]snapEntry, len(whole.Sources))
		ok := true
		for k, e := range whole.Sources {
			if len(e.Value) == 0 {
				ok = false
				break
			}
			se := snapEntry{value: e.Value}
			if e.Removal != nil {
				se.removal, se.hasRem = *e.Removal, true
			}
			entries[k] = se
		}
		if ok {
			return Snapshot{entries: entries}, nil
		}
	}
	// Slow path: entry by entry, so one bad entry only marks its own key corrupt.
	var w snapshotWire
	if err := json.Unmarshal(b, &w); err != nil {
		return Snapshot{}, fmt.Errorf("%w: %w", ErrCorruptSnapshot, err)
	}
	if w.Version != snapshotVersion {
		return Snapshot{}, fmt.Errorf("%w: version %d, want %d", ErrCorruptSnapshot, w.Version, snapshotVersion)
	}
	entries := make(map[string]snapEntry, len(w.Sources))
	for k, raw := range w.Sources {
		var e entryWire
		if err := json.Unmarshal(raw, &e); err != nil || len(e.Value) == 0 {
			entries[k] = snapEntry{corrupt: true, raw: raw}
			continue
		}
		se := snapEntry{value: e.Value}
		if e.Removal != nil {
			se.removal, se.hasRem = *e.Removal, true
		}
		entries[k] = se
	}
	return Snapshot{entries: entries}, nil
}

// Encode writes the snapshot as JSON with keys in sorted order, so equal snapshots are
// equal bytes.
func (s Snapshot) Encode() ([]byte, error) {
	w := snapshotWire{Version: snapshotVersion, Sources: make(map[string]json.RawMessage, len(s.entries))}
	for k, e := range s.entries {
		if e.corrupt {
			w.Sources[k] = e.raw
			continue
		}
		ew := entryWire{Value: e.value}
		if e.hasRem {
			r := e.removal
			ew.Removal = &r
		}
		b, err := marshalNoEscape(ew)
		if err != nil {
			return nil, fmt.Errorf("encode snapshot key %q: %w", k, err)
		}
		w.Sources[k] = b
	}
	return marshalNoEscape(w)
}

// MarshalJSON makes a Snapshot embeddable in other JSON documents.
func (s Snapshot) MarshalJSON() ([]byte, error) { return s.Encode() }

// UnmarshalJSON is DecodeSnapshot; it fails only for a malformed document.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	d, err := DecodeSnapshot(b)
	if err != nil {
		return err
	}
	*s = d
	return nil
}

// marshalNoEscape keeps '<', '>' and '&' literal so stored values stay byte-identical to
// what codecs produced.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Keys lists the stored keys, sorted.
func (s Snapshot) Keys() []string {
	keys := make([]string, 0, len(s.entries))
	for k := range s.entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Len is the number of stored keys.
func (s Snapshot) Len() int { return len(s.entries) }

// Value returns the stored encoding for key; ok is false when absent or corrupt.
func (s Snapshot) Value(key string) (json.RawMessage, bool) {
	e, ok := s.entries[key]
	if !ok || e.corrupt {
		return nil, false
	}
	return e.value, true
}

// Removal returns the pre-rendered removal text for key, if the source is removable.
func (s Snapshot) Removal(key string) (string, bool) {
	e, ok := s.entries[key]
	if !ok || e.corrupt || !e.hasRem {
		return "", false
	}
	return e.removal, true
}

// Corrupt reports whether key's entry failed to decode.
func (s Snapshot) Corrupt(key string) bool { return s.entries[key].corrupt }
