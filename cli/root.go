package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/alecthomas/kong"
)

// Version is set at build time with -ldflags "-X github.com/sessionrt/sessionrt/cli.Version=…".
var Version = "dev"

// Globals are the flags every command accepts.
type Globals struct {
	Data       string `help:"Data directory of the embedded journal and managed files." default:"./.sessionrt" env:"SESSIONRT_DATA" type:"path"`
	JournalDSN string `name:"journal" help:"Journal backend: empty for the embedded engine in --data, or mysql://user:pass@host:port/db." env:"SESSIONRT_JOURNAL"`

	// Stdout and Stderr let tests capture output; nil means the process's own.
	Stdout io.Writer `kong:"-"`
	Stderr io.Writer `kong:"-"`
}

func (g *Globals) out() io.Writer {
	if g.Stdout != nil {
		return g.Stdout
	}
	return os.Stdout
}

func (g *Globals) errOut() io.Writer {
	if g.Stderr != nil {
		return g.Stderr
	}
	return os.Stderr
}

// CLI is the root of the command tree.
type CLI struct {
	Globals

	Serve      ServeCmd      `cmd:"" help:"Run the runtime: journal, actors and the HTTP API."`
	Session    SessionCmd    `cmd:"" help:"Create, prompt and inspect sessions on a running server."`
	Permission PermissionCmd `cmd:"" help:"List and answer a session's permission requests."`
	Config     ConfigCmd     `cmd:"" help:"Show the OpenCode configuration (opencode.json[c]) of a Location."`
	Trace      TraceCmd      `cmd:"" help:"Inspect a session's spans from the server's span store."`
	PTY        PTYCmd        `cmd:"" name:"pty" help:"Open, list and kill terminals on a running server."`
	Chaos      ChaosCmd      `cmd:"" help:"Run the fault-injection suites (actor kills, process kills) and check the journal's invariants."`
	Cluster    ClusterCmd    `cmd:"" help:"Inspect a running cluster: its members, and where a session is placed."`
	Bench      BenchCmd      `cmd:"" help:"Benchmark sessionrt (and, with --peer opencode, OpenCode) through the same HTTP API and fake model."`
	Version    VersionCmd    `cmd:"" help:"Print the version."`
	Journal    JournalCmd    `cmd:"" help:"Inspect and serve the journal database."`
}

// JournalCmd groups the commands that work on a journal directly.
type JournalCmd struct {
	Serve JournalServeCmd `cmd:"" help:"Serve the embedded journal database over the MySQL wire protocol."`
	SQL   JournalSQLCmd   `cmd:"" name:"sql" help:"Run one SQL statement on the embedded journal database and print the rows."`

	Verify JournalVerifyCmd `cmd:"" help:"Rebuild every projection from the events and report any difference."`
	Events JournalEventsCmd `cmd:"" help:"Print a session's events, decoded."`
}

// VersionCmd prints the build version.
type VersionCmd struct{}

func (c *VersionCmd) Run(g *Globals) error {
	_, err := fmt.Fprintf(g.out(), "sessionrt %s\n", Version)
	return err
}

// exitError carries an exit code chosen by a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Main parses args, runs the selected command and returns the process exit code.
func Main(args []string) int {
	return run(args, nil, nil)
}

func run(args []string, stdout, stderr io.Writer) int {
	var root CLI
	exited, exitCode := false, 0
	root.Stdout, root.Stderr = stdout, stderr
	errw := root.errOut()
	parser, err := kong.New(&root,
		kong.Name("sessionrt"),
		kong.Description("A durable runtime for AI-agent sessions."),
		kong.UsageOnError(),
		kong.Writers(root.out(), errw),
		kong.Exit(func(code int) { exited, exitCode = true, code }),
		kong.Bind(&root.Globals),
	)
	if err != nil {
		fmt.Fprintf(errw, "sessionrt: %v\n", err)
		return 2
	}
	ctx, err := parser.Parse(args)
	if exited { // --help printed its text and asked to exit
		return exitCode
	}
	if err != nil {
		fmt.Fprintf(errw, "sessionrt: %v\n", err)
		return 2
	}
	if err := ctx.Run(); err != nil {
		var q quietExit // a remote program's exit status, passed through
		if errors.As(err, &q) {
			return int(q)
		}
		fmt.Fprintf(errw, "sessionrt: %v\n", err)
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}
