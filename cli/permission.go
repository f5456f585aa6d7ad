package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/sessionrt/sessionrt/api/wire"
)

// PermissionCmd groups the commands on a session's permission requests.
type PermissionCmd struct {
	ClientFlags `embed:""`

	List  PermissionListCmd  `cmd:"" help:"List a session's pending permission requests."`
	Reply PermissionReplyCmd `cmd:"" help:"Answer a pending permission request."`
}

func (c *PermissionCmd) Help() string {
	return `A tool call whose agent rules say "ask" waits for an answer here.

Examples:
  sessionrt permission list ses_0190…
  sessionrt permission reply ses_0190… per_0190… once
  sessionrt permission reply ses_0190… per_0190… reject --message "use the read tool instead"`
}

// PermissionListCmd lists pending requests.
type PermissionListCmd struct {
	sessionRef
}

func (c *PermissionListCmd) Run(g *Globals, p *PermissionCmd) error {
	cl, err := p.client(g)
	if err != nil {
		return err
	}
	perms, err := cl.Permissions(context.Background(), c.Session)
	if err != nil {
		return failed("permission list", err)
	}
	if p.JSON {
		if perms == nil {
			perms = []wire.PermissionRequest{}
		}
		return printJSON(g.out(), perms)
	}
	rows := [][]string{{"REQUEST", "ACTION", "RESOURCES", "CALL"}}
	for _, r := range perms {
		call := ""
		if r.Source != nil {
			call = r.Source.CallID
		}
		rows = append(rows, []string{r.ID, r.Action, oneLine(strings.Join(r.Resources, " "), 80), call})
	}
	return table(g.out(), rows)
}

// PermissionReplyCmd answers a request.
type PermissionReplyCmd struct {
	sessionRef
	Request string `arg:"" help:"Permission request ID (per_…)."`
	Reply   string `arg:"" enum:"once,always,reject" help:"once, always (save an allow rule) or reject."`
	Message string `help:"A note for the model (with reject: what to do instead)."`
}

func (c *PermissionReplyCmd) Run(g *Globals, p *PermissionCmd) error {
	cl, err := p.client(g)
	if err != nil {
		return err
	}
	if err := cl.ReplyPermission(context.Background(), c.Session, c.Request, c.Reply, c.Message); err != nil {
		return failed("permission reply", err)
	}
	if p.JSON {
		return printJSON(g.out(), map[string]string{"requestID": c.Request, "reply": c.Reply})
	}
	_, err = fmt.Fprintf(g.out(), "replied %s to %s\n", c.Reply, c.Request)
	return err
}
