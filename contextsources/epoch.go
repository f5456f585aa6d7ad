package contextsources

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Separator joins rendered source texts in a baseline and in a combined message.
const Separator = "\n\n"

var (
	// ErrUnavailable: Initialize cannot render a complete baseline; the turn is blocked and
	// the pending prompt stays pending.
	ErrUnavailable = errors.New("system context unavailable")
	// ErrReplacementBlocked: Replace cannot render a fresh baseline without exposing an
	// incomplete context.
	ErrReplacementBlocked = errors.New("system context replacement blocked")
)

// BlockedError names the sources that blocked Initialize or Replace. It matches
// ErrUnavailable or ErrReplacementBlocked with errors.Is.
type BlockedError struct {
	kind error
	// Keys are the blocking source keys, in observation order.
	Keys []string
	// Reasons holds, per key, why it blocked.
	Reasons []error
}

func (e *BlockedError) Error() string {
	parts := make([]string, len(e.Keys))
	for i, k := range e.Keys {
		parts[i] = fmt.Sprintf("%s (%v)", k, e.Reasons[i])
	}
	return fmt.Sprintf("%v: %s", e.kind, strings.Join(parts, "; "))
}

// Unwrap returns the sentinel (ErrUnavailable or ErrReplacementBlocked).
func (e *BlockedError) Unwrap() error { return e.kind }

func (e *BlockedError) add(key string, reason error) {
	e.Keys = append(e.Keys, key)
	e.Reasons = append(e.Reasons, reason)
}

// Generation is one Context Epoch's start: the Baseline System Context as the exact joined
// text used as the provider-cache prefix, and its Snapshot.
type Generation struct {
	Baseline string
	Snapshot Snapshot
}

// Initialize renders a fresh Baseline System Context and its Snapshot from obs. Absent
// sources are left out; any unavailable source blocks (a *BlockedError matching
// ErrUnavailable) so an incomplete baseline is never persisted.
func Initialize(obs Observation) (Generation, error) {
	blocked := &BlockedError{kind: ErrUnavailable}
	for _, e := range obs.entries {
		if e.state == StateUnavailable {
			blocked.add(e.src.key(), e.err)
		}
	}
	if len(blocked.Keys) > 0 {
		return Generation{}, blocked
	}
	return render(obs, Snapshot{}, ReplaceOptions{})
}

// ReplaceOptions tunes Replace.
type ReplaceOptions struct {
	// Strict blocks the replacement whenever a previously admitted source is unavailable.
	// Default (false): its last admitted value is restated in the fresh baseline, and only
	// a stored value that no longer decodes blocks.
	Strict bool
}

// Replace renders a fresh generation after a completed compaction or another
// baseline-replacing transition. Present sources render their current value; absent and
// never-admitted unavailable sources are left out; a previously admitted unavailable
// source restates its last value (see ReplaceOptions.Strict). Sources in prev that are no
// longer observed are dropped. A block returns a *BlockedError matching
// ErrReplacementBlocked.
func Replace(obs Observation, prev Snapshot, opts ReplaceOptions) (Generation, error) {
	return render(obs, prev, opts)
}

func render(obs Observation, prev Snapshot, opts ReplaceOptions) (Generation, error) {
	var texts []string
	entries := make(map[string]snapEntry, len(obs.entries))
	blocked := &BlockedError{kind: ErrReplacementBlocked}
	for _, e := range obs.entries {
		k := e.src.key()
		switch e.state {
		case StatePresent:
			texts = appendText(texts, e.src.baseline(e.value))
			entries[k] = entryFor(e.src, e.value, e.enc)
		case StateUnavailable:
			pe, had := prev.entries[k]
			if !had {
				continue // never admitted: omitted until first loaded
			}
			if opts.Strict {
				blocked.add(k, e.err)
				continue
			}
			if pe.corrupt {
				blocked.add(k, fmt.Errorf("unavailable (%v) and its stored entry is corrupt", e.err))
				continue
			}
			pv, err := e.src.decode(pe.value)
			if err != nil {
				blocked.add(k, fmt.Errorf("unavailable (%v) and its stored value does not decode: %w", e.err, err))
				continue
			}
			texts = appendText(texts, e.src.baseline(pv))
			entries[k] = pe
		}
	}
	if len(blocked.Keys) > 0 {
		return Generation{}, blocked
	}
	return Generation{Baseline: strings.Join(texts, Separator), Snapshot: Snapshot{entries: entries}}, nil
}

func appendText(texts []string, t string) []string {
	if t == "" {
		return texts
	}
	return append(texts, t)
}

func entryFor(src sourceImpl, v any, enc []byte) snapEntry {
	se := snapEntry{value: enc}
	if src.removable() {
		se.removal, se.hasRem = src.removal(v), true
	}
	return se
}

// Action is Reconcile's one next step.
type Action uint8

const (
	// Unchanged: nothing to admit; keep the snapshot.
	Unchanged Action = iota + 1
	// Updated: admit Decision.Message as one Mid-Conversation System Message and store
	// Decision.Snapshot in the same transaction.
	Updated
	// ReplacementReady: start a new epoch with Decision.Generation.
	ReplacementReady
	// ReplacementBlocked: the replacement cannot be rendered now (Decision.Blocked).
	ReplacementBlocked
)

