package boltsql

import (
	"strings"
	"sync"

	gsql "github.com/dolthub/go-mysql-server/sql"
)

// The fast paths (fastinsert.go, fastupdate.go, fastselect.go) parse each
// statement text once into a shape and keep it here.

type shapeKey struct {
	sqlMode string // parsing depends on it (ANSI_QUOTES)
	query   string
}

// maxShapes bounds a cache: statements built with inline values would grow it
// without bound, so a full cache starts over.
const maxShapes = 4096

// shapeCache caches parsed statement shapes by text; a nil entry marks a
// text that is not eligible, so it is parsed once, not on every execution.
type shapeCache[T any] struct {
	mu sync.RWMutex
	m  map[shapeKey]*T
}

func (c *shapeCache[T]) get(k shapeKey) (*T, bool) {
	c.mu.RLock()
	s, ok := c.m[k]
	c.mu.RUnlock()
	return s, ok
}

func (c *shapeCache[T]) put(k shapeKey, s *T) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxShapes {
		c.m = map[shapeKey]*T{}
	}
	c.m[k] = s
	c.mu.Unlock()
}

// shapeOf returns the cached or newly parsed shape of query under the
// session's sql_mode, nil when the statement must go through go-mysql-server.
func shapeOf[T any](ctx *gsql.Context, c *shapeCache[T], p gsql.Parser, query string,
	parse func(*gsql.Context, gsql.Parser, string) *T) *T {
	mode, _ := ctx.GetSessionVariable(ctx, gsql.SqlModeSessionVar)
	modeStr, _ := mode.(string)
	k := shapeKey{sqlMode: modeStr, query: query}
	if s, ok := c.get(k); ok {
		return s
	}
	s := parse(ctx, p, query)
	c.put(k, s)
	return s
}

// startsWithKeyword is a cheap filter before any lookup: does q begin with
// the six-letter keyword kw (insert, update, select), in any case?
func startsWithKeyword(q, kw string) bool {
	q = strings.TrimLeft(q, " \t\r\n")
	return len(q) > len(kw) && strings.EqualFold(q[:len(kw)], kw)
}
