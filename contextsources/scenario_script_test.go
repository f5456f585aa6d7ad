package contextsources_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	cs "github.com/sessionrt/sessionrt/contextsources"
	"github.com/sessionrt/sessionrt/contextsources/instructions"
	"github.com/sessionrt/sessionrt/messages"
	"github.com/sessionrt/sessionrt/provider"
	"github.com/sessionrt/sessionrt/render"
	"github.com/sessionrt/sessionrt/session"
)

// TestScenarioScripts runs the scripts in testdata/: the scenarios of
// ../shared/scenarios.md that the context sources decide (34, 36, 38, 43, 44,
// 45), against the real Registry, observation, Initialize, Reconcile and
// Replace, with sources that read real files in a temp dir (printed as $TMP).
// The env plays the session's part faithfully: it writes what the session
// writes (ContextEpochInitialized, ContextUpdated with its snapshot,
// ContextEpochReplaced) as encoded events to a journal, folds them with the
// session's own fold (session.State.Apply), and keeps the decoded snapshot in
// memory as the Session actor does; a restart decodes and folds the journal
// again. Regenerate on purpose with:
//
//	go test ./contextsources -run TestScenarioScripts -rewrite
//
// Commands (paths are relative to $TMP):
//
//	write-file path=P           the input is the file's content, byte for byte
//	remove-file path=P
//	unreadable path=P           P becomes a directory: reading it fails (Unavailable)
//	mkdir path=P
//	symlink path=P target=T
//	setenv name=N value=V | path=P   what the sources' Getenv sees (never the process's)
//	unsetenv name=N
//	register contrib=C          the input lists C's sources, one a line (below)
//	unregister contrib=C
//	compose | combine | combine-observations | observe-with
//	                            the input's sources in one New, one Combine of one
//	                            context each, one CombineObservations of one
//	                            observation each, or as ObserveWith's extra context
//	observe [finish=(K, ...)]   one observation: each source's state
//	initialize [finish=(...)]   a first baseline; stored as the next epoch
//	fresh-baseline [finish=(...)]  what Initialize would render now (nothing stored)
//	reconcile [replace] [strict]   one boundary; the decision is written
//	stored                      the epoch as the fold of the journal has it:
//	                            baseline and encoded snapshot
//	corrupt key=K value=JSON | key=K entry=JSON | document=TEXT
//	                            damage the snapshot in the event that last set
//	                            it; the session reads the journal back
//	restart                     a fresh process: the registry is rebuilt from the
//	                            registrations, the journal decoded and folded
//	agents-files dir=D [root=R] instructions.Load on its own: the files found
//	prompt text=T               a prompt admitted and promoted (history: U)
//	request                     the provider request render.Request builds from
//	                            the fold: its system prefix and its messages
//
// Sources (one a line in register's and the composition commands' input):
//
//	file key=K path=P [removable]   P's content (Absent when P does not exist,
//	                                Unavailable when it cannot be read); renders
//	                                "base K=v", "now K=v", "gone K (was v)"
//	fixed key=K value=V [removable] a constant, rendered the same way
//	gated key=K                     its key as value; finishes in the order given
//	                                by the observing command's finish=
//	agents dir=D [root=R]           the real AGENTS.md source (instructions.Source)
//	zero                            the zero Source
func TestScenarioScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		e := newScriptEnv(t)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out := e.handle(t, td)
			out = strings.ReplaceAll(out, e.dir, "$TMP")
			if e.rawDir != e.dir {
				out = strings.ReplaceAll(out, e.rawDir, "$TMP")
			}
			return out
		})
	})
}

type scriptEnv struct {
	dir    string // canonical temp dir, printed as $TMP
	rawDir string // as t.TempDir returned it

	envMu sync.Mutex
	env   map[string]string

	reg           *cs.Registry
	registrations []registration // in registration order, replayed by restart
	gates         gates

	// journal holds the session's events as encoded payloads; state is their
	// fold, read from it (live, as each is written, or replayed).
	codec   *messages.Registry
	journal []record
	state   session.State
	// What state says is stored: the epoch's number (its Initialized or
	// Replaced event counted from the first), baseline and encoded snapshot.
	epoch    int
	baseline string
	stored   []byte
	// snap is the snapshot the session holds in memory (read from the journal at
	// restart and after a corruption, otherwise the one it committed).
	snap cs.Snapshot
	// prompts counts the prompts written; system is the last request's
	// system prefix.
	prompts  int
	system   string
	requests int
}

