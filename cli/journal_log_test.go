package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/journaltest"
)

func writeJournal(t *testing.T, dir, url string) {
	t.Helper()
	ctx := context.Background()
	j, err := persistence.OpenURL(ctx, dir, url, false, persistence.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Append(ctx, "s1", 0, 0,
		messages.SessionCreated{Location: "/p", Agent: "build"},
		messages.PromptAdmitted{MessageID: "m1", Prompt: messages.Prompt{Text: "hello"}, Delivery: messages.Steer}); err != nil {
		t.Fatal(err)
	}
	if _, err := journaltest.New(1, 3, "w").Run(ctx, j, 200); err != nil {
		t.Fatal(err)
	}
}

func TestJournalVerifyReportsCleanJournalOnBothBackends(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, "")
	var out, errb bytes.Buffer
	if code := run([]string{"journal", "verify", "--data", dir}, &out, &errb); code != 0 {
		t.Fatalf("embedded: exit %d, stderr %q", code, errb.String())
	}
	if !strings.Contains(out.String(), "4 sessions") || !strings.Contains(out.String(), "projections match") {
		t.Fatalf("output %q", out.String())
	}
	d := testdb.MariaDB(t)
	writeJournal(t, "", d.URL())
	out.Reset()
	if code := run([]string{"journal", "verify", "--journal", d.URL()}, &out, &errb); code != 0 {
		t.Fatalf("mariadb: exit %d, stderr %q", code, errb.String())
	}
	// A tampered projection is reported and exits 1.
	if _, err := d.DB.Exec(`UPDATE sessions SET location = 'x' WHERE session_id = 's1'`); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"journal", "verify", "--journal", d.URL()}, &out, &errb); code != 1 {
		t.Fatalf("tampered: exit %d", code)
	}
	if !strings.Contains(out.String(), "sessions [s1]: column location") || !strings.Contains(errb.String(), "1 differences") {
		t.Fatalf("stdout %q stderr %q", out.String(), errb.String())
	}
}

func TestJournalEventsPrintsDecodedEventsAndNamesBadRows(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, "")
	var out, errb bytes.Buffer
	if code := run([]string{"journal", "events", "--data", dir, "s1"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "1\t") || !strings.Contains(lines[0], "session.created.v1") ||
		!strings.Contains(lines[1], `"Text":"hello"`) {
		t.Fatalf("output %q", out.String())
	}
	out.Reset()
	if code := run([]string{"journal", "events", "--data", dir, "--after", "1", "s1"}, &out, &errb); code != 0 || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("--after 1: exit %d, output %q", code, out.String())
	}
	errb.Reset()
	if code := run([]string{"journal", "events", "--data", dir, "nope"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "nope") {
		t.Fatalf("unknown session: exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"journal", "events", "--data", t.TempDir(), "s1"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no journal in") {
		t.Fatalf("empty data dir: exit %d, stderr %q", code, errb.String())
	}
}

func TestJournalEventsStopsAtABadRowNamingIt(t *testing.T) {
	d := testdb.MariaDB(t)
	writeJournal(t, "", d.URL())
	if _, err := d.DB.Exec(`UPDATE events SET type = 'session.bogus' WHERE session_id = 's1' AND seq = 2`); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"journal", "events", "--journal", d.URL(), "s1"}, &out, &errb); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if strings.Count(out.String(), "\n") != 1 || !strings.Contains(errb.String(), "session s1 seq 2 type session.bogus.v1") {
		t.Fatalf("stdout %q stderr %q", out.String(), errb.String())
	}
}
