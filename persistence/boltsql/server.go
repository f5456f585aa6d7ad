package boltsql

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/dolthub/go-mysql-server/server"
	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
)

// Serve serves the engine over the MySQL wire protocol on listen (for
// example "127.0.0.1:3307") until ctx is done. Any user name and password
// are accepted: bind to loopback unless the network is trusted.
func (e *Engine) Serve(ctx context.Context, listen string) error {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("journal serve: %w", err)
	}
	return e.ServeListener(ctx, l)
}

// ServeListener is Serve on a listener the caller opened (tests use port 0).
func (e *Engine) ServeListener(ctx context.Context, l net.Listener) error {
	cfg := server.Config{Protocol: "tcp", Address: l.Addr().String(), Listener: l}
	srv, err := server.NewServerWithHandler(cfg, e.sqle, gsql.NewContext, e.wireSession, nil,
		func(h mysql.Handler) (mysql.Handler, error) { return wireHandler{h, e}, nil })
	if err != nil {
		l.Close()
		return fmt.Errorf("journal serve: %w", err)
	}
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = srv.Close()
		case <-stopped:
		}
	}()
	err = srv.Start()
	close(stopped)
	if ctx.Err() != nil {
		return nil
	}
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

func (e *Engine) wireSession(ctx context.Context, conn *mysql.Conn, addr string) (gsql.Session, error) {
	host, user := "", ""
	if u, ok := conn.UserData.(gsql.MysqlConnectionUser); ok {
		host, user = u.Host, u.User
	}
	client := gsql.Client{Address: host, User: user, Capabilities: conn.Capabilities}
	s := e.newSession(gsql.NewBaseSessionWithClientServer(addr, client, conn.ConnectionID))
	e.wireSessions.Store(conn.ConnectionID, s)
	return s, nil
}

// wireHandler gives wire clients the MySQL codes the in-process driver gives
// (go-mysql-server sends 1105 "unknown error" for syntax errors and unknown
// columns). By then the error is a *mysql.SQLError, so it goes by message.
//
// It also turns a panic inside go-mysql-server into the statement's error
// (vitess would log it and drop the connection, leaving the statement's
// transaction to hold the writer until the session ends).
type wireHandler struct {
	mysql.Handler
	eng *Engine
}

// recoverStatement: see conn.recoverStatement.
func (h wireHandler) recoverStatement(c *mysql.Conn, query string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	me := statementPanic(query, r)
	*err = mysql.NewSQLError(mysql.ERUnknownError, mysql.SSUnknownSQLState, "%s", me.Message)
	if s, ok := h.eng.wireSessions.Load(c.ConnectionID); ok {
		s.(*Session).abortStatement(*err)
	}
}

func (h wireHandler) ConnectionClosed(c *mysql.Conn) {
	h.eng.wireSessions.Delete(c.ConnectionID)
	h.Handler.ConnectionClosed(c)
}

func (h wireHandler) ComQuery(ctx context.Context, c *mysql.Conn, query string, cb mysql.ResultSpoolFn) (err error) {
	defer h.recoverStatement(c, query, &err)
	return remapWireError(h.Handler.ComQuery(ctx, c, query, cb))
}

func (h wireHandler) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, cb mysql.ResultSpoolFn) (rest string, err error) {
	defer h.recoverStatement(c, query, &err)
	rest, err = h.Handler.ComMultiQuery(ctx, c, query, cb)
	return rest, remapWireError(err)
}

func (h wireHandler) ComPrepare(ctx context.Context, c *mysql.Conn, query string, p *mysql.PrepareData) (f []*querypb.Field, err error) {
	defer h.recoverStatement(c, query, &err)
	f, err = h.Handler.ComPrepare(ctx, c, query, p)
	return f, remapWireError(err)
}

func (h wireHandler) ComStmtExecute(ctx context.Context, c *mysql.Conn, p *mysql.PrepareData, cb func(*sqltypes.Result) error) (err error) {
	defer h.recoverStatement(c, p.PrepareStmt, &err)
	return remapWireError(h.Handler.ComStmtExecute(ctx, c, p, cb))
}

func remapWireError(err error) error {
	se, ok := err.(*mysql.SQLError)
	if !ok || (se.Num != mysql.ERUnknownError && se.Num != mysql.ERSyntaxError) {
		return err
	}
	switch {
	case strings.HasPrefix(se.Message, "syntax error"): // MySQL says 1064 (ER_PARSE_ERROR)
		return mysql.NewSQLError(mysql.ERParseError, mysql.SSClientError, "%s", se.Message)
	case strings.Contains(se.Message, "could not be found in any table in scope"), strings.Contains(se.Message, "does not have column"):
		return mysql.NewSQLError(mysql.ERBadFieldError, mysql.SSBadFieldError, "%s", se.Message)
	}
	return err
}
