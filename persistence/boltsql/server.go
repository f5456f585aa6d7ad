package boltsql

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/dolthub/go-mysql-server/server"
	gsql "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
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
	srv, err := server.NewServer(cfg, e.sqle, gsql.NewContext, e.wireSession, nil)
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
	return e.newSession(gsql.NewBaseSessionWithClientServer(addr, client, conn.ConnectionID)), nil
}
