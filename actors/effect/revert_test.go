package effect

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/sessionrt/sessionrt/filesnap"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/session"
)

// storeOf is a filesnap.Store as Snapshots (the actor's LocalSnapshots).
type storeOf struct{ *filesnap.Store }

func (s storeOf) Has(id string) (bool, error) {
	_, err := s.Tree(id)
	if errors.Is(err, filesnap.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (s storeOf) Diff(from, to string, only []string) ([]filesnap.FileDiff, error) {
	return s.Store.Diff(from, to, only...)
}

func openStore(t *testing.T) storeOf {
	st, err := filesnap.Open(filesnap.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return storeOf{st}
}

// journal is a session's events from seq 1, read as the journal pages them.
type journal []messages.Event

func (j journal) read(after int64, limit int) ([]messages.Envelope, error) {
	var out []messages.Envelope
	for i := after; i < int64(len(j)) && len(out) < limit; i++ {
		out = append(out, messages.Envelope{Seq: i + 1, Event: j[i]})
	}
	return out, nil
}

func put(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func take(t *testing.T, st Snapshots, dir string) string {
	t.Helper()
	id, err := st.Take(dir)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// oneTurn is a session whose one turn (snapshot before) ran a bash call
// that rewrote a.txt and created b.txt (snapshot after), with notes.txt
// edited by hand after the turn: what the session changed is a.txt and
// b.txt only.
func oneTurn(t *testing.T, st Snapshots, loc string) (before map[string]string, j journal) {
	put(t, loc, map[string]string{"a.txt": "original\n", "notes.txt": "mine\n"})
	before = files(t, loc)
	turn := take(t, st, loc)
	put(t, loc, map[string]string{"a.txt": "turn one\n", "b.txt": "new\n"})
	tool := take(t, st, loc)
	put(t, loc, map[string]string{"notes.txt": "mine, edited by hand\n"})
	j = journal{
		messages.SessionCreated{Location: loc},
		messages.PromptPromoted{MessageIDs: []string{"m1"}},
		messages.TurnStarted{AssistantMessageID: "a1", Snapshot: turn},
		messages.ToolCalled{AssistantMessageID: "a1", CallID: "c1", Tool: "bash"},
		messages.ToolSucceeded{AssistantMessageID: "a1", CallID: "c1", Snapshot: tool},
		messages.TurnEnded{AssistantMessageID: "a1", FinishReason: "stop"},
	}
	return before, j
}

// TestStageFactsAndRestoreTouchOnlyWhatTheSessionChanged: a stage's facts
// name the turn's snapshot, the Location now and the files the tool
// changed (not the one edited by hand); the restore puts those back,
// calling between after the first file only; the restore to Current
// undoes it, and the diff lists the same files.
func TestStageFactsAndRestoreTouchOnlyWhatTheSessionChanged(t *testing.T) {
	st, loc := openStore(t), t.TempDir()
	before, j := oneTurn(t, st, loc)
	after := files(t, loc)
	f, diff, err := ReadSnapshots(st, j.read, loc, int64(len(j)), session.RevertRead{Seq: 2})
	if err != nil || diff != nil {
		t.Fatal(err, diff)
	}
	turn := j[2].(messages.TurnStarted).Snapshot
	if f.From != turn || f.FromMissing || f.Lost != "" || f.Current == "" || !reflect.DeepEqual(f.Files, []string{"a.txt", "b.txt"}) {
		t.Fatalf("facts %+v", f)
	}
	got, err := RevertFiles(st, &messages.Revert{Snapshot: f.From, Current: f.Current, Files: f.Files})
	if err != nil || len(got) != 2 || got[0].Path != "a.txt" || got[0].Status != filesnap.Modified || got[1].Path != "b.txt" || got[1].Status != filesnap.Deleted {
		t.Fatalf("revert files %+v %v", got, err)
	}

	var mid map[string]string
	if err := Restore(st, loc, messages.Restore{Tree: f.From, Files: f.Files}, func() { mid = files(t, loc) }); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a.txt": "original\n", "notes.txt": "mine, edited by hand\n"}
	if got := files(t, loc); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the restore %v, want %v", got, want)
	}
	if mid["a.txt"] != before["a.txt"] || mid["b.txt"] != after["b.txt"] {
		t.Fatalf("between ran at %v: want a.txt restored, b.txt not yet", mid)
	}
	// Idempotent: again, and back.
	if err := Restore(st, loc, messages.Restore{Tree: f.From, Files: f.Files}, nil); err != nil || !reflect.DeepEqual(files(t, loc), want) {
		t.Fatalf("a second restore: %v %v", files(t, loc), err)
	}
	if err := Restore(st, loc, messages.Restore{Tree: f.Current, Files: f.Files}, nil); err != nil || !reflect.DeepEqual(files(t, loc), after) {
		t.Fatalf("the restore to Current: %v %v", files(t, loc), err)
	}

	f, diff, err = ReadSnapshots(st, j.read, loc, int64(len(j)), session.RevertRead{Seq: 1, Diff: true})
	if err != nil || f.Lost != "" {
		t.Fatal(f, err)
	}
	var paths []string
	for _, d := range diff {
		paths = append(paths, d.Path+":"+string(d.Status))
	}
	sort.Strings(paths)
	if want := []string{"a.txt:" + string(filesnap.Modified), "b.txt:" + string(filesnap.Added)}; !reflect.DeepEqual(paths, want) {
		t.Fatalf("diff %v, want %v", paths, want)
	}
}

// TestSnapshotsAStoreLacksAreFacts: a turn's snapshot the store does not
// hold is FromMissing, a later tree it does not hold is Lost (the core
// refuses on both); without a store there are no facts, and a restore
// fails.
func TestSnapshotsAStoreLacksAreFacts(t *testing.T) {
	st, loc := openStore(t), t.TempDir()
	_, j := oneTurn(t, st, loc)
	// Another store (a member that took none of it): the span's first
	// tool snapshot is not there, nor, of a turn alone, the turn's.
	other := openStore(t)
	f, _, err := ReadSnapshots(other, j.read, loc, int64(len(j)), session.RevertRead{Seq: 2})
	if err != nil || f.Lost == "" {
		t.Fatalf("another store: %+v %v", f, err)
	}
	f, _, err = ReadSnapshots(other, j[:3].read, loc, 3, session.RevertRead{Seq: 2})
	if err != nil || !f.FromMissing || f.From == "" || f.Current != "" {
		t.Fatalf("another store, a turn alone: %+v %v", f, err)
	}

	gone := strings.Repeat("ab", 32)
	j[4] = messages.ToolSucceeded{AssistantMessageID: "a1", CallID: "c1", Snapshot: gone}
	f, _, err = ReadSnapshots(st, j.read, loc, int64(len(j)), session.RevertRead{Seq: 2})
	if err != nil || !strings.Contains(f.Lost, gone) || f.FromMissing {
		t.Fatalf("a lost tool snapshot: %+v %v", f, err)
	}
	f, _, err = ReadSnapshots(st, j.read, loc, int64(len(j)), session.RevertRead{Seq: 1, Diff: true})
	if err != nil || !strings.Contains(f.Lost, gone) {
		t.Fatalf("a diff over a lost snapshot: %+v %v", f, err)
	}

	f, diff, err := ReadSnapshots(nil, j.read, loc, int64(len(j)), session.RevertRead{Seq: 2})
	if err != nil || !reflect.DeepEqual(f, session.SnapshotFacts{}) || diff != nil {
		t.Fatalf("no store: %+v %v %v", f, diff, err)
	}
	if err := Restore(nil, loc, messages.Restore{Tree: gone, Files: []string{"a.txt"}}, nil); !errors.Is(err, ErrNoSnapshots) {
		t.Fatalf("a restore without a store: %v", err)
	}

	failing := errors.New("journal down")
	_, _, err = ReadSnapshots(st, func(int64, int) ([]messages.Envelope, error) { return nil, failing }, loc, int64(len(j)), session.RevertRead{Seq: 2})
	if !errors.Is(err, failing) {
		t.Fatalf("a journal failure: %v", err)
	}
}
