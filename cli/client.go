package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sessionrt/sessionrt/api/client"
)

// Exit codes of the commands that talk to a server, for scripts.
const (
	exitFailure  = 1 // the operation failed (server error, network, …)
	exitUsage    = 2 // the command line or the request was wrong
	exitNotFound = 3 // no such session, message or request
	exitConflict = 4 // an ID reused with other content
)

// ClientFlags are the flags of every command that talks to a running server.
type ClientFlags struct {
	Server string `help:"URL of the sessionrt server." default:"http://127.0.0.1:4096" env:"SESSIONRT_SERVER"`
	Token  string `help:"Bearer token (default: SESSIONRT_TOKEN, else the token file in --data)." env:"SESSIONRT_TOKEN"`
	JSON   bool   `name:"json" help:"Print JSON instead of a table."`
}

// client builds an API client: the token from the flag or SESSIONRT_TOKEN,
// else the token file `sessionrt serve` wrote in the data directory.
func (f *ClientFlags) client(g *Globals) (*client.Client, error) {
	tok := f.Token
	if tok == "" {
		if b, err := os.ReadFile(filepath.Join(g.Data, tokenFile)); err == nil {
			tok = strings.TrimSpace(string(b))
		}
	}
	c, err := client.New(client.Config{BaseURL: f.Server, Token: tok})
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	return c, nil
}

// failed wraps an error from the server with the exit code scripts branch on.
func failed(what string, err error) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf("%s: %w", what, err)
	switch {
	case errors.Is(err, client.ErrNotFound):
		return &exitError{code: exitNotFound, err: err}
	case errors.Is(err, client.ErrConflict):
		return &exitError{code: exitConflict, err: err}
	case errors.Is(err, client.ErrInvalid), errors.Is(err, client.ErrTooLarge):
		return &exitError{code: exitUsage, err: err}
	case errors.Is(err, client.ErrUnauthorized):
		return &exitError{code: exitFailure, err: fmt.Errorf("%w (set SESSIONRT_TOKEN, --token, or --data to the server's data directory)", err)}
	}
	return &exitError{code: exitFailure, err: err}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns; the first row is the header.
func table(w io.Writer, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		if _, err := fmt.Fprintln(tw, strings.Join(r, "\t")); err != nil {
			return err
		}
	}
	return tw.Flush()
}

func msTime(ms float64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(int64(ms)).Local().Format("2006-01-02 15:04:05")
}

// oneLine shortens text for a table cell.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
