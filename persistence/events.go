package persistence

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/sessionrt/sessionrt/messages"
)

var qEvents = stmt(`SELECT seq, type, version, at_us, payload FROM {events} WHERE session_id = ? AND seq > ? ORDER BY session_id, seq LIMIT ?`)

// ReadEvents returns up to limit events with seq > after, in seq order. A
// row that does not decode stops the read: the events before it are
// returned with a *DecodeError naming session, seq and type.
func (j *Journal) ReadEvents(ctx context.Context, sessionID string, after int64, limit int) ([]messages.Envelope, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("read events of %s: limit %d must be positive", sessionID, limit)
	}
	rows, err := j.db.QueryContext(ctx, j.n.q(qEvents), sessionID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read events of %s after %d: %w", sessionID, after, err)
	}
	defer rows.Close()
	out := make([]messages.Envelope, 0, min(limit, 256))
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
// or repeats a seq: the dirty signal is registered before the first read,
// every wake-up re-reads from the cursor, and in-process commits signal after
// they commit (other processes' commits are seen within PollInterval).
//
// The error value is non-nil only for the last element: a *DecodeError for a
// bad row (the stream stops there), a database error, or ctx.Err().
func (j *Journal) Events(ctx context.Context, sessionID string, after int64) iter.Seq2[messages.Envelope, error] {
	return func(yield func(messages.Envelope, error) bool) {
		dirty := j.hub.subscribe(sessionID)
		defer j.hub.unsubscribe(sessionID, dirty)
		poll := time.NewTicker(j.poll)
		defer poll.Stop()
		cursor := after
		for {
			batch, err := j.ReadEvents(ctx, sessionID, cursor, tailBatch)
			for _, e := range batch {
				if !yield(e, nil) {
					return
				}
				cursor = e.Seq
			}
			if err != nil {
				if ctx.Err() != nil {
					err = ctx.Err()
				}
				yield(messages.Envelope{}, err)
				return
			}
			if len(batch) == tailBatch {
				continue // more history to replay
			}
			select {
			case <-ctx.Done():
				yield(messages.Envelope{}, ctx.Err())
				return
			case <-dirty:
			case <-poll.C:
			}
		}
	}
}
