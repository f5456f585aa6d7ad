package persistence

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// VerifyReport is the outcome of Verify. Differences is empty when every
// stored projection equals its rebuild from the events.
type VerifyReport struct {
	Sessions    int
	Events      int
	Differences []string
}

// Clean reports whether no difference was found.
func (r VerifyReport) Clean() bool { return len(r.Differences) == 0 }

// verifyBatch is how many events one rebuild transaction projects.
const verifyBatch = 1000

// Verify rebuilds every projection from the events into scratch tables with
// the same projector, then compares them row by row with the stored
// projections. It also checks that each stream's seqs are contiguous and end
// at the stream head. A row that does not decode aborts with its
// *DecodeError (session, seq, type). Scratch tables are dropped afterwards.
//
// Run it on a quiet journal: appends committed during the scan show up as
// differences.
func (j *Journal) Verify(ctx context.Context) (VerifyReport, error) {
	var rep VerifyReport
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	sn := newNames("vfy"+hex.EncodeToString(b)+"_", j.n.server)
	for _, ddl := range allDDL() {
		if _, err := j.db.ExecContext(ctx, sn.q(ddl)); err != nil {
			j.dropScratch(sn)
			return rep, fmt.Errorf("verify: create scratch tables: %w", err)
		}
	}
	defer j.dropScratch(sn)

	ids, err := j.SessionIDs(ctx)
	if err != nil {
		return rep, fmt.Errorf("verify: %w", err)
	}
	for _, sid := range ids {
		rep.Sessions++
		n, diffs, err := j.rebuild(ctx, sn, sid)
		rep.Events += n
		rep.Differences = append(rep.Differences, diffs...)
		if err != nil {
			return rep, fmt.Errorf("verify: %w", err)
		}
	}
	for _, t := range projectionTables {
		diffs, err := j.compareTable(ctx, t.name, t.key, sn)
		if err != nil {
			return rep, fmt.Errorf("verify %s: %w", t.name, err)
		}
		rep.Differences = append(rep.Differences, diffs...)
	}
	return rep, nil
}

func allDDL() []string {
	var out []string
	for _, m := range migrations {
		out = append(out, m...)
	}
	return out
}

func (j *Journal) dropScratch(sn *names) {
	ctx := context.Background() // drop even when the caller's ctx ended
	for _, t := range tableNames {
		j.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+sn.prefix+t)
	}
}

// rebuild projects one session's events into the scratch tables.
func (j *Journal) rebuild(ctx context.Context, sn *names, sid string) (int, []string, error) {
	var diffs []string
	var head, epoch int64
	if err := j.db.QueryRowContext(ctx, j.n.q(qStream), sid).Scan(&head, &epoch); err != nil {
		return 0, nil, fmt.Errorf("session %s stream head: %w", sid, err)
	}
	cursor, count := int64(0), 0
	var creation int64 // carried from batch to batch, as one append's projector keeps it
	for {
		batch, err := j.ReadEvents(ctx, sid, cursor, verifyBatch)
		if err != nil {
			return count, diffs, err
		}
		if len(batch) == 0 {
			break
		}
		tx, err := j.db.BeginTx(ctx, nil)
		if err != nil {
			return count, diffs, err
		}
		p := newProjector(ctx, tx, sn, sid)
		p.creation = creation
		refused := false
		for _, e := range batch {
			if e.Seq != cursor+1 {
				diffs = append(diffs, fmt.Sprintf("events [%s]: seq %d follows %d (gap)", sid, e.Seq, cursor))
			}
			cursor = e.Seq
			count++
			if err := p.apply(e.Seq, e.Event); err != nil {
				diffs = append(diffs, fmt.Sprintf("events [%s]: replay refused: %v", sid, err))
				refused = true
				break
			}
		}
		creation = p.creation
		if !refused {
			if err := p.flush(); err != nil {
				tx.Rollback()
				return count, diffs, fmt.Errorf("session %s rebuild: %w", sid, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return count, diffs, fmt.Errorf("session %s rebuild: %w", sid, err)
		}
		if refused {
			return count, diffs, nil
		}
	}
	if cursor != head {
		diffs = append(diffs, fmt.Sprintf("streams [%s]: head is seq %d but the last event is seq %d", sid, head, cursor))
	}
	return count, diffs, nil
}

// compareTable diffs a stored projection table against its rebuild.
func (j *Journal) compareTable(ctx context.Context, table, key string, sn *names) ([]string, error) {
	nkey := len(strings.Split(key, ","))
	stored, cols, err := j.loadRows(ctx, table, key, nkey)
	if err != nil {
		return nil, err
	}
	rebuilt, _, err := j.loadRows(ctx, sn.prefix+table, key, nkey)
	if err != nil {
		return nil, err
	}
	var diffs []string
	for k, row := range stored {
		want, ok := rebuilt[k]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s [%s]: stored row not produced by replay", table, k))
			continue
		}
		for i := range row {
			if row[i] != want[i] {
				diffs = append(diffs, fmt.Sprintf("%s [%s]: column %s stored %s, replay gives %s", table, k, cols[i], clip(row[i]), clip(want[i])))
			}
		}
	}
	for k := range rebuilt {
		if _, ok := stored[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s [%s]: row missing from the stored projection", table, k))
		}
	}
	sort.Strings(diffs)
	return diffs, nil
}

func (j *Journal) loadRows(ctx context.Context, table, key string, nkey int) (map[string][]string, []string, error) {
	rows, err := j.db.QueryContext(ctx, "SELECT * FROM "+table+" ORDER BY "+key)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	out := map[string][]string{}
	raw := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		vals := make([]string, len(cols))
		for i, r := range raw {
			vals[i] = string(r)
		}
		out[strings.Join(vals[:nkey], " ")] = vals
	}
	return out, cols, rows.Err()
}

func clip(s string) string {
	if len(s) > 60 {
		return fmt.Sprintf("%q…(%d bytes)", s[:60], len(s))
	}
	return fmt.Sprintf("%q", s)
}
