package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/internal/testdb"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/node"
	"github.com/sessionrt/sessionrt/persistence"
	"github.com/sessionrt/sessionrt/persistence/boltsql"
	"github.com/sessionrt/sessionrt/persistence/journaltest"
)

// writeJournal writes four sessions to the journal at url, or (url empty) to the
// embedded journal of the data directory dir, where serve keeps it.
func writeJournal(t *testing.T, dir, url string) {
	t.Helper()
	ctx := context.Background()
	if dir != "" {
		dir = node.JournalDir(dir)
	}
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

// TestJournalCommandsReadTheJournalOfServesDataDirectory runs the node `serve` runs on a
// data directory, writes a session through it, stops it, and points every admin command
// at the same --data: each finds that session (before, verify and events said "no
// journal" and sql answered from a new empty database in DATA itself).
func TestJournalCommandsReadTheJournalOfServesDataDirectory(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	n, err := node.Start(ctx, node.Config{Data: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Journal.Append(ctx, "ses_served", 0, 0, messages.SessionCreated{Location: "/p", Agent: "build"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"journal", "verify", "--data", dir}, "1 sessions"},
		{[]string{"journal", "events", "--data", dir, "ses_served"}, "session.created.v1"},
		{[]string{"journal", "sql", "--data", dir, "SELECT session_id FROM sessions"}, "session_id\nses_served\n"},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != 0 || !strings.Contains(out.String(), c.want) {
			t.Fatalf("%v: exit %d, stdout %q (want %q), stderr %q", c.args, code, out.String(), c.want, errb.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, boltsql.FileName)); err == nil {
		t.Fatalf("an admin command created a second database in %s", dir)
	}
}

// TestJournalSQLOnAMissingJournalIsAnError: `journal sql` and `journal serve` on a data
// directory without a journal fail naming where they looked, and create nothing.
func TestJournalSQLOnAMissingJournalIsAnError(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--data", dir, "journal", "sql", "SELECT 1"},
		{"--data", dir, "journal", "serve", "--listen", "127.0.0.1:0"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no journal in "+node.JournalDir(dir)) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the data directory got %v", entries)
	}
}
