package journaltest

import (
	"context"
	"testing"

	"github.com/sessionrt/sessionrt/persistence"
)

func TestHelpersOpenWorkingJournalsThatVerifyClean(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *persistence.Journal{"embedded": Embedded, "mariadb": MariaDB} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			j := open(t)
			n, err := New(3, 2, "h").Run(ctx, j, 50)
			if err != nil || n < 50 {
				t.Fatalf("workload wrote %d: %v", n, err)
			}
			rep, err := j.Verify(ctx)
			if err != nil || !rep.Clean() || rep.Events != n {
				t.Fatalf("verify %+v %v", rep, err)
			}
		})
	}
}
