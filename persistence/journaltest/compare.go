package journaltest

import "github.com/sessionrt/sessionrt/messages"

// NormReverts returns r with empty slices made nil, so that revert state
// read from the journal (msgpack decodes an empty slice as nil) compares
// equal with reflect.DeepEqual to the same state folded in memory.
func NormReverts(r messages.Reverts) messages.Reverts {
	if len(r.Hidden) == 0 {
		r.Hidden = nil
	}
	if o := r.Open; o != nil {
		c := *o
		if len(c.Files) == 0 {
			c.Files = nil
		}
		r.Open = &c
	}
	if rs := r.Restore; rs != nil {
		c := *rs
		if len(c.Files) == 0 {
			c.Files = nil
		}
		r.Restore = &c
	}
	return r
}