type record struct {
	typ     messages.EventType
	payload []byte
}

type registration struct {
	contrib string
	lines   string
}

func newScriptEnv(t *testing.T) *scriptEnv {
	raw := t.TempDir()
	dir, err := filepath.EvalSymlinks(raw)
	if err != nil {
		t.Fatal(err)
	}
	e := &scriptEnv{dir: dir, rawDir: raw, env: map[string]string{}, codec: messages.SessionRegistry()}
	e.reg = e.newRegistry()
	e.state = session.NewState("ses_1")
	e.write(t, messages.SessionCreated{Location: dir, Agent: "build", Model: messages.ModelRef{Provider: "p", ID: "m"}})
	return e
}

// write appends ev to the journal, encoded as the journal stores it, and
// folds it into the live state.
func (e *scriptEnv) write(t *testing.T, ev messages.Event) int64 {
	b, err := e.codec.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	e.journal = append(e.journal, record{ev.EventType(), b})
	seq := int64(len(e.journal))
	if err := e.state.Apply(seq, ev); err != nil {
		t.Fatal(err)
	}
	e.readEpoch()
	return seq
}

// replay folds the whole journal into a fresh state, as a new process does.
func (e *scriptEnv) replay(t *testing.T) {
	e.state = session.NewState("ses_1")
	for i, r := range e.journal {
		ev, err := e.codec.Unmarshal(r.typ, r.payload)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.state.Apply(int64(i+1), ev); err != nil {
			t.Fatal(err)
		}
	}
	e.readEpoch()
}

func (e *scriptEnv) readEpoch() {
	e.epoch, e.baseline, e.stored = 0, "", nil
	if e.state.Epoch == nil {
		return
	}
	for _, r := range e.journal[:e.state.Epoch.BaselineSeq] {
		if r.typ == (messages.ContextEpochInitialized{}).EventType() || r.typ == (messages.ContextEpochReplaced{}).EventType() {
			e.epoch++
		}
	}
	e.baseline, e.stored = e.state.Epoch.Baseline, e.state.Epoch.Snapshot
}

func (e *scriptEnv) newRegistry() *cs.Registry {
	// Generous: every loader here returns at once or is channel-gated; the
	// timeout only bounds a bug.
	return cs.NewRegistry(cs.RegistryConfig{Observe: cs.ObserveConfig{Timeout: 30 * time.Second}})
}

func (e *scriptEnv) registryKeys() string {
	keys := e.reg.SystemContext().Keys()
	if len(keys) == 0 {
		return "(empty)"
	}
	return strings.Join(keys, " ")
}

func (e *scriptEnv) getenv(k string) string {
	e.envMu.Lock()
	defer e.envMu.Unlock()
	return e.env[k]
}

func (e *scriptEnv) path(p string) string { return filepath.Join(e.dir, p) }

