package persistence

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/sessionrt/sessionrt/messages"
)

var qEvents = stmt(`SELECT seq, type, version, at_us, payload FROM {events} WHERE session_id = ? AND seq > ? ORDER BY session_id, seq LIMIT ?`)

// ReadEvents returns up to limit events with seq > after, in seq order. A
// row that does not decode stops the read: the events before it are
// returned with a *DecodeError naming session, seq and type.
//
// Events this Journal committed recently come from memory, and their Event
// values are shared with other readers: treat them as read-only.
func (j *Journal) ReadEvents(ctx context.Context, sessionID string, after int64, limit int) ([]messages.Envelope, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("read events of %s: limit %d must be positive", sessionID, limit)
	}
	hit, lo := j.recent.get(sessionID, after, limit)
	// Most reads are a tail or a short replay: start small, append grows a long one.
	out := make([]messages.Envelope, 0, max(len(hit), min(limit, 16)))
	if len(hit) == 0 && lo > after+1 {
		// The cached window starts later (a long session replayed from
		// its start): read up to it, then serve it.
		n := int(min(int64(limit), lo-1-after))
		var err error
		if out, err = j.readRows(ctx, sessionID, after, n, out); err != nil || len(out) < n {
			return out, err
		}
		// The window may have moved meanwhile: then the database has the rest.
		hit, _ = j.recent.get(sessionID, lo-1, limit-len(out))
		out = slices.Grow(out, len(hit))
	}
	for _, c := range hit {
		env, err := c.envelope(j.reg, sessionID)
		if err != nil {
			return out, err
		}
		out = append(out, env)
	}
	if len(out) == limit {
		return out, nil
	}
	// Whatever follows the cached window was committed by another process
	// (or is older than what this one kept): the database has it.
	return j.readRows(ctx, sessionID, after+int64(len(out)), limit-len(out), out)
}

// readRows appends to out up to limit events with seq > after, read from
// the database.
func (j *Journal) readRows(ctx context.Context, sessionID string, after int64, limit int, out []messages.Envelope) ([]messages.Envelope, error) {
	rows, err := j.db.QueryContext(ctx, j.n.q(qEvents), sessionID, after, limit)
	if err != nil {
		return out, fmt.Errorf("read events of %s after %d: %w", sessionID, after, err)
	}
	defer rows.Close()
	var bad error
	for rows.Next() {
		var env messages.Envelope
		var at int64
		var payload []byte
		if err := rows.Scan(&env.Seq, &env.Type.Name, &env.Type.Version, &at, &payload); err != nil {
			return out, fmt.Errorf("read events of %s after %d: %w", sessionID, after, err)
		}
		if bad != nil {
			continue // read to the end, then report
		}
		env.SessionID, env.Time = sessionID, time.UnixMicro(at).UTC()
		env.Event, err = j.reg.Unmarshal(env.Type, payload)
		if err != nil {
			bad = &DecodeError{SessionID: sessionID, Seq: env.Seq, Type: env.Type, Err: err}
			continue
		}
		out = append(out, env)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("read events of %s after %d: %w", sessionID, after, err)
	}
	return out, bad
}

// tailBatch is how many events one tail query reads.
const tailBatch = 512

// Events replays the session's events with seq > after in order, then tails
// new commits, until ctx ends or the consumer stops ranging. It never skips
// or repeats a seq: the subscription is registered before the first read;
// in-process commits hand their rows to the tailer after COMMIT, and the
// tailer uses them only when they continue its cursor exactly, re-reading the
// database on any gap; commits by other processes are read within
// PollInterval.
//
// Event values are shared with other readers: treat them as read-only.
//
// The error value is non-nil only for the last element: a *DecodeError for a
// bad row (the stream stops there), a database error, or ctx.Err().
func (j *Journal) Events(ctx context.Context, sessionID string, after int64) iter.Seq2[messages.Envelope, error] {
	return func(yield func(messages.Envelope, error) bool) {
		for batch, err := range j.EventBatches(ctx, sessionID, after) {
			for _, e := range batch {
				if !yield(e, nil) {
					return
				}
			}
			if err != nil {
				yield(messages.Envelope{}, err)
				return
			}
		}
	}
}

// EventBatches is Events a batch at a time: each batch is every event that
// was available at once (a page of replay, or the commits one wake-up
// brought), so that a consumer can write them all and flush once. Batches
// are non-empty, except the last one when it carries an error; that one
// holds the events before the error, if any. The slices are the consumer's.
func (j *Journal) EventBatches(ctx context.Context, sessionID string, after int64) iter.Seq2[[]messages.Envelope, error] {
	return func(yield func([]messages.Envelope, error) bool) {
		s := j.hub.subscribe(sessionID)
		defer j.hub.unsubscribe(sessionID, s)
		poll := time.NewTicker(j.poll)
		defer poll.Stop()
		cursor := after
		query := true // replay first
		for {
			if query {
				batch, err := j.ReadEvents(ctx, sessionID, cursor, tailBatch)
				if err != nil {
					if ctx.Err() != nil {
						err = ctx.Err()
					}
					yield(batch, err)
					return
				}
				if len(batch) > 0 {
					if !yield(batch, nil) {
						return
					}
					cursor = batch[len(batch)-1].Seq
				}
				if len(batch) == tailBatch {
					continue // more history to replay
				}
				query = false
			}
			select {
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			case <-poll.C:
				query = true
			case <-s.dirty:
				rows, overflow := s.take()
				if overflow {
					query = true
					continue
				}
				batch, gap, err := j.continuing(sessionID, cursor, rows)
				if len(batch) > 0 || err != nil {
					if !yield(batch, err) || err != nil {
						return
					}
					cursor = batch[len(batch)-1].Seq
				}
				query = gap
			}
		}
	}
}

// continuing returns the rows a tailer was handed that continue its cursor
// exactly, decoded (once for every tailer and the cache); gap reports a
// commit it was not handed yet, whose rows it must read from the database.
func (j *Journal) continuing(sessionID string, cursor int64, rows []*committed) (batch []messages.Envelope, gap bool, err error) {
	for _, r := range rows {
		if r.seq <= cursor {
			continue // already read from the database
		}
		if r.seq != cursor+1 {
			return batch, true, nil
		}
		env, err := r.envelope(j.reg, sessionID)
		if err != nil { // cannot happen for rows this process encoded; stop like replay would
			return batch, false, err
		}
		batch = append(batch, env)
		cursor = r.seq
	}
	return batch, false, nil
}
