package cli

import "errors"

// JournalVerifyCmd rebuilds the projections from the events and compares.
type JournalVerifyCmd struct{}

func (c *JournalVerifyCmd) Run(g *Globals) error {
	return errors.New("journal verify: the journal is not built yet (issue 3)")
}

// JournalEventsCmd prints one session's events.
type JournalEventsCmd struct {
	Session string `arg:"" help:"Session ID."`
}

func (c *JournalEventsCmd) Run(g *Globals) error {
	return errors.New("journal events: the journal is not built yet (issue 3)")
}
