package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/sessionrt/sessionrt/node"
	"github.com/sessionrt/sessionrt/persistence"
)

// JournalVerifyCmd rebuilds the projections from the events and compares.
type JournalVerifyCmd struct{}

func (c *JournalVerifyCmd) Run(g *Globals) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	j, err := persistence.OpenURL(ctx, node.JournalDir(g.Data), g.JournalDSN, true, persistence.Config{})
	if err != nil {
		return err
	}
	defer j.Close()
	rep, err := j.Verify(ctx)
	if err != nil {
		return fmt.Errorf("journal verify: %w", err)
	}
	for _, d := range rep.Differences {
		fmt.Fprintln(g.out(), d)
	}
	if !rep.Clean() {
		return fmt.Errorf("journal verify: %d sessions, %d events: %d differences", rep.Sessions, rep.Events, len(rep.Differences))
	}
	_, err = fmt.Fprintf(g.out(), "journal verify: %d sessions, %d events: projections match the events\n", rep.Sessions, rep.Events)
	return err
}

// JournalEventsCmd prints one session's events.
type JournalEventsCmd struct {
	Session string `arg:"" help:"Session ID."`
	After   int64  `help:"Print only events after this seq."`
	Follow  bool   `short:"f" help:"Keep printing new events as they are committed (until interrupted)."`
}

func (c *JournalEventsCmd) Run(g *Globals) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	j, err := persistence.OpenURL(ctx, node.JournalDir(g.Data), g.JournalDSN, true, persistence.Config{})
	if err != nil {
		return err
	}
	defer j.Close()
	if _, err := j.Session(ctx, c.Session); err != nil && !c.Follow {
		return fmt.Errorf("journal events: %w", err)
	}
	if !c.Follow {
		after := c.After
		for {
			batch, err := j.ReadEvents(ctx, c.Session, after, 1000)
			for _, e := range batch {
				if perr := printEvent(g, e.Seq, e.Time, e.Type.String(), e.Event); perr != nil {
					return perr
				}
				after = e.Seq
			}
			if err != nil {
				return fmt.Errorf("journal events: %w", err)
			}
			if len(batch) < 1000 {
				return nil
			}
		}
	}
	for e, err := range j.Events(ctx, c.Session, c.After) {
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted: the normal end of --follow
			}
			return fmt.Errorf("journal events: %w", err)
		}
		if err := printEvent(g, e.Seq, e.Time, e.Type.String(), e.Event); err != nil {
			return err
		}
	}
	return nil
}

// printEvent writes one line: seq, commit time, type, payload as JSON.
func printEvent(g *Globals, seq int64, at time.Time, typ string, ev any) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("journal events: seq %d: %w", seq, err)
	}
	_, err = fmt.Fprintf(g.out(), "%d\t%s\t%s\t%s\n", seq, at.Format(time.RFC3339Nano), typ, body)
	return err
}
