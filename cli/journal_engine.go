package cli

import "errors"

// JournalServeCmd serves the embedded engine over the MySQL wire protocol.
type JournalServeCmd struct {
	Listen string `help:"Address to listen on." default:"127.0.0.1:3307"`
}

func (c *JournalServeCmd) Run(g *Globals) error {
	return errors.New("journal serve: the embedded engine is not built yet (issue 2)")
}

// JournalSQLCmd runs one statement on the embedded engine.
type JournalSQLCmd struct {
	Statement string `arg:"" help:"The SQL statement to run."`
}

func (c *JournalSQLCmd) Run(g *Globals) error {
	return errors.New("journal sql: the embedded engine is not built yet (issue 2)")
}