func (e *scriptEnv) handle(t *testing.T, td *datadriven.TestData) string {
	var out strings.Builder
	arg := func(k string) string {
		var v string
		td.ScanArgs(t, k, &v)
		return v
	}
	switch td.Cmd {
	case "write-file":
		p := e.path(arg("path"))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(td.Input), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "wrote %s (%d bytes)\n", arg("path"), len(td.Input))
	case "remove-file":
		if err := os.Remove(e.path(arg("path"))); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "removed %s\n", arg("path"))
	case "unreadable":
		p := e.path(arg("path"))
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%s is now a directory\n", arg("path"))
	case "mkdir":
		if err := os.MkdirAll(e.path(arg("path")), 0o755); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "made %s\n", arg("path"))
	case "symlink":
		p := e.path(arg("path"))
		if err := os.Symlink(e.path(arg("target")), p); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%s -> %s\n", arg("path"), arg("target"))
	case "setenv":
		name := arg("name")
		var v string
		if td.HasArg("path") {
			v = e.path(arg("path"))
		} else {
			v = arg("value")
		}
		e.envMu.Lock()
		e.env[name] = v
		e.envMu.Unlock()
		fmt.Fprintf(&out, "%s=%s\n", name, v)
	case "unsetenv":
		e.envMu.Lock()
		delete(e.env, arg("name"))
		e.envMu.Unlock()
		fmt.Fprintf(&out, "unset %s\n", arg("name"))

	case "register":
		contrib := arg("contrib")
		sc, err := cs.New(e.sources(t, td.Input)...)
		if err == nil {
			_, err = e.reg.Register(contrib, sc)
		}
		if err != nil {
			printErr(&out, err)
			fmt.Fprintf(&out, "registry: %s\n", e.registryKeys())
			break
		}
		e.registrations = append(e.registrations, registration{contrib, td.Input})
		fmt.Fprintf(&out, "registered %s: %s\n", contrib, strings.Join(sc.Keys(), " "))
		fmt.Fprintf(&out, "registry: %s\n", e.registryKeys())
	case "unregister":
		contrib := arg("contrib")
		if !e.reg.Unregister(contrib) {
			t.Fatalf("%s: no contribution %q", td.Pos, contrib)
		}
		e.registrations = slices.DeleteFunc(e.registrations, func(r registration) bool { return r.contrib == contrib })
		fmt.Fprintf(&out, "unregistered %s\n", contrib)
		fmt.Fprintf(&out, "registry: %s\n", e.registryKeys())
	case "compose":
		sc, err := cs.New(e.sources(t, td.Input)...)
		if err != nil {
			printErr(&out, err)
			break
		}
		fmt.Fprintf(&out, "composed: %s\n", strings.Join(sc.Keys(), " "))
	case "combine", "combine-observations":
		var parts []cs.SystemContext
		for _, s := range e.sources(t, td.Input) {
			sc, err := cs.New(s)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, sc)
		}
		if td.Cmd == "combine" {
			sc, err := cs.Combine(parts...)
			if err != nil {
				printErr(&out, err)
				break
			}
			fmt.Fprintf(&out, "combined: %s\n", strings.Join(sc.Keys(), " "))
			break
		}
		var obs []cs.Observation
		for _, sc := range parts {
			obs = append(obs, sc.Observe(context.Background(), cs.ObserveConfig{Timeout: 30 * time.Second}))
		}
		o, err := cs.CombineObservations(obs...)
		if err != nil {
			printErr(&out, err)
			break
		}
		fmt.Fprintf(&out, "combined: %s\n", strings.Join(o.Keys(), " "))
	case "observe-with":
		extra, err := cs.New(e.sources(t, td.Input)...)
		if err != nil {
			t.Fatal(err)
		}
		o, err := e.reg.ObserveWith(context.Background(), extra)
		if err != nil {
			printErr(&out, err)
			break
		}
		printObservation(&out, o)

	case "observe":
		printObservation(&out, e.observe(t, td, &out))
	case "initialize", "fresh-baseline":
		g, err := cs.Initialize(e.observe(t, td, &out))
		if err != nil {
			printErr(&out, err)
			if td.Cmd == "initialize" {
				out.WriteString("nothing stored\n")
			}
			break
		}
		if td.Cmd == "fresh-baseline" {
			printText(&out, "baseline", g.Baseline)
			if e.epoch > 0 {
				fmt.Fprintf(&out, "byte-identical to epoch %d's stored baseline: %v\n", e.epoch, g.Baseline == e.baseline)
			}
			break
		}
		e.startEpoch(t, &out, g, false)
		fmt.Fprintf(&out, "epoch %d initialized\n", e.epoch)
		e.printEpoch(t, &out)
	case "reconcile":
		opts := cs.ReconcileOptions{ReplaceBaseline: td.HasArg("replace"), Replace: cs.ReplaceOptions{Strict: td.HasArg("strict")}}
		d := cs.Reconcile(e.observe(t, td, &out), e.snap, opts)
		e.commit(t, td, &out, d)
	case "stored":
		e.printStored(t, &out)
	case "corrupt":
		e.corrupt(t, td, &out)
	case "restart":
		// A fresh process: nothing held in memory survives but the sources'
		// configuration (registered again, in the same order) and the journal.
		e.reg = e.newRegistry()
		before, beforeSnap := e.baseline, e.stored
		e.replay(t)
		for _, r := range e.registrations {
			sc, err := cs.New(e.sources(t, r.lines)...)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.reg.Register(r.contrib, sc); err != nil {
				t.Fatal(err)
			}
		}
		snap, err := cs.DecodeSnapshot(e.stored)
		e.snap = snap
		fmt.Fprintf(&out, "restarted: %d events replayed, epoch %d; registry: %s\n", len(e.journal), e.epoch, e.registryKeys())
		fmt.Fprintf(&out, "baseline and snapshot read back byte-identical: %v\n", before == e.baseline && bytes.Equal(beforeSnap, e.stored))
		if err != nil {
			// The session goes on with the empty snapshot (everything is
			// then re-announced), as after a corrupt.
			printErr(&out, err)
			break
		}
		again, err := snap.Encode()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "snapshot re-encodes byte-identical: %v\n", bytes.Equal(again, e.stored))
	case "prompt":
		e.prompts++
		id := fmt.Sprintf("u%d", e.prompts)
		admitted := messages.PromptAdmitted{MessageID: id, Prompt: messages.Prompt{Text: arg("text")}, Delivery: messages.Steer}
		printWrote(&out, e.write(t, admitted), admitted)
		promoted := messages.PromptPromoted{MessageIDs: []string{id}}
		printWrote(&out, e.write(t, promoted), promoted)
	case "request":
		e.request(t, &out)
	case "agents-files":
		cfg := instructions.Config{Directory: e.path(arg("dir")), Getenv: e.getenv}
		if td.HasArg("root") {
			cfg.ProjectRoot = e.path(arg("root"))
		}
		r := instructions.Load(context.Background(), cfg)
		switch r.State() {
		case cs.StatePresent:
			for _, f := range r.Value().Files {
				fmt.Fprintf(&out, "%s %s\n", f.Scope, f.Path)
			}
		case cs.StateAbsent:
			out.WriteString("none (absent)\n")
		default:
			fmt.Fprintf(&out, "unavailable: %v\n", r.Err())
		}
	default:
		t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	}
	return out.String()
}

