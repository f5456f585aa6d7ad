package journaltest

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
)

// While failing, an append and an acquisition fail with the disk-full
// error and leave nothing behind; reads keep working; healed, the same
// append succeeds and the journal verifies clean.
func TestFaultsRefuseWritesUntilHealed(t *testing.T) {
	for name, open := range map[string]func(testing.TB) (*persistence.Journal, *Faults){"embedded": EmbeddedWithFaults, "mariadb": MariaDBWithFaults} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			j, f := open(t)
			n, err := New(5, 2, "f").Run(ctx, j, 20)
			if err != nil {
				t.Fatal(err)
			}
			sid := "ses_faults"
			own, err := j.Acquire(ctx, sid, "me")
			if err != nil {
				t.Fatal(err)
			}
			created := messages.SessionCreated{Location: "/p", Agent: "build", Model: messages.ModelRef{Provider: "p", ID: "m"}}
			f.FailWrites(nil)
			if _, err := j.Append(ctx, sid, 0, own.Epoch, created); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("append while failing: %v, want ENOSPC", err)
			}
			if _, err := j.Acquire(ctx, sid, "me"); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("acquire while failing: %v, want ENOSPC", err)
			}
			if _, err := j.Session(ctx, sid); !errors.Is(err, persistence.ErrNotFound) {
				t.Fatalf("read while failing: %v, want not found", err)
			}
			if ids, err := j.SessionIDs(ctx); err != nil || len(ids) != 3 {
				t.Fatalf("reads while failing: %v %v", ids, err)
			}
			if f.Refused() < 2 {
				t.Fatalf("refused %d writes", f.Refused())
			}
			f.Heal()
			if _, err := j.Append(ctx, sid, 0, own.Epoch, created); err != nil {
				t.Fatalf("append once healed: %v", err)
			}
			rep, err := j.Verify(ctx)
			if err != nil || !rep.Clean() || rep.Events != n+1 {
				t.Fatalf("verify %+v %v", rep, err)
			}
		})
	}
}
