package persistence

import (
	"strings"
	"testing"
)

func TestServerStatementsOrderBySeqAndEmbeddedByFullKey(t *testing.T) {
	emb, srv := newNames("", false), newNames("", true)
	if q := emb.q(qEvents); !strings.Contains(q, "ORDER BY session_id, seq") {
		t.Fatalf("embedded: %s", q)
	}
	if q := srv.q(qEvents); !strings.Contains(q, "ORDER BY seq LIMIT") || strings.Contains(q, "ORDER BY session_id") {
		t.Fatalf("server: %s", q)
	}
	// Whole-table listings keep their order on both.
	if q := srv.q(qAllSessions); !strings.Contains(q, "ORDER BY session_id") {
		t.Fatalf("server: %s", q)
	}
}