func (a Action) String() string {
	switch a {
	case Unchanged:
		return "unchanged"
	case Updated:
		return "updated"
	case ReplacementReady:
		return "replacement ready"
	case ReplacementBlocked:
		return "replacement blocked"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// ChangeKind says why a source contributed to an update.
type ChangeKind uint8

const (
	// Added: a source new to the snapshot announced with its baseline rendering.
	Added ChangeKind = iota + 1
	// Changed: a changed value rendered with the update renderer.
	Changed
	// Reannounced: the stored value was corrupt; baseline rendering again.
	Reannounced
	// Removed: absent or unregistered; the stored removal text was emitted.
	Removed
)

func (k ChangeKind) String() string {
	switch k {
	case Added:
		return "added"
	case Changed:
		return "changed"
	case Reannounced:
		return "reannounced"
	case Removed:
		return "removed"
	}
	return fmt.Sprintf("ChangeKind(%d)", uint8(k))
}

// Change is one source's contribution to an update.
type Change struct {
	Key  string
	Kind ChangeKind
}

// Decision is Reconcile's result; which fields are set depends on Action.
type Decision struct {
	Action Action
	// Message is the one combined Mid-Conversation System Message text (Updated).
	Message string
	// Snapshot is the next snapshot (Updated) or the unchanged one (Unchanged).
	Snapshot Snapshot
	// Changes lists what made up Message, in message order (Updated).
	Changes []Change
	// Generation is the fresh epoch (ReplacementReady).
	Generation Generation
	// Blocked says which sources block the replacement (ReplacementBlocked).
	Blocked *BlockedError
}

// ReconcileOptions tunes Reconcile.
type ReconcileOptions struct {
	// ReplaceBaseline asks for a fresh generation instead of a chronological update (the
	// caller saw a completed compaction since the epoch began).
	ReplaceBaseline bool
	// Replace tunes that replacement.
	Replace ReplaceOptions
}

// Reconcile compares obs with the snapshot last admitted and returns exactly one next
// action. See the package documentation for the rules.
func Reconcile(obs Observation, snap Snapshot, opts ReconcileOptions) Decision {
	if opts.ReplaceBaseline {
		g, err := Replace(obs, snap, opts.Replace)
		if err != nil {
			var be *BlockedError
			errors.As(err, &be)
			return Decision{Action: ReplacementBlocked, Blocked: be, Snapshot: snap}
		}
		return Decision{Action: ReplacementReady, Generation: g}
	}

	var (
		texts   []string
		changes []Change
		next    map[string]snapEntry // copy-on-write of snap.entries
		found   int
	)
	set := func(k string, se snapEntry, del bool) {
		if next == nil {
			next = make(map[string]snapEntry, len(snap.entries)+1)
			for kk, vv := range snap.entries {
				next[kk] = vv
			}
		}
		if del {
			delete(next, k)
		} else {
			next[k] = se
		}
	}
	emit := func(k string, kind ChangeKind, text string) {
		changes = append(changes, Change{Key: k, Kind: kind})
		texts = appendText(texts, text)
	}

	for _, e := range obs.entries {
		k := e.src.key()
		pe, had := snap.entries[k]
		if had {
			found++
		}
		switch e.state {
		case StateUnavailable:
			// Stale-while-revalidate: keep the prior value, say nothing.
		case StateAbsent:
			if had && !pe.corrupt && pe.hasRem {
				emit(k, Removed, pe.removal)
				set(k, snapEntry{}, true)
			}
			// A non-removable source (or an unreadable entry) has nothing to retract:
			// the entry stays what the model last saw.
		case StatePresent:
			switch {
			case !had:
				emit(k, Added, e.src.baseline(e.value))
			case pe.corrupt:
				emit(k, Reannounced, e.src.baseline(e.value))
			case bytes.Equal(pe.value, e.enc):
				continue
			default:
				pv, err := e.src.decode(pe.value)
				if err != nil {
					emit(k, Reannounced, e.src.baseline(e.value))
					break
				}
				// Same value written differently (whitespace, key order): not a change.
				if re, err := e.src.encode(pv); err == nil && bytes.Equal(re, e.enc) {
					continue
				}
				emit(k, Changed, e.src.update(e.value))
			}
			set(k, entryFor(e.src, e.value, e.enc), false)
		}
	}

	// Sources whose contribution was removed from the registry.
	if found < len(snap.entries) {
		observedKeys := make(map[string]struct{}, len(obs.entries))
		for _, e := range obs.entries {
			observedKeys[e.src.key()] = struct{}{}
		}
		var gone []string
		for k := range snap.entries {
			if _, ok := observedKeys[k]; !ok {
				gone = append(gone, k)
			}
		}
		sort.Strings(gone)
		for _, k := range gone {
			if pe := snap.entries[k]; !pe.corrupt && pe.hasRem {
				emit(k, Removed, pe.removal)
				set(k, snapEntry{}, true)
			}
		}
	}

	if len(texts) == 0 {
		// Nothing model-visible: do not advance (renderers returned empty text).
		return Decision{Action: Unchanged, Snapshot: snap}
	}
	return Decision{
		Action:   Updated,
		Message:  strings.Join(texts, Separator),
		Snapshot: Snapshot{entries: next},
		Changes:  changes,
	}
}