// request builds the next turn's provider request from the fold, as the
// Session actor does, and says whether its system prefix is the epoch's
// stored baseline and the previous request's, byte for byte.
func (e *scriptEnv) request(t *testing.T, out *strings.Builder) {
	if e.state.Epoch == nil {
		t.Fatal("request: no epoch")
	}
	req := render.Request(render.Turn{Model: e.state.Row.Model, Baseline: e.state.Epoch.Baseline, History: e.state.History.Msgs})
	e.requests++
	fmt.Fprintf(out, "request %d (epoch %d)\n", e.requests, e.epoch)
	printText(out, "system", req.System)
	fmt.Fprintf(out, "system is epoch %d's stored baseline, byte for byte: %v\n", e.epoch, req.System == e.state.Epoch.Baseline)
	if e.requests > 1 {
		fmt.Fprintf(out, "system is the previous request's, byte for byte: %v\n", req.System == e.system)
	}
	e.system = req.System
	out.WriteString("messages:\n")
	for _, m := range req.Messages {
		switch m.Role {
		case provider.RoleUser, provider.RoleSystem:
			fmt.Fprintf(out, "  %s: %q\n", m.Role, m.Text)
		default:
			t.Fatalf("request: a %s message", m.Role)
		}
	}
	if len(req.Messages) == 0 {
		out.WriteString("  (none)\n")
	}
}

// observe takes one observation of the registry, with gated sources finishing in
// the order given by finish=, and says in which order they finished.
func (e *scriptEnv) observe(t *testing.T, td *datadriven.TestData, out *strings.Builder) cs.Observation {
	var order []string
	if arg, ok := td.Arg("finish"); ok {
		order = arg.Vals
	}
	e.gates.arm(order)
	o, err := e.reg.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if order != nil {
		fmt.Fprintf(out, "loaders finished: %s\n", strings.Join(e.gates.finishedOrder(), " "))
	}
	return o
}

// startEpoch writes a first or a replacing generation, as the session does.
func (e *scriptEnv) startEpoch(t *testing.T, out *strings.Builder, g cs.Generation, replaced bool) {
	b := encode(t, g.Snapshot)
	var ev messages.Event = messages.ContextEpochInitialized{Revision: 1, Baseline: g.Baseline, Snapshot: b, Location: e.state.Row.Location}
	if replaced {
		ev = messages.ContextEpochReplaced{Revision: e.state.Epoch.Revision + 1, Baseline: g.Baseline, Snapshot: b, Location: e.state.Row.Location}
	}
	printWrote(out, e.write(t, ev), ev)
	e.snap = g.Snapshot
}

func encode(t *testing.T, s cs.Snapshot) []byte {
	b, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func printWrote(out *strings.Builder, seq int64, ev messages.Event) {
	fmt.Fprintf(out, "wrote %d %s\n", seq, ev.EventType().Name)
}

// commit does what the session does with a decision: an update's message and
// snapshot are stored together; a replacement starts a new epoch; nothing else
// is written.
func (e *scriptEnv) commit(t *testing.T, td *datadriven.TestData, out *strings.Builder, d cs.Decision) {
	switch d.Action {
	case cs.Unchanged:
		out.WriteString("unchanged: nothing to admit, nothing stored\n")
	case cs.Updated:
		var ch []string
		for _, c := range d.Changes {
			ch = append(ch, c.Key+" "+c.Kind.String())
		}
		fmt.Fprintf(out, "updated: %s\n", strings.Join(ch, ", "))
		printText(out, "message", d.Message)
		// The message and the snapshot it brings are one event: one
		// transaction.
		ev := messages.ContextUpdated{Text: d.Message, Snapshot: encode(t, d.Snapshot)}
		printWrote(out, e.write(t, ev), ev)
		e.snap = d.Snapshot
		e.printSnapshot(t, out)
	case cs.ReplacementReady:
		e.startEpoch(t, out, d.Generation, true)
		fmt.Fprintf(out, "replacement ready: epoch %d\n", e.epoch)
		e.printEpoch(t, out)
	case cs.ReplacementBlocked:
		fmt.Fprintf(out, "replacement blocked: %s\n", strings.Join(d.Blocked.Keys, " "))
		printErr(out, d.Blocked)
		fmt.Fprintf(out, "epoch %d kept\n", e.epoch)
	default:
		t.Fatalf("%s: action %v", td.Pos, d.Action)
	}
}

func (e *scriptEnv) printStored(t *testing.T, out *strings.Builder) {
	if e.epoch == 0 {
		out.WriteString("no epoch\n")
		return
	}
	fmt.Fprintf(out, "epoch %d (baseline seq %d, snapshot seq %d)\n", e.epoch, e.state.Epoch.BaselineSeq, e.state.Epoch.UpdatedSeq)
	e.printEpoch(t, out)
}

func (e *scriptEnv) printEpoch(t *testing.T, out *strings.Builder) {
	printText(out, "baseline", e.baseline)
	e.printSnapshot(t, out)
}

// printSnapshot prints the stored document entry by entry, as the journal holds
// it, marking the entries the session could not read back.
func (e *scriptEnv) printSnapshot(t *testing.T, out *strings.Builder) {
	var doc struct {
		Sources map[string]json.RawMessage `json:"sources"`
	}
	if err := json.Unmarshal(e.stored, &doc); err != nil {
		fmt.Fprintf(out, "snapshot (unreadable): %s\n", e.stored)
		return
	}
	out.WriteString("snapshot:\n")
	keys := make([]string, 0, len(doc.Sources))
	for k := range doc.Sources {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(out, "  %s %s", k, doc.Sources[k])
		if e.snap.Corrupt(k) {
			out.WriteString(" (corrupt)")
		}
		out.WriteString("\n")
	}
	if len(keys) == 0 {
		out.WriteString("  (empty)\n")
	}
}

// corrupt edits the stored snapshot as a damaged journal would hand it back, and
// the session reads it again.
func (e *scriptEnv) corrupt(t *testing.T, td *datadriven.TestData, out *strings.Builder) {
	var damaged []byte
	if arg, ok := td.Arg("document"); ok {
		damaged = []byte(arg.SingleVal(t))
	} else {
		var key string
		td.ScanArgs(t, "key", &key)
		var doc struct {
			Version int                        `json:"version"`
			Sources map[string]json.RawMessage `json:"sources"`
		}
		if err := json.Unmarshal(e.stored, &doc); err != nil {
			t.Fatal(err)
		}
		entry, ok := doc.Sources[key]
		if !ok {
			t.Fatalf("%s: no stored key %q", td.Pos, key)
		}
		if arg, ok := td.Arg("entry"); ok {
			entry = json.RawMessage(arg.SingleVal(t))
		} else {
			var ew struct {
				Value   json.RawMessage  `json:"value"`
				Removal *json.RawMessage `json:"removal,omitempty"`
			}
			if err := json.Unmarshal(entry, &ew); err != nil {
				t.Fatal(err)
			}
			var v string
			td.ScanArgs(t, "value", &v)
			ew.Value = json.RawMessage(v)
			entry = marshalNoEscape(t, ew)
		}
		doc.Sources[key] = entry
		damaged = marshalNoEscape(t, doc)
	}
	e.damage(t, damaged)
	snap, err := cs.DecodeSnapshot(e.stored)
	e.snap = snap
	fmt.Fprintf(out, "journal seq %d holds: %s\n", e.state.Epoch.UpdatedSeq, e.stored)
	if err != nil {
		printErr(out, err)
	}
	fmt.Fprintf(out, "read back: %d keys", snap.Len())
	for _, k := range snap.Keys() {
		if snap.Corrupt(k) {
			fmt.Fprintf(out, ", %s corrupt", k)
		}
	}
	out.WriteString("\n")
}

// damage replaces the snapshot in the journal's record that last set it (the
// epoch's start or its last update) and reads the journal back.
func (e *scriptEnv) damage(t *testing.T, snapshot []byte) {
	if e.state.Epoch == nil {
		t.Fatal("corrupt: no epoch")
	}
	i := e.state.Epoch.UpdatedSeq - 1
	ev, err := e.codec.Unmarshal(e.journal[i].typ, e.journal[i].payload)
	if err != nil {
		t.Fatal(err)
	}
	switch v := ev.(type) {
	case messages.ContextEpochInitialized:
		v.Snapshot = snapshot
		ev = v
	case messages.ContextEpochReplaced:
		v.Snapshot = snapshot
		ev = v
	case messages.ContextUpdated:
		v.Snapshot = snapshot
		ev = v
	default:
		t.Fatalf("corrupt: seq %d is %s", i+1, ev.EventType())
	}
	if e.journal[i].payload, err = e.codec.Marshal(ev); err != nil {
		t.Fatal(err)
	}
	e.replay(t)
}

func marshalNoEscape(t *testing.T, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func printObservation(out *strings.Builder, o cs.Observation) {
	for _, k := range o.Keys() {
		so, _ := o.Lookup(k)
		fmt.Fprintf(out, "%s: %s", k, so.State)
		if so.Err != nil {
			fmt.Fprintf(out, " (%v)", so.Err)
		}
		out.WriteString("\n")
	}
	if len(o.Keys()) == 0 {
		out.WriteString("no sources\n")
	}
}

// printText prints a model-visible text line by line behind "> ", so blank
// lines and the separators between sources stay visible.
func printText(out *strings.Builder, label, text string) {
	fmt.Fprintf(out, "%s:\n", label)
	if text == "" {
		out.WriteString("  (empty)\n")
		return
	}
	for _, l := range strings.Split(text, "\n") {
		if l == "" {
			out.WriteString(">\n")
			continue
		}
		fmt.Fprintf(out, "> %s\n", l)
	}
}

// printErr names the sentinel an error matches, which is what callers branch on.
func printErr(out *strings.Builder, err error) {
	kind := "error"
	for _, s := range []struct {
		err  error
		name string
	}{
		{cs.ErrDuplicateKey, "duplicate key"},
		{cs.ErrInvalidSource, "invalid source"},
		{cs.ErrUnavailable, "unavailable"},
		{cs.ErrReplacementBlocked, "replacement blocked"},
		{cs.ErrCorruptSnapshot, "corrupt snapshot"},
	} {
		if errors.Is(err, s.err) {
			kind = s.name
			break
		}
	}
	fmt.Fprintf(out, "error (%s): %v\n", kind, err)
}

// sources builds one Source per input line.
func (e *scriptEnv) sources(t *testing.T, input string) []cs.Source {
	var out []cs.Source
	for _, line := range strings.Split(input, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		kind, args, err := datadriven.ParseLine(line)
		if err != nil {
			t.Fatal(err)
		}
		vals := map[string]string{}
		for _, a := range args {
			vals[a.Key] = strings.Join(a.Vals, ",")
		}
		_, removable := vals["removable"]
		key := vals["key"]
		var s cs.Source
		switch kind {
		case "file":
			p := e.path(vals["path"])
			s = stringSource(t, key, removable, func(context.Context) cs.Result[string] {
				b, err := os.ReadFile(p)
				switch {
				case errors.Is(err, fs.ErrNotExist):
					return cs.Absent[string]()
				case err != nil:
					return cs.Unavailable[string](err)
				}
				return cs.Present(string(b))
			})
		case "fixed":
			v := vals["value"]
			s = stringSource(t, key, removable, func(context.Context) cs.Result[string] { return cs.Present(v) })
		case "gated":
			s = stringSource(t, key, removable, func(ctx context.Context) cs.Result[string] { return e.gates.load(ctx, key) })
		case "agents":
			cfg := instructions.Config{Directory: e.path(vals["dir"]), Getenv: e.getenv}
			if r, ok := vals["root"]; ok {
				cfg.ProjectRoot = e.path(r)
			}
			s, err = instructions.Source(cfg)
			if err != nil {
				t.Fatal(err)
			}
		case "zero":
			s = cs.Source{}
		default:
			t.Fatalf("unknown source kind %q in %q", kind, line)
		}
		out = append(out, s)
	}
	return out
}

func stringSource(t *testing.T, key string, removable bool, load func(context.Context) cs.Result[string]) cs.Source {
	spec := cs.Spec[string]{
		Key:      key,
		Load:     load,
		Baseline: func(v string) string { return "base " + key + "=" + v },
		Update:   func(v string) string { return "now " + key + "=" + v },
	}
	if removable {
		spec.Removal = func(v string) string { return "gone " + key + " (was " + v + ")" }
	}
	s, err := cs.Make(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// gates make gated loaders finish in a chosen order: each waits for the one
// before it in the order to finish, so which producer is done first is the
// script's choice, not the scheduler's.
type gates struct {
	mu       sync.Mutex
	order    []string
	done     map[string]chan struct{}
	finished []string
}

func (g *gates) arm(order []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.order, g.finished = order, nil
	g.done = make(map[string]chan struct{}, len(order))
	for _, k := range order {
		g.done[k] = make(chan struct{})
	}
}

func (g *gates) load(ctx context.Context, key string) cs.Result[string] {
	g.mu.Lock()
	var wait chan struct{}
	if i := slices.Index(g.order, key); i > 0 {
		wait = g.done[g.order[i-1]]
	}
	mine := g.done[key]
	g.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return cs.Unavailable[string](ctx.Err())
		}
	}
	g.mu.Lock()
	g.finished = append(g.finished, key)
	g.mu.Unlock()
	if mine != nil {
		close(mine)
	}
	return cs.Present(key)
}

func (g *gates) finishedOrder() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.finished)
}
